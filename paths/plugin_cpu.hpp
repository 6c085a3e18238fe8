// Host execution of a FA_PLUGIN_CPU plugin path: fa-bench's own buffers in the dtype's storage
// (Q, K, V from the seeded inputs; O and LSE poisoned before each run), guard bytes after O, LSE
// and the workspace, the plugin's prepare/run/release, host-clock timing with the CPU paths' cold
// flush. kernels/runtime/plugin_gpu.hpp is the device twin.
#pragma once
#include <memory>

#include "harness/plugin_abi.hpp"

namespace fa {

// Throws std::runtime_error naming the path when the plugin's prepare() reports an error.
std::unique_ptr<Execution> make_cpu_plugin_execution(const PluginPathRef& ref, const Problem& p, const HostInputs& in,
                                                     int G, const GateContext& ctx);

}  // namespace fa
