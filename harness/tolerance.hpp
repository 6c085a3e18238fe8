// The pass rule. Adaptive (default), after the flash-attention test suites:
//   max|o - ref64| <= k * max|o_lowprec - ref64| + atol(dtype),  cosine >= cos_min(dtype),
//   LSE error <= k * LSE error of the low-precision reference + lse_atol,
// plus no NaN/Inf, no unwritten element, an exact kv cache, and a signed rounding bias within
// bias_bound() (both rules). Fixed: max|o - ref64| <= max_err
// and cosine >= cosine, from the sweep file or the command line.
#pragma once
#include <string>

#include "harness/metrics.hpp"
#include "harness/sweep.hpp"

namespace fa {

struct RuleConstants {
  double k = 2.0;
  double atol, cos_min, lse_atol = 1e-3;
};
RuleConstants rule_constants(DType t);

struct Verdict {
  bool pass = false;
  std::string rule;    // "adaptive" or "fixed"
  double tol = 0;      // the max |err| bound that applied
  double bias_bound = 0;  // the bound |Metrics::bias.mean_ulp| had to stay within
  std::string reason;  // first failed condition, empty on pass
};

// Bound on the mean signed error in ulps for this many rows; derivation in tolerance.cpp.
double bias_bound(const BiasStats& b);

Verdict judge(const Metrics& m, DType t, const Thresholds& fixed);

}  // namespace fa
