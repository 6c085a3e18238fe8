// Test-only paths, registered when FABENCH_TEST_PATHS=1 is in the environment (the CLI tests set
// it; an isolated child inherits it). `test-crash` runs cpu-flash except on rows named `crash`
// (SIGSEGV), `abort` (SIGABRT) or `hang` (sleeps until killed): what --isolate must survive;
// `test-carry-state` is right on its first launch only: what the timed-launch check must fail;
// `test-model-time` reports a model time instead of the clock: what the gate tests judge.
// Under the same switch, `--plant-slowdown F` makes every timed sample F slower with a real delay
// (harness/run/timed_run.hpp), path names unchanged, so that `gate` can be shown to catch it.
#pragma once
#include <CLI/CLI.hpp>

#include "harness/registry.hpp"

namespace fa::cli {

void add_test_paths(Registry& reg);

// Registers --plant-slowdown (test only) on `sweep`/`run`.
void add_test_options(CLI::App& cmd, double& plant_slowdown);

// The fraction to plant (0: none; --isolate children receive it too). Throws InputError naming
// --plant-slowdown when it is given without FABENCH_TEST_PATHS=1.
double checked_plant_slowdown(double fraction);

}  // namespace fa::cli
