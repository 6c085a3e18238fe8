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

// The value of an FP8 byte (the low 8 bits of b), exactly, as an fp32.
FA_HD inline float fp8_to_float(uint32_t b, Fp8Format f) {
  const uint32_t sign = (b & 0x80u) << 24, emax = 0x7fu >> f.mant;
  const uint32_t e = (b >> f.mant) & emax, m = b & ((1u << f.mant) - 1);
  uint32_t bits;
  if (f.ieee_special ? e == emax : (e == emax && m == (1u << f.mant) - 1)) {
    bits = sign | 0x7f800000u | (f.ieee_special && m == 0 ? 0u : 0x400000u);  // inf, or a quiet NaN
  } else if (e == 0) {  // subnormal: m * 2^(1 - bias - mant), a small integer times a normal power of two
    const uint32_t scale_bits = uint32_t(1 - f.bias - f.mant + 127) << 23;
    float scale;
    memcpy(&scale, &scale_bits, 4);
    const float v = float(m) * scale;
    return sign ? -v : v;
  } else {
    bits = sign | (uint32_t(int(e) - f.bias + 127) << 23) | (m << (23 - f.mant));
  }
  float v;
  memcpy(&v, &bits, 4);
  return v;
}

}  // namespace fa
