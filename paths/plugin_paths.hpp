// Plugin paths: shared libraries implementing include/fa_bench/plugin.h, loaded with dlopen from
// `--plugin FILE` (sweep, run, list, info, check) and the colon-separated FABENCH_PLUGINS list,
// each of their paths one more registry row that fa-bench runs like its own (paths/plugin_cpu.hpp,
// kernels/runtime/plugin_gpu.hpp). A library that fails to load, lacks the entry symbol, speaks another ABI
// version, or names a path that is already taken is an InputError naming the file (exit 2).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/registry.hpp"
#include "harness/split/dispatch_table.hpp"

namespace fa {

constexpr const char* kPluginsEnv = "FABENCH_PLUGINS";

// Loads `files` and then FABENCH_PLUGINS's entries (a file named twice loads once) and appends a
// row for each of their paths. FABENCH_PLUGINS is left as it was: a child of --isolate inherits it
// and gets the record's own library as an argument (harness/run/isolate.hpp), since a file name may
// contain the list's ':'.
void add_plugin_paths(Registry& reg, const std::vector<std::string>& files);

// The library files a run names, `files` and FABENCH_PLUGINS's entries, unloaded: inputs no output
// may overwrite (harness/results/output_file.hpp).
std::vector<std::string> plugin_files(const std::vector<std::string>& files);

// The registry every subcommand that runs paths uses: built-ins (`auto` dispatching by `dispatch`,
// paths/builtin.hpp), then plugins (as above).
Registry registry_with_plugins(const DeviceFacts& device, const std::vector<std::string>& files,
                               const std::optional<DispatchChoice>& dispatch = std::nullopt);

}  // namespace fa
