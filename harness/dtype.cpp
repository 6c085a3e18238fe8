// Host rounding for the problem dtypes, through Eigen's round-to-nearest-even half types.
#include "harness/dtype.hpp"

#include <Eigen/Core>
#include <cstring>

namespace fa {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp32: return "fp32";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp16" || s == "f16" || s == "half") return DType::fp16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp32" || s == "f32" || s == "float") return DType::fp32;
  return std::nullopt;
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
  }
  return 0.f;
}

float round_to(DType t, float x) { return from_bits(t, to_bits(t, x)); }

}  // namespace fa
