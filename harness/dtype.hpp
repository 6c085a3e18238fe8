// Element types of a problem (fp16, bf16, fp32): names, sizes, and host-side rounding between
// fp32 and the storage bits. Rounding is round-to-nearest-even (Eigen::half / Eigen::bfloat16),
// the same rule the GPU conversion intrinsics use, so host and device see identical inputs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fa {

enum class DType { fp16, bf16, fp32 };

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view s);
inline int dtype_bytes(DType t) { return t == DType::fp32 ? 4 : 2; }

// fp32 -> value after rounding to `t` and back (what a kernel reading a `t` input sees).
float round_to(DType t, float x);
// Storage bits of x rounded to `t` (low 16 bits for fp16/bf16, all 32 for fp32).
uint32_t to_bits(DType t, float x);
float from_bits(DType t, uint32_t bits);

// Outputs are poisoned with all-ones bits before each run. That pattern is a NaN no arithmetic
// produces (hardware NaNs are canonical 0x7e00/0x7fc0/0x7fc00000), so an element still holding it
// was never written.
inline uint32_t poison_bits(DType t) { return t == DType::fp32 ? 0xffffffffu : 0xffffu; }

}  // namespace fa
