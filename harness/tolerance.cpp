// Pass rule constants and evaluation. atol is about one ulp of the dtype at |o| = 1 (outputs of
// standard-normal V stay within a few units), so a kernel may differ from the low-precision
// reference by its own rounding but not by a wrong element.
#include "harness/tolerance.hpp"

#include <fmt/format.h>

namespace fa {

RuleConstants rule_constants(DType t) {
  switch (t) {
    case DType::fp16: return {2.0, 1e-3, 0.9999, 1e-3};
    case DType::bf16: return {2.0, 8e-3, 0.999, 1e-3};
    case DType::fp32: return {2.0, 1e-5, 0.999999, 1e-4};
  }
  return {};
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
  if (m.unwritten > 0) v.reason = fmt::format("{} output elements never written", m.unwritten);
  else if (m.nan_inf > 0) v.reason = fmt::format("{} NaN/Inf output elements", m.nan_inf);
  else if (m.cache_mismatch > 0) v.reason = fmt::format("{} kv-cache elements differ from the appended K/V", m.cache_mismatch);
  else if (!(m.max_abs <= v.tol)) v.reason = fmt::format("max |err| {:.3g} > tolerance {:.3g}", m.max_abs, v.tol);
  else if (!(m.cosine >= cos_min)) v.reason = fmt::format("cosine {:.6f} < {:.6f}", m.cosine, cos_min);
  else if (!(m.lse_max_err <= lse_tol)) v.reason = fmt::format("LSE error {:.3g} > {:.3g}", m.lse_max_err, lse_tol);
  v.pass = v.reason.empty();
  return v;
}

}  // namespace fa
