// The tile loop the matrix-core paths (mma, mfma, wmma) share, as device functions over one block
// of query rows: which block a grid index is, which keys it visits (causal limit, split range),
// which tiles need a mask, the online-softmax update in the exp2 domain with the scale folded in,
// and the epilogue (O = acc / l, LSE; masked rows O = 0, LSE = -inf; fp32 partials when G > 1).
// Layout-free: each path applies these to the rows and columns its fragment layout gives a lane.
#pragma once
#include "harness/conventions.hpp"
#include "kernels/device/device_common.hpp"

namespace fa::gpu::tile {

// One block's place in the grid (q tiles, H, B * G): batch, head, its kv head, split, first row.
struct BlockCoords {
  int b, h, hk, g, q0;
};

// Causal blocks take their q tile in reverse, so the heaviest (last) tiles are scheduled first.
__device__ inline BlockCoords block_coords(const AttnArgs& a, int block_m) {
  const int G = a.G > 1 ? a.G : 1;
  const int qt = a.causal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  BlockCoords c;
  c.h = blockIdx.y;
  c.b = blockIdx.z / G;
  c.g = blockIdx.z % G;
  c.hk = c.h / (a.H / a.Hk);
  c.q0 = qt * block_m;
  return c;
}

// Keys the block's rows [q0, q0 + block_m) visit in split g: the causal limit of its last row,
// cut into G splits of whole block_n tiles (conventions.hpp: split_range).
__device__ inline KeyRange block_keys(const AttnArgs& a, const BlockCoords& c, int block_m, int block_n) {
  const int last = min(c.q0 + block_m, a.S) - 1;
  return split_range(visible_keys(last, a.S, a.Sk, a.causal), c.g, a.G > 1 ? a.G : 1, block_n);
}

// Keys below this are visible to every row of the block and inside the range: tiles that end at
// or before it need no mask; only the causal diagonal and the range's last tile do.
__device__ inline int64_t unmasked_end(const AttnArgs& a, const BlockCoords& c, const KeyRange& kr) {
  const int64_t first_row_sees = visible_keys(c.q0, a.S, a.Sk, a.causal);
  return first_row_sees < kr.end ? first_row_sees : kr.end;
}

// Keys [.., row_key_end) of the range that `row` sees. Rows past S are padding: they see the
// range so their arithmetic stays finite; nothing of theirs is stored.
__device__ inline int64_t row_key_end(const AttnArgs& a, int row, int64_t kr_end) {
  if (row >= a.S) return kr_end;
  const int64_t v = visible_keys(row, a.S, a.Sk, a.causal);
  return v < kr_end ? v : kr_end;
}
__device__ inline bool key_visible(const AttnArgs& a, int row, int64_t key, int64_t kr_end) {
  return key < row_key_end(a, row, kr_end);
}

// Columns [0, n) of the tile starting at kv0 that `row` sees, n in [0, block_n]: one compare a
// score inside the tile instead of a 64-bit visibility test.
__device__ inline int tile_cols_visible(const AttnArgs& a, int row, int64_t kv0, int64_t kr_end, int block_n) {
  const int64_t n = row_key_end(a, row, kr_end) - kv0;
  return n < 0 ? 0 : (n > block_n ? block_n : int(n));
}

// Online softmax for one row. `m` is the running max of raw scores (unscaled); scores become
// exp2(s * scale_log2 - neg_m) with `neg_m` from here, one FFMA each. Returns the factor the
// row's sum and accumulator are multiplied by. A row with nothing visible yet (max -inf) keeps
// neg_m = 0, so its masked (-inf) scores give exactly 0 and its state stays zero.
__device__ inline float softmax_rescale(float& m, float tile_max, float scale_log2, float& neg_m) {
  const float m_new = fmaxf(m, tile_max);
  const float m_scaled = m_new == -INFINITY ? 0.f : m_new * scale_log2;
  const float alpha = fast_exp2((m == -INFINITY ? -INFINITY : m * scale_log2) - m_scaled);
  m = m_new;
  neg_m = -m_scaled;
  return alpha;
}

// The row's epilogue factors: 1/l (0 for a row that saw nothing) and its LSE in natural log.
struct RowEnd {
  float inv_l, lse;
};
__device__ inline RowEnd row_end(float m, float l, float scale_log2) {
  if (!(l > 0.f)) return {0.f, -INFINITY};
  return {1.f / l, (m * scale_log2 + log2f(l)) * kLn2};
}

// Stores two adjacent output columns (d, d + 1) of row s: O in the dtype, or fp32 partials when
// the launch splits (G > 1). d is even and D is even, so the pair is one aligned 4- or 8-byte store.
template <typename T>
__device__ inline void store_pair(const AttnArgs& a, const BlockCoords& c, int s, int d, float v0, float v1) {
  if (a.G > 1) {
    const int64_t pr = partial_row(a, c.b, c.h, c.g, s);
    *reinterpret_cast<float2*>(a.o_part + pr * a.D + d) = make_float2(v0, v1);
  } else {
    uint16_t* o = a.o + c.b * a.q_sb + int64_t(s) * a.q_ss + c.h * a.q_sh + d;
    *reinterpret_cast<uint32_t*>(o) = uint32_t(T::store(v0)) | (uint32_t(T::store(v1)) << 16);
  }
}

__device__ inline void store_lse(const AttnArgs& a, const BlockCoords& c, int s, float lse) {
  if (a.G > 1) a.lse_part[partial_row(a, c.b, c.h, c.g, s)] = lse;
  else a.lse[lse_row(a, c.b, c.h, s)] = lse;
}

}  // namespace fa::gpu::tile
