// Signed rounding bias of an output against the fp64 reference: per element, (o - ref)·sign(ref)
// in units of the dtype's spacing (ulp) at ref, clamped to +-kBiasClampUlp; reported as the mean
// over the checked elements and the standard deviation of the per-row means (which the bound in
// harness/tolerance.cpp scales). Elements with ref == 0 (masked rows) or a non-finite o count nothing.
#pragma once
#include <cstdint>

#include "harness/dtype.hpp"

namespace fa {

// Clamp per element: one element near a zero crossing (ulp tiny, error set by its row's scale)
// would otherwise weigh thousands of ulps. 4 ulps keeps a 1 - 2^-9 scale error in fp16 (2 to 4
// ulps) whole, and noise clamped symmetrically keeps mean 0.
constexpr double kBiasClampUlp = 4.0;

// Spacing of `t` at |x|: 2^(exponent(x) - mantissa bits), constant below the smallest normal.
double dtype_spacing(DType t, double x);

struct BiasStats {
  double mean_ulp = 0;    // mean over counted elements
  double row_sd_ulp = 0;  // sample standard deviation of the per-row means
  int64_t elements = 0, rows = 0;
};

class BiasAccumulator {
 public:
  explicit BiasAccumulator(DType t) : t_(t) {}
  void add(double o, double ref);  // one element of the current row
  void end_row();
  BiasStats finish() const;

 private:
  DType t_;
  double row_sum_ = 0, sum_ = 0, row_means_sum_ = 0, row_means_sq_ = 0;
  int64_t row_n_ = 0, n_ = 0, rows_ = 0;
};

}  // namespace fa
