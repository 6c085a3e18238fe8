// One row of the split-K combine, shared by the combine kernel (kernels/device/combine.hip) and the
// paths that fold their own splits at the end of their kernel (mma-decode's last block).
// O = sum_g w_g O_g / sum_g w_g and LSE = max + log(sum_g w_g), w_g = exp(LSE_g - max), in fp32
// with precise expf/logf. Empty splits (LSE_g = -inf) weigh nothing; a row with every split
// empty gets O = 0, LSE = -inf.
//
// A team of ceil(D / VEC) threads takes the row, thread `lane` the VEC adjacent columns from
// lane * VEC (VEC = 4: one 16-byte load a split, for D % 4 == 0). A thread issues the loads of
// kCombineChunk splits (their LSEs and its columns) before it uses any, then folds the chunk into
// a running max, weight sum and sum with one rescale a chunk (the online-softmax update): one
// memory latency a chunk, no shared memory, no barrier.
#pragma once
#include "kernels/device/device_common.hpp"

namespace fa::gpu {

constexpr int kCombineChunk = 16;  // splits whose loads are in flight at once

template <int VEC>
struct alignas(4 * VEC) CombineCols {  // one 16-byte load for VEC = 4
  float v[VEC];
};

template <typename T, int VEC>
__device__ inline void combine_row(const AttnArgs& a, int b, int h, int s, int lane) {
  const int d0 = lane * VEC;
  const int64_t pr0 = partial_row(a, b, h, 0, s);  // split g: partial row pr0 + g * S
  const float* lse = a.lse_part + pr0;
  const float* op = a.o_part + pr0 * a.D + d0;
  const int64_t o_stride = int64_t(a.S) * a.D;

  float m = -INFINITY, l = 0.f, acc[VEC] = {};
  for (int g0 = 0; g0 < a.G; g0 += kCombineChunk) {
    float lg[kCombineChunk];
    CombineCols<VEC> o[kCombineChunk];
#pragma unroll
    for (int i = 0; i < kCombineChunk; ++i) {
      lg[i] = -INFINITY;
      if (g0 + i < a.G) {
        lg[i] = lse[int64_t(g0 + i) * a.S];
        o[i] = *reinterpret_cast<const CombineCols<VEC>*>(op + int64_t(g0 + i) * o_stride);
      }
    }
    float cm = m;
#pragma unroll
    for (int i = 0; i < kCombineChunk; ++i) cm = fmaxf(cm, lg[i]);
    if (cm == -INFINITY) continue;  // every split so far is empty
    const float rescale = expf(m - cm);  // 0 while m is still -inf
    l *= rescale;
#pragma unroll
    for (int c = 0; c < VEC; ++c) acc[c] *= rescale;
#pragma unroll
    for (int i = 0; i < kCombineChunk; ++i) {
      const float w = expf(lg[i] - cm);  // an empty split (or one past G) weighs 0
      l += w;
#pragma unroll
      for (int c = 0; c < VEC; ++c) acc[c] = w != 0.f ? fmaf(w, o[i].v[c], acc[c]) : acc[c];  // its partial is never written
    }
    m = cm;
  }

  uint16_t* orow = a.o + q_at(a, b, s, h) + d0;
  const float inv = m == -INFINITY ? 0.f : 1.f / l;
#pragma unroll
  for (int c = 0; c < VEC; ++c)
    if (d0 + c < a.D) orow[c] = T::store(acc[c] * inv);
  if (lane == 0) a.lse[lse_row(a, b, h, s)] = m == -INFINITY ? -INFINITY : m + logf(l);
}

}  // namespace fa::gpu
