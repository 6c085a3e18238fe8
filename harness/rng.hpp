// Counter-based normal generator (Philox4x32-10 + Box-Muller): element i of tensor `stream`
// under `seed` is a pure function of (seed, stream, i), so any row re-runs bit for bit and
// inputs can be generated in parallel, in any order, on the host or a device. The arithmetic is
// harness/normal_draw.hpp's, which a device draws bit for bit alike.
#pragma once
#include <array>
#include <cstdint>

#include "harness/normal_draw.hpp"

namespace fa {

inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  const rng::U32x4 r = rng::philox4x32_10({{ctr[0], ctr[1], ctr[2], ctr[3]}}, key[0], key[1]);
  return {r.v[0], r.v[1], r.v[2], r.v[3]};
}

// Two standard normals for the pair index `pair` (elements 2*pair and 2*pair+1).
inline std::array<float, 2> normal_pair(uint64_t seed, uint32_t stream, uint64_t pair) {
  std::array<float, 2> z;
  rng::normal_pair(seed, stream, pair, z[0], z[1]);
  return z;
}

inline float normal_at(uint64_t seed, uint32_t stream, uint64_t index) {
  return normal_pair(seed, stream, index >> 1)[index & 1];
}

}  // namespace fa
