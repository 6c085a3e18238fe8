// The FP8 formats as their bits are read, on the host and on the device alike, one parameterised
// definition for all four: OCP e4m3 ("FN": bias 7, no infinity, S.1111.111 the only NaN, largest
// 448), OCP e5m2 (bias 15, IEEE-like with infinities, largest 57344), and MI300's (gfx942) FNUZ
// formats e4m3fnuz (bias 8, largest 240) and e5m2fnuz (bias 16, largest 57344): no infinity, no -0,
// the code of -0 (0x80) the one NaN. harness/dtype.cpp rounds to them (host only); kernels that
// take FP8 inputs decode with these, so the harness and the kernels read the same values.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "harness/conventions.hpp"

namespace fa {

// Where a format keeps its NaNs, which also says whether it has infinities.
enum class Fp8Nan : uint8_t {
  ieee,      // e5m2: the all-ones exponent is +-inf (mantissa 0) or a NaN, as in IEEE 754
  all_ones,  // e4m3: S.1111.111 only; no infinity
  neg_zero,  // FNUZ: 0x80 (what would be -0) only; no infinity, no -0
};
struct Fp8Format {
  int mant, bias;
  Fp8Nan nan;
};
constexpr Fp8Format kE4M3{3, 7, Fp8Nan::all_ones}, kE5M2{2, 15, Fp8Nan::ieee};
constexpr Fp8Format kE4M3Fnuz{3, 8, Fp8Nan::neg_zero}, kE5M2Fnuz{2, 16, Fp8Nan::neg_zero};

// The formats by a compile-time name, for the kernels' element traits (kernels/device/device_common.hpp).
enum class Fp8Kind { e4m3, e5m2, e4m3fnuz, e5m2fnuz };
FA_HD constexpr Fp8Format fp8_format(Fp8Kind k) {
  return k == Fp8Kind::e4m3 ? kE4M3 : k == Fp8Kind::e5m2 ? kE5M2 : k == Fp8Kind::e4m3fnuz ? kE4M3Fnuz : kE5M2Fnuz;
}

// fp32 from its bits: the device's register move where compiled for one (a memcpy there went
// through scratch memory on AMD: 1.5-2.3 KB a thread in tiled's FP8 kernels), memcpy on the host.
FA_HD inline float fp32_from_bits(uint32_t bits) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(bits);
#else
  float v;
  memcpy(&v, &bits, 4);
  return v;
#endif
}

// fp32's bits (the inverse of fp32_from_bits).
FA_HD inline uint32_t fp32_bits(float v) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(v);
#else
  uint32_t bits;
  memcpy(&bits, &v, 4);
  return bits;
#endif
}

// A probability (0 <= x <= 1) as an e4m3 byte of exponent bias `bias` (7: OCP e4m3, 8: e4m3fnuz),
// rounded to nearest, ties to even: what the AMD matrix-core paths feed their FP8 PV product (P is
// never negative, NaN or above the format's range, so no sign, NaN or saturation case arises).
// From the smallest normal, 2^(1 - bias), up, fp32's mantissa is rounded to 3 bits in the integer
// domain (a carry steps the exponent) and the exponent rebiased; below it the code is the count of
// subnormal steps 2^(-2 - bias), and a count of 8 is the smallest normal's code. A few integer
// operations, where gfx942's v_cvt_pk_fp8_f32 would be one: tests/harness/test_dtype.cpp checks it
// against the harness's rounding for both biases.
FA_HD inline uint32_t fp8_e4m3_from_unit(float x, int bias) {
  if (x < fp32_from_bits(uint32_t(1 - bias + 127) << 23))
    return uint32_t(rintf(x * fp32_from_bits(uint32_t(bias + 2 + 127) << 23)));
  const uint32_t u = fp32_bits(x);
  return ((u + 0x7ffffu + ((u >> 20) & 1u)) >> 20) - uint32_t(127 - bias) * 8u;
}

// x rounded onto format f's grid (largest finite value max), to nearest, ties to even; finite values
// past max and +-inf saturate to +-max (satfinite, as __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...)
// and gfx942's v_cvt_pk_fp8_f32 with clamping do); NaN -> the format's NaN. FNUZ has no -0: -0 and
// negatives that round to 0 encode as 0x00 (+0), as torch's c10 Float8_e4m3fnuz/e5m2fnuz casts do,
// 0x80 being its NaN. (torch's cast turns overflow into that NaN; inputs here are scaled onto
// +-max, so saturation only decides +-inf.) fp32 bit moves, exact power-of-two scalings and one
// rounding by the 2^23 trick: the host's rounding (harness/dtype.cpp) and a device's are one function.
FA_HD inline uint32_t fp8_encode(float x, Fp8Format f, float max) {
  const uint32_t xb = fp32_bits(x), sign = (xb >> 31) << 7;
  const bool fnuz = f.nan == Fp8Nan::neg_zero;
  if ((xb & 0x7fffffffu) > 0x7f800000u) return fnuz ? 0x80u : sign | 0x7fu;
  float a = fp32_from_bits(xb & 0x7fffffffu);
  if (a >= max) a = max;
  const uint32_t zero = fnuz ? 0u : sign;
  // The grid's spacing at a is 2^(e - mant), e a's exponent floored at the subnormal one, 1 - bias
  // (an fp32 subnormal, e = -127, lies below every FP8 step and rounds to 0).
  int e = int(fp32_bits(a) >> 23) - 127;
  if (e < 1 - f.bias) e = 1 - f.bias;
  const float steps = a * fp32_from_bits(uint32_t(127 + f.mant - e) << 23);  // exact: < 2^(mant + 1)
  uint32_t q = uint32_t((steps + 8388608.f) - 8388608.f);                      // to nearest, ties to even
  if (q == 0) return zero;
  if (q >> (f.mant + 1)) q >>= 1, ++e;             // rounded up to 2^(mant + 1) steps: the next binade
  if (q < (1u << f.mant)) return sign | q;          // subnormal: exponent field 0
  return sign | (uint32_t(e + f.bias) << f.mant) | (q - (1u << f.mant));
}

// Whether the FP8 byte (the low 8 bits of b) is a NaN of format f.
FA_HD inline bool fp8_is_nan(uint32_t b, Fp8Format f) {
  const uint32_t mag = b & 0x7fu, emax = 0x7fu >> f.mant;
  if (f.nan == Fp8Nan::ieee) return (mag >> f.mant) == emax && (mag & ((1u << f.mant) - 1)) != 0;
  if (f.nan == Fp8Nan::all_ones) return mag == 0x7fu;
  return (b & 0xffu) == 0x80u;
}

// The value of an FP8 byte (the low 8 bits of b), exactly, as an fp32. NaNs keep the sign bit.
FA_HD inline float fp8_to_float(uint32_t b, Fp8Format f) {
  const uint32_t sign = (b & 0x80u) << 24, emax = 0x7fu >> f.mant;
  const uint32_t e = (b >> f.mant) & emax, m = b & ((1u << f.mant) - 1);
  uint32_t bits;
  if (fp8_is_nan(b, f)) {
    bits = sign | 0x7fc00000u;  // a quiet NaN
  } else if (f.nan == Fp8Nan::ieee && e == emax) {
    bits = sign | 0x7f800000u;  // inf
  } else if (e == 0) {  // subnormal: m * 2^(1 - bias - mant), a small integer times a normal power of two
    const float v = float(m) * fp32_from_bits(uint32_t(1 - f.bias - f.mant + 127) << 23);
    return sign ? -v : v;
  } else {
    bits = sign | (uint32_t(int(e) - f.bias + 127) << 23) | (m << (23 - f.mant));
  }
  return fp32_from_bits(bits);
}

// The same values through an fp16 conversion (half_to_float: the fp16 bits' value), the way kernels
// decode. e5m2 is the top byte of an fp16. The e4m3 formats' 7 magnitude bits shifted into an
// fp16's exponent and mantissa give their value / 2^(15 - bias) (256 for e4m3, 128 for e4m3fnuz),
// subnormals included. e5m2fnuz's bias is one above fp16's and its top exponent is finite, so a
// code of exponent >= 2 is the fp16 one exponent step lower, and one of exponent 0 or 1 (where that
// step would leave fp16's normals) is half the fp16 one.
// fp8_to_float's branches made tiled's FP8 kernels spill 1.5-3.4 KB a thread on gfx942/gfx1100;
// these are a shift, a convert and a multiply or select (f folds away where it is a constant).
// tests/harness/test_dtype.cpp checks every code of every format against fp8_to_float.
template <typename HalfToFloat>
FA_HD inline float fp8_via_half(uint32_t b, Fp8Format f, HalfToFloat half_to_float) {
  if (f.nan == Fp8Nan::ieee) return half_to_float(uint16_t((b & 0xffu) << 8));
  const uint32_t mag = b & 0x7fu;
  float v;
  if (f.mant == 3)
    v = half_to_float(uint16_t(mag << 7)) * fp32_from_bits(uint32_t(15 - f.bias + 127) << 23);
  else
    v = mag >= 8u ? half_to_float(uint16_t((mag << 8) - 0x400u)) : half_to_float(uint16_t(mag << 8)) * 0.5f;
  if (fp8_is_nan(b, f)) v = fp32_from_bits(0x7fc00000u);
  return (b & 0x80u) ? -v : v;
}

}  // namespace fa
