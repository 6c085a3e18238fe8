// What every command that runs records sets up the same way: the registry (the built-in rows of
// paths/ and any plugins', plus the test-only paths where FABENCH_TEST_PATHS=1) and the oracle validation compares
// with (reference/'s compute_reference). `sweep`, `run` and the --isolate child all use these.
#pragma once
#include "harness/path.hpp"
#include "harness/reference_result.hpp"
#include "harness/registry.hpp"
#include "harness/split/dispatch_table.hpp"

#include <optional>
#include <string>
#include <vector>

namespace fa::cli {

// Plugin libraries from `plugins` (--plugin) and $FABENCH_PLUGINS join the built-in rows; `auto`
// dispatches by `dispatch` (nullopt: the table found for the device's arch).
Registry run_registry(const DeviceFacts& device, const std::vector<std::string>& plugins,
                      const std::optional<DispatchChoice>& dispatch = std::nullopt);
ReferenceFn run_oracle();

}  // namespace fa::cli
