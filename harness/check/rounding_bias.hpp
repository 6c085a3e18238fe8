// Signed rounding bias of an output against the fp64 reference: per element, (o - ref)·sign(ref)
// in units of the dtype's spacing (ulp) at ref, clamped to +-kBiasClampUlp; reported as the mean
// over the checked elements and the standard deviation of the per-row means (which the bound in
// harness/check/tolerance.cpp scales). Elements with ref == 0 (masked rows) or a non-finite o count nothing.
// accumulation_drift_ulp() models the bias a matrix core's truncating fp32 accumulation adds.
#pragma once
#include <cstdint>

#include "harness/dtype.hpp"
#include "harness/problem.hpp"

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

// Matrix-core accumulation drift. NVIDIA tensor cores (mma.sync, wgmma) add a step's exact
// products to the fp32 accumulator C and normalise the sum by truncation, i.e. round toward zero
// (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 7:e330,
// 2021: V100, T4, A100; the H100 drift in issue 15 scales the same way). Step t of N stores
// RZ(y_t) = y_t - sgn(y_t) f_t ulp32(y_t), f_t ~ U[0,1) (the products' low bits make the cut-off
// fraction uniform); with |y| log-uniform in its binade E[ulp32(y)/|y|] = 2^-23/(2 ln 2), so a step
// shrinks the running sum by 2^-25/ln 2 of itself on average. Errors add up (the online softmax's
// rescale scales sum and error alike); projected on the final sum's sign,
//   E[sgn(C_N) err] = -(2^-25/ln 2) sum_t E[sgn(C_N) y_t] = -(2^-25/ln 2) E|C_N| (N+1)/2,
// since partial sums of exchangeable increments (V is zero-mean noise independent of P) have
// E[y_t | C_N] = (t/N) C_N. The relative drift 2^-26 (N+1)/ln 2 grows linearly in the steps, not
// like sqrt(N): every truncation points toward zero, where round-to-nearest errors cancel. O = C/l
// (l summed with round to nearest) keeps it; in ulps of a dtype with m mantissa bits (|o|/ulp(o)
// averages 2^m/ln 2) it is (N+1) 2^(m-26)/ln^2 2. N = ceil(keys/k), keys one accumulator visits
// (Sk/G for split-K), k the keys a step folds in (16 for m16n8k16 and wgmma k16).
// fp16, 131072 keys, k = 16: 0.260 ulp at G = 0, 0.130 at G = 2, 0.065 at G = 4, 0.016 at G = 16;
// the H100's mma showed -0.214, -0.11, -0.067, -0.03 (issue 15). bf16: 8x less (0.033 at G = 0).
// Returns the drift toward zero (>= 0) in ulps of t; 0 when keys_per_step is 0 (round to nearest).
double accumulation_drift_ulp(DType t, int64_t keys, int keys_per_step);

// Keys one split visits at most: ceil(Sk / G), all Sk when G <= 1.
int64_t keys_per_split(const Problem& p, int G);

}  // namespace fa
