// Device pieces the AMD matrix-core paths (mfma, wmma) share beyond tile_loop.hpp: the key/value
// tile loader into LDS (K row-major, V transposed: both GEMMs then read contiguous k from LDS), a
// wave's own key limits inside its block's range, and the SERVE instances' block plan (where keys
// live, paged or not; softcap/ALiBi and the scale the softmax then applies). Their host half
// (capabilities, execution) is kernels/amd/matrix_core_host.hpp.
#pragma once
#include <type_traits>

#include "kernels/device/tile_loop.hpp"

namespace fa::gpu::mc {

// Where the block's keys live: key j of its sequence and kv head at at(j). The dense instances
// (SERVE false: no serving view, or one without pages) step k_ss from key 0, found once a block;
// the SERVE instances go through the serving view (KeyRows: thd offsets, the page table).
struct DenseKeys {
  int64_t base, ss;
  __device__ int64_t at(int64_t j) const { return base + j * ss; }
};
template <bool SERVE>
__device__ inline auto block_key_rows(const AttnArgs& a, const tile::BlockCoords& c) {
  if constexpr (SERVE) return key_rows(a, c.b, c.hk);
  else return DenseKeys{k_at(a, c.b, 0, c.hk), a.k_ss};
}

// The element the kernels keep in LDS and registers: a 16-bit dtype's bits, or an FP8 byte.
template <typename T>
using Elem = std::conditional_t<T::kFp8, uint8_t, uint16_t>;

// Keys [kv0, kv0 + BN) of the block's kv head (`rows`: block_key_rows) into LDS: ks[key * KS + d]
// and vt[d * VS + key], in 16-byte global loads (D * sizeof(E) % 16 == 0 keeps every row 16-byte
// aligned; a page holds whole rows, so paged rows are too). Keys at or past `end` are zeros: their
// scores are masked, and a zero V keeps P * V = 0 instead of 0 * garbage; nothing past the range is
// read, so nothing past the sequence's keys (nor past its last page-table entry).
template <int BN, int KS, int VS, typename E, typename Rows>
__device__ inline void load_kv_tile(const AttnArgs& a, const Rows& rows, int64_t kv0, int64_t end, E* ks, E* vt,
                                    int tid, int threads) {
  constexpr int kPer = 16 / sizeof(E), kPerWord = 4 / sizeof(E);  // elements a 16-byte chunk, a word
  static_assert(KS * sizeof(E) % 4 == 0, "K rows are stored a word at a time");
  const E* const k = reinterpret_cast<const E*>(a.k);
  const E* const v = reinterpret_cast<const E*>(a.v);
  const int chunks = a.D / kPer;
  for (int idx = tid; idx < BN * chunks; idx += threads) {
    const int j = idx / chunks, d = (idx % chunks) * kPer;
    const bool in = kv0 + j < end;
    uint4 kq{0u, 0u, 0u, 0u}, vq{0u, 0u, 0u, 0u};
    if (in) {
      const int64_t at = rows.at(kv0 + j) + d;
      kq = *reinterpret_cast<const uint4*>(k + at);
      vq = *reinterpret_cast<const uint4*>(v + at);
    }
    uint32_t* kdst = reinterpret_cast<uint32_t*>(ks + j * KS + d);
    kdst[0] = kq.x, kdst[1] = kq.y, kdst[2] = kq.z, kdst[3] = kq.w;
    const uint32_t vw[4] = {vq.x, vq.y, vq.z, vq.w};
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      vt[(d + e) * VS + j] = E(vw[e / kPerWord] >> (8 * sizeof(E) * (e % kPerWord)));
  }
}

// P (after the softmax's exp2: 0 <= p <= 1) as the element of the PV product: the 16-bit dtype's
// bits, or for FP8 inputs the e4m3 of their family (OCP e4m3 or e4m3fnuz: harness/dtype.cpp's
// fp8_p), as the paths declare (PathRow::fp8_p) and the reference rounds.
template <typename T>
__device__ inline uint32_t p_elem(float p) {
  if constexpr (T::kFp8) return fp8_e4m3_from_unit(p, (fp8_format(T::kKind).nan == Fp8Nan::neg_zero ? kE4M3Fnuz : kE4M3).bias);
  else return T::store(p);
}

// The score transform of a block (softcap, ALiBi: harness/conventions.hpp) and the scale its
// softmax applies. SERVE instances with a transform apply it to every score of every tile, scaled
// into the log2 domain first (ScoreMod::apply), before the mask; the softmax then scales by 1.
// Otherwise (mod.on false) the softmax scales the raw scores, as the dense instances always do.
struct BlockScores {
  ScoreMod mod;
  float scale_log2;
};
template <bool SERVE>
__device__ inline BlockScores block_scores(const AttnArgs& a, const tile::BlockCoords& c) {
  BlockScores bs{ScoreMod{}, a.scale_log2};
  if constexpr (SERVE) {
    bs.mod = score_mod(a, c.b, c.h);
    if (bs.mod.on) bs.scale_log2 = 1.f;
  }
  return bs;
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
