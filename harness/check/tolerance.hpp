// The pass rule. Adaptive (default), after the flash-attention test suites:
//   max|o - ref64| <= k * max|o_lowprec - ref64| + atol(dtype),  cosine >= cos_min(dtype),
//   LSE error <= k * LSE error of the low-precision reference + lse_atol,
// plus no NaN/Inf, no unwritten element, an exact kv cache, and a signed rounding bias within
// [-(bias_bound() + drift), +bias_bound()] (both rules; drift: the path's accumulation drift toward
// zero, harness/check/rounding_bias.hpp). Fixed: max|o - ref64| <= max_err and cosine >= cosine.
#pragma once
#include <string>

#include "harness/check/metrics.hpp"
#include "harness/thresholds.hpp"

namespace fa {

struct RuleConstants {
  double k = 2.0;
  double atol, cos_min, lse_atol = 1e-3;
};
RuleConstants rule_constants(DType t);
// The LSE rule's bound for a low-precision reference whose LSE is `gap` off the fp64 one.
inline double lse_rule(const RuleConstants& c, double gap) { return c.k * gap + c.lse_atol; }

struct Verdict {
  bool pass = false;
  std::string rule;    // "adaptive" or "fixed"
  double tol = 0;      // the max |err| bound that applied
  double lse_tol = 0;  // the LSE error bound that applied
  double bias_bound = 0;  // the bias had to stay within [-bias_bound, +bias_bound - bias_drift]
  double bias_drift = 0;  // the part of bias_bound that admits the path's accumulation drift
  std::string reason;  // first failed condition, empty on pass
};

// Bound on the mean signed error in ulps for this many rows; derivation in tolerance.cpp.
double bias_bound(const BiasStats& b);

// drift_ulp: the toward-zero bias the path's accumulation may leave (accumulation_drift_ulp()).
Verdict judge(const Metrics& m, DType t, const Thresholds& fixed, double drift_ulp = 0);

}  // namespace fa
