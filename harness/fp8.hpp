// The two OCP FP8 formats as their bits are read, on the host and on the device alike: e4m3 ("FN":
// bias 7, no infinity, S.1111.111 the only NaN, largest 448) and e5m2 (bias 15, IEEE-like with
// infinities, largest 57344). harness/dtype.cpp rounds to them (host only); kernels that take FP8
// inputs decode with these, so the harness and the kernels read the same values.
#pragma once
#include <cstdint>
#include <cstring>

#include "harness/conventions.hpp"

namespace fa {

struct Fp8Format {
  int mant, bias;
  bool ieee_special;  // e5m2: the all-ones exponent is inf/NaN; e4m3: only S.1111.111 is NaN
};
constexpr Fp8Format kE4M3{3, 7, false}, kE5M2{2, 15, true};

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

// The value of an FP8 byte (the low 8 bits of b), exactly, as an fp32.
FA_HD inline float fp8_to_float(uint32_t b, Fp8Format f) {
  const uint32_t sign = (b & 0x80u) << 24, emax = 0x7fu >> f.mant;
  const uint32_t e = (b >> f.mant) & emax, m = b & ((1u << f.mant) - 1);
  uint32_t bits;
  if (f.ieee_special ? e == emax : (e == emax && m == (1u << f.mant) - 1)) {
    bits = sign | 0x7f800000u | (f.ieee_special && m == 0 ? 0u : 0x400000u);  // inf, or a quiet NaN
  } else if (e == 0) {  // subnormal: m * 2^(1 - bias - mant), a small integer times a normal power of two
    const float v = float(m) * fp32_from_bits(uint32_t(1 - f.bias - f.mant + 127) << 23);
    return sign ? -v : v;
  } else {
    bits = sign | (uint32_t(int(e) - f.bias + 127) << 23) | (m << (23 - f.mant));
  }
  return fp32_from_bits(bits);
}

// The same values through an fp16 conversion (half_to_float: the fp16 bits' value), the way kernels
// decode: e5m2 is the top byte of an fp16; e4m3's 7 magnitude bits shifted into an fp16's exponent
// and mantissa give its value / 256, subnormals included (fp16's exponent bias is 8 more), and only
// S.1111.111 (which the shift makes 1.875) is a NaN. fp8_to_float's branches made tiled's FP8
// kernels spill 1.5-3.4 KB a thread on gfx942/gfx1100; these are a shift, a convert and a multiply.
// tests/harness/test_dtype.cpp checks both against fp8_to_float for every code.
template <typename HalfToFloat>
FA_HD inline float e5m2_via_half(uint32_t b, HalfToFloat half_to_float) {
  return half_to_float(uint16_t((b & 0xffu) << 8));
}
template <typename HalfToFloat>
FA_HD inline float e4m3_via_half(uint32_t b, HalfToFloat half_to_float) {
  const float mag = (b & 0x7fu) == 0x7fu ? fp32_from_bits(0x7fc00000u) : half_to_float(uint16_t((b & 0x7fu) << 7)) * 256.f;
  return (b & 0x80u) ? -mag : mag;
}

}  // namespace fa
