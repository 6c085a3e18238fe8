// The oracle's result as the harness reads it: fp64 O and LSE over a sorted subset of query rows,
// and the low-precision reference (the kernels' rounding points) that scales the adaptive
// tolerance. reference/cpu_ref.cpp computes it; the runner receives that function (ReferenceFn)
// from above, so the ground floor never includes the reference itself.
#pragma once
#include <cstdint>
#include <optional>
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
  DType lp_p = DType::fp16;   // what P was rounded to before PV in o_lp (when computed)
  int64_t H = 0;

  size_t row_index(int64_t b, int64_t h, size_t r) const { return (size_t(b * H + h) * rows.size() + r); }
};

// The oracle over `rows` of p. With low_precision_p it also fills o_lp and lse_lp, rounding the
// unnormalised P to that dtype before PV (lowprec_p_dtype: the input dtype, or for FP8 inputs what
// the path declares) and O to out_dtype(p.dtype).
using ReferenceFn = Reference (*)(const Problem& p, const HostInputs& in, std::vector<int64_t> rows,
                                  std::optional<DType> low_precision_p);

// What a path rounds P to on FP8 inputs unless it declares otherwise: FA3's wgmma path converts P
// to e4m3 for the second GEMM; the coarser choice, so a path that keeps bf16 P passes it too.
constexpr DType kFp8PDefault = DType::fp8_e4m3;

// The dtype a path rounds P to before PV: the input dtype for fp16/bf16/fp32; for FP8 inputs the
// path's declaration (PathRow::fp8_p: bf16, or an FP8 dtype meaning "the e4m3 of the inputs'
// family": fp8_e4m3 for OCP inputs as FA3 does, fp8_e4m3fnuz for FNUZ ones as aiter on MI300 does).
inline DType lowprec_p_dtype(const Problem& p, DType fp8_p) {
  if (!is_fp8(p.dtype)) return p.dtype;
  return is_fp8(fp8_p) ? dtype_row(p.dtype).fp8_p : fp8_p;
}

}  // namespace fa
