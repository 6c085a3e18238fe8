// Attention conventions shared by host and device code, defined once: which keys a query row
// sees (bottom-right causal) and how a row block's live key range is cut into G splits.
// Compiles as plain C++ and as CUDA/HIP device code.
#pragma once
#include <cstdint>

#if defined(__HIP__)  // clang HIP: the attributes themselves, before any HIP header defines macros
#define FA_HD __attribute__((host)) __attribute__((device))
#elif defined(__CUDACC__)
#define FA_HD __host__ __device__
#else
#define FA_HD
#endif

namespace fa {

// Keys [0, visible_keys) are visible to query row `row`; 0 means the row is fully masked.
FA_HD inline int64_t visible_keys(int64_t row, int64_t S, int64_t Sk, bool causal) {
  if (!causal) return Sk;
  const int64_t n = row + (Sk - S) + 1;
  return n < 0 ? 0 : (n > Sk ? Sk : n);
}

struct KeyRange {
  int64_t begin, end;  // empty when begin >= end
};

// Split g of G over a row block whose live keys are [0, live_end): whole key tiles of `block_n`,
// as even as possible (the first tiles % G splits take one tile more), so a split is empty only
// when the block has fewer tiles than splits, and then only trailing splits are.
FA_HD inline KeyRange split_range(int64_t live_end, int g, int G, int block_n) {
  if (G <= 1) return {0, live_end};
  const int64_t tiles = (live_end + block_n - 1) / block_n;
  const int64_t base = tiles / G, rem = tiles % G;
  const int64_t first = g * base + (g < rem ? g : rem);
  const int64_t count = base + (g < rem ? 1 : 0);
  const int64_t b = first * block_n, e = (first + count) * block_n;
  return {b < live_end ? b : live_end, e < live_end ? e : live_end};
}

}  // namespace fa
