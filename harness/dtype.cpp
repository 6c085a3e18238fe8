// The dtype table and host rounding: fp16/bf16 through Eigen's round-to-nearest-even half types;
// FP8 (the formats of harness/fp8.hpp, which also decodes them) by the arithmetic below, one
// function for all four formats. Every property of a dtype is a column of kRows.
#include "harness/dtype.hpp"

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace fa {
namespace {

using R = Rounding;
using N = Fp8Nan;
// Largest finite values: fp16 (2 - 2^-10) 2^15, bf16 (2 - 2^-7) 2^127, fp32 (2 - 2^-23) 2^127; e4m3
// 1.75 * 2^8 (S.1111.111 is NaN), e5m2 1.75 * 2^15 (the top exponent is inf/NaN), e4m3fnuz
// 1.875 * 2^7 and e5m2fnuz 1.75 * 2^15 (all codes but 0x80 finite). The FNUZ torch types are
// float8_e4m3fnuz / float8_e5m2fnuz (LLVM APFloat's Float8E4M3FNUZ / Float8E5M2FNUZ, ONNX's
// FLOAT8E4M3FNUZ / FLOAT8E5M2FNUZ, from Graphcore's "8-bit Numerical Formats for Deep Neural Networks").
// P's FP8 type (fp8_p): the e4m3 of the family, what FA3 on Hopper and aiter on MI300 round P to.
constexpr DTypeRow kRows[] = {
    {DType::fp16, "fp16", {"f16", "half", "float16"}, 16, 10, 15, N::ieee, 0x1.ffcp15, false, R::ieee_half,
     "float16", "<f2", 0xffffu, DType::fp16, DType::fp16, false},
    {DType::bf16, "bf16", {"bfloat16", "", ""}, 16, 7, 127, N::ieee, 0x1.fep127, false, R::bfloat16,
     "bfloat16", "<f4", 0xffffu, DType::bf16, DType::bf16, false},  // .npy: widened to fp32, exactly
    {DType::fp32, "fp32", {"f32", "float", "float32"}, 32, 23, 127, N::ieee, 0x1.fffffep127, false, R::exact,
     "float32", "<f4", 0xffffffffu, DType::fp32, DType::fp32, false},
    {DType::fp8_e4m3, "fp8_e4m3", {"e4m3", "float8_e4m3fn", ""}, 8, kE4M3.mant, kE4M3.bias, kE4M3.nan, 448.0, true,
     R::fp8_satfinite, "float8_e4m3fn", "|u1", 0xffu, DType::bf16, DType::fp8_e4m3, true},
    {DType::fp8_e5m2, "fp8_e5m2", {"e5m2", "float8_e5m2", ""}, 8, kE5M2.mant, kE5M2.bias, kE5M2.nan, 57344.0, true,
     R::fp8_satfinite, "float8_e5m2", "|u1", 0xffu, DType::bf16, DType::fp8_e4m3, true},
    {DType::fp8_e4m3fnuz, "fp8_e4m3fnuz", {"e4m3fnuz", "float8_e4m3fnuz", ""}, 8, kE4M3Fnuz.mant, kE4M3Fnuz.bias,
     kE4M3Fnuz.nan, 240.0, true, R::fp8_satfinite, "float8_e4m3fnuz", "|u1", 0x80u, DType::bf16, DType::fp8_e4m3fnuz,
     true},
    {DType::fp8_e5m2fnuz, "fp8_e5m2fnuz", {"e5m2fnuz", "float8_e5m2fnuz", ""}, 8, kE5M2Fnuz.mant, kE5M2Fnuz.bias,
     kE5M2Fnuz.nan, 57344.0, true, R::fp8_satfinite, "float8_e5m2fnuz", "|u1", 0x80u, DType::bf16,
     DType::fp8_e4m3fnuz, true},
};
constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < std::size(kRows); ++i)
    if (size_t(kRows[i].t) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kRows[i] is the row of DType i");

Fp8Format fp8_of(const DTypeRow& r) { return {r.mant, r.bias, r.nan}; }

// Round-to-nearest-even onto the format's grid, saturating finite values and +-inf to +-max
// (satfinite, as __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) and gfx942's v_cvt_pk_fp8_f32 with
// clamping do); NaN -> the format's NaN. FNUZ has no -0: -0 and negatives that round to 0 encode
// as 0x00 (+0), as torch's c10 Float8_e4m3fnuz/e5m2fnuz casts do, 0x80 being its NaN. (torch's cast
// turns overflow into that NaN; inputs here are scaled onto +-max, so saturation only decides +-inf.)
uint32_t fp8_bits(const DTypeRow& row, float x) {
  const Fp8Format f = fp8_of(row);
  const bool fnuz = f.nan == Fp8Nan::neg_zero;
  const uint32_t sign = std::signbit(x) ? 0x80u : 0u;
  if (std::isnan(x)) return fnuz ? 0x80u : sign | 0x7fu;  // OCP: S.1111.111 is a NaN in both
  double a = std::fabs(double(x));
  if (a >= row.max) a = row.max;
  const uint32_t zero = fnuz ? 0u : sign;
  if (a == 0) return zero;
  // The spacing of the grid at a: 2^(e - mant) with e the exponent of a, floored at the subnormal
  // exponent 1 - bias. rint rounds half to even, and a multiple of the spacing is exact in double.
  int e = std::ilogb(a);
  if (e < 1 - f.bias) e = 1 - f.bias;
  const double step = std::ldexp(1.0, e - f.mant);
  const double r = std::rint(a / step) * step;
  if (r == 0) return zero;
  const int re = std::ilogb(r);
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

}  // namespace

const DTypeRow& dtype_row(DType t) {
  const size_t i = size_t(t);
  if (i >= std::size(kRows)) throw std::logic_error("dtype_row: not a DType");
  return kRows[i];
}

std::vector<DType> every_dtype() {
  std::vector<DType> v;
  for (const DTypeRow& r : kRows) v.push_back(r.t);
  return v;
}

std::string_view dtype_name(DType t) { return dtype_row(t).name; }

std::optional<DType> parse_dtype(std::string_view s) {
  if (s.empty()) return std::nullopt;
  for (const DTypeRow& r : kRows) {
    if (s == r.name) return r.t;
    for (std::string_view a : r.aliases)
      if (s == a) return r.t;
  }
  return std::nullopt;
}

uint32_t to_bits(DType t, float x) {
  const DTypeRow& r = dtype_row(t);
  switch (r.rounding) {
    case Rounding::ieee_half: return Eigen::numext::bit_cast<uint16_t>(Eigen::half(x));
    case Rounding::bfloat16: return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(x));
    case Rounding::exact: {
      uint32_t b;
      std::memcpy(&b, &x, 4);
      return b;
    }
    case Rounding::fp8_satfinite: return fp8_bits(r, x);
  }
  return 0;
}

float from_bits(DType t, uint32_t bits) {
  const DTypeRow& r = dtype_row(t);
  switch (r.rounding) {
    case Rounding::ieee_half:
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(static_cast<uint16_t>(bits)));
    case Rounding::bfloat16:
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<uint16_t>(bits)));
    case Rounding::exact: {
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case Rounding::fp8_satfinite: return fp8_to_float(bits & 0xffu, fp8_of(r));
  }
  return 0.f;
}

float round_to(DType t, float x) { return from_bits(t, to_bits(t, x)); }

}  // namespace fa
