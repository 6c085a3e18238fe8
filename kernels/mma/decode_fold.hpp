// mma-decode's block epilogue (kernels/mma/fa_mma_decode.hip): its warps' online-softmax states,
// folded through shared memory into the block's rows of O (or the chunk's partials), then, where
// the keys were cut into chunks, the chunks' combine by the last block of the (batch, kv head).
#pragma once
#include "kernels/device/combine_row.hpp"
#include "kernels/device/tile_loop.hpp"

namespace fa::gpu {

// `fold`: per warp K::FOLD_WARP floats, its 16 rows of the accumulator (D floats each, unnormalised,
// at its own max), then the rows' max and sum; the block's warps wrote theirs and met. Stores the
// block's `group x S` packed rows (row = head_in_group * S + s) of chunk `chunk` for (b, hk).
template <typename T, typename K>
__device__ inline void decode_fold_store(const AttnArgs& a, const float* fold, int b, int hk, int chunk, float scale_log2,
                                         int* counters) {
  const int tid = threadIdx.x, group = a.H / a.Hk, rows = group * a.S;
  for (int idx = tid; idx < rows * (K::D / 2); idx += K::THREADS) {
    const int r = idx / (K::D / 2), d = 2 * (idx % (K::D / 2));
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < K::WARPS; ++w) mx = fmaxf(mx, fold[w * K::FOLD_WARP + 16 * K::D + r]);
    float L = 0.f, o0 = 0.f, o1 = 0.f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int w = 0; w < K::WARPS; ++w) {
        const float* f = fold + w * K::FOLD_WARP;
        const float mw = f[16 * K::D + r];
        const float wt = mw == -INFINITY ? 0.f : fast_exp2((mw - mx) * scale_log2);
        L += wt * f[16 * K::D + 16 + r];
        o0 += wt * f[r * K::D + d];
        o1 += wt * f[r * K::D + d + 1];
      }
    }
    const tile::RowEnd e = tile::row_end(mx, L, scale_log2);
    const int h = hk * group + r / a.S, s_row = r % a.S;
    const tile::BlockCoords c{b, h, hk, chunk, 0};
    tile::store_pair<T>(a, c, s_row, d, o0 * e.inv_l, o1 * e.inv_l);
    if (d == 0) tile::store_lse(a, c, s_row, e.lse);
  }

  // The chunks' combine, by the last block of the (batch, kv head) to finish: every block fences
  // its partials before it counts itself in, so the last one sees them all. This replaces a
  // combine kernel whose launch waited behind this kernel's tail (H100, (1,32,8,1,131072,128):
  // 204 us with the kernel, of which mma_decode_fwd 191 and combine_splits 4.1).
  if (a.G > 1) {
    __shared__ int last;
    __threadfence();
    __syncthreads();
    int* const count = counters + int64_t(b) * a.Hk + hk;
    if (tid == 0) last = atomicAdd(count, 1) == a.G - 1;
    __syncthreads();
    if (last) {
      __threadfence();
      constexpr int team = K::D / 4, per = K::THREADS / team;
      for (int r = tid / team; r < rows; r += per) combine_row<T, 4>(a, b, hk * group + r / a.S, r % a.S, tid % team);
      if (tid == 0) *count = 0;  // the next launch counts from zero
    }
  }
}

}  // namespace fa::gpu
