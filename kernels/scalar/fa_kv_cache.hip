// kv-cache: autoregressive decoding against a cache. The cache buffers hold Sk slots, of which
// [0, offset) are filled; the launch appends the new token's K/V at [offset, Sk) (offset =
// Sk - S, S == 1; GpuExecution::append_kv, which mma and mma-decode share) and then runs the decode
// kernels over all Sk keys. The record checks the cache contents after the append as well as the
// output.
#include <fmt/format.h>

#include "harness/path_registry.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {
namespace {

class KvCacheExecution : public DecodeExecution {
 public:
  using DecodeExecution::DecodeExecution;

 protected:
  void before_decode() override { append_kv(); }
};

Capabilities kv_cache_caps() {
  Capabilities c = decode_caps();
  c.kv_cache = KvCache::needs;
  return c;
}

PathRow kv_cache_row(const DeviceFacts&) {
  PathRow r{"kv-cache", "gpu", "append the new token's K/V at the cache offset, then decode",
            decode_limits_doc(), false, nullptr,
            [](const Problem& p, const HostInputs& in, int, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<KvCacheExecution>(p, in, ctx);
            }};
  r.auto_rank = 51;  // behind mma-decode, which takes kv_cache too; ahead of decode (they never share a problem)
  r.tiles = kDecodeTile;
  r.own_split_rule = kDecodeSplitRule;
  r.declare(kv_cache_caps(), decode_limits);
  return r;
}
FA_REGISTER_PATH(kv_cache_row);

}  // namespace
}  // namespace fa::gpu
