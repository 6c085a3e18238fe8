// Host inputs of a problem: Q, K, V drawn from the counter-based normal generator under the
// problem's seed (streams 1, 2, 3; element index in logical BSHD order, so every layout holds the
// same values), rounded to the dtype and stored as float in the problem's layout.
// Also TypedBuffer: raw output bits in the dtype, as paths hand them back.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "harness/problem.hpp"

namespace fa {

struct HostInputs {
  std::vector<float> q, k, v;  // k, v hold all Sk keys (for kv_cache: cache + appended tokens)
};
HostInputs make_inputs(const Problem& p);

// A tensor as stored in its dtype: 2 or 4 bytes per element.
struct TypedBuffer {
  DType dtype = DType::fp16;
  std::vector<uint8_t> bytes;

  TypedBuffer() = default;
  TypedBuffer(DType t, int64_t n) : dtype(t), bytes(size_t(n) * dtype_bytes(t)) {}
  int64_t size() const { return int64_t(bytes.size()) / dtype_bytes(dtype); }
  uint32_t bits(int64_t i) const {
    if (dtype == DType::fp32) {
      uint32_t b;
      std::memcpy(&b, bytes.data() + 4 * i, 4);
      return b;
    }
    uint16_t b;
    std::memcpy(&b, bytes.data() + 2 * i, 2);
    return b;
  }
  void set_bits(int64_t i, uint32_t b) {
    if (dtype == DType::fp32) std::memcpy(bytes.data() + 4 * i, &b, 4);
    else {
      const uint16_t h = uint16_t(b);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  float at(int64_t i) const { return from_bits(dtype, bits(i)); }
  void set(int64_t i, float x) { set_bits(i, to_bits(dtype, x)); }
  void poison() { std::memset(bytes.data(), 0xff, bytes.size()); }
};
TypedBuffer to_typed(DType t, const std::vector<float>& values);

}  // namespace fa
