// Counter-based normal generator (Philox4x32-10 + Box-Muller): element i of tensor `stream`
// under `seed` is a pure function of (seed, stream, i), so any row re-runs bit for bit and
// inputs can be generated in parallel, in any order, on the host or a device.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>

namespace fa {

inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * ctr[0];
    const uint64_t p1 = uint64_t(kM1) * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ key[1],
           uint32_t(p0)};
    key = {key[0] + kW0, key[1] + kW1};
  }
  return ctr;
}

// Two standard normals for the pair index `pair` (elements 2*pair and 2*pair+1).
inline std::array<float, 2> normal_pair(uint64_t seed, uint32_t stream, uint64_t pair) {
  const auto r = philox4x32_10({uint32_t(pair), uint32_t(pair >> 32), stream, 0u},
                               {uint32_t(seed), uint32_t(seed >> 32)});
  // 53-bit-ish uniforms in (0, 1]: never 0, so log() is finite.
  const double u1 = (double(r[0]) + 1.0) / 4294967296.0;
  const double u2 = double(r[1]) / 4294967296.0;
  const double rad = std::sqrt(-2.0 * std::log(u1));
  constexpr double kTwoPi = 6.283185307179586;
  return {float(rad * std::cos(kTwoPi * u2)), float(rad * std::sin(kTwoPi * u2))};
}

inline float normal_at(uint64_t seed, uint32_t stream, uint64_t index) {
  return normal_pair(seed, stream, index >> 1)[index & 1];
}

}  // namespace fa
