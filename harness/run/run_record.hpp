// One record's run, in this process: prepare, poison, run, read back, validate against the oracle
// (RunOptions::reference; the CLI passes reference/'s compute_reference), repeat-check, time, check
// the timed launches. The runner (harness/run/runner.hpp) calls it directly, or through a child
// process (harness/run/isolate.hpp) whose child side calls it in turn.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "harness/reference_result.hpp"
#include "harness/registry.hpp"
#include "harness/results/results.hpp"
#include "harness/run/timed_run.hpp"
#include "harness/split/split_rules.hpp"
#include "harness/thresholds.hpp"

namespace fa {

struct RunOptions {
  std::vector<std::string> paths;  // already resolved: CLI, else the sweep file's, else all available
  TimingPolicy timing;             // without a ClockSource, a GPU record gets its device's (harness/run/clock_source.hpp)
  ThrottleOptions throttle;        // --throttle-policy
  bool time_paths = true;          // false: validate only
  Thresholds thresholds;           // fixed rule when any is set
  int64_t check_rows = 0;          // > 0: validate this many sampled rows; 0: as the CPU budget allows
  // GPU records: check every query row against the GPU reference (harness/check/full_check.hpp),
  // where the build has one; false (--gpu-reference off): the sampled rows only.
  bool gpu_reference = true;
  std::set<std::string> done;      // resume keys to skip
  ReferenceFn reference = nullptr; // the oracle validation compares with (required)
  int repeat_check = 0;            // > 0: rerun each record this many times and compare bit for bit
  // Compare the last timed launch's outputs with the validated first run (bit for bit for a
  // deterministic path, else through the rule); poisons the outputs before each timed sample.
  bool check_timed = true;
  bool isolate = false;            // run each record in a child process
  double row_timeout_s = 0;        // > 0 (with isolate): a record's child is killed after this long
  std::function<int()> stop;       // non-zero (the signal): write nothing more after the current record
  // --load-tensors / --save-tensors folders: install_tensor_hooks (harness/results/tensors/tensor_files.hpp) turns
  // them into the two hooks below, in the parent and in every --isolate child alike.
  std::string load_tensors, save_tensors;
  // Where a problem's inputs come from (--load-tensors); empty: make_inputs, from the seed.
  std::function<HostInputs(const Problem&)> inputs;
  // Sees every record's inputs and outputs once validated, before timing (--save-tensors).
  std::function<void(const Record&, const HostInputs&, const RunOutputs&)> keep_outputs;
  SplitPolicy split;  // the rule G=auto uses (--heuristic)
  // --heuristic-file, where `auto`'s dispatch table came from; the --isolate child reads it too.
  std::string heuristic_file;
};

struct Reference;
struct GpuReference;
class InputWatch;
// The inputs and reference of one sweep row, built on first use and shared by its records.
struct RowData {
  RowData();
  ~RowData();
  std::unique_ptr<HostInputs> inputs;
  // Set by the runner where every path of the row draws its inputs on the device (row_draws_on_device):
  // the host then draws only the query rows the CPU oracle checks (HostInputs::q_rows).
  bool oracle_rows_only = false;
  // The inputs' checksums, taken once a row (GBs on long-context rows); a record whose path wrote
  // the inputs drops both, so the next record gets them made again.
  std::unique_ptr<InputWatch> watch;
  // By the low-precision reference's model (P's rounding, FP8 scores' accumulation): one entry, or
  // more on an FP8 row whose paths declare e4m3 and bf16 P, or 13-bit and fp32 accumulation (each
  // computed once, however the row's paths alternate).
  std::map<LowPrecision, std::unique_ptr<Reference>> refs;
  // The GPU reference of every row (its O does not depend on the P rounding), computed at the
  // row's first GPU record; gpu_ref_tried with no gpu_ref: it does not take the problem. Where it
  // disagrees with the CPU oracle on the sampled rows, why (every GPU record of the row is an error).
  std::unique_ptr<GpuReference> gpu_ref;
  bool gpu_ref_tried = false;
  std::string gpu_ref_disagrees;
  // With it, on FP8 rows, each declared accumulation's LSE of every row (GpuReference::lse_acc), by
  // s_acc_bits, computed at the first record that needs it.
  std::map<int, std::vector<float>> gpu_lse_acc;
};

// The query rows the CPU oracle checks on p: --check-rows, else as many as the CPU budget allows.
std::vector<int64_t> oracle_rows(const Problem& p, const RunOptions& opt, const GateContext& ctx);

// Runs one record whose gate said yes, in this process: prepare, poison, run, read back,
// validate, repeat-check, time, check the timed launches. Fills r's outcome (status, reason, metrics, timing, ...).
void run_record(Record& r, const PathRow& pr, int G, const RunOptions& opt, const GateContext& ctx, RowData& data);

}  // namespace fa
