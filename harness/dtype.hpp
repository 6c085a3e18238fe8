// Element types of a problem (fp16, bf16, fp32, and the FP8 inputs fp8_e4m3 / fp8_e5m2): names,
// sizes, and host-side rounding between fp32 and the storage bits. Rounding is round-to-nearest-
// even (Eigen::half / Eigen::bfloat16; FP8 here, saturating to the largest finite value as CUDA's
// __NV_SATFINITE conversions do), the rule the GPU conversion intrinsics use, so host and device
// see identical inputs. An FP8 problem's Q, K and V are FP8 with per-tensor descale factors
// (HostInputs); its O is bf16 (out_dtype).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fa {

enum class DType { fp16, bf16, fp32, fp8_e4m3, fp8_e5m2 };

std::string_view dtype_name(DType t);
inline constexpr const char* kDtypeNames = "fp16, bf16, fp32, fp8_e4m3, fp8_e5m2";  // for error messages
std::optional<DType> parse_dtype(std::string_view s);
inline bool is_fp8(DType t) { return t == DType::fp8_e4m3 || t == DType::fp8_e5m2; }
inline int dtype_bytes(DType t) { return t == DType::fp32 ? 4 : is_fp8(t) ? 1 : 2; }
// The dtype O is written in: the input dtype, except bf16 for FP8 inputs (FA3, aiter, CK).
inline DType out_dtype(DType t) { return is_fp8(t) ? DType::bf16 : t; }
// Stored mantissa bits and the exponent of the smallest normal value (fp16: 10, -14; bf16: 7,
// -126; fp32: 23, -126; e4m3: 3, -6; e5m2: 2, -14).
int dtype_mantissa_bits(DType t);
int dtype_min_normal_exp(DType t);
// Largest finite value: FP8 inputs are scaled so that a tensor's largest |x| lands on it.
double dtype_max(DType t);

// fp32 -> value after rounding to `t` and back (what a kernel reading a `t` input sees).
float round_to(DType t, float x);
// Storage bits of x rounded to `t` (low 8 bits for FP8, 16 for fp16/bf16, all 32 for fp32).
uint32_t to_bits(DType t, float x);
float from_bits(DType t, uint32_t bits);

// Outputs are poisoned with all-ones bits before each run. That pattern is a NaN no arithmetic
// produces (hardware NaNs are canonical 0x7e00/0x7fc0/0x7fc00000; FP8 conversions saturate), so an
// element still holding it was never written.
inline uint32_t poison_bits(DType t) { return t == DType::fp32 ? 0xffffffffu : is_fp8(t) ? 0xffu : 0xffffu; }

}  // namespace fa
