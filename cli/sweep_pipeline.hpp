// The sweep pipeline behind `sweep` and `run`, one function a stage: load (the sweep files) ->
// select (output policy, duplicates, --filter, --shard) -> set up (device, registry, run options)
// -> open outputs (and what --resume keeps) -> run -> print -> exit status.
#pragma once
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "harness/sweep/sweep.hpp"

namespace fa::cli {

// Load: every file read and checked before anything runs (an input error costs no measurement).
Sweep load_sweep_files(const std::vector<std::string>& files, const CommonOptions& o);

// The stages after load; returns the process exit status.
int execute(Sweep sweep, const CommonOptions& o);

}  // namespace fa::cli
