// The runner: for each sweep row, every selected path and every requested G, one record. Inputs
// and the reference are built once per row (lazily, only if some path runs) and shared by all
// its (path, G) records; each record is handed to the sinks as soon as it is final. The oracle
// comes in through RunOptions::reference (the CLI passes reference/'s compute_reference). With
// `isolate` each record runs in a child process (harness/isolate.hpp); `stop` ends the sweep early.
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "harness/reference_result.hpp"
#include "harness/registry.hpp"
#include "harness/results.hpp"
#include "harness/split_rules.hpp"
#include "harness/sweep.hpp"

namespace fa {

struct RunOptions {
  std::vector<std::string> paths;  // already resolved: CLI, else the sweep file's, else all available
  TimingPolicy timing;
  bool time_paths = true;          // false: validate only
  Thresholds thresholds;           // fixed rule when any is set
  int64_t check_rows = 0;          // > 0: validate this many sampled rows; 0: as the CPU budget allows
  std::set<std::string> done;      // resume keys to skip
  ReferenceFn reference = nullptr; // the oracle validation compares with (required)
  int repeat_check = 0;            // > 0: rerun each record this many times and compare bit for bit
  // Compare the last timed launch's outputs with the validated first run (bit for bit for a
  // deterministic path, else through the rule); poisons the outputs before each timed sample.
  bool check_timed = true;
  bool isolate = false;            // run each record in a child process
  double row_timeout_s = 0;        // > 0 (with isolate): a record's child is killed after this long
  std::function<int()> stop;       // non-zero (the signal): write nothing more after the current record
  // --load-tensors / --save-tensors folders: install_tensor_hooks (harness/tensor_files.hpp) turns
  // them into the two hooks below, in the parent and in every --isolate child alike.
  std::string load_tensors, save_tensors;
  // Where a problem's inputs come from (--load-tensors); empty: make_inputs, from the seed.
  std::function<HostInputs(const Problem&)> inputs;
  // Sees every record's inputs and outputs once validated, before timing (--save-tensors).
  std::function<void(const Record&, const HostInputs&, const RunOutputs&)> keep_outputs;
  SplitPolicy split;  // the rule G=auto uses (--heuristic)
};

struct Reference;
// The inputs and reference of one sweep row, built on first use and shared by its records.
struct RowData {
  RowData();
  ~RowData();
  std::unique_ptr<HostInputs> inputs;
  std::unique_ptr<Reference> ref;
};

// Runs one record whose gate said yes, in this process: prepare, poison, run, read back,
// validate, repeat-check, time, check the timed launches. Fills r's outcome (status, reason, metrics, timing, ...).
void run_record(Record& r, const PathRow& pr, int G, const RunOptions& opt, const GateContext& ctx, RowData& data);

using ProgressFn = std::function<void(size_t done, size_t total, const Record& last)>;

std::vector<Record> run_sweep(const Sweep& sweep, const RunOptions& opt, const Registry& reg, const GateContext& ctx,
                              const std::vector<RecordSink*>& sinks, const ProgressFn& progress = nullptr);

// Process exit status for a finished sweep: 1 if any record failed or errored (oom is not a
// wrong result), else 2 if any row was invalid, else 0.
int exit_status(const std::vector<Record>& records);

}  // namespace fa
