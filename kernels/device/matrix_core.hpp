// Pieces the AMD matrix-core paths (mfma, wmma) share beyond tile_loop.hpp: the key/value tile
// loader into LDS (K row-major, V transposed: both GEMMs then read contiguous k from LDS), a wave's
// own key limits inside its block's range, the split-count check of their gates, and their
// execution (producer kernel, then the combine when G > 1).
#pragma once
#include <fmt/format.h>

#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"
#include "kernels/device/tile_loop.hpp"

namespace fa::gpu::mc {

// Keys [kv0, kv0 + BN) of the block's kv head into LDS: ks[key * KS + d] and vt[d * VS + key], in
// 16-byte global loads (D % 16 == 0 keeps every row 16-byte aligned). Keys at or past `end` are
// zeros: their scores are masked, and a zero V keeps P * V = 0 instead of 0 * garbage.
template <int BN, int KS, int VS>
__device__ inline void load_kv_tile(const AttnArgs& a, const tile::BlockCoords& c, int64_t kv0, int64_t end,
                                    uint16_t* ks, uint16_t* vt, int tid, int threads) {
  const int chunks = a.D / 8;
  const int64_t base = c.b * a.k_sb + c.hk * a.k_sh;
  for (int idx = tid; idx < BN * chunks; idx += threads) {
    const int j = idx / chunks, d = (idx % chunks) * 8;
    const bool in = kv0 + j < end;
    const int64_t at = base + (kv0 + j) * a.k_ss + d;
    uint4 kq{0u, 0u, 0u, 0u}, vq{0u, 0u, 0u, 0u};
    if (in) {
      kq = *reinterpret_cast<const uint4*>(a.k + at);
      vq = *reinterpret_cast<const uint4*>(a.v + at);
    }
    uint32_t* kdst = reinterpret_cast<uint32_t*>(ks + j * KS + d);  // KS % 2 == 0: 4-byte aligned
    kdst[0] = kq.x, kdst[1] = kq.y, kdst[2] = kq.z, kdst[3] = kq.w;
    const uint32_t vw[4] = {vq.x, vq.y, vq.z, vq.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) vt[(d + e) * VS + j] = uint16_t(vw[e / 2] >> (16 * (e % 2)));
  }
}

// A wave's rows [q0, q0 + rows) within the block's key range: tiles from `end` on hold nothing it
// sees (it skips their arithmetic but still loads with the block); tiles ending at or before
// `unmasked` need no mask. A wave wholly past S has end = kr.begin.
struct WaveKeys {
  int64_t end, unmasked;
};
__device__ inline WaveKeys wave_keys(const AttnArgs& a, tile::BlockCoords wave, int rows, const KeyRange& kr) {
  if (wave.q0 >= a.S) return {kr.begin, kr.begin};
  const int64_t sees = visible_keys(min(wave.q0 + rows, a.S) - 1, a.S, a.Sk, a.causal);
  return {sees < kr.end ? sees : kr.end, tile::unmasked_end(a, wave, kr)};
}

// G = 0 runs unsplit; 2, 4, 8, 16 write fp32 partials that launch_combine folds.
inline std::optional<std::string> split_gate(const char* path, const Problem& p, int G) {
  if (G != 0 && (G < 2 || G > 16 || (G & (G - 1))))
    return fmt::format("{} needs G in 0, 2, 4, 8, 16 (got {})", path, G);
  if (p.B * (G > 1 ? G : 1) > 65535 || p.H > 65535) return std::string("B*G or H exceeds the grid");
  if (p.kv_cache) return std::string("kv_cache problems run on the kv-cache path");
  return std::nullopt;
}

using Launcher = void (*)(const AttnArgs&, DType, Stream);

class Execution : public GpuExecution {
 public:
  Execution(const Problem& p, const HostInputs& in, int G, const GateContext& ctx, Launcher l)
      : GpuExecution(p, in, ctx, G), launcher_(l) {
    args_.G = G > 1 ? G : 0;
  }

 protected:
  void launch() override {
    launcher_(args_, p_.dtype, stream_);
    if (args_.G > 1) launch_combine(args_, p_.dtype, stream_);
  }

 private:
  Launcher launcher_;
};

}  // namespace fa::gpu::mc
