// `--plugin FILE` (repeatable), shared by sweep, run, list, info and check: the libraries whose
// paths join the registry (paths/plugin_paths.hpp), after those named in FABENCH_PLUGINS.
#include "cli/commands.hpp"
#include "paths/plugin_paths.hpp"

namespace fa::cli {

void add_plugin_option(CLI::App& cmd, std::vector<std::string>& files) {
  cmd.add_option("--plugin", files,
                 std::string("A plugin library (include/fa_bench/plugin.h) whose paths join this run; repeatable; "
                             "also the colon-separated ") + kPluginsEnv + " list")
      ->take_all()
      ->allow_extra_args(false);
}

}  // namespace fa::cli
