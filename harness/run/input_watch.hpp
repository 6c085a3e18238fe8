// InputWatch: a path's inputs (Q, K, V, the page table, the sequence arrays) checksummed before it
// runs and again after, so a kernel that writes what it should only read fails its record with a
// reason naming the tensor and the element ("the path wrote its inputs (Q, element 0)"). A word-
// wise hash, one pass per tensor (bytes_checksum gives the speed).
// Header only: host paths, plugins and the GPU runtime (over bytes copied back) all use it.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace fa {

// 64-bit hash of `n` bytes: four independent lanes of 8-byte words (FNV's prime, then an xor-shift
// that folds high bits down), combined and avalanched at the end. A change of any byte changes it
// with probability ~1 - 2^-64. Four lanes, not one: over 1 GiB on the 2-core dev box (loaded by
// builds) one lane's multiply chain ran at 0.7 GB/s, four independent ones at 2.4-3.0 GB/s.
inline uint64_t chunk_checksum(const uint8_t* p, size_t n, uint64_t seed) {
  constexpr uint64_t prime = 0x100000001b3ull;
  uint64_t h[4] = {0xcbf29ce484222325ull ^ n ^ seed, 0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * size_t(l), 8);
      h[l] = (h[l] ^ w) * prime;
      h[l] ^= h[l] >> 29;
    }
  for (; i < n; ++i) h[0] = (h[0] ^ p[i]) * prime;
  uint64_t x = h[0];
  for (int l = 1; l < 4; ++l) x = (x ^ h[l]) * 0xff51afd7ed558ccdull, x ^= x >> 33;
  x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ull, x ^= x >> 33;
  return x;
}

// The same over 32 MiB chunks hashed in parallel (OpenMP where the including file builds with it),
// each seeded by its index, then folded in order: the K and V of a long-context problem are GBs, and
// one thread's 3 GB/s made their three checks a record the largest part of a sweep's harness time.
inline uint64_t bytes_checksum(const void* data, size_t n) {
  constexpr size_t chunk = size_t(32) << 20;
  const auto* p = static_cast<const uint8_t*>(data);
  if (n <= chunk) return chunk_checksum(p, n, 0);
  const int64_t chunks = int64_t((n + chunk - 1) / chunk);
  std::vector<uint64_t> part(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t at = size_t(c) * chunk;
    part[size_t(c)] = chunk_checksum(p + at, std::min(chunk, n - at), uint64_t(c) + 1);
  }
  return chunk_checksum(reinterpret_cast<const uint8_t*>(part.data()), part.size() * sizeof(uint64_t), n);
}

class InputWatch {
 public:
  // `original` (optional) rebuilds the tensor's bytes as they were, to name the first element that
  // changed; `ignore(i)` marks elements the path may write (a kv_cache's appended slots, which the
  // cache check judges). Both are called only once the checksum has changed.
  struct Tensor {
    std::string name;
    const void* data = nullptr;
    size_t bytes = 0;
    size_t elem_bytes = 1;
    uint64_t sum = 0;
    std::function<std::vector<uint8_t>()> original;
    std::function<bool(size_t)> ignore;
  };

  void add(const std::string& name, const void* data, size_t bytes, size_t elem_bytes,
           std::function<std::vector<uint8_t>()> original = nullptr, std::function<bool(size_t)> ignore = nullptr) {
    tensors_.push_back({name, data, bytes, elem_bytes, bytes_checksum(data, bytes), std::move(original),
                        std::move(ignore)});
  }

  // "" when every tensor still hashes as it did; else "the path wrote its inputs (Q, element N)",
  // one clause per tensor that changed.
  std::string check() const {
    std::string out;
    for (const Tensor& t : tensors_) {
      if (bytes_checksum(t.data, t.bytes) == t.sum) continue;
      const std::string what = where(t);
      if (!what.empty()) out += (out.empty() ? "" : "; ") + what;
    }
    return out.empty() ? "" : "the path wrote its inputs (" + out + ")";
  }

 private:
  static std::string where(const Tensor& t) {
    if (!t.original) return t.name + ": its checksum changed";
    const std::vector<uint8_t> was = t.original();
    if (was.size() != t.bytes) return t.name + ": its checksum changed";
    const auto* now = static_cast<const uint8_t*>(t.data);
    size_t first = 0, count = 0;
    for (size_t e = 0; e < t.bytes / t.elem_bytes; ++e) {
      if (std::memcmp(now + e * t.elem_bytes, was.data() + e * t.elem_bytes, t.elem_bytes) == 0) continue;
      if (t.ignore && t.ignore(e)) continue;
      if (count++ == 0) first = e;
    }
    if (!count) return "";  // only slots the path owns changed
    return count == 1 ? fmt::format("{}, element {}", t.name, first)
                      : fmt::format("{}, element {} and {} more", t.name, first, count - 1);
  }

  std::vector<Tensor> tensors_;
};

}  // namespace fa
