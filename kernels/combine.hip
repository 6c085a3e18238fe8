// Split-K combine: for each (batch, head, query row), O = sum_g w_g O_g / sum_g w_g and
// LSE = max + log(sum_g w_g), with w_g = exp(LSE_g - max) in fp32 with precise expf/logf.
// Empty splits (LSE_g = -inf) weigh nothing; a row with every split empty gets O = 0, LSE = -inf.
//
// A team of ceil(D / VEC) threads takes one row, each thread VEC adjacent columns (VEC = 4, one
// 16-byte load a split, where D % 4 == 0). A thread issues the loads of kChunk splits (their LSEs
// and its columns) before it uses any, then folds the chunk into a running max, weight sum and
// sum with one rescale a chunk (the online-softmax update): one memory latency a chunk, no
// shared memory, no barrier. It sits between a path's producers and its result, so its latency
// is the path's: on the H100 (ncu, warm L2, unlocked clocks) it takes 6.9 us after aiter-2's
// 126 us mma kernel at G = 16 and 4.1 us after mma-decode's 191 us on (1,32,8,1,131072,128); the
// one-thread-a-column walk over every split it replaced (two dependent loads and an expf a step)
// took 13.1 and 7.8 us.
#include <algorithm>
#include <stdexcept>

#include "kernels/launchers.hpp"

namespace fa::gpu {
namespace {

constexpr int kChunk = 16;    // splits whose loads are in flight at once
constexpr int kBlock = 64;    // threads a block at least: small blocks spread short grids over SMs

template <int VEC>
struct alignas(4 * VEC) Cols {  // one 16-byte load for VEC = 4
  float v[VEC];
};

template <typename T, int VEC>
__global__ void combine_splits(AttnArgs a, int team) {
  const int rows_per_block = blockDim.x / team;
  const int local = threadIdx.x / team, lane = threadIdx.x % team;
  const int64_t row = int64_t(blockIdx.x) * rows_per_block + local;  // (b, h, s), s fastest
  if (local >= rows_per_block || row >= int64_t(a.B) * a.H * a.S) return;
  const int s = int(row % a.S), h = int(row / a.S % a.H), b = int(row / (int64_t(a.S) * a.H));
  const int d0 = lane * VEC;
  const int64_t pr0 = partial_row(a, b, h, 0, s);  // split g: partial row pr0 + g * S
  const float* lse = a.lse_part + pr0;
  const float* op = a.o_part + pr0 * a.D + d0;
  const int64_t o_stride = int64_t(a.S) * a.D;

  float m = -INFINITY, l = 0.f, acc[VEC] = {};
  for (int g0 = 0; g0 < a.G; g0 += kChunk) {
    float lg[kChunk];
    Cols<VEC> o[kChunk];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      lg[i] = -INFINITY;
      if (g0 + i < a.G) {
        lg[i] = lse[int64_t(g0 + i) * a.S];
        o[i] = *reinterpret_cast<const Cols<VEC>*>(op + int64_t(g0 + i) * o_stride);
      }
    }
    float cm = m;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) cm = fmaxf(cm, lg[i]);
    if (cm == -INFINITY) continue;  // every split so far is empty
    const float rescale = expf(m - cm);  // 0 while m is still -inf
    l *= rescale;
#pragma unroll
    for (int c = 0; c < VEC; ++c) acc[c] *= rescale;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const float w = expf(lg[i] - cm);  // an empty split (or one past G) weighs 0
      l += w;
#pragma unroll
      for (int c = 0; c < VEC; ++c) acc[c] = w != 0.f ? fmaf(w, o[i].v[c], acc[c]) : acc[c];  // its partial is never written
    }
    m = cm;
  }

  uint16_t* orow = a.o + b * a.q_sb + int64_t(s) * a.q_ss + h * a.q_sh + d0;
  const float inv = m == -INFINITY ? 0.f : 1.f / l;
#pragma unroll
  for (int c = 0; c < VEC; ++c)
    if (d0 + c < a.D) orow[c] = T::store(acc[c] * inv);
  if (lane == 0) a.lse[(int64_t(b) * a.H + h) * a.S + s] = m == -INFINITY ? -INFINITY : m + logf(l);
}

// Threads a block and blocks for teams of `team` threads over B*H*S rows.
dim3 combine_grid(const AttnArgs& a, int team, int& block) {
  block = std::max(kBlock, (team + 31) / 32 * 32);
  const int64_t rows = int64_t(a.B) * a.H * a.S, per = block / team;
  const int64_t blocks = (rows + per - 1) / per;
  if (blocks > 0x7fffffff) throw std::logic_error("combine_splits: too many rows for one grid");
  return dim3(unsigned(blocks));
}

}  // namespace

void launch_combine(const AttnArgs& a, DType t, Stream st) {
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    int block = 0;
    if (a.D % 4 == 0) {
      const dim3 grid = combine_grid(a, a.D / 4, block);
      combine_splits<T, 4><<<grid, block, 0, st>>>(a, a.D / 4);
    } else {
      const dim3 grid = combine_grid(a, a.D, block);
      combine_splits<T, 1><<<grid, block, 0, st>>>(a, a.D);
    }
    FA_GPU_CHECK_LAUNCH("combine_splits");
  });
}

}  // namespace fa::gpu
