// CPU reference (Eigen): attention from the dtype-rounded inputs with fp64 accumulation (the
// oracle), and the low-precision reference that rounds where kernels round (fp32 scores and sums,
// unnormalised P rounded to the dtype before PV, O rounded to the dtype) for the adaptive
// tolerance. Works on any subset of query rows, blocked so memory stays bounded at Sk = 65536;
// parallel over heads and row blocks with OpenMP.
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
  int64_t D = 0, H = 0;

  size_t row_index(int64_t b, int64_t h, size_t r) const { return (size_t(b * H + h) * rows.size() + r); }
};

Reference compute_reference(const Problem& p, const HostInputs& in, std::vector<int64_t> rows, bool low_precision);

}  // namespace fa
