// Element types of a problem (fp16, bf16, fp32; the FP8 inputs: OCP fp8_e4m3 / fp8_e5m2 and MI300's
// FNUZ fp8_e4m3fnuz / fp8_e5m2fnuz), each a row of one table (harness/dtype.cpp): names, size,
// format, how the host rounds to it, its torch and .npy names, poison and output dtype. Rounding is
// round-to-nearest-even (FP8 saturating to the largest finite value, as CUDA's __NV_SATFINITE and
// gfx942's cvt_pk_fp8 conversions do), the rule of the GPU conversions, so host and device see
// identical inputs. An FP8 problem's Q, K, V carry per-tensor descales (HostInputs); its O is bf16.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/fp8.hpp"

namespace fa {

enum class DType { fp16, bf16, fp32, fp8_e4m3, fp8_e5m2, fp8_e4m3fnuz, fp8_e5m2fnuz };

// How the host rounds fp32 to a dtype (round to nearest even in each).
enum class Rounding { ieee_half, bfloat16, exact, fp8_satfinite };

struct DTypeRow {
  DType t;
  std::string_view name;
  std::array<std::string_view, 3> aliases;  // also accepted by parse_dtype ("" = none)
  int bits;
  // The format: stored mantissa bits, exponent bias, where its NaNs are (and so whether it has
  // infinities), largest finite value, whether rounding saturates to it rather than overflowing.
  int mant, bias;
  Fp8Nan nan;
  double max;
  bool saturating;
  Rounding rounding;
  std::string_view torch;      // torch.<name> (scripts/sdpa_baseline.py's map says the same)
  std::string_view npy_descr;  // how its values are stored in .npy (no numpy FP8 type: raw bits)
  uint32_t poison;             // a pattern no conversion produces (harness/check/metrics.cpp)
  DType out;                   // the dtype O is written in
  DType fp8_p;                 // FP8 rows: the e4m3 of its family, what P is rounded to before PV
  bool fp8;
};
const DTypeRow& dtype_row(DType t);
// An FP8 row's format for harness/fp8.hpp's encode and decode.
inline Fp8Format fp8_of(const DTypeRow& r) { return {r.mant, r.bias, r.nan}; }
// Every dtype, in the table's (and the enum's) order: what "every dtype" means to a path's
// capabilities (reference/cpu_paths.cpp, kernels/runtime/launchers.hpp) and to the tests.
std::vector<DType> every_dtype();

std::string_view dtype_name(DType t);
// For error messages: every row's name (tests/harness/test_dtype.cpp checks it lists them all).
inline constexpr const char* kDtypeNames = "fp16, bf16, fp32, fp8_e4m3, fp8_e5m2, fp8_e4m3fnuz, fp8_e5m2fnuz";
std::optional<DType> parse_dtype(std::string_view s);
inline bool is_fp8(DType t) { return dtype_row(t).fp8; }
// MI300's FP8 (no infinity, no -0, NaN 0x80); Hopper's wgmma and FA3 take the OCP formats only.
inline bool is_fnuz(DType t) { return is_fp8(t) && dtype_row(t).nan == Fp8Nan::neg_zero; }
inline int dtype_bytes(DType t) { return dtype_row(t).bits / 8; }
// The dtype O is written in: the input dtype, except bf16 for FP8 inputs (FA3, aiter, CK).
inline DType out_dtype(DType t) { return dtype_row(t).out; }
// Stored mantissa bits and the exponent of the smallest normal value (1 - bias; fp16: 10, -14;
// bf16: 7, -126; fp32: 23, -126; e4m3: 3, -6; e5m2: 2, -14; e4m3fnuz: 3, -7; e5m2fnuz: 2, -15).
inline int dtype_mantissa_bits(DType t) { return dtype_row(t).mant; }
inline int dtype_min_normal_exp(DType t) { return 1 - dtype_row(t).bias; }
// Largest finite value: FP8 inputs are scaled so that a tensor's largest |x| lands on it.
inline double dtype_max(DType t) { return dtype_row(t).max; }

// fp32 -> value after rounding to `t` and back (what a kernel reading a `t` input sees).
float round_to(DType t, float x);
// Storage bits of x rounded to `t` (low 8 bits for FP8, 16 for fp16/bf16, all 32 for fp32).
uint32_t to_bits(DType t, float x);
float from_bits(DType t, uint32_t bits);

// Buffers are poisoned before each run with a pattern no conversion or arithmetic produces, so an
// element still holding it was never written: all-ones, a NaN that hardware never makes (canonical
// NaNs are 0x7e00/0x7fc0/0x7fc00000; OCP FP8 conversions saturate), except FNUZ, where 0xff is
// -240 / -57344 and the poison is the NaN 0x80, which saturating conversions never produce.
inline uint32_t poison_bits(DType t) { return dtype_row(t).poison; }

}  // namespace fa
