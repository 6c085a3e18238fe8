// `fa-bench isolated-record --job JSON --result-fd N [--plugin-file LIB] [--heuristic-file F]` (hidden): the child
// process of --isolate. Applies the path's gate, runs one record in-process and writes its outcome
// as JSON to fd N (harness/run/isolate.hpp).
#include "cli/commands.hpp"
#include "cli/run_setup.hpp"
#include "harness/run/isolate.hpp"
#include "paths/auto_path.hpp"
#include "paths/builtin.hpp"

namespace fa::cli {

void add_isolated(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand(kIsolatedCommand, "One record for --isolate (internal)")->group("");
  auto job = std::make_shared<std::string>();
  auto fd = std::make_shared<int>(-1);
  auto plugin = std::make_shared<std::string>();
  cmd->add_option("--job", *job)->required();
  cmd->add_option("--result-fd", *fd)->required();
  cmd->add_option(kIsolatedPluginFlag, *plugin);
  auto heuristic = std::make_shared<std::string>();
  cmd->add_option(kIsolatedHeuristicFlag, *heuristic);
  cmd->callback([job, fd, plugin, heuristic, &status] {
    status = run_isolated_child(*job, *fd, probe_device, run_oracle(), [plugin, heuristic](const DeviceFacts& device) {
      // The record's plugin library, and FABENCH_PLUGINS's as inherited (the parent loaded both);
      // `auto`'s table from the parent's --heuristic-file, else found as the parent found it.
      return run_registry(device, plugin->empty() ? std::vector<std::string>{} : std::vector<std::string>{*plugin},
                          auto_dispatch(device, *heuristic));
    });
  });
}

}  // namespace fa::cli
