// The GPU half as the host harness sees it (plain C++, no GPU headers): device facts, and the
// gates and preparers of the GPU paths, defined in kernels/*.hip. Only built with a GPU backend.
#pragma once
#include "harness/path.hpp"

namespace fa::gpu {

DeviceFacts query_device();  // gpu == false with the reason when no device answers

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written: the median of
// `reps` event-timed copies of `bytes` (the peer for memory-bound paths' GB/s).
double copy_bandwidth_gbps(size_t bytes, int reps);

#define FA_GPU_PATH(fn)                                                                         \
  std::optional<std::string> fn##_supports(const Problem& p, int G, const GateContext& ctx);   \
  std::unique_ptr<Execution> fn##_prepare(const Problem& p, const HostInputs& in, int G, const GateContext& ctx);
FA_GPU_PATH(naive)
FA_GPU_PATH(tiled)
FA_GPU_PATH(decode)
FA_GPU_PATH(kv_cache)
FA_GPU_PATH(splitk)
FA_GPU_PATH(mma)
FA_GPU_PATH(mma_decode)
#undef FA_GPU_PATH

}  // namespace fa::gpu
