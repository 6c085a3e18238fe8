// The runner: for each sweep row, every selected path and every requested G, one record. Inputs
// and the reference are built once per row (lazily, only if some path runs) and shared by all
// its (path, G) records; each record is handed to the sinks as soon as it is final.
#pragma once
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "harness/registry.hpp"
#include "harness/results.hpp"
#include "harness/sweep.hpp"

namespace fa {

struct RunOptions {
  std::vector<std::string> paths;  // already resolved: CLI, else the sweep file's, else all available
  TimingPolicy timing;
  bool time_paths = true;          // false: validate only
  Thresholds thresholds;           // fixed rule when any is set
  int64_t check_rows = 0;          // > 0: validate this many sampled rows; 0: as the CPU budget allows
  std::set<std::string> done;      // resume keys to skip
  // Where a problem's inputs come from (--load-tensors); empty: make_inputs, from the seed.
  std::function<HostInputs(const Problem&)> inputs;
  // Sees every record's inputs and outputs once validated, before timing (--save-tensors).
  std::function<void(const Record&, const HostInputs&, const RunOutputs&)> keep_outputs;
};

using ProgressFn = std::function<void(size_t done, size_t total, const Record& last)>;

std::vector<Record> run_sweep(const Sweep& sweep, const RunOptions& opt, const Registry& reg, const GateContext& ctx,
                              const std::vector<RecordSink*>& sinks, const ProgressFn& progress = nullptr);

// Process exit status for a finished sweep: 1 if any record failed or errored (oom is not a
// wrong result), else 2 if any row was invalid, else 0.
int exit_status(const std::vector<Record>& records);

}  // namespace fa
