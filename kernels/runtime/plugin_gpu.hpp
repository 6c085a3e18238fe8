// Device execution of a FA_PLUGIN_GPU plugin path (plain C++ header; kernels/plugin_gpu.hip holds
// the GPU side): GpuExecution's buffers, poison, events and cold flush, with guard bytes after O,
// LSE and the workspace; launch() is the plugin's run() on the execution's stream. Only built with
// a GPU backend (paths/plugin_paths.cpp skips GPU plugin paths elsewhere with the reason).
#pragma once
#include <memory>

#include "harness/plugin_abi.hpp"

namespace fa::gpu {

// Throws std::runtime_error naming the path when the plugin's prepare() reports an error.
std::unique_ptr<Execution> make_gpu_plugin_execution(const PluginPathRef& ref, const Problem& p, const HostInputs& in,
                                                     int G, const GateContext& ctx);

}  // namespace fa::gpu
