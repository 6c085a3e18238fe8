// The registry and oracle of every command that runs records (cli/run_setup.hpp).
#include "cli/run_setup.hpp"

#include "cli/test_paths.hpp"
#include "paths/plugin_paths.hpp"
#include "reference/cpu_ref.hpp"

namespace fa::cli {

Registry run_registry(const DeviceFacts& device, const std::vector<std::string>& plugins,
                      const std::optional<DispatchChoice>& dispatch) {
  Registry reg = registry_with_plugins(device, plugins, dispatch);
  add_test_paths(reg);
  return reg;
}

ReferenceFn run_oracle() { return compute_reference; }

}  // namespace fa::cli
