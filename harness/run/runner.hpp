// The runner: for each sweep row, every selected path and every requested G, one record. Inputs
// and the reference are built once per row (lazily, only if some path runs) and shared by all
// its (path, G) records; each record is handed to the sinks as soon as it is final. One record's
// run is harness/run/run_record.hpp; with `isolate` it runs in a child process
// (harness/run/isolate.hpp); `stop` ends the sweep early.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/registry.hpp"
#include "harness/results/results.hpp"
#include "harness/run/run_record.hpp"
#include "harness/sweep/sweep.hpp"

namespace fa {

using ProgressFn = std::function<void(size_t done, size_t total, const Record& last)>;

std::vector<Record> run_sweep(const Sweep& sweep, const RunOptions& opt, const Registry& reg, const GateContext& ctx,
                              const std::vector<RecordSink*>& sinks, const ProgressFn& progress = nullptr);

// Whether every path of a sweep row runs on the GPU and draws the seed's inputs there, so that its
// host inputs need only the query rows the CPU oracle checks: a GPU device, seeded inputs kept by
// nothing else (no --load-tensors, --save-tensors or --isolate), p dense without a kv cache
// (drawn_on_device), not FP8 (its descale is the whole tensor's amax), and every path of kind gpu.
bool row_draws_on_device(const Problem& p, const RunOptions& opt, const Registry& reg, const GateContext& ctx);

// Process exit status for a finished sweep: 1 if any record failed or errored (oom is not a
// wrong result), else 2 if any row was invalid, else 0.
int exit_status(const std::vector<Record>& records);

}  // namespace fa
