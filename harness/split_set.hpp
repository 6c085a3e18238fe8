// The split counts G a run may ask for, defined once: 0 (no split) and 2, 4, 8, 16 KV splits.
// A path's capabilities name the subset it takes (SplitSet); the split rules pick among them,
// the sweep readers accept only them, and the GPU gates test membership here, never by bit tricks.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fa {

constexpr std::array<int, 5> kSplitChoices{0, 2, 4, 8, 16};
constexpr size_t kNumSplitChoices = kSplitChoices.size();

constexpr bool split_count_allowed(int g) {
  for (int c : kSplitChoices)
    if (c == g) return true;
  return false;
}

// A subset of kSplitChoices, as a bit per position.
class SplitSet {
 public:
  constexpr SplitSet() = default;
  static constexpr SplitSet all() { return SplitSet((1u << kNumSplitChoices) - 1); }
  static constexpr SplitSet none_split() { return SplitSet(1u); }  // G = 0 only
  static constexpr SplitSet splits_only() { return SplitSet(((1u << kNumSplitChoices) - 1) & ~1u); }
  constexpr bool has(int g) const {
    for (size_t i = 0; i < kNumSplitChoices; ++i)
      if (kSplitChoices[i] == g) return bits_ >> i & 1u;
    return false;
  }
  constexpr bool empty() const { return bits_ == 0; }
  // "0, 2, 4, 8, 16"
  std::string str() const {
    std::string out;
    for (size_t i = 0; i < kNumSplitChoices; ++i)
      if (bits_ >> i & 1u) out += (out.empty() ? "" : ", ") + std::to_string(kSplitChoices[i]);
    return out;
  }
  constexpr bool operator==(const SplitSet& o) const { return bits_ == o.bits_; }

 private:
  constexpr explicit SplitSet(uint32_t bits) : bits_(bits) {}
  uint32_t bits_ = 0;
};

}  // namespace fa
