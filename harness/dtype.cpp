// The dtype table and host rounding: fp16/bf16 through Eigen's round-to-nearest-even half types;
// FP8 by harness/fp8.hpp's fp8_encode (host and device alike; it also decodes them), one
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
    case Rounding::fp8_satfinite: return fp8_encode(x, fp8_of(r), float(r.max));
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
