// Per-element signed error in ulps, clamped, summed per row and over the output; the matrix-core
// accumulation drift model.
#include "harness/check/rounding_bias.hpp"

#include <algorithm>
#include <cmath>

namespace fa {

double dtype_spacing(DType t, double x) {
  const int mant = dtype_mantissa_bits(t), emin = dtype_min_normal_exp(t);
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1): exponent of x is e - 1
  return std::ldexp(1.0, std::max(e - 1, emin) - mant);
}

void BiasAccumulator::add(double o, double ref) {
  if (ref == 0 || !std::isfinite(o)) return;
  const double e = (o - ref) / dtype_spacing(t_, ref) * (ref > 0 ? 1.0 : -1.0);
  row_sum_ += std::clamp(e, -kBiasClampUlp, kBiasClampUlp);
  ++row_n_;
}

void BiasAccumulator::end_row() {
  if (row_n_ > 0) {
    const double m = row_sum_ / double(row_n_);
    row_means_sum_ += m;
    row_means_sq_ += m * m;
    ++rows_;
    sum_ += row_sum_;
    n_ += row_n_;
  }
  row_sum_ = 0;
  row_n_ = 0;
}

BiasStats BiasAccumulator::finish() const {
  BiasStats s;
  s.elements = n_;
  s.rows = rows_;
  s.mean_ulp = n_ ? sum_ / double(n_) : 0.0;
  if (rows_ > 1) {
    const double mean = row_means_sum_ / double(rows_);
    s.row_sd_ulp = std::sqrt(std::max(0.0, (row_means_sq_ - double(rows_) * mean * mean) / double(rows_ - 1)));
  }
  return s;
}

double accumulation_drift_ulp(DType t, int64_t keys, int keys_per_step) {
  if (keys_per_step <= 0 || keys <= 0) return 0.0;
  const int mant = dtype_mantissa_bits(t);
  const double steps = double((keys + keys_per_step - 1) / keys_per_step);
  const double ln2 = std::log(2.0);
  return (steps + 1) * std::ldexp(1.0, mant - 26) / (ln2 * ln2);
}

int64_t keys_per_split(const Problem& p, int G) { return G > 1 ? (p.Sk + G - 1) / G : p.Sk; }

}  // namespace fa
