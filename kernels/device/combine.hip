// Split-K combine kernel: one team of threads a (batch, head, query row), each row folded by
// combine_row (kernels/device/combine_row.hpp: the formula, the empty-split rule and the load pattern).
// It sits between a path's producers and its result, so its latency is the path's: on the H100
// (ncu, warm L2, unlocked clocks) it takes 6.9 us after aiter-2's 126 us mma kernel at G = 16 and
// 4.1 us after mma-decode's 191 us on (1,32,8,1,131072,128); the one-thread-a-column walk over
// every split it replaced (two dependent loads and an expf a step) took 13.1 and 7.8 us.
// launch_combine is declared in kernels/runtime/launchers.hpp for the paths that run it.
#include <algorithm>
#include <stdexcept>

#include "kernels/device/combine_row.hpp"

namespace fa::gpu {
namespace {

constexpr int kBlock = 64;  // threads a block at least: small blocks spread short grids over SMs

template <typename T, int VEC>
__global__ void combine_splits(AttnArgs a, int team) {
  const int rows_per_block = blockDim.x / team;
  const int local = threadIdx.x / team, lane = threadIdx.x % team;
  const int64_t row = int64_t(blockIdx.x) * rows_per_block + local;  // (b, h, s), s fastest
  if (local >= rows_per_block || row >= int64_t(a.B) * a.H * a.S) return;
  const int s = int(row % a.S), h = int(row / a.S % a.H), b = int(row / (int64_t(a.S) * a.H));
  if (s >= seq_q(a, b)) return;  // past this sequence's queries: no O row (thd), no result
  combine_row<T, VEC>(a, b, h, s, lane);
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
