// The sm80 tensor-core instructions the NVIDIA matrix-core paths (mma, mma-decode) share:
// ldmatrix (plain and transposed), mma.sync m16n8k16 with fp32 accumulation for fp16/bf16, and
// packing two floats into a dtype pair. Fragment layouts: kernels/device/fragment_layout.hpp.
// Defined only where mma.sync exists (FA_HAS_MMA_SM80); kernels guard their bodies the same way.
#pragma once
#include <type_traits>

#include "kernels/device/device_common.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/device/tile_loop.hpp"
#include "kernels/mma/exp2_poly.hpp"

namespace fa::gpu {

#if FA_HAS_MMA_SM80
__device__ inline uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ inline void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ inline void ldsm_x4_trans(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D += A B for one m16n8k16 tile (fragment_layout.hpp: mma_m16n8k16_{a,b,c}).
template <typename T>
__device__ inline void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, BF16>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// One accumulator row of S as the m16n8 C layout spreads it (mma.sync per 8 columns, and wgmma's
// accumulator per warp): a quad of lanes holds it, each lane 2 adjacent columns of every 8-column
// block. `at(j, e)` is this lane's score in block j, column 2 * (lane % 4) + e, e in 0, 1; NT blocks.

// Masks the columns outside [lo, hi) (tile::tile_cols) to -inf.
template <int NT, typename At>
__device__ inline void mask_quad_cols(At&& at, int lane, int lo, int hi) {
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int col = 8 * j + frag::mma_m16n8k16_c(lane, e).col;
      if (col < lo || col >= hi) at(j, e) = -INFINITY;
    }
}
// Masks the columns at or past n (tile::tile_cols_visible) to -inf: the dense kernels' mask.
template <int NT, typename At>
__device__ inline void mask_quad_row(At&& at, int lane, int n) {
  mask_quad_cols<NT>(at, lane, 0, n);
}

// The serving form of a tile row's scores (the kernels' SERVE instances): softcap and ALiBi
// (the block's ScoreMod, when on) on every column, which leaves the scores scaled into the log2
// domain (the row's softmax then runs with scale 1: serve_scale), then the columns outside `cols`
// masked. Row s of the block's sequence; the tile's first key kv0.
template <int NT, typename At>
__device__ inline void serve_quad_row(At&& at, int lane, float scale_log2, ScoreMod mod, int s, int kv0,
                                      tile::TileCols cols) {
  if (mod.on) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = 8 * j + frag::mma_m16n8k16_c(lane, e).col;
        at(j, e) = mod.apply(at(j, e) * scale_log2, s, kv0 + col);
      }
  }
  mask_quad_cols<NT>(at, lane, cols.lo, cols.hi);
}
// The scale the softmax of a serving instance applies: 1 where serve_quad_row transformed the scores.
__device__ inline float serve_scale(const AttnArgs& a, bool transform) { return transform ? 1.f : a.scale_log2; }

// What a block of mma's kernels (mma_fwd, mma_wg_fwd) visits and how it masks and scales: the SERVE
// instances' plan (the sequence's shape and key range, tiles outside the window never visited, edge
// tiles masked per row, softcap/ALiBi) or the dense one (the causal limit, split from key 0). `past`:
// a SERVE block wholly past its sequence's queries, which stores nothing (combine skips those rows).
struct MmaBlockPlan {
  tile::SeqShape sh{};
  KeyRange kr{}, unmasked{};
  int64_t no_mask_end = 0;
  bool transform = false, past = false;
  ScoreMod mod{};  // SERVE: the sequence and head's softcap and ALiBi (mod.on == transform)
  float scale_log2 = 0.f;
  int sq = 0, ntiles = 0;
};
template <bool SERVE>
__device__ inline MmaBlockPlan mma_block_plan(const AttnArgs& a, const tile::BlockCoords& c, int block_m, int block_n) {
  MmaBlockPlan pl;
  if constexpr (SERVE) {
    pl.sh = tile::seq_shape(a, c.b);
    pl.past = c.q0 >= pl.sh.sq;
    pl.kr = tile::block_keys(a, pl.sh, c, block_m, block_n);
    pl.unmasked = tile::rows_unmasked(pl.sh, c.q0, block_m, pl.kr);
    pl.mod = score_mod(a, c.b, c.h);
    pl.transform = pl.mod.on;
    pl.scale_log2 = serve_scale(a, pl.transform);
    pl.sq = pl.sh.sq;
  } else {
    pl.kr = tile::dense_block_keys(a, c, block_m, block_n);
    pl.no_mask_end = tile::unmasked_end(a, c, pl.kr);
    pl.scale_log2 = a.scale_log2;
    pl.sq = a.S;
  }
  pl.ntiles = pl.kr.end > pl.kr.begin ? int((pl.kr.end - pl.kr.begin + block_n - 1) / block_n) : 0;
  return pl;
}

// The online-softmax step of NT blocks of 2 scores a lane (tile::softmax_rescale): the lanes'
// max (lanes_max reduces a lane's max over the lanes sharing the row), the scores turned into
// exp2(s * scale_log2 - max) in place, this lane's part of the row sum l updated. Returns the
// factor the row's accumulator is to be multiplied by. POLY of every 8 exponentials are computed on
// the FMA pipe (exp2_poly.hpp), the rest by MUFU; 0 compiles to MUFU alone.
template <int NT, int POLY = 0, typename At, typename LanesMax>
__device__ inline float softmax_step(At&& at, float& m, float& l, float scale_log2, LanesMax&& lanes_max) {
  static_assert(POLY >= 0 && POLY <= 8, "a share of 8");
  float mx = -INFINITY;
#pragma unroll
  for (int j = 0; j < NT; ++j) mx = fmaxf(mx, fmaxf(at(j, 0), at(j, 1)));
  mx = lanes_max(mx);
  float neg_m;
  const float alpha = tile::softmax_rescale(m, mx, scale_log2, neg_m);
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float& x = at(j, e);
      const float arg = fmaf(x, scale_log2, neg_m);
      x = exp2_on_fma(2 * j + e, POLY) ? exp2_poly(arg) : fast_exp2(arg);
      sum += x;
    }
  l = l * alpha + sum;  // this lane's part; the row's lanes' parts add up at the end
  return alpha;
}
// A row of the C layout: a quad of lanes holds it.
template <int NT, int POLY = 0, typename At>
__device__ inline float softmax_quad_row(At&& at, float& m, float& l, float scale_log2) {
  return softmax_step<NT, POLY>(at, m, l, scale_log2, [](float x) {
    x = fmaxf(x, shfl_xor(x, 1, 4));
    return fmaxf(x, shfl_xor(x, 2, 4));
  });
}
// A column of the C layout (a transposed product's row, as mma-decode's narrow instances hold a
// query): the 8 lanes of one lane % 4 hold it, each its rows lane / 4 and lane / 4 + 8 of every
// 16-row block; `at(j, h)` is this lane's score in row 8 h + lane / 4 of block j.
template <int NT, typename At>
__device__ inline float softmax_col(At&& at, float& m, float& l, float scale_log2) {
  return softmax_step<NT>(at, m, l, scale_log2, [](float x) {
    x = fmaxf(x, shfl_xor(x, 4, 32));
    x = fmaxf(x, shfl_xor(x, 8, 32));
    return fmaxf(x, shfl_xor(x, 16, 32));
  });
}

// softmax_col for NC columns at once, with the rescale made lazy (FlashAttention-4's conditional
// rescaling): a tile none of whose scores passes its column's running max by more than
// kLazyRescaleLog2 (exp2 domain) keeps the max, so its exponentials stay below 2^kLazyRescaleLog2,
// and skips the lanes' max reduction and the accumulator's rescale; the factors then stay 1. One
// warp vote decides, so every lane takes the same branch. Returns whether the factors in alpha are
// to be applied. The offset m need not be the true max: O and l are both relative to it, and the
// fold (decode_fold.hpp) weighs the warps' states by their own m. `at(c, j, h)` is this lane's
// score of column c in row 8 h + lane / 4 of block j.
constexpr float kLazyRescaleLog2 = 8.f;
template <int NT, int NC, typename At>
__device__ inline bool softmax_cols_lazy(At&& at, float (&m)[NC], float (&l)[NC], float scale_log2,
                                         float (&alpha)[NC]) {
  bool grow = false;
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < NT; ++j) mx = fmaxf(mx, fmaxf(at(c, j, 0), at(c, j, 1)));
    grow |= mx * scale_log2 > m[c] * scale_log2 + kLazyRescaleLog2;  // m = -inf: any finite score
  }
  if (warp_any(grow)) {
#pragma unroll
    for (int c = 0; c < NC; ++c)
      alpha[c] = softmax_col<NT>([&](int j, int h) -> float& { return at(c, j, h); }, m[c], l[c], scale_log2);
    return true;
  }
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    const float neg_m = m[c] == -INFINITY ? 0.f : -m[c] * scale_log2;  // a column with no score yet: all -inf
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float& x = at(c, j, h);
        x = fast_exp2(fmaf(x, scale_log2, neg_m));
        sum += x;
      }
    l[c] += sum;
    alpha[c] = 1.f;
  }
  return false;
}

// The 8x8 matrix of 16-bit pairs that a warp holds in the C layout (lane: row lane / 4, columns
// 2 (lane % 4) and + 1), transposed in registers (movmatrix, sm_75+): each lane then holds its
// row of the transpose in the same layout (fragment_layout.hpp: movmatrix_m8n8_trans).
__device__ inline uint32_t movmatrix_trans(uint32_t x) {
  uint32_t r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

// Two floats rounded to nearest into the dtype, `lo` in the low half (the lower column).
template <typename T>
__device__ inline uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (std::is_same_v<T, BF16>) asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#endif

}  // namespace fa::gpu
