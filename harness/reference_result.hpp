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
  int lp_s_acc_bits = 0;      // FP8: the accumulation o_lp's scores model (LowPrecision::s_acc_bits)
  int64_t H = 0;

  size_t row_index(int64_t b, int64_t h, size_t r) const { return (size_t(b * H + h) * rows.size() + r); }
};

// Where a path rounds, as the low-precision reference follows it: what P is rounded to before PV
// (lowprec_p_dtype), and, FP8 inputs, the fraction bits its tensor cores keep as they add Q K^T's
// products (PathRow::fp8_accumulate_bits; 0: fp32's rounding, harness/fp8_accumulate.hpp's model).
struct LowPrecision {
  DType p = DType::fp16;
  int s_acc_bits = 0;
  LowPrecision(DType p_ = DType::fp16, int s_acc_bits_ = 0) : p(p_), s_acc_bits(s_acc_bits_) {}
  friend bool operator<(const LowPrecision& a, const LowPrecision& b) {
    return a.p != b.p ? a.p < b.p : a.s_acc_bits < b.s_acc_bits;
  }
};

// The oracle over `rows` of p. With a LowPrecision it also fills o_lp and lse_lp: scores in fp32
// (FP8 inputs with s_acc_bits: Q K^T added up as those tensor cores add it), the unnormalised P
// rounded to lp.p before PV (lowprec_p_dtype: the input dtype, or for FP8 inputs what the path
// declares), O rounded to out_dtype(p.dtype).
using ReferenceFn = Reference (*)(const Problem& p, const HostInputs& in, std::vector<int64_t> rows,
                                  std::optional<LowPrecision> low_precision);

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
