// Device pieces the AMD matrix-core paths (mfma, wmma) share beyond tile_loop.hpp: the key/value
// tile loader into LDS (K row-major, V transposed: both GEMMs then read contiguous k from LDS) and a
// wave's own key limits inside its block's range. Their host half (capabilities, execution) is
// kernels/runtime/matrix_core_host.hpp.
#pragma once
#include "kernels/device/tile_loop.hpp"

namespace fa::gpu::mc {

// Where key 0 of the block's sequence and kv head lives in K and V (dense, or thd's packed rows),
// once a block: the keys follow k_ss apart, as the gates refuse paged K/V (page_size).
__device__ inline int64_t kv_base(const AttnArgs& a, const tile::BlockCoords& c) { return k_at(a, c.b, 0, c.hk); }

// Keys [kv0, kv0 + BN) of the block's kv head (from `base`: kv_base) into LDS: ks[key * KS + d] and
// vt[d * VS + key], in 16-byte global loads (D % 16 == 0 keeps every row 16-byte aligned). Keys at
// or past `end` are zeros: their scores are masked, and a zero V keeps P * V = 0 instead of
// 0 * garbage; nothing past the range is read, so nothing past the sequence's keys.
template <int BN, int KS, int VS>
__device__ inline void load_kv_tile(const AttnArgs& a, int64_t base, int64_t kv0, int64_t end, uint16_t* ks,
                                    uint16_t* vt, int tid, int threads) {
  const int chunks = a.D / 8;
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

// A wave's rows [q0, q0 + rows) within the block's key range: tiles outside `seen` hold nothing it
// sees (it skips their arithmetic but still loads with the block: tile::tile_skipped); tiles inside
// `unmasked` need no mask (tile::tile_masked). A wave wholly past its sequence sees nothing.
struct WaveKeys {
  KeyRange seen, unmasked;
};
__device__ inline WaveKeys wave_keys(const tile::SeqShape& sh, int q0, int rows, const KeyRange& kr) {
  return {tile::clip(tile::rows_keys(sh, q0, rows), kr), tile::rows_unmasked(sh, q0, rows, kr)};
}

}  // namespace fa::gpu::mc
