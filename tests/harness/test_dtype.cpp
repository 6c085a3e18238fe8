// The FP8 formats against independent expectations: the OCP spec's named values, e5m2 as the top
// byte of an fp16 (Eigen's), every code round-tripping, round-to-nearest-even at midpoints, and
// saturation to the largest finite value, the kernels' fp16-based decoding; names and sizes.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <string>

#include "harness/dtype.hpp"
#include "harness/fp8.hpp"

using namespace fa;

TEST(Dtype, NamesParseBackAndFp8TakesOneByteWithBf16Outputs) {
  for (DType t : {DType::fp16, DType::bf16, DType::fp32, DType::fp8_e4m3, DType::fp8_e5m2})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::fp8_e4m3);
  EXPECT_EQ(parse_dtype("fp8"), std::nullopt) << "which FP8 is meant must be said";
  for (DType t : {DType::fp16, DType::bf16, DType::fp32, DType::fp8_e4m3, DType::fp8_e5m2})
    EXPECT_NE(std::string(kDtypeNames).find(dtype_name(t)), std::string::npos) << "errors list " << dtype_name(t);
  EXPECT_EQ(dtype_bytes(DType::fp8_e4m3), 1);
  EXPECT_EQ(dtype_bytes(DType::fp8_e5m2), 1);
  EXPECT_EQ(out_dtype(DType::fp8_e4m3), DType::bf16);
  EXPECT_EQ(out_dtype(DType::fp16), DType::fp16);
}

TEST(Dtype, E4m3CodesHaveTheValuesTheOcpSpecNames) {
  const DType t = DType::fp8_e4m3;
  EXPECT_EQ(from_bits(t, 0x00), 0.f);
  EXPECT_TRUE(std::signbit(from_bits(t, 0x80)));
  EXPECT_EQ(from_bits(t, 0x01), std::ldexp(1.f, -9)) << "smallest subnormal";
  EXPECT_EQ(from_bits(t, 0x07), 7 * std::ldexp(1.f, -9)) << "largest subnormal";
  EXPECT_EQ(from_bits(t, 0x08), std::ldexp(1.f, -6)) << "smallest normal";
  EXPECT_EQ(from_bits(t, 0x38), 1.f);
  EXPECT_EQ(from_bits(t, 0x39), 1.125f);
  EXPECT_EQ(from_bits(t, 0x7e), 448.f) << "largest finite";
  EXPECT_EQ(from_bits(t, 0xfe), -448.f);
  EXPECT_TRUE(std::isnan(from_bits(t, 0x7f)));
  EXPECT_TRUE(std::isnan(from_bits(t, 0xff)));
  EXPECT_TRUE(std::isfinite(from_bits(t, 0x78))) << "e4m3 has no infinity: S.1111.000 is 256";
  EXPECT_EQ(from_bits(t, 0x78), 256.f);
  EXPECT_EQ(dtype_max(t), 448.0);
}

TEST(Dtype, E5m2IsTheTopByteOfAnFp16) {
  for (uint32_t b = 0; b < 256; ++b) {
    const float want = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(uint16_t(b << 8)));
    const float got = from_bits(DType::fp8_e5m2, b);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << b;
    else EXPECT_EQ(got, want) << "code " << b;
  }
  EXPECT_EQ(dtype_max(DType::fp8_e5m2), 57344.0);
}

TEST(Dtype, EveryFp8CodeRoundTripsAndPositiveCodesIncreaseStrictly) {
  for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    float prev = -1.f;
    for (uint32_t b = 0; b < 256; ++b) {
      const float x = from_bits(t, b);
      if (!std::isfinite(x)) continue;
      EXPECT_EQ(to_bits(t, x), b) << dtype_name(t) << " code " << b;
      if (b < 0x80) {
        EXPECT_GT(x, prev) << dtype_name(t) << " code " << b;
        prev = x;
      }
    }
  }
}

TEST(Dtype, Fp8RoundsToNearestEvenAtMidpointsAndSaturatesBeyondTheLargestValue) {
  for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    for (uint32_t b = 0; b < 0x7b; ++b) {  // consecutive positive finite codes b, b + 1 (both formats)
      const float lo = from_bits(t, b), hi = from_bits(t, b + 1), mid = (lo + hi) / 2;  // exact in fp32
      const uint32_t even = (b % 2 == 0) ? b : b + 1;  // the code whose mantissa ends in 0
      EXPECT_EQ(to_bits(t, mid), even) << dtype_name(t) << " midpoint of codes " << b << "," << b + 1;
      EXPECT_EQ(to_bits(t, std::nextafter(mid, 0.f)), b) << dtype_name(t);
      EXPECT_EQ(to_bits(t, std::nextafter(mid, 1e9f)), b + 1) << dtype_name(t);
      EXPECT_EQ(to_bits(t, -mid), even | 0x80u) << dtype_name(t);
    }
    const float max = float(dtype_max(t));
    EXPECT_EQ(round_to(t, max * 1.01f), max) << dtype_name(t);
    EXPECT_EQ(round_to(t, 1e30f), max);
    EXPECT_EQ(round_to(t, INFINITY), max) << "satfinite, as the kernels' conversions";
    EXPECT_EQ(round_to(t, -INFINITY), -max);
    EXPECT_TRUE(std::isnan(round_to(t, NAN)));
    EXPECT_EQ(round_to(t, std::ldexp(1.f, -30)), 0.f) << "far below the smallest subnormal";
  }
}

TEST(Dtype, MantissaBitsAndTheSmallestNormalMatchEachFormat) {
  for (DType t : {DType::fp16, DType::bf16, DType::fp32, DType::fp8_e4m3, DType::fp8_e5m2}) {
    const float one_up = round_to(t, 1.f + std::ldexp(1.f, -dtype_mantissa_bits(t)));
    EXPECT_GT(one_up, 1.f) << dtype_name(t) << ": one ulp above 1 is representable";
    EXPECT_EQ(round_to(t, 1.f + std::ldexp(1.f, -dtype_mantissa_bits(t) - 2)), 1.f) << dtype_name(t);
    const float tiny = std::ldexp(1.f, dtype_min_normal_exp(t));
    EXPECT_EQ(round_to(t, tiny), tiny) << dtype_name(t);
  }
}

TEST(Dtype, TheKernelsHalfConversionDecodesEveryFp8CodeAsTheHarnessDoes) {
  const auto half = [](uint16_t h) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h)); };
  for (uint32_t b = 0; b < 256; ++b) {
    const float e4 = from_bits(DType::fp8_e4m3, b), e5 = from_bits(DType::fp8_e5m2, b);
    const float k4 = e4m3_via_half(b, half), k5 = e5m2_via_half(b, half);
    if (std::isnan(e4)) EXPECT_TRUE(std::isnan(k4)) << b;
    else EXPECT_EQ(k4, e4) << "e4m3 code " << b;
    if (std::isnan(e5)) EXPECT_TRUE(std::isnan(k5)) << b;
    else EXPECT_EQ(k5, e5) << "e5m2 code " << b;
    EXPECT_EQ(std::signbit(k4), std::signbit(e4)) << b;
  }
}
