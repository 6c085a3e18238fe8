// Attention conventions shared by host and device code, defined once: which keys a query row
// sees (bottom-right causal, FA's sliding window), how a score is transformed (softcap, ALiBi),
// and how a row block's live key range is cut into G splits.
// Compiles as plain C++ and as CUDA/HIP device code.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__HIP__)  // clang HIP: the attributes themselves, before any HIP header defines macros
#define FA_HD __attribute__((host)) __attribute__((device))
#include <hip/hip_runtime.h>  // the device overloads of tanhf/tanh (softcap_score); <cmath> has host ones only
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

// The keys [begin, end) query row `row` of a sequence with `sq` queries and `sk` keys sees, with
// bottom-right alignment (row i sits at key position i + sk - sq) and FlashAttention's window
// (window_size = (left, right), -1 unbounded): keys j with i + off - left <= j <= i + off + right.
// Causal is right = 0. Empty (begin >= end) for a row that sees no key: O = 0, LSE = -inf.
// A side wider than the keys is compared before it is added, so any int64 width is unbounded.
FA_HD inline KeyRange row_keys(int64_t row, int64_t sq, int64_t sk, bool causal, int64_t left, int64_t right) {
  const int64_t at = row + (sk - sq);
  if (causal) right = 0;
  const int64_t b = left < 0 || left >= at ? 0 : at - left;
  const int64_t e = right < 0 || right >= sk - at ? sk : at + right + 1;
  return {b, e > b ? e : b};
}

// Gemma-2's logit softcap: s -> cap * tanh(s / cap), applied to the scaled score before the bias
// and the mask; cap <= 0 is none.
FA_HD inline float softcap_score(float s, float cap) { return cap > 0 ? cap * tanhf(s / cap) : s; }
FA_HD inline double softcap_score(double s, double cap) { return cap > 0 ? cap * tanh(s / cap) : s; }

// ALiBi's bias for query row `row` (key position row + off) and key j: -slope * |row + off - j|
// (FlashAttention's convention; causal rows only see j <= row + off, so it is the paper's there).
FA_HD inline double alibi_bias(double slope, int64_t row, int64_t off, int64_t j) {
  const int64_t d = row + off - j;
  return -slope * double(d < 0 ? -d : d);
}

// The score every path attends with, from the scaled dot product s of query row `row` (key position
// row + off) and key j: softcap first, then ALiBi's bias where `slope` points at the head's slope
// (null: none). One composition for the oracle (double), cpu-flash and the kernels (float).
template <typename T, typename Slope>
FA_HD inline T transformed_score(T s, T cap, const Slope* slope, int64_t row, int64_t off, int64_t j) {
  s = softcap_score(s, cap);
  return slope ? s + T(alibi_bias(double(*slope), row, off, j)) : s;
}

// Split g of G over a row block whose live keys are [0, live_end): whole key tiles of `block_n`,
// as even as possible (the first tiles % G splits take one tile more), so a split is empty only
// when the block has fewer tiles than splits, and then only trailing splits are.
// Computed in I: int64_t, or int where the caller's keys fit one (a GPU kernel's: no 64-bit
// division calls in device code).
template <typename I>
FA_HD inline KeyRange split_range_in(I live_end, int g, int G, int block_n) {
  if (G <= 1) return {0, live_end};
  const I tiles = (live_end + block_n - 1) / block_n;
  const I base = tiles / G, rem = tiles % G;
  const I first = g * base + (g < rem ? g : rem);
  const I count = base + (g < rem ? 1 : 0);
  const I b = first * block_n, e = (first + count) * block_n;
  return {b < live_end ? b : live_end, e < live_end ? e : live_end};
}
FA_HD inline KeyRange split_range(int64_t live_end, int g, int G, int block_n) {
  return split_range_in<int64_t>(live_end, g, G, block_n);
}

// Split g of G over keys [begin, end): whole key tiles of `block_n` counted from `begin` rounded
// down to a tile (a window's first live tile), cut as split_range cuts [0, live_end).
FA_HD inline KeyRange split_range_from(int64_t begin, int64_t end, int g, int G, int block_n) {
  const int64_t base = begin / block_n * block_n;
  if (end <= base) return {end, end};
  const KeyRange r = split_range(end - base, g, G, block_n);
  const int64_t b = base + r.begin, e = base + r.end;
  return {b > begin ? b : begin, e};
}

}  // namespace fa
