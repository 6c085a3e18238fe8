// Pass rule constants and evaluation. atol is about one ulp of the dtype at |o| = 1 (outputs of
// standard-normal V stay within a few units), so a kernel may differ from the low-precision
// reference by its own rounding but not by a wrong element.
#include "harness/check/tolerance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fa {

RuleConstants rule_constants(DType t) {
  // FP8 inputs, O in bf16: atol is bf16's. The cosine floor comes from P rounded to e4m3 (FA3;
  // e4m3fnuz has the same 3 mantissa bits): each P_j gets a relative error d_j, uniform within
  // +-2^-4, rms 2^-4/sqrt(3) = 0.036; O's error sum_j d_j P_j v_j / l has the form of O itself
  // (sum_j P_j v_j / l) with weights scaled by d_j, so for independent v its rms is 0.036 of O's
  // and the cosine is 1 - 0.036^2/2 = 0.99935, 0.999 being too near. 0.99 admits a relative error
  // of 0.14 (4x); the max-error rule (k times the same rounding's error) is what bounds a kernel's
  // O, and it also catches a wrong descale, which leaves the cosine at 1.
  if (is_fp8(t)) return {2.0, 8e-3, 0.99, 1e-3};
  switch (t) {
    case DType::fp16: return {2.0, 1e-3, 0.9999, 1e-3};
    case DType::bf16: return {2.0, 8e-3, 0.999, 1e-3};
    case DType::fp32: return {2.0, 1e-5, 0.999999, 1e-4};
    default: return {};
  }
}

// A correct kernel's per-element error in ulps is e = r + k: r the store's round-to-nearest
// error, uniform on [-1/2, 1/2] (mean 0, sd 1/sqrt(12) = 0.29), k the kernel's own noise (fp32
// accumulation, P rounded to the dtype), symmetric around 0; clamping at +-kBiasClampUlp keeps the
// mean 0. Elements of one row share a softmax and a normaliser, so they correlate; rows are close
// to independent. The standard error of the mean is hence sd(row means) / sqrt(R) over R rows, and
//   bound = z * sd / sqrt(R) + floor,   z = 6,
// fails a correct kernel with probability < 1e-5 per record even under Student-t tails at R = 16.
// The floor (0.1 ulp) absorbs systematic effects of correct kernels that do not shrink with R
// (exp approximations, summation order). Below 16 rows sd itself is unreliable: the worst case
// sd = kBiasClampUlp is used, which gives a bound above 4 that no mean can reach (the check is off).
// Matrix cores truncate as they accumulate: a path that says so (PathRow::rz_accumulate_keys) may
// drift toward zero by accumulation_drift_ulp() more (rounding_bias.hpp derives it; never away
// from zero). Caught, on top of any such drift, as each adds its own toward-zero bias: round-toward-
// zero stores (-0.5 ulp), P rounded toward zero before PV (-1/(4 ln^2 2) = -0.52 ulp, l summed from
// the unrounded P), O * (1 - 2^-9) (-2^(m-9)/ln 2: fp16 -2.9 ulp, bf16 -0.36, fp32 -4 after the
// clamp): the bias passes the bound by the mutation's own size, so each fails while bias_bound()
// stays under 0.36 ulp, as it does from 16 rows of ordinary row noise.
double bias_bound(const BiasStats& b) {
  constexpr double z = 6.0, floor_ulp = 0.1;
  constexpr int64_t min_rows = 16;
  const double sd = b.rows >= min_rows ? b.row_sd_ulp : kBiasClampUlp;
  return z * sd / std::sqrt(double(std::max<int64_t>(b.rows, 1))) + floor_ulp;
}

Verdict judge(const Metrics& m, DType t, const Thresholds& fixed, double drift_ulp) {
  Verdict v;
  const RuleConstants c = rule_constants(t);
  double cos_min = c.cos_min;
  if (fixed.any()) {
    v.rule = "fixed";
    v.tol = fixed.max_err.value_or(c.k * m.lp_max_abs + c.atol);
    cos_min = fixed.cosine.value_or(c.cos_min);
  } else {
    v.rule = "adaptive";
    v.tol = c.k * m.lp_max_abs + c.atol;
  }
  v.lse_tol = lse_rule(c, m.lp_lse_err);
  const double away = bias_bound(m.bias);  // away from zero; toward zero the drift is admitted too
  v.bias_drift = std::max(0.0, drift_ulp);
  v.bias_bound = away + v.bias_drift;
  if (m.unwritten > 0) v.reason = fmt::format("{} output elements never written", m.unwritten);
  else if (m.nan_inf > 0) v.reason = fmt::format("{} NaN/Inf output elements", m.nan_inf);
  else if (m.cache_mismatch > 0) v.reason = fmt::format("{} kv-cache elements differ from the appended K/V", m.cache_mismatch);
  else if (!(m.max_abs <= v.tol)) v.reason = fmt::format("max |err| {:.3g} > tolerance {:.3g}", m.max_abs, v.tol);
  else if (!(m.cosine >= cos_min)) v.reason = fmt::format("cosine {:.6f} < {:.6f}", m.cosine, cos_min);
  else if (!(m.lse_max_err <= v.lse_tol)) v.reason = fmt::format("LSE error {:.3g} > {:.3g}", m.lse_max_err, v.lse_tol);
  else if (!(m.bias.mean_ulp >= -v.bias_bound && m.bias.mean_ulp <= away))
    v.reason = v.bias_drift > 0
                   ? fmt::format("rounding bias {:+.3f} ulp (mean (o - ref)*sign(ref)) beyond [{:+.3f}, {:+.3f}] ulp "
                                 "(toward zero {:.3f} of it admits the matrix cores' accumulation drift)",
                                 m.bias.mean_ulp, -v.bias_bound, away, v.bias_drift)
                   : fmt::format("rounding bias {:+.3f} ulp (mean (o - ref)*sign(ref)) beyond +-{:.3f} ulp",
                                 m.bias.mean_ulp, v.bias_bound);
  v.pass = v.reason.empty();
  return v;
}

}  // namespace fa
