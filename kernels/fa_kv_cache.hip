// kv-cache: autoregressive decoding against a cache. The cache buffers hold Sk slots, of which
// [0, offset) are filled; the launch appends the new token's K/V at [offset, Sk) (offset =
// Sk - S, S == 1) and then runs the decode kernels over all Sk keys. The record checks the cache
// contents after the append as well as the output.
#include <fmt/format.h>

#include "harness/path_registry.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {
namespace {

// new tokens: compact [B][S][Hk][D]; cache: the problem's K/V layout.
__global__ void kv_append(AttnArgs a, const uint16_t* k_new, const uint16_t* v_new, uint16_t* k_cache,
                          uint16_t* v_cache, int offset) {
  const int s = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int64_t src = ((int64_t(b) * gridDim.x + s) * a.Hk + hk) * a.D;
  const int64_t dst = b * a.k_sb + int64_t(offset + s) * a.k_ss + hk * a.k_sh;
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    k_cache[dst + d] = k_new[src + d];
    v_cache[dst + d] = v_new[src + d];
  }
}

class KvCacheExecution : public DecodeExecution {
 public:
  using DecodeExecution::DecodeExecution;

 protected:
  void before_decode() override {
    kv_append<<<dim3(int(p_.S), args_.Hk, args_.B), args_.D <= 64 ? 64 : 128, 0, stream_>>>(
        args_, k_new_.as<uint16_t>(), v_new_.as<uint16_t>(), k_.as<uint16_t>(), v_.as<uint16_t>(),
        int(p_.kv_cache_offset()));
    FA_GPU_CHECK_LAUNCH("kv_append");
  }
};

std::optional<std::string> kv_cache_supports(const Problem& p, int G, const GateContext& ctx) {
  if (!p.kv_cache) return std::string("needs a kv_cache problem (kv_cache = 1)");
  return decode_gate(p, G, ctx);
}

PathRow kv_cache_row(const DeviceFacts&) {
  PathRow r{"kv-cache", "gpu", "append the new token's K/V at the cache offset, then decode",
            "kv_cache = 1; " + decode_gate_doc(), false, kv_cache_supports,
            [](const Problem& p, const HostInputs& in, int, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<KvCacheExecution>(p, in, ctx);
            }};
  r.auto_rank = 60;  // the only GPU path whose gate admits kv_cache problems
  r.tiles = kDecodeTile;
  r.own_split_rule = kDecodeSplitRule;
  return r;
}
FA_REGISTER_PATH(kv_cache_row);

}  // namespace
}  // namespace fa::gpu
