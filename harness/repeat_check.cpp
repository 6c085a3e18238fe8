// Bitwise comparison of run outputs, and the rerun loop behind --repeat-check.
#include "harness/repeat_check.hpp"

#include <cstring>

namespace fa {

bool bit_identical(const RunOutputs& a, const RunOutputs& b) {
  // LSE compared as bits: -inf and NaN patterns count, and 0.0 vs -0.0 is a difference.
  const bool lse_same = a.lse.size() == b.lse.size() &&
                        std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * sizeof(float)) == 0;
  return lse_same && a.o.dtype == b.o.dtype && a.o.bytes == b.o.bytes && a.k_cache.bytes == b.k_cache.bytes &&
         a.v_cache.bytes == b.v_cache.bytes;
}

int count_differing_reruns(Execution& exec, const RunOutputs& first, int n) {
  int differing = 0;
  for (int i = 0; i < n; ++i) {
    exec.poison();
    exec.run();
    differing += !bit_identical(first, exec.read_back());
  }
  return differing;
}

}  // namespace fa
