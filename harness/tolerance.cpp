// Pass rule constants and evaluation. atol is about one ulp of the dtype at |o| = 1 (outputs of
// standard-normal V stay within a few units), so a kernel may differ from the low-precision
// reference by its own rounding but not by a wrong element.
#include "harness/tolerance.hpp"

#include <fmt/format.h>

#include <cmath>

namespace fa {

RuleConstants rule_constants(DType t) {
  switch (t) {
    case DType::fp16: return {2.0, 1e-3, 0.9999, 1e-3};
    case DType::bf16: return {2.0, 8e-3, 0.999, 1e-3};
    case DType::fp32: return {2.0, 1e-5, 0.999999, 1e-4};
  }
  return {};
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
// Caught: round-toward-zero stores (-0.5 ulp), O * (1 - 2^-9) (fp16 -2..-4 ulp, bf16 -0.25..-0.5,
// fp32 -4 after the clamp).
double bias_bound(const BiasStats& b) {
  constexpr double z = 6.0, floor_ulp = 0.1;
  constexpr int64_t min_rows = 16;
  const double sd = b.rows >= min_rows ? b.row_sd_ulp : kBiasClampUlp;
  return z * sd / std::sqrt(double(std::max<int64_t>(b.rows, 1))) + floor_ulp;
}

Verdict judge(const Metrics& m, DType t, const Thresholds& fixed) {
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
  const double lse_tol = c.k * m.lp_lse_err + c.lse_atol;
  v.bias_bound = bias_bound(m.bias);
  if (m.unwritten > 0) v.reason = fmt::format("{} output elements never written", m.unwritten);
  else if (m.nan_inf > 0) v.reason = fmt::format("{} NaN/Inf output elements", m.nan_inf);
  else if (m.cache_mismatch > 0) v.reason = fmt::format("{} kv-cache elements differ from the appended K/V", m.cache_mismatch);
  else if (!(m.max_abs <= v.tol)) v.reason = fmt::format("max |err| {:.3g} > tolerance {:.3g}", m.max_abs, v.tol);
  else if (!(m.cosine >= cos_min)) v.reason = fmt::format("cosine {:.6f} < {:.6f}", m.cosine, cos_min);
  else if (!(m.lse_max_err <= lse_tol)) v.reason = fmt::format("LSE error {:.3g} > {:.3g}", m.lse_max_err, lse_tol);
  else if (!(std::fabs(m.bias.mean_ulp) <= v.bias_bound))
    v.reason = fmt::format("rounding bias {:+.3f} ulp (mean (o - ref)*sign(ref)) beyond +-{:.3f} ulp", m.bias.mean_ulp,
                           v.bias_bound);
  v.pass = v.reason.empty();
  return v;
}

}  // namespace fa
