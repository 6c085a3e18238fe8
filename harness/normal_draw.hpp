// The counter-based normal generator's arithmetic, written once for the host and the devices:
// Philox4x32-10 and a Box-Muller transform whose every step is an IEEE-754 basic operation (+, -,
// *, /, fma, integer bit moves) in a fixed order, so that a CPU, an NVIDIA and an AMD GPU draw the
// same bits. libm's log/cos/sin (and a device's own) are accurate but not the same function
// everywhere; these are accurate to a few ulp of double and identical by construction.
//
// Contraction: nvcc (--fmad) and GCC/clang (-ffp-contract) may fuse a product into a following add.
// No product here feeds an add or subtract: every multiply-add is an explicit fma, and the other
// products feed only multiplies, fma operands, divisions or the final conversion. Nothing needs
// fast-math to be off for doubles (CUDA's --use_fast_math touches fp32 only).
#pragma once
#include <cmath>
#include <cstdint>

#include "harness/conventions.hpp"

namespace fa::rng {

struct U32x4 {
  uint32_t v[4];
};

FA_HD inline U32x4 philox4x32_10(U32x4 c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * c.v[0];
    const uint64_t p1 = uint64_t(kM1) * c.v[2];
    c = {{uint32_t(p1 >> 32) ^ c.v[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c.v[3] ^ k1, uint32_t(p0)}};
    k0 += kW0, k1 += kW1;
  }
  return c;
}

FA_HD inline double fma_d(double a, double b, double c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return ::fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Bits of a double and back: a register move on a device, memcpy's job on the host.
FA_HD inline uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return uint64_t(__double_as_longlong(x));
#else
  uint64_t b;
  __builtin_memcpy(&b, &x, 8);
  return b;
#endif
}
FA_HD inline double from_bits(uint64_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __longlong_as_double((long long)b);
#else
  double x;
  __builtin_memcpy(&x, &b, 8);
  return x;
#endif
}

// -2 ln(n / 2^32) for n in [1, 2^32]: n = 2^e m, m in [sqrt(1/2), sqrt(2)), so -2 ln(n / 2^32) =
// 2 ((32 - e) ln 2 - ln m), ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, by its series to
// s^23 (the next term is below 1e-18 of ln m). ln 2 in two parts (fdlibm's): (32 - e) ln2_hi is exact.
FA_HD inline double minus_two_ln_u32(uint64_t n) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  int e = 63 - __clzll((long long)n);                        // n >= 1: e = floor(log2 n), 0..32
#else
  int e = 63 - __builtin_clzll(n);
#endif
  double m = from_bits((uint64_t(1023) << 52) | ((n << (52 - e)) & ((uint64_t(1) << 52) - 1)));  // n / 2^e, exact
  if (m > 1.4142135623730951) m *= 0.5, ++e;                 // exact
  const double f = m - 1.0;                                  // exact (Sterbenz)
  const double s = f / (m + 1.0), s2 = s * s;
  double p = 4.3478260869565216e-02;                         // 1/23
  constexpr double kInvOdd[] = {4.7619047619047616e-02, 5.2631578947368418e-02, 5.8823529411764705e-02,
                                6.6666666666666666e-02, 7.6923076923076927e-02, 9.0909090909090912e-02,
                                1.1111111111111110e-01, 1.4285714285714285e-01, 2.0000000000000001e-01,
                                3.3333333333333331e-01};      // 1/21 .. 1/3
  for (double c : kInvOdd) p = fma_d(p, s2, c);
  const double two_s = 2.0 * s;
  const double ln_m = fma_d(two_s, s2 * p, two_s);          // 2s (1 + s^2/3 + ...)
  const double k = double(32 - e);
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  return 2.0 * fma_d(k, kLn2Hi, fma_d(k, kLn2Lo, -ln_m));
}

// sqrt(y) for y >= 0 by Newton's method on 1/sqrt(y) from a bit-level estimate, then one correction
// of the root: fma only (a device's sqrt of a double is not the host's everywhere), within an ulp.
FA_HD inline double sqrt_newton(double y) {
  if (!(y > 0)) return 0.0;
  double r = from_bits(0x5FE6EB50C7B537A9ull - (bits_of(y) >> 1));  // 1/sqrt(y) within 3.5%
  const double h = 0.5 * y;
  for (int i = 0; i < 5; ++i) r = fma_d(r, fma_d(-h, r * r, 0.5), r);  // r (1.5 - h r^2)
  const double s = y * r;
  return fma_d(0.5 * r, fma_d(-s, s, y), s);
}

// sin and cos of 2 pi t for t = r / 2^32: the octant from r's top 3 bits, the rest an angle in
// [0, pi/4] (measured back from the octant's end where that is odd), by Taylor series to x^17 and
// x^18 (the next terms are below 1e-19).
FA_HD inline void sincos_turns_u32(uint32_t r, double& sin_out, double& cos_out) {
  const uint32_t octant = r >> 29, rest = r & 0x1FFFFFFFu;
  const uint32_t q = (octant & 1u) ? 0x20000000u - rest : rest;  // 0 .. 2^29
  const double x = double(q) * 0x1p-29 * 7.8539816339744828e-01, x2 = x * x;
  constexpr double kSin[] = {2.8114572543455206e-15, -7.6471637318198164e-13, 1.6059043836821613e-10,
                             -2.5052108385441720e-08, 2.7557319223985893e-06, -1.9841269841269841e-04,
                             8.3333333333333332e-03, -1.6666666666666666e-01};  // 1/17! .. -1/3!
  constexpr double kCos[] = {-1.5619206968586225e-16, 4.7794773323873853e-14, -1.1470745597729725e-11,
                             2.0876756987868099e-09, -2.7557319223985888e-07, 2.4801587301587302e-05,
                             -1.3888888888888889e-03, 4.1666666666666664e-02, -5.0000000000000000e-01};
  double ps = 0.0, pc = 0.0;
  for (double c : kSin) ps = fma_d(ps, x2, c);
  for (double c : kCos) pc = fma_d(pc, x2, c);
  const double sx = fma_d(x, x2 * ps, x), cx = fma_d(x2, pc, 1.0);
  // Octant o covers [o, o + 1) pi/4; with a = the angle in it (x, or pi/4 - x for odd o, above):
  const bool swap = ((octant + 1) & 2u) != 0;                // octants 1, 2, 5, 6: sin and cos trade
  double s = swap ? cx : sx, c = swap ? sx : cx;
  if (octant >= 4) s = -s;                                   // pi .. 2 pi
  if (octant >= 2 && octant <= 5) c = -c;                    // pi/2 .. 3 pi/2
  sin_out = s, cos_out = c;
}

// Two standard normals for the pair index `pair` (elements 2 pair and 2 pair + 1) of tensor
// `stream` under `seed`: Box-Muller on Philox's first two words, u1 = (r0 + 1) / 2^32 in (0, 1].
FA_HD inline void normal_pair(uint64_t seed, uint32_t stream, uint64_t pair, float& z0, float& z1) {
  const U32x4 r = philox4x32_10({{uint32_t(pair), uint32_t(pair >> 32), stream, 0u}}, uint32_t(seed),
                                uint32_t(seed >> 32));
  const double rad = sqrt_newton(minus_two_ln_u32(uint64_t(r.v[0]) + 1));
  double s, c;
  sincos_turns_u32(r.v[1], s, c);
  z0 = float(rad * c), z1 = float(rad * s);
}

}  // namespace fa::rng
