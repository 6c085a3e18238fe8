// Host rounding for the problem dtypes: fp16/bf16 through Eigen's round-to-nearest-even half
// types; FP8 (the OCP formats of harness/fp8.hpp, which also decodes them) by the arithmetic below.
#include "harness/dtype.hpp"

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <limits>

#include "harness/fp8.hpp"

namespace fa {
namespace {

struct Fp8Range {
  Fp8Format f;
  double max;
};
Fp8Range fp8_format(DType t) { return t == DType::fp8_e4m3 ? Fp8Range{kE4M3, 448.0} : Fp8Range{kE5M2, 57344.0}; }

// Round-to-nearest-even onto the format's grid, saturating finite values to +-max (satfinite);
// NaN -> NaN, +-inf -> +-max (satfinite, as __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) does).
uint32_t fp8_bits(DType t, float x) {
  const Fp8Format f = fp8_format(t).f;
  const double max = fp8_format(t).max;
  const uint32_t sign = std::signbit(x) ? 0x80u : 0u;
  if (std::isnan(x)) return sign | 0x7fu;  // both formats: S.1111.111 is a NaN
  double a = std::fabs(double(x));
  if (a >= max) a = max;
  if (a == 0) return sign;
  // The spacing of the grid at a: 2^(e - mant) with e the exponent of a, floored at the subnormal
  // exponent 1 - bias. rint rounds half to even, and a multiple of the spacing is exact in double.
  int e = std::ilogb(a);
  if (e < 1 - f.bias) e = 1 - f.bias;
  const double step = std::ldexp(1.0, e - f.mant);
  double r = std::rint(a / step) * step;
  if (r == 0) return sign;
  int re = std::ilogb(r);
  uint32_t exp_field, mant_field;
  if (re < 1 - f.bias) {  // subnormal: exponent field 0, mantissa r / 2^(1 - bias - mant)
    exp_field = 0;
    mant_field = uint32_t(std::ldexp(r, f.bias - 1 + f.mant));
  } else {
    exp_field = uint32_t(re + f.bias);
    mant_field = uint32_t(std::ldexp(r, f.mant - re)) - (1u << f.mant);
  }
  return sign | (exp_field << f.mant) | mant_field;
}

float fp8_value(DType t, uint32_t bits) { return fp8_to_float(bits, fp8_format(t).f); }

}  // namespace

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp32: return "fp32";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::fp8_e5m2: return "fp8_e5m2";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp16" || s == "f16" || s == "half") return DType::fp16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp32" || s == "f32" || s == "float") return DType::fp32;
  if (s == "fp8_e4m3" || s == "e4m3" || s == "float8_e4m3fn") return DType::fp8_e4m3;
  if (s == "fp8_e5m2" || s == "e5m2" || s == "float8_e5m2") return DType::fp8_e5m2;
  return std::nullopt;
}

int dtype_mantissa_bits(DType t) {
  switch (t) {
    case DType::fp16: return 10;
    case DType::bf16: return 7;
    case DType::fp32: return 23;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return fp8_format(t).f.mant;
  }
  return 0;
}

int dtype_min_normal_exp(DType t) {
  switch (t) {
    case DType::fp16: return -14;
    case DType::bf16:
    case DType::fp32: return -126;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return 1 - fp8_format(t).f.bias;
  }
  return 0;
}

double dtype_max(DType t) {
  switch (t) {
    case DType::fp16: return 65504.0;
    case DType::bf16: return double(Eigen::NumTraits<Eigen::bfloat16>::highest());
    case DType::fp32: return double(std::numeric_limits<float>::max());
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return fp8_format(t).max;
  }
  return 0;
}

uint32_t to_bits(DType t, float x) {
  switch (t) {
    case DType::fp16: return Eigen::numext::bit_cast<uint16_t>(Eigen::half(x));
    case DType::bf16: return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(x));
    case DType::fp32: {
      uint32_t b;
      std::memcpy(&b, &x, 4);
      return b;
    }
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return fp8_bits(t, x);
  }
  return 0;
}

float from_bits(DType t, uint32_t bits) {
  switch (t) {
    case DType::fp16:
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(static_cast<uint16_t>(bits)));
    case DType::bf16:
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<uint16_t>(bits)));
    case DType::fp32: {
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return fp8_value(t, bits & 0xffu);
  }
  return 0.f;
}

float round_to(DType t, float x) { return from_bits(t, to_bits(t, x)); }

}  // namespace fa
