// Error metrics of one run against the reference, over the checked rows: max and mean |o - ref|,
// relative L2, cosine, LSE error; over the whole output: NaN/Inf count and unwritten count (the
// poison pattern survived); for kv_cache problems, cache elements that differ from the inputs.
// Also the same errors of the low-precision reference, which the adaptive tolerance scales, and
// the signed rounding bias in ulps (harness/check/rounding_bias.hpp).
#pragma once
#include <cstdint>

#include "harness/check/rounding_bias.hpp"
#include "harness/inputs.hpp"
#include "harness/path.hpp"
#include "harness/reference_result.hpp"

namespace fa {

struct Metrics {
  double max_abs = 0, mean_abs = 0, rel_l2 = 0, cosine = 1, lse_max_err = 0;
  int64_t nan_inf = 0, unwritten = 0, cache_mismatch = 0;
  int64_t rows_checked = 0, rows_total = 0;
  double lp_max_abs = 0, lp_lse_err = 0;  // low-precision reference vs fp64 reference
  BiasStats bias;
};

Metrics measure(const Problem& p, const HostInputs& in, const Reference& ref, const RunOutputs& out);

// |a - b|, with infinities of one sign equal (a masked row's -inf LSE) and a NaN infinitely far.
double checked_diff(double a, double b);

}  // namespace fa
