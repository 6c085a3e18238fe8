// The generator's own arithmetic (harness/normal_draw.hpp) against libm in long double: the same
// function to within a few ulp of double, so that the normals are the Box-Muller normals they were
// (rarely one fp32 ulp apart, where libm and these round a value near a tie differently).
#include "harness/normal_draw.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/rng.hpp"

namespace fa::rng {
namespace {

// n over [1, 2^32]: both ends, powers of two, either side of sqrt(2) 2^e, and a Philox spread.
std::vector<uint64_t> arguments() {
  std::vector<uint64_t> v = {1, 2, 3, (uint64_t(1) << 32) - 1, uint64_t(1) << 32};
  for (int e = 0; e <= 32; ++e) {
    const double edge = std::ldexp(1.4142135623730951, e);
    for (int64_t d = -2; d <= 2; ++d)
      if (edge + double(d) >= 1 && edge + double(d) <= std::ldexp(1.0, 32)) v.push_back(uint64_t(edge) + uint64_t(d));
    v.push_back(uint64_t(1) << e);
  }
  for (uint32_t i = 0; i < 20000; ++i) v.push_back(uint64_t(philox4x32_10({{i, 0, 9, 0}}, 1, 2).v[0]) + 1);
  return v;
}

TEST(NormalDraw, MinusTwoLnIsLibmsWithinFourUlp) {
  for (uint64_t n : arguments()) {
    const long double want = -2.0L * std::log(static_cast<long double>(n) / 4294967296.0L);
    const double got = minus_two_ln_u32(n);
    if (n == (uint64_t(1) << 32)) {
      EXPECT_EQ(got, 0.0);
      continue;
    }
    EXPECT_LE(std::fabs(static_cast<long double>(got) - want), 4 * 0x1p-53L * std::fabs(want) + 1e-300L) << "n = " << n;
  }
}

TEST(NormalDraw, SqrtIsWithinAnUlpOfTheCorrectlyRoundedRoot) {
  for (uint64_t n : arguments()) {
    const double y = minus_two_ln_u32(n);
    const double got = sqrt_newton(y), want = std::sqrt(y);
    if (want == 0) {  // n = 2^32: ilogb(0) is FP_ILOGB0, no exponent to take an ulp of
      EXPECT_EQ(got, 0.0) << "y = " << y;
      continue;
    }
    EXPECT_LE(std::fabs(got - want), std::ldexp(1.0, std::ilogb(want) - 52)) << "y = " << y;
  }
  EXPECT_EQ(sqrt_newton(0.0), 0.0);
  EXPECT_EQ(sqrt_newton(4.0), 2.0);
}

TEST(NormalDraw, SinCosOfTurnsAreLibmsOnEveryOctantAndItsEdges) {
  std::vector<uint32_t> rs;
  for (uint32_t o = 0; o < 8; ++o)
    for (uint32_t d : {0u, 1u, 0x0FFFFFFFu, 0x10000000u, 0x1FFFFFFFu}) rs.push_back((o << 29) | d);
  for (uint32_t i = 0; i < 20000; ++i) rs.push_back(philox4x32_10({{i, 1, 9, 0}}, 3, 4).v[1]);
  const long double two_pi = 6.283185307179586476925286766559L;
  for (uint32_t r : rs) {
    double s, c;
    sincos_turns_u32(r, s, c);
    const long double a = two_pi * static_cast<long double>(r) / 4294967296.0L;
    EXPECT_NEAR(s, static_cast<double>(std::sin(a)), 4e-16) << "r = " << r;
    EXPECT_NEAR(c, static_cast<double>(std::cos(a)), 4e-16) << "r = " << r;
  }
}

// The normals themselves against the libm Box-Muller the generator used before: equal, or one fp32
// ulp apart on a tie-near value, about once in 10^7.
TEST(NormalDraw, NormalsAreLibmsBoxMullerAlmostAlwaysBitForBit) {
  int64_t differ = 0;
  const int64_t pairs = 500000;
  for (int64_t i = 0; i < pairs; ++i) {
    const auto r = philox4x32_10({{uint32_t(i), 0u, 2u, 0u}}, 7u, 0u);
    const double u1 = (double(r.v[0]) + 1.0) / 4294967296.0, u2 = double(r.v[1]) / 4294967296.0;
    const double rad = std::sqrt(-2.0 * std::log(u1));
    const float libm[2] = {float(rad * std::cos(6.283185307179586 * u2)), float(rad * std::sin(6.283185307179586 * u2))};
    float z[2];
    normal_pair(7, 2, uint64_t(i), z[0], z[1]);
    for (int k = 0; k < 2; ++k) {
      if (z[k] == libm[k]) continue;
      ++differ;
      EXPECT_LE(std::fabs(z[k] - libm[k]), std::fabs(std::nextafter(libm[k], 2 * libm[k]) - libm[k])) << "pair " << i;
    }
  }
  EXPECT_LE(differ, 20) << "of " << 2 * pairs;
}

}  // namespace
}  // namespace fa::rng
