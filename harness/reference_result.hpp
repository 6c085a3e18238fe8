// The oracle's result as the harness reads it: fp64 O and LSE over a sorted subset of query rows,
// and the low-precision reference (the kernels' rounding points) that scales the adaptive
// tolerance. reference/cpu_ref.cpp computes it; the runner receives that function (ReferenceFn)
// from above, so the ground floor never includes the reference itself.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/inputs.hpp"
#include "harness/problem.hpp"

namespace fa {

struct Reference {
  std::vector<int64_t> rows;  // checked query rows, sorted
  std::vector<double> o;      // [B][H][rows][D], fp64
  std::vector<double> lse;    // [B][H][rows]; -inf for fully masked rows
  std::vector<float> o_lp;    // low-precision reference, same shape (empty if not computed)
  std::vector<float> lse_lp;
  int64_t H = 0;

  size_t row_index(int64_t b, int64_t h, size_t r) const { return (size_t(b * H + h) * rows.size() + r); }
};

// The oracle over `rows` of p; low_precision also fills o_lp and lse_lp.
using ReferenceFn = Reference (*)(const Problem& p, const HostInputs& in, std::vector<int64_t> rows,
                                  bool low_precision);

}  // namespace fa
