// What this binary has: the device it probes and the registry of every path it knows, assembled
// from the rows the built sources register (harness/path_registry.hpp), placeholder rows for the
// GPU paths the build lists but did not compile, and `auto` over them all.
#pragma once
#include <optional>

#include "harness/registry.hpp"
#include "harness/split/dispatch_table.hpp"

namespace fa {

// Probes the machine: CPU threads, and the GPU when a backend is built in.
DeviceFacts probe_device();

// Rows in a fixed order: the oracle, the other CPU rows by name, the GPU rows in the build
// list's order (FABENCH_GPU_PATHS), any other rows by name, then `auto`, dispatching by `dispatch`
// (nullopt: the table found for the device's arch, paths/auto_path.hpp's auto_dispatch).
Registry builtin_registry(const DeviceFacts& device, const std::optional<DispatchChoice>& dispatch = std::nullopt);

}  // namespace fa
