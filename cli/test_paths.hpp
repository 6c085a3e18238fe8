// Test-only paths, registered when FABENCH_TEST_PATHS=1 is in the environment (the CLI tests set
// it; an isolated child inherits it). `test-crash` runs cpu-flash except on rows named `crash`
// (SIGSEGV), `abort` (SIGABRT) or `hang` (sleeps until killed): what --isolate must survive.
#pragma once
#include "harness/registry.hpp"

namespace fa::cli {

void add_test_paths(Registry& reg);

}  // namespace fa::cli
