// The dtype table and the FP8 formats against independent expectations: every one of the 256 codes
// of OCP e4m3/e5m2 and FNUZ e4m3fnuz/e5m2fnuz against the sign/exponent/mantissa formula written
// out here (NaNs, no infinity, -0), round trips of every non-NaN code, round-to-nearest-even at
// midpoints and saturation, FNUZ's -0 and poison, the kernels' fp16-based decoding; names, sizes.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "harness/dtype.hpp"
#include "harness/fp8.hpp"

using namespace fa;

namespace {

constexpr DType kAll[] = {DType::fp16,     DType::bf16,     DType::fp32,        DType::fp8_e4m3,
                          DType::fp8_e5m2, DType::fp8_e4m3fnuz, DType::fp8_e5m2fnuz};
constexpr DType kFp8[] = {DType::fp8_e4m3, DType::fp8_e5m2, DType::fp8_e4m3fnuz, DType::fp8_e5m2fnuz};

// A format as its specification states it (OCP 8-bit FP spec v1.0; Graphcore's FNUZ paper, as in
// torch.float8_e4m3fnuz / LLVM's Float8E4M3FNUZ), independent of harness/fp8.hpp.
struct Spec {
  int ebits, mbits, bias;
  enum { ieee, all_ones, neg_zero } nan;
};
Spec spec_of(DType t) {
  switch (t) {
    case DType::fp8_e4m3: return {4, 3, 7, Spec::all_ones};
    case DType::fp8_e5m2: return {5, 2, 15, Spec::ieee};
    case DType::fp8_e4m3fnuz: return {4, 3, 8, Spec::neg_zero};
    default: return {5, 2, 16, Spec::neg_zero};
  }
}
// The value of code c: (-1)^s 2^(e - bias) (1 + m / 2^mbits), or 2^(1 - bias) (m / 2^mbits) at e = 0;
// NaN where the spec puts it; +-inf for IEEE's top exponent with m = 0.
double spec_value(DType t, uint32_t c) {
  const Spec sp = spec_of(t);
  const int s = int(c >> 7), e = int(c >> sp.mbits) & ((1 << sp.ebits) - 1), m = int(c) & ((1 << sp.mbits) - 1);
  const int emax = (1 << sp.ebits) - 1;
  if (sp.nan == Spec::ieee && e == emax) return m == 0 ? (s ? -INFINITY : INFINITY) : NAN;
  if (sp.nan == Spec::all_ones && e == emax && m == (1 << sp.mbits) - 1) return NAN;
  if (sp.nan == Spec::neg_zero && c == 0x80) return NAN;
  const double frac = double(m) / double(1 << sp.mbits);
  const double mag = e == 0 ? std::pow(2.0, 1 - sp.bias) * frac : std::pow(2.0, e - sp.bias) * (1 + frac);
  return s ? -mag : mag;
}

// The kernels' name for each format (kernels/device/device_common.hpp's FP8<K>).
Fp8Kind kind_of(DType t) {
  switch (t) {
    case DType::fp8_e4m3: return Fp8Kind::e4m3;
    case DType::fp8_e5m2: return Fp8Kind::e5m2;
    case DType::fp8_e4m3fnuz: return Fp8Kind::e4m3fnuz;
    default: return Fp8Kind::e5m2fnuz;
  }
}

}  // namespace

TEST(Dtype, EveryRowsNameAndAliasesParseBackAndErrorsListEveryName) {
  for (DType t : kAll) {
    const DTypeRow& r = dtype_row(t);
    EXPECT_EQ(r.t, t);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
    for (std::string_view a : r.aliases)
      if (!a.empty()) {
        EXPECT_EQ(parse_dtype(a), t) << a;
      }
    EXPECT_EQ(parse_dtype(r.torch), t) << "torch's name is accepted: " << r.torch;
    EXPECT_NE(std::string(kDtypeNames).find(dtype_name(t)), std::string::npos) << "errors list " << dtype_name(t);
  }
  EXPECT_EQ(every_dtype(), std::vector<DType>(std::begin(kAll), std::end(kAll)))
      << "every_dtype(), what the CPU paths declare, is every row once, in order";
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::fp8_e4m3);
  EXPECT_EQ(parse_dtype("float8_e4m3fnuz"), DType::fp8_e4m3fnuz);
  EXPECT_EQ(parse_dtype("fp8"), std::nullopt) << "which FP8 is meant must be said";
  EXPECT_EQ(parse_dtype("fp8_e4m3fnz"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt) << "an empty alias slot is not a name";
}

TEST(Dtype, Fp8TakesOneByteWithBf16OutputsAndPRoundsToTheE4m3OfItsFamily) {
  for (DType t : kFp8) {
    EXPECT_TRUE(is_fp8(t));
    EXPECT_EQ(dtype_bytes(t), 1);
    EXPECT_EQ(out_dtype(t), DType::bf16);
    EXPECT_EQ(dtype_row(t).npy_descr, "|u1") << "numpy has no FP8: the bits";
  }
  EXPECT_EQ(dtype_row(DType::fp8_e5m2).fp8_p, DType::fp8_e4m3);
  EXPECT_EQ(dtype_row(DType::fp8_e5m2fnuz).fp8_p, DType::fp8_e4m3fnuz);
  EXPECT_TRUE(is_fnuz(DType::fp8_e4m3fnuz) && is_fnuz(DType::fp8_e5m2fnuz));
  EXPECT_FALSE(is_fnuz(DType::fp8_e4m3) || is_fnuz(DType::bf16));
  EXPECT_EQ(out_dtype(DType::fp16), DType::fp16);
  EXPECT_EQ(dtype_bytes(DType::fp32), 4);
  EXPECT_EQ(dtype_bytes(DType::bf16), 2);
}

TEST(Dtype, EveryCodeOfEveryFp8FormatHasTheValueItsSpecificationGives) {
  for (DType t : kFp8)
    for (uint32_t c = 0; c < 256; ++c) {
      const double want = spec_value(t, c);
      const float got = from_bits(t, c);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << dtype_name(t) << " code " << c;
      else EXPECT_EQ(double(got), want) << dtype_name(t) << " code " << c;
      const float k = fp8_via_half(c, fp8_format(kind_of(t)), [](uint16_t h) {
        return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h));
      });
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(k)) << dtype_name(t) << " kernels' decode, code " << c;
      else EXPECT_EQ(double(k), want) << dtype_name(t) << " kernels' decode, code " << c;
      EXPECT_EQ(std::isnan(got), fp8_is_nan(c, fp8_format(kind_of(t)))) << c;
    }
}

TEST(Dtype, TheNaNsInfinitiesAndZerosAreWhereEachFormatPutsThem) {
  auto count = [](DType t, auto pred) {
    int n = 0;
    for (uint32_t c = 0; c < 256; ++c) n += pred(from_bits(t, c));
    return n;
  };
  auto nan = [](float x) { return std::isnan(x); };
  auto inf = [](float x) { return std::isinf(x); };
  auto neg_zero = [](float x) { return x == 0 && std::signbit(x); };
  EXPECT_EQ(count(DType::fp8_e4m3, nan), 2) << "S.1111.111";
  EXPECT_EQ(count(DType::fp8_e5m2, nan), 6) << "S.11111.01/10/11";
  EXPECT_EQ(count(DType::fp8_e5m2, inf), 2);
  for (DType t : {DType::fp8_e4m3fnuz, DType::fp8_e5m2fnuz}) {
    EXPECT_EQ(count(t, nan), 1) << dtype_name(t) << ": 0x80 alone";
    EXPECT_TRUE(std::isnan(from_bits(t, 0x80)));
    EXPECT_EQ(count(t, inf), 0) << dtype_name(t) << " has no infinity";
    EXPECT_EQ(count(t, neg_zero), 0) << dtype_name(t) << " has no -0";
    EXPECT_EQ(from_bits(t, 0xff), -dtype_max(t)) << "0xff is finite in FNUZ";
  }
  EXPECT_EQ(count(DType::fp8_e4m3, inf), 0);
  EXPECT_EQ(count(DType::fp8_e4m3, neg_zero), 1);
  EXPECT_EQ(from_bits(DType::fp8_e4m3fnuz, 0x40), 1.f) << "bias 8: 1.0 is 0.1000.000";
  EXPECT_EQ(from_bits(DType::fp8_e5m2fnuz, 0x40), 1.f) << "bias 16: 1.0 is 0.10000.00";
}

TEST(Dtype, TheTablesFormatColumnsAgreeWithTheCodes) {
  for (DType t : kFp8) {
    double largest = 0, smallest_normal = INFINITY;
    for (uint32_t c = 0; c < 128; ++c) {
      const float x = from_bits(t, c);
      if (std::isfinite(x)) largest = std::max(largest, double(x));
      if (c >> dtype_mantissa_bits(t)) smallest_normal = std::min(smallest_normal, double(x));
    }
    EXPECT_EQ(dtype_max(t), largest) << dtype_name(t);
    EXPECT_EQ(smallest_normal, std::ldexp(1.0, dtype_min_normal_exp(t))) << dtype_name(t);
    EXPECT_TRUE(dtype_row(t).saturating);
  }
  EXPECT_EQ(dtype_max(DType::fp8_e4m3), 448.0);
  EXPECT_EQ(dtype_max(DType::fp8_e5m2), 57344.0);
  EXPECT_EQ(dtype_max(DType::fp8_e4m3fnuz), 240.0);
  EXPECT_EQ(dtype_max(DType::fp8_e5m2fnuz), 57344.0);
  EXPECT_EQ(dtype_max(DType::fp16), 65504.0);
  EXPECT_EQ(dtype_max(DType::bf16), double(Eigen::NumTraits<Eigen::bfloat16>::highest()));
  EXPECT_EQ(dtype_max(DType::fp32), double(std::numeric_limits<float>::max()));
  for (DType t : {DType::fp16, DType::bf16, DType::fp32}) {
    EXPECT_EQ(round_to(t, float(dtype_max(t))), float(dtype_max(t))) << dtype_name(t);
    EXPECT_FALSE(dtype_row(t).saturating);
  }
  EXPECT_TRUE(std::isinf(round_to(DType::fp16, 1e6f))) << "fp16 overflows to inf";
}

TEST(Dtype, EveryNonNanFp8CodeRoundTripsAndPositiveCodesIncreaseStrictly) {
  for (DType t : kFp8) {
    float prev = -1.f;
    for (uint32_t b = 0; b < 256; ++b) {
      const float x = from_bits(t, b);
      if (std::isnan(x)) continue;
      if (std::isfinite(x)) {
        EXPECT_EQ(to_bits(t, x), b) << dtype_name(t) << " code " << b;
      }
      if (b < 0x80 && std::isfinite(x)) {
        EXPECT_GT(x, prev) << dtype_name(t) << " code " << b;
        prev = x;
      }
    }
  }
}

TEST(Dtype, Fp8RoundsToNearestEvenAtMidpointsAndSaturatesBeyondTheLargestValue) {
  for (DType t : kFp8) {
    uint32_t top = 0;  // the largest positive finite code
    while (std::isfinite(from_bits(t, top + 1)) && top + 1 < 0x80) ++top;
    for (uint32_t b = 0; b < top; ++b) {  // consecutive positive finite codes b, b + 1
      const float lo = from_bits(t, b), hi = from_bits(t, b + 1), mid = (lo + hi) / 2;  // exact in fp32
      const uint32_t even = (b % 2 == 0) ? b : b + 1;  // the code whose mantissa ends in 0
      EXPECT_EQ(to_bits(t, mid), even) << dtype_name(t) << " midpoint of codes " << b << "," << b + 1;
      EXPECT_EQ(to_bits(t, std::nextafter(mid, 0.f)), b) << dtype_name(t);
      EXPECT_EQ(to_bits(t, std::nextafter(mid, 1e9f)), b + 1) << dtype_name(t);
      if (even != 0) {
        EXPECT_EQ(to_bits(t, -mid), even | 0x80u) << dtype_name(t);
      }
    }
    const float max = float(dtype_max(t));
    EXPECT_EQ(to_bits(t, max), top) << dtype_name(t);
    EXPECT_EQ(round_to(t, max * 1.01f), max) << dtype_name(t);
    EXPECT_EQ(round_to(t, 1e30f), max);
    EXPECT_EQ(round_to(t, INFINITY), max) << "satfinite, as the kernels' conversions";
    EXPECT_EQ(round_to(t, -INFINITY), -max);
    EXPECT_TRUE(std::isnan(round_to(t, NAN)));
    EXPECT_EQ(round_to(t, std::ldexp(1.f, -30)), 0.f) << "far below the smallest subnormal";
  }
}

TEST(Dtype, FnuzHasNoNegativeZeroSoMinusZeroAndTinyNegativesEncodeAsPlusZero) {
  for (DType t : {DType::fp8_e4m3fnuz, DType::fp8_e5m2fnuz}) {
    EXPECT_EQ(to_bits(t, -0.f), 0x00u) << dtype_name(t) << ": 0x80 is the NaN";
    EXPECT_EQ(to_bits(t, -std::ldexp(1.f, -30)), 0x00u) << dtype_name(t);
    const float half_tiny = float(from_bits(t, 1)) / 2;  // a tie between 0 and the smallest subnormal: even is 0
    EXPECT_EQ(to_bits(t, -half_tiny), 0x00u) << dtype_name(t);
    EXPECT_EQ(to_bits(t, NAN), 0x80u);
    EXPECT_EQ(to_bits(t, -NAN), 0x80u) << "one NaN, whatever the sign";
  }
  EXPECT_EQ(to_bits(DType::fp8_e4m3, -0.f), 0x80u) << "OCP keeps -0";
}

TEST(Dtype, PoisonIsABitPatternNoConversionOfAFiniteValueProduces) {
  for (DType t : kAll) {
    const uint32_t poison = poison_bits(t);
    EXPECT_TRUE(std::isnan(from_bits(t, poison))) << dtype_name(t) << ": the poison is a NaN";
    // The finite values nearest each code, and the saturating ends: none rounds onto the poison.
    if (is_fp8(t))
      for (uint32_t c = 0; c < 256; ++c) {
        const float x = from_bits(t, c);
        if (!std::isfinite(x)) continue;
        for (float y : {x, std::nextafter(x, INFINITY), std::nextafter(x, -INFINITY)})
          EXPECT_NE(to_bits(t, y), poison) << dtype_name(t) << " from " << y;
      }
    EXPECT_NE(to_bits(t, 1e30f), poison);
    EXPECT_NE(to_bits(t, -1e30f), poison);
  }
  EXPECT_EQ(poison_bits(DType::fp8_e4m3fnuz), 0x80u) << "0xff is -240 in FNUZ";
  EXPECT_EQ(poison_bits(DType::fp8_e4m3), 0xffu);
}

TEST(Dtype, MantissaBitsAndTheSmallestNormalMatchEachFormat) {
  for (DType t : kAll) {
    const float one_up = round_to(t, 1.f + std::ldexp(1.f, -dtype_mantissa_bits(t)));
    EXPECT_GT(one_up, 1.f) << dtype_name(t) << ": one ulp above 1 is representable";
    EXPECT_EQ(round_to(t, 1.f + std::ldexp(1.f, -dtype_mantissa_bits(t) - 2)), 1.f) << dtype_name(t);
    const float tiny = std::ldexp(1.f, dtype_min_normal_exp(t));
    EXPECT_EQ(round_to(t, tiny), tiny) << dtype_name(t);
  }
}

TEST(Dtype, E5m2IsTheTopByteOfAnFp16) {
  for (uint32_t b = 0; b < 256; ++b) {
    const float want = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(uint16_t(b << 8)));
    const float got = from_bits(DType::fp8_e5m2, b);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << b;
    else EXPECT_EQ(got, want) << "code " << b;
  }
}

// The matrix-core paths round P (0..1) to e4m3 on the device with fp8_e4m3_from_unit
// (harness/fp8.hpp); it must give the harness's own rounding (to_bits, checked above against the
// formats) for OCP e4m3 (bias 7) and e4m3fnuz (bias 8): at every code, at every midpoint between
// neighbours (ties to even) and one fp32 step either side, and at 0 and 1.
TEST(Dtype, TheDevicesRoundingOfPToE4m3AgreesWithTheHarnessAtEveryMidpoint) {
  for (auto [t, bias] : {std::pair{DType::fp8_e4m3, 7}, std::pair{DType::fp8_e4m3fnuz, 8}}) {
    const uint32_t one = to_bits(t, 1.f);
    int checked = 0;
    for (uint32_t b = 0; b <= one; ++b) {
      const float lo = from_bits(t, b);
      std::vector<float> xs{lo};
      if (b < one) {
        const float mid = (lo + from_bits(t, b + 1)) / 2;  // exact in fp32
        xs.insert(xs.end(), {mid, std::nextafter(mid, 0.f), std::nextafter(mid, 2.f)});
      }
      for (float x : xs) {
        EXPECT_EQ(fp8_e4m3_from_unit(x, bias), to_bits(t, x)) << dtype_name(t) << " x = " << x << " (code " << b << ")";
        ++checked;
      }
    }
    EXPECT_EQ(fp8_e4m3_from_unit(0.f, bias), 0u);
    EXPECT_GT(checked, 4 * 50) << "every code up to 1.0 and its midpoints";
  }
}
