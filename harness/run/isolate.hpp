// --isolate: each record runs in a child process, so a crash (a signal, a GPU fault that kills
// the process), a hang past --row-timeout, or a wedged device context costs one `error` record
// and the sweep goes on. The child is this binary re-executed (`fa-bench isolated-record`): GPU
// runtimes do not survive fork() once the parent has initialised them, exec gives a fresh one.
// Job and outcome travel as JSON (argv in, a pipe out); only the parent writes the results.
#pragma once
#include <functional>
#include <string>

#include "harness/registry.hpp"
#include "harness/run/run_record.hpp"

namespace fa {

constexpr const char* kIsolatedCommand = "isolated-record";
// The child's argument naming r.plugin_file, the library its path comes from (not FABENCH_PLUGINS,
// whose ':' separator a file name may contain).
constexpr const char* kIsolatedPluginFlag = "--plugin-file";
constexpr const char* kIsolatedHeuristicFlag = "--heuristic-file";  // `auto`'s table, as the parent's

// Parent side: runs r (G resolved; the device-level check passed) in a child, which applies the
// path's gate and runs it; fills r's outcome, a `skip` when the gate says no. A child killed by a
// signal gives "crashed: SIGSEGV (Segmentation fault)"; past opt.row_timeout_s it is killed:
// "timeout after N s"; when opt.stop() turns non-zero while it runs it is killed: "interrupted by
// SIGINT"; one that exits without writing its record (a plugin calling exit(0)) gives "isolated
// child exited with status 0 without writing its record; its stderr ends: ...". The child dies
// with the calling thread's process (PR_SET_PDEATHSIG).
void run_isolated(Record& r, int G, const RunOptions& opt, const GateContext& ctx);

// Child side: decodes the job, builds the registry, applies the path's gate, runs the record
// in-process and writes the outcome to result_fd. Returns the process exit status.
int run_isolated_child(const std::string& job, int result_fd, const std::function<DeviceFacts()>& probe,
                       ReferenceFn reference,
                       const std::function<Registry(const DeviceFacts&)>& make_registry);

// The wire format, exposed for its round-trip test.
std::string encode_job(const Record& r, int G, const RunOptions& opt, const GateContext& ctx);
// What a child rebuilds from a job: the record to run, its G, and every option the runner consumes
// (the hooks excepted: install_tensor_hooks rebuilds them from the folders).
struct IsolatedJob {
  Record record;
  int G = 0;
  RunOptions options;
  double cpu_budget_flops = 0;
  int log_level = 0;
};
IsolatedJob decode_job(const std::string& job);
std::string encode_outcome(const Record& r);
void decode_outcome(const std::string& text, Record& r);

}  // namespace fa
