// `fa-bench isolated-record --job JSON --result-fd N` (hidden): the child process of --isolate.
// Runs one record in-process and writes its outcome as JSON to fd N (harness/run/isolate.hpp).
#include "cli/commands.hpp"
#include "cli/run_setup.hpp"
#include "harness/run/isolate.hpp"
#include "paths/builtin.hpp"

namespace fa::cli {

void add_isolated(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand(kIsolatedCommand, "One record for --isolate (internal)")->group("");
  auto job = std::make_shared<std::string>();
  auto fd = std::make_shared<int>(-1);
  cmd->add_option("--job", *job)->required();
  cmd->add_option("--result-fd", *fd)->required();
  cmd->callback([job, fd, &status] {
    status = run_isolated_child(*job, *fd, probe_device, run_oracle(), [](const DeviceFacts& device) {
      return run_registry(device, {});  // plugins: FABENCH_PLUGINS, set by the parent
    });
  });
}

}  // namespace fa::cli
