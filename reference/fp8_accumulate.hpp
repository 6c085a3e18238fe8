// How FP8 tensor cores add Q K^T's products, as the low-precision reference models them for a path
// that declares it (PathRow::fp8_accumulate_bits, LowPrecision::s_acc_bits).
// - A product of two FP8 values is exact (at most 8 significant bits).
// - An FP8 MMA k step (k32: wgmma and mma.sync alike) adds its 32 products to the fp32 accumulator
//   in one operation. Its terms, the products and the accumulator, are aligned to the largest
//   one's exponent e, and each is cut toward zero at 2^(e - bits).
// - Hopper keeps 13 bits there (e8m13, "FP22"; DeepSeek-V3's report measured about 14; Khattak and
//   Mikaitis, arXiv:2512.07004, model the H100's inner products bit for bit).
// - What it costs: a score carried over D / 32 steps loses up to 2^-bits of its magnitude a step,
//   toward zero, which fp32 scores do not. Through the softmax scale that moves the LSE. On an
//   H200, FP8 mma's LSE at softmax scale 10 was 0.24 off and cuBLASLt's FP8 GEMM's scores gave
//   0.23-0.28, against fp32 scores' 2e-4 (docs/perf/2026-11-29-rescale-under-s.md).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fa {

constexpr int kFp8KStep = 32;  // products one FP8 MMA k step adds

// q . k over n elements as those tensor cores add it: k step by k step, each step's terms aligned
// to the largest and cut toward zero at 2^(e - bits). The sum is exact in double (33 terms of at
// most bits + 1 significant bits on one grid), so only the cuts round.
inline double fp8_truncated_dot(const float* q, const float* k, int64_t n, int bits) {
  double acc = 0;
  double t[kFp8KStep];
  for (int64_t d0 = 0; d0 < n; d0 += kFp8KStep) {
    const int64_t m = std::min<int64_t>(kFp8KStep, n - d0);
    double big = std::fabs(acc);
    for (int64_t i = 0; i < m; ++i) {
      t[i] = double(q[d0 + i]) * double(k[d0 + i]);
      big = std::max(big, std::fabs(t[i]));
    }
    if (big == 0) continue;
    const double unit = std::ldexp(1.0, std::ilogb(big) - bits);
    double sum = std::trunc(acc / unit) * unit;
    for (int64_t i = 0; i < m; ++i) sum += std::trunc(t[i] / unit) * unit;
    acc = sum;
  }
  return acc;
}

}  // namespace fa
