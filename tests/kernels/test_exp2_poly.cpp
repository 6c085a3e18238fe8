// The softmax's polynomial 2^x (kernels/mma/exp2_poly.hpp) on the CPU, against exp2 in long double:
// its error bound over the softmax's range, exact powers of two at integers, +0 for what lies below
// the range, and monotonicity (the softmax's order of scores kept). The bound, 8.6e-5, is under a
// 16-bit P's half ulp (bf16 2^-9, fp16 2^-12): P rounds to the exact value's 16-bit neighbours.
// The device's rounding-down add is __fadd_rd; the host's floor-and-add is the same value for every
// argument below 2^22, which is all the function takes.
#include "kernels/mma/exp2_poly.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "harness/rng.hpp"

namespace fa::gpu {
namespace {

constexpr double kBound = 8.6e-5;  // exp2_poly.hpp's fitted maximum relative error

long double exact(float x) { return std::exp2(static_cast<long double>(x)); }

// Arguments over [-126, 8): a Philox spread, every integer and the floats either side of it, and
// the ends of each unit interval's fraction.
std::vector<float> arguments() {
  std::vector<float> xs;
  for (int n = -126; n < 8; ++n) {
    const float x = float(n);
    xs.push_back(x);
    xs.push_back(std::nextafter(x, -200.f));
    xs.push_back(std::nextafter(x, 200.f));
    xs.push_back(x + 0.5f);
  }
  for (uint32_t i = 0; i < 50000; ++i) {
    const uint32_t r = rng::philox4x32_10({{i, 0, 46, 0}}, 5, 6).v[0];
    xs.push_back(-126.f + 134.f * float(r) / 4294967296.f);
  }
  return xs;
}

TEST(Exp2Poly, IsWithinItsFittedRelativeErrorOverTheSoftmaxRange) {
  double worst = 0;
  for (float x : arguments()) {
    if (x < -126.f || x >= 8.f) continue;
    const long double want = exact(x);
    const double rel = double(std::fabs(static_cast<long double>(exp2_poly(x)) - want) / want);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, kBound) << "x = " << x;
  }
  EXPECT_GT(worst, 1e-5) << "a cubic cannot be this exact: is the polynomial evaluated at all?";
}

TEST(Exp2Poly, IntegersGiveTheirPowerOfTwoExactly) {
  for (int n = -126; n <= 127; ++n) EXPECT_EQ(exp2_poly(float(n)), std::ldexp(1.f, n)) << "n = " << n;
  EXPECT_EQ(exp2_poly(-0.f), 1.f);
}

TEST(Exp2Poly, BelowTheRangeIsPlusZeroOrUnderTheSmallestNormal) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {-inf, -1e30f, -300.f, -128.f, -127.f, std::numeric_limits<float>::quiet_NaN()}) {
    const float y = exp2_poly(x);
    EXPECT_EQ(fp32_bits(y), 0u) << "x = " << x << ": +0, as ex2.approx.ftz gives (NaN: exp2_poly.hpp says why)";
  }
  for (float x : {-126.9f, -126.5f, -126.01f}) {
    const float y = exp2_poly(x);
    EXPECT_GE(y, 0.f) << "x = " << x;
    EXPECT_LT(y, std::ldexp(1.f, -126)) << "x = " << x << ": ex2.approx.ftz flushes these to 0";
  }
}

// Softmax keeps the order of scores: a larger argument never gets a smaller weight, across the
// unit intervals' seams (p(1-) < 2) and inside them.
TEST(Exp2Poly, IsMonotoneAcrossAndInsideTheUnitIntervals) {
  for (int n = -126; n < 8; ++n) {
    float prev = exp2_poly(std::nextafter(float(n), -200.f)), x = float(n);
    EXPECT_LT(prev, exp2_poly(x)) << "seam at " << n;
    for (int k = 0; k < 4096; ++k, x += 1.f / 4096.f) {
      const float y = exp2_poly(x);
      EXPECT_LE(prev, y) << "x = " << x;
      prev = y;
    }
  }
}

// A share of s in 8 is s of every 8 consecutive exponentials a lane computes, wherever the run of
// 8 starts: the FMA pipe's work spreads evenly over the row instead of coming in a burst.
TEST(Exp2Poly, AShareOfEightIsThatManyInEveryEightConsecutiveExponentials) {
  for (int share = 0; share <= 8; ++share)
    for (int start = 0; start < 16; ++start) {
      int taken = 0;
      for (int k = start; k < start + 8; ++k) taken += exp2_on_fma(k, share);
      EXPECT_EQ(taken, share) << "share " << share << ", from " << start;
    }
}

}  // namespace
}  // namespace fa::gpu
