// How FP8 tensor cores add Q K^T's products, as the low-precision reference (reference/cpu_ref.cpp) and
// the GPU reference (kernels/runtime/gpu_reference.hip) model them for a path that declares it
// (PathRow::fp8_accumulate_bits, LowPrecision::s_acc_bits).
// - A product of two FP8 values is exact (at most 8 significant bits).
// - An FP8 MMA k step (k32: wgmma and mma.sync alike) adds its 32 products to the fp32 accumulator
//   in one operation. Its terms, the products and the accumulator, are aligned to the largest
//   one's exponent e, and each is cut toward zero at 2^(e - bits).
// - Hopper keeps 13 bits there (e8m13, "FP22"; DeepSeek-V3's report measured about 14; Khattak and
//   Mikaitis, arXiv:2512.07004, model the H100's inner products bit for bit).
// - What it costs: a score carried over D / 32 steps loses up to 2^-bits of its magnitude a step,
//   toward zero, which fp32 scores do not. Through the softmax scale that moves the LSE. On an
//   H200, FP8 mma's LSE at softmax scale 10 was 0.24 off and cuBLASLt's FP8 GEMM's scores gave
//   0.23-0.28, against fp32 scores' 2e-4 (docs/perf/2026-11-29-rescale-under-s.md). The model's
//   per-row LSE tracked FP8 mma's there with correlation 0.88-0.998 over six rows, 0.60-0.75 at 12
//   or 14 bits (docs/perf/2026-11-30-fp8-accumulation-lse.md).
#pragma once
#include <math.h>

#include <cstdint>

#include "harness/conventions.hpp"

namespace fa {

constexpr int kFp8KStep = 32;  // products one FP8 MMA k step adds

// q . k over n elements as those tensor cores add it: k step by k step, each step's terms aligned to
// the largest and cut toward zero at 2^(e - bits), the step's sum then held in the fp32 accumulator.
// The cut terms of a step sum exactly in double (33 terms of at most bits + 1 significant bits on one
// grid), and in fp32 too up to bits = 17. k's element d is k[(k0 + d) % n] (the GPU reference keeps K
// rows rotated); NaN where a term is not finite (validated inputs have none).
FA_HD inline double fp8_truncated_dot(const float* q, const float* k, int n, int bits, int k0 = 0) {
  double acc = 0;
  for (int d0 = 0; d0 < n; d0 += kFp8KStep) {
    const int m = n - d0 < kFp8KStep ? n - d0 : kFp8KStep, c1 = (k0 + d0) % n;
    double big = fabs(acc);
    for (int i = 0, c = c1; i < m; ++i, c = c + 1 == n ? 0 : c + 1)
      big = fmax(big, fabs(double(q[d0 + i]) * double(k[c])));
    if (!isfinite(big)) return NAN;
    if (big == 0) continue;
    const double unit = ldexp(1.0, ilogb(big) - bits);
    double sum = trunc(acc / unit) * unit;
    for (int i = 0, c = c1; i < m; ++i, c = c + 1 == n ? 0 : c + 1)
      sum += trunc(double(q[d0 + i]) * double(k[c]) / unit) * unit;
    acc = double(float(sum));
  }
  return acc;
}

}  // namespace fa
