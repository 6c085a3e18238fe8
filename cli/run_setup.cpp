// The registry and oracle of every command that runs records (cli/run_setup.hpp).
#include "cli/run_setup.hpp"

#include "cli/test_paths.hpp"
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

namespace fa::cli {

Registry run_registry(const DeviceFacts& device) {
  Registry reg = builtin_registry(device);
  add_test_paths(reg);
  return reg;
}

ReferenceFn run_oracle() { return compute_reference; }

}  // namespace fa::cli
