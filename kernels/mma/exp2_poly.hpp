// 2^x on the FMA pipe: a share of the softmax's exponentials computed as a polynomial instead of by
// MUFU's ex2.approx, where the consumers' exp2 queued (issue 46: 14.8% of the warp-state samples of
// mma_ws_fwd's FP8 instance waited on MUFU, against 7.3% on wgmma). FlashAttention-4 does the same
// on Blackwell (a polynomial for part of each row's exponentials, the rest on MUFU); this is the
// textbook split, 2^x = 2^floor(x) * 2^f with f in [0, 1):
//   - floor(x) by one rounding-down add of 1.5 * 2^23, which leaves floor(x) in the low bits of the
//     sum: an FADD on the FMA pipe, where floorf is FRND, a conversion (the CUDA programming guide's
//     throughput table gives conversions MUFU's 16 a clock an SM on sm_90, not the FMA pipe's 128);
//   - 2^f by a cubic with constant term 1, fitted here for the least maximum relative error on
//     [0, 1] (Lawson's iteration over 20,001 points; the coefficients rounded to float): 8.6e-5 in
//     float arithmetic, under a 16-bit P's half ulp (bf16 2^-9, fp16 2^-12) and far under E4M3's;
//   - the product by 2^floor(x) as an integer add of floor(x) << 23 to the cubic's exponent field.
// Plain C++ (FA_HD) checked on the CPU by tests/kernels/test_exp2_poly.cpp; on the device the
// rounding-down add is __fadd_rd, on the host floor() and an exact add: the same value for every x
// the function takes (below 2^22).
//
// Domain: x < 128 (a softmax argument is at most the lazy rescale's threshold: 8 in the 16-bit
// rows). x <= -127 and -inf give +0, as ex2.approx.ftz does below -126; between -127 and -126 the
// result is below 2^-126, where ex2.approx.ftz flushes to 0. NaN gives +0 too, where ex2.approx
// gives NaN: a NaN score (which the row's fmaxf max passes over) drops its key from P instead of
// turning the row to NaN; the row is then wrong but finite, and the validator's comparison, not a
// NaN check, is what fails it.
#pragma once
#include <cmath>
#include <cstdint>

#include "harness/conventions.hpp"  // FA_HD
#include "harness/fp8.hpp"          // fp32_bits, fp32_from_bits

namespace fa::gpu {

// 2^f = 1 + f (c1 + f (c2 + f c3)) on [0, 1): relative error at most 8.6e-5, and p(0) = 1 exactly, so
// every integer x gives 2^x exactly; p stays below 2 (its largest value, at f -> 1, is 1.99983), so
// the exponent add never carries into the next power.
constexpr float kExp2PolyC1 = 0x1.63e65ap-1f;  // 0.6951168
constexpr float kExp2PolyC2 = 0x1.d23776p-3f;  // 0.2276448
constexpr float kExp2PolyC3 = 0x1.3baaccp-4f;  // 0.0770672
constexpr float kExp2PolyShift = 0x1.8p23f;     // 1.5 * 2^23: x + it rounded down holds floor(x) in its low bits

FA_HD inline float exp2_poly(float x) {
  x = fmaxf(x, -127.f);  // -inf and NaN included: fmaxf returns the number
#if defined(__CUDA_ARCH__)
  const float j = __fadd_rd(x, kExp2PolyShift);
#else
  const float j = std::floor(x) + kExp2PolyShift;  // exact: floor(x) is an integer below 2^22
#endif
  const float n = j - kExp2PolyShift;  // floor(x), exactly
  const float f = x - n;               // [0, 1), exact; 1 for x in (-2^-25, 0), where p(1) < 2 still
  const float p = fmaf(fmaf(fmaf(kExp2PolyC3, f, kExp2PolyC2), f, kExp2PolyC1), f, 1.f);
  // j's low 9 bits hold floor(x) mod 512 (the shift's own low 22 bits are 0): shifted into the
  // exponent field they add floor(x) to p's exponent, modulo 2^32 (x = -127, p = 1: exactly +0).
  return fa::fp32_from_bits(fa::fp32_bits(p) + (fa::fp32_bits(j) << 23));
}

// Whether a lane's exponential k (0, 1, ... in the order the softmax computes them) takes the
// polynomial, for a share of `share` of every 8 (ws_tile_traits.hpp's exp2_poly_of_8; 0: none).
FA_HD constexpr bool exp2_on_fma(int k, int share) { return k % 8 < share; }

}  // namespace fa::gpu
