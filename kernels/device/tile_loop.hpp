// The tile loop the matrix-core paths (mma, mfma, wmma) share, as device functions over one block
// of query rows: which block a grid index is, which keys it visits (causal limit, window, the
// sequence's own lengths, split range), which tiles need a mask, the online-softmax update in the
// exp2 domain with the scale folded in, and the epilogue (O = acc / l, LSE; rows that see no key
// O = 0, LSE = -inf; fp32 partials when G > 1). The range arithmetic is tile_range.hpp's (host and
// device, tested on the CPU). Kernels that take serving fields (mfma, wmma) use the serving-aware
// helpers, whose null-serving path (AttnArgs.serving null) is the dense expression the kernels
// always had; mma, whose gate refuses them, uses the dense forms. Layout-free: each path applies
// these to the rows and columns its fragment layout gives a lane.
#pragma once
#include "harness/conventions.hpp"
#include "kernels/device/device_common.hpp"
#include "kernels/device/tile_range.hpp"

namespace fa::gpu::tile {

// One block's place in the grid (q tiles, H, B * G): batch, head, its kv head, split, first row.
struct BlockCoords {
  int b, h, hk, g, q0;
};

// The first row of q tile qx of nq. Causal blocks take their q tile in reverse, so the heaviest
// (last) tiles are scheduled first.
__device__ inline int q_tile_row0(const AttnArgs& a, int block_m, int qx, int nq) {
  return (a.causal ? nq - 1 - qx : qx) * block_m;
}

// The coordinates of q tile qx of nq, head h and z = b x G + g.
__device__ inline BlockCoords coords_of(const AttnArgs& a, int block_m, int qx, int nq, int h, int z) {
  const int G = a.G > 1 ? a.G : 1;
  BlockCoords c;
  c.h = h;
  c.b = z / G;
  c.g = z % G;
  c.hk = c.h / (a.H / a.Hk);
  c.q0 = q_tile_row0(a, block_m, qx, nq);
  return c;
}

// A block of a grid of (q tiles, H, B x G) blocks.
__device__ inline BlockCoords block_coords(const AttnArgs& a, int block_m) {
  return coords_of(a, block_m, int(blockIdx.x), int(gridDim.x), int(blockIdx.y), int(blockIdx.z));
}

// Item n of nq x hb in LPT order `o` (tile_range.hpp's lpt_block); `h` divides by H.
__device__ inline BlockCoords lpt_coords(const AttnArgs& a, int block_m, const LptOrder& o, int n, int nq,
                                         const FastDiv& h) {
  int qx, hb;
  lpt_block(o, n, qx, hb);
  const int z = h.div(hb);
  return coords_of(a, block_m, qx, nq, hb - z * a.H, z);
}

// A block of a grid of (q tiles, H, B x G) blocks that takes the item of its linear index's place in
// `o` (the hardware starts blocks in linear order).
__device__ inline BlockCoords block_coords_lpt(const AttnArgs& a, int block_m, const LptOrder& o, const FastDiv& h) {
  const int n = int(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  return lpt_coords(a, block_m, o, n, int(gridDim.x), h);
}

// The divisors of a walk's items (block_coords_at): q tiles nq, heads H, splits max(G, 1) and the
// GQA group H / Hk. The host sets them up once a launch (item_divs).
struct ItemDivs {
  FastDiv nq, h, g, group;
};
inline ItemDivs item_divs(const AttnArgs& a, int nq) {
  return ItemDivs{FastDiv(nq), FastDiv(a.H), FastDiv(a.G > 1 ? a.G : 1), FastDiv(a.H / a.Hk)};
}

// Work item `item` of a grid that walks its items in a loop (mma's sm_90 kernel, where its items
// are short and cost alike): the order of a (nq, H, B x G) grid, q tiles fastest, so one item a
// block reproduces block_coords (coords_of's divisions, here through d). The walk's items number
// below 2^31 (its launch's condition).
__device__ inline BlockCoords block_coords_at(const AttnArgs& a, int block_m, int item, const ItemDivs& d) {
  const int rest = d.nq.div(item), z = d.h.div(rest);
  BlockCoords c;
  c.h = rest - z * a.H;
  c.b = d.g.div(z);
  c.g = z - c.b * d.g.divisor();
  c.hk = d.group.div(c.h);
  c.q0 = q_tile_row0(a, block_m, item - rest * d.nq.divisor(), d.nq.divisor());
  return c;
}

// Sequence b as its rows see it: its own query and key counts and the window from the serving view;
// without one, the problem's S and Sk and no window.
__device__ inline SeqShape seq_shape(const AttnArgs& a, int b) {
  SeqShape sh{a.S, a.Sk, a.causal != 0, -1, -1};
  if (const ServingView* v = a.serving) {
    if (v->q_len) sh.sq = v->q_len[b];
    if (v->k_len) sh.sk = v->k_len[b];
    sh.left = v->window_left, sh.right = v->window_right;
  }
  return sh;
}

// Keys the block's rows [q0, q0 + block_m) visit in split g: the union of its rows' keys, cut into G
// splits of whole block_n tiles (tile_range.hpp: block_split); empty for a block past its sequence's
// queries. Without serving fields, dense_block_keys' expression.
__device__ inline KeyRange block_keys(const AttnArgs& a, const SeqShape& sh, const BlockCoords& c, int block_m,
                                      int block_n) {
  const int G = a.G > 1 ? a.G : 1;
  if (!a.serving) return dense_block_split(a.S, a.Sk, a.causal, c.q0, block_m, c.g, G, block_n);
  return block_split(sh, c.q0, block_m, c.g, G, block_n);
}

// The dense forms below (AttnArgs.serving null: every row sees keys from 0, S and Sk are every
// sequence's) serve mma and mma-decode, whose gates refuse serving fields. Kernels that take serving
// fields use block_keys, tile_range.hpp's rows_unmasked, row_keys_in and tile_cols, and o_row.

// block_keys without a serving branch: the causal limit of the block's last row, split from key 0.
// The serving branch alone, never taken, cost mma's sm_90a D=128 kernel 36 B more spill (40 -> 76)
// and its wgmma D=64 kernel 4 registers.
__device__ inline KeyRange dense_block_keys(const AttnArgs& a, const BlockCoords& c, int block_m, int block_n) {
  return dense_block_split(a.S, a.Sk, a.causal, c.q0, block_m, c.g, a.G > 1 ? a.G : 1, block_n);
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
  return {fast_rcp(l), (m * scale_log2 + fast_log2(l)) * kLn2};
}

// Where row s of the block's head starts in O: q_at (dense, or thd's packed rows). Taken once a
// row: O stores may alias the serving view, so a q_at per store would re-read cu_q per store.
__device__ inline int64_t o_row(const AttnArgs& a, const BlockCoords& c, int s) { return q_at(a, c.b, s, c.h); }

// Stores N pairs of output columns of row s, which starts at o_at in O (o_row), columns (d0 + 8 j,
// d0 + 8 j + 1) = pair(j) (a float2), as the tensor-core fragments hold them: O in the dtype, or fp32
// partials when the launch splits (G > 1). d0 is even and D is even, so a pair is one aligned 4- or
// 8-byte store. The row's address is computed once, not once a pair (on the H100 the per-pair form
// took 27 instructions a pair, mostly 64-bit address arithmetic, in mma_ws_fwd's D = 64 epilogue).
// `live`: only pairs j < live are stored (an instance wider than the problem's D: the padded
// columns); N, the default, folds away.
template <typename T, int N, typename Pair>
__device__ inline void store_row_pairs(const AttnArgs& a, const BlockCoords& c, int s, int64_t o_at, int d0, int live,
                                       Pair&& pair) {
  if (a.G > 1) {
    float* const row = a.o_part + partial_row(a, c.b, c.h, c.g, s) * a.D + d0;
#pragma unroll
    for (int j = 0; j < N; ++j)
      if (j < live) *reinterpret_cast<float2*>(row + 8 * j) = pair(j);
  } else {
    uint16_t* const row = a.o + o_at + d0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (j >= live) continue;
      const float2 v = pair(j);
      *reinterpret_cast<uint32_t*>(row + 8 * j) = uint32_t(T::store(v.x)) | (uint32_t(T::store(v.y)) << 16);
    }
  }
}
template <typename T, int N, typename Pair>
__device__ inline void store_row_pairs(const AttnArgs& a, const BlockCoords& c, int s, int64_t o_at, int d0,
                                       Pair&& pair) {
  store_row_pairs<T, N>(a, c, s, o_at, d0, N, pair);
}
// The dense form (mma, mma-decode: no thd), row s at b * q_sb + s * q_ss + h * q_sh.
__device__ inline int64_t dense_o_row(const AttnArgs& a, const BlockCoords& c, int s) {
  return c.b * a.q_sb + int64_t(s) * a.q_ss + c.h * a.q_sh;
}
template <typename T, int N, typename Pair>
__device__ inline void store_row_pairs(const AttnArgs& a, const BlockCoords& c, int s, int d0, Pair&& pair) {
  store_row_pairs<T, N>(a, c, s, dense_o_row(a, c, s), d0, pair);
}
template <typename T, int N, typename Pair>
__device__ inline void store_row_pairs(const AttnArgs& a, const BlockCoords& c, int s, int d0, int live, Pair&& pair) {
  store_row_pairs<T, N>(a, c, s, dense_o_row(a, c, s), d0, live, pair);
}
// One pair: columns (d, d + 1) = (v0, v1).
template <typename T>
__device__ inline void store_pair(const AttnArgs& a, const BlockCoords& c, int s, int64_t o_at, int d, float v0,
                                  float v1) {
  store_row_pairs<T, 1>(a, c, s, o_at, d, [&](int) { return make_float2(v0, v1); });
}
template <typename T>
__device__ inline void store_pair(const AttnArgs& a, const BlockCoords& c, int s, int d, float v0, float v1) {
  store_pair<T>(a, c, s, dense_o_row(a, c, s), d, v0, v1);
}

__device__ inline void store_lse(const AttnArgs& a, const BlockCoords& c, int s, float lse) {
  if (a.G > 1) a.lse_part[partial_row(a, c.b, c.h, c.g, s)] = lse;
  else a.lse[lse_row(a, c.b, c.h, s)] = lse;
}

}  // namespace fa::gpu::tile
