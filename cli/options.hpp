// Options shared by `sweep` and `run` (path selection, overrides, validation, timing, outputs,
// scale-out); the routine both end in is cli/sweep_pipeline.hpp.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "harness/sweep/sweep.hpp"

namespace fa::cli {

struct CommonOptions {
  std::string paths, G, dtype, filter, baseline;
  uint64_t seed = 1;
  int64_t check_rows = 0;
  std::string gpu_reference = "on";  // on: GPU records are checked on every row (harness/check/full_check.hpp)
  double cpu_budget_gflop = 50;
  double max_err = -1, min_cosine = -1;  // -1: not given (the flags accept only values >= 0)
  size_t max_rows = 100000;
  std::string timing = "cold";
  double time_cap = 0.5, spread = 0.005, time_limit = 1.0;
  int min_samples = 10, max_samples = 1000, warmup = 1;
  bool no_timing = false, resume = false, no_table = false, isolate = false;
  std::string throttle_policy = "warn";  // warn | retry | fail (harness/run/timed_run.hpp)
  double throttle_wait = 10;
  double row_timeout = 0;
  std::string heuristic, heuristic_file;  // G=auto's rule (empty: model where a parameter file exists, else fa2)
  int repeat_check = 0;
  bool no_check_timed = false;
  std::string csv = "fa-bench-results.csv", json;
  // Outputs, exit rules and scale-out
  std::string table = "compact", markdown, shard, devices, save_tensors, load_tensors;
  bool fail_on_skip = false;
  bool dry_run = false;  // expand and check everything, write nothing (cli/sweep_pipeline.cpp)
  double plant_slowdown = 0;  // test only (cli/test_paths.hpp)
  std::vector<std::string> plugins;  // --plugin FILE (paths/plugin_paths.hpp)

  Overrides overrides() const;
};

void add_common_options(CLI::App& cmd, CommonOptions& o);

// "a,b|c" -> "a|b|c": lists on the command line may use commas or bars.
std::string bars(std::string s);

}  // namespace fa::cli
