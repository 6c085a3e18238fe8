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

// The online-softmax step over NR rows a lane holds parts of, NT blocks of 2 scores each
// (`at(r, j, e)`): each row's max over the lanes sharing it (lanes_max reduces a lane's max), the
// scores turned into exp2(s * scale_log2 - max) in place, this lane's part of the row sums l updated
// (the row's lanes' parts add up at the end), and in alpha the factors the rows' accumulators are to
// be multiplied by. POLY of every 8 exponentials run on the FMA pipe (exp2_poly.hpp), the rest on
// MUFU; 0 compiles to MUFU alone. Returns whether the factors are to be applied.
// LAZY >= 0 makes the rescale lazy (FlashAttention-4's conditional rescaling): while no score of
// the warp's rows passes its row's running max by more than 2^LAZY (exp2 domain), the rows keep their
// max, so the exponentials stay below 2^LAZY, and the lanes' max reduction and the accumulators'
// rescale are skipped (one warp vote: every lane takes the same branch; alpha is then 1). The
// offset m need not be the true max: O and l are both relative to it, and the LSE is m's plus log l.
// LAZY = 0 skips only where no max moved, and computes what the eager step computes, bit for bit.
// LAZY < 0: eager, the factors always returned.
// The step in two phases, for a caller that does something between them (mma_ws_fwd's
// pack_in_softmax waits for its P V there): softmax_rows_max (the maxes, m and alpha; the offsets the
// exponentials subtract, in the returned step) and softmax_rows_exp (the exponentials and sums), which
// calls `each(r, j)` once block j of row r has its exponentials in place.
template <int NR>
struct SoftmaxStep {
  float neg_m[NR];  // -m * scale_log2 a row (0 for a row with no score yet)
  bool grow;        // the factors are to be applied
};
struct SoftmaxNoHook {
  template <typename... A>
  __device__ void operator()(A...) const {}
};
template <int NT, int NR, int LAZY, typename At, typename LanesMax>
__device__ inline SoftmaxStep<NR> softmax_rows_max(At&& at, float (&m)[NR], float scale_log2, float (&alpha)[NR],
                                                  LanesMax&& lanes_max) {
  SoftmaxStep<NR> st;
  float mx[NR];
  st.grow = LAZY < 0;
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    mx[r] = -INFINITY;
#pragma unroll
    for (int j = 0; j < NT; ++j) mx[r] = fmaxf(mx[r], fmaxf(at(r, j, 0), at(r, j, 1)));
    if constexpr (LAZY >= 0) st.grow |= mx[r] * scale_log2 > m[r] * scale_log2 + float(LAZY);  // m = -inf: any finite score
  }
  if constexpr (LAZY >= 0) st.grow = warp_any(st.grow);
  if (st.grow) {
#pragma unroll
    for (int r = 0; r < NR; ++r) alpha[r] = tile::softmax_rescale(m[r], lanes_max(mx[r]), scale_log2, st.neg_m[r]);
  } else {
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      st.neg_m[r] = m[r] == -INFINITY ? 0.f : -m[r] * scale_log2;  // a row with no score yet: all -inf
      alpha[r] = 1.f;
    }
  }
  return st;
}
template <int NT, int NR, int POLY, typename At, typename Each = SoftmaxNoHook>
__device__ inline void softmax_rows_exp(At&& at, const SoftmaxStep<NR>& st, float (&l)[NR], float scale_log2,
                                        const float (&alpha)[NR], Each&& each = {}) {
  static_assert(POLY >= 0 && POLY <= 8, "a share of 8");
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = at(r, j, e);
        const float arg = fmaf(x, scale_log2, st.neg_m[r]);
        x = exp2_on_fma(2 * j + e, POLY) ? exp2_poly(arg) : fast_exp2(arg);
        sum += x;
      }
      each(r, j);
    }
    l[r] = l[r] * alpha[r] + sum;
  }
}
template <int NT, int NR, int POLY, int LAZY, typename At, typename LanesMax>
__device__ inline bool softmax_rows(At&& at, float (&m)[NR], float (&l)[NR], float scale_log2, float (&alpha)[NR],
                                    LanesMax&& lanes_max) {
  const SoftmaxStep<NR> st = softmax_rows_max<NT, NR, LAZY>(at, m, scale_log2, alpha, lanes_max);
  softmax_rows_exp<NT, NR, POLY>(at, st, l, scale_log2, alpha);
  return st.grow;
}
// A quad of lanes holds a row of the C layout.
__device__ inline float quad_max(float x) {
  x = fmaxf(x, shfl_xor(x, 1, 4));
  return fmaxf(x, shfl_xor(x, 2, 4));
}
// One row of the C layout, eager: `at(j, e)` is this lane's score e of block j; returns alpha.
template <int NT, typename At>
__device__ inline float softmax_quad_row(At&& at, float& m, float& l, float scale_log2) {
  float mr[1] = {m}, lr[1] = {l}, alpha[1];
  softmax_rows<NT, 1, 0, -1>([&](int, int j, int e) -> float& { return at(j, e); }, mr, lr, scale_log2, alpha, quad_max);
  m = mr[0], l = lr[0];
  return alpha[0];
}
// A thread's NR rows of the C layout (`at(r, j, e)`: its score e of block j of row r), with
// softmax_rows' POLY and LAZY.
template <int NT, int NR, int POLY, int LAZY, typename At>
__device__ inline bool softmax_quad_rows(At&& at, float (&m)[NR], float (&l)[NR], float scale_log2, float (&alpha)[NR]) {
  return softmax_rows<NT, NR, POLY, LAZY>(at, m, l, scale_log2, alpha, quad_max);
}
// NC columns of the C layout (a transposed product's rows, as mma-decode's narrow instances hold
// queries), lazily (LAZY = kLazyRescaleLog2): the 8 lanes of one lane % 4 hold a column, each its
// rows lane / 4 and lane / 4 + 8 of every 16-row block; `at(c, j, h)` is this lane's score of column
// c in row 8 h + lane / 4 of block j.
constexpr int kLazyRescaleLog2 = 8;
template <int NT, int NC, typename At>
__device__ inline bool softmax_cols_lazy(At&& at, float (&m)[NC], float (&l)[NC], float scale_log2,
                                         float (&alpha)[NC]) {
  return softmax_rows<NT, NC, 0, kLazyRescaleLog2>(at, m, l, scale_log2, alpha, [](float x) {
    x = fmaxf(x, shfl_xor(x, 4, 32));
    x = fmaxf(x, shfl_xor(x, 8, 32));
    return fmaxf(x, shfl_xor(x, 16, 32));
  });
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
