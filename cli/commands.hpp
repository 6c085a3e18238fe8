// One entry point per subcommand; each registers its options on the app and returns the
// callback's exit status through `status`.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace fa::cli {

void add_sweep(CLI::App& app, int& status);
void add_run(CLI::App& app, int& status);
void add_list(CLI::App& app, int& status);
void add_info(CLI::App& app, int& status);
void add_compare(CLI::App& app, int& status);
void add_gate(CLI::App& app, int& status);
void add_expand(CLI::App& app, int& status);
void add_isolated(CLI::App& app, int& status);
void add_merge(CLI::App& app, int& status);
void add_fit(CLI::App& app, int& status);
void add_table(CLI::App& app, int& status);
void add_check(CLI::App& app, int& status);
void add_probe_layout(CLI::App& app, int& status);

// --plugin FILE (repeatable) on a subcommand (paths/plugin_paths.hpp).
void add_plugin_option(CLI::App& cmd, std::vector<std::string>& files);

}  // namespace fa::cli
