// The full-output rule and the check of the checker (harness/check/full_check.hpp) on host data: a
// GPU reference built from the CPU oracle, outputs rounded from it, and single planted errors.
// Run: ctest --test-dir build/cpu -R FullCheck
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "harness/check/full_check.hpp"
#include "harness/check/row_sample.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

struct Case {
  Problem p;
  HostInputs in;
  Reference all;  // the oracle on every row
  GpuReference g;
  RunOutputs out;
};

// A GPU reference equal to the oracle (rounded to fp32) with a bound of eps on every row, and an
// output equal to the oracle rounded to O's dtype.
Case make_case(Problem p, float eps) {
  Case c{p, make_inputs(p), {}, {}, {}};
  std::vector<int64_t> rows(size_t(p.S));
  for (int64_t s = 0; s < p.S; ++s) rows[size_t(s)] = s;
  c.all = compute_reference(p, c.in, rows, false);
  const int64_t n = p.B * p.H * p.S;
  c.g.o.resize(size_t(n * p.D)), c.g.lse.resize(size_t(n)), c.g.eps_o.assign(size_t(n), eps), c.g.eps_lse.assign(size_t(n), eps);
  c.out.o = TypedBuffer(out_dtype(p.dtype), p.B * p.S * p.H * p.D);
  c.out.lse.resize(size_t(n));
  const Strides qs = q_strides(p);
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t s = 0; s < p.S; ++s) {
        const size_t ri = c.all.row_index(b, h, size_t(s)), gi = size_t(lse_index(p, b, h, s));
        for (int64_t d = 0; d < p.D; ++d) {
          const double y = c.all.o[ri * size_t(p.D) + size_t(d)];
          c.g.o[gi * size_t(p.D) + size_t(d)] = float(y);
          c.out.o.set(qs.at(b, s, h) + d, float(y));
        }
        c.g.lse[gi] = c.out.lse[gi] = float(c.all.lse[ri]);
      }
  return c;
}

Problem small(bool causal) {
  Problem p;
  p.B = 2, p.H = 4, p.Hk = 2, p.S = 40, p.Sk = 48, p.D = 32, p.causal = causal, p.dtype = DType::fp16;
  return p;
}

}  // namespace

TEST(FullCheck, ReferenceEqualToTheOracleAgreesAndAPlantedDifferenceIsNamed) {
  Case c = make_case(small(true), 1e-6f);
  const Reference sampled = compute_reference(c.p, c.in, sample_rows(c.p, 8, 1), false);
  EXPECT_EQ(gpu_reference_disagreement(c.p, c.g, sampled), "");
  // Off by 10x its bound on a sampled row: the checker is wrong, and the row and dim are named.
  const int64_t s = sampled.rows[3];
  c.g.o[size_t(lse_index(c.p, 1, 2, s) * c.p.D + 5)] += 1e-5f;
  const std::string why = gpu_reference_disagreement(c.p, c.g, sampled);
  EXPECT_NE(why.find("disagrees"), std::string::npos) << why;
  EXPECT_NE(why.find("(b=1, h=2, s=" + std::to_string(s) + ", d=5)"), std::string::npos) << why;
}

TEST(FullCheck, AnErrorOnAnUnsampledRowFailsNamingItsRow) {
  Case c = make_case(small(false), 0.f);
  const double tol = 2e-3, lse_tol = 1e-3;
  EXPECT_EQ(full_output_failure(c.p, c.g, c.out, tol, lse_tol), "");
  const std::vector<int64_t> sample = sample_rows(c.p, 8, 1);
  int64_t s = 0;
  while (std::find(sample.begin(), sample.end(), s) != sample.end()) ++s;
  const int64_t i = q_strides(c.p).at(1, s, 3) + 7;
  c.out.o.set(i, c.out.o.at(i) + 0.25f);
  const std::string why = full_output_failure(c.p, c.g, c.out, tol, lse_tol);
  EXPECT_NE(why.find("1 of 320 rows"), std::string::npos) << why;
  EXPECT_NE(why.find("(b=1, h=3, s=" + std::to_string(s) + ")"), std::string::npos) << why;
}

TEST(FullCheck, TheReferenceBoundWidensTheToleranceByItsOwnSize) {
  Case c = make_case(small(true), 0.f);
  const double tol = 2e-3;
  const int64_t i = q_strides(c.p).at(0, 9, 1);
  c.out.o.set(i, float(c.out.o.at(i) + 3 * tol));  // beyond tol after fp16 rounding, within tol + 4 tol
  EXPECT_NE(full_output_failure(c.p, c.g, c.out, tol, 1e-3), "");
  c.g.eps_o.assign(c.g.eps_o.size(), float(4 * tol));
  EXPECT_EQ(full_output_failure(c.p, c.g, c.out, tol, 1e-3), "");
}

TEST(FullCheck, AWrongLseFailsAndANanElementCountsAsInfinite) {
  Case c = make_case(small(false), 0.f);
  c.out.lse[size_t(lse_index(c.p, 0, 1, 3))] += 0.01f;
  std::string why = full_output_failure(c.p, c.g, c.out, 2e-3, 1e-3);
  EXPECT_NE(why.find("(b=0, h=1, s=3): LSE"), std::string::npos) << why;
  c = make_case(small(false), 0.f);
  c.out.o.set(q_strides(c.p).at(1, 0, 0), NAN);
  why = full_output_failure(c.p, c.g, c.out, 2e-3, 1e-3);
  EXPECT_NE(why.find("(b=1, h=0, s=0)"), std::string::npos) << why;
}

// Several wrong rows (the check runs over (b, h) in parallel): the count is every one of them, the
// row named the one furthest past its bound, and among rows equally far the first in (b, h, s) order.
TEST(FullCheck, OfManyWrongRowsTheFurthestIsNamedAndTheFirstAmongEquals) {
  Case c = make_case(small(false), 0.f);
  const Strides qs = q_strides(c.p);
  const int64_t at[][3] = {{0, 0, 5}, {1, 3, 30}, {0, 2, 17}, {1, 1, 2}};
  const float by[] = {0.125f, 0.25f, 0.5f, 0.5f};
  for (int k = 0; k < 4; ++k) {  // the reference moved, so that each error is exactly by[k]
    const int64_t i = qs.at(at[k][0], at[k][2], at[k][1]);
    c.g.o[size_t(lse_index(c.p, at[k][0], at[k][1], at[k][2]) * c.p.D)] = c.out.o.at(i) - by[k];
  }
  const std::string why = full_output_failure(c.p, c.g, c.out, 2e-3, 1e-3);
  EXPECT_NE(why.find("4 of 320 rows"), std::string::npos) << why;
  EXPECT_NE(why.find("(b=0, h=2, s=17)"), std::string::npos) << why;  // 0.5, before (1, 1, 2)'s 0.5
}

// FP8 scores added on 13 bits: a row's LSE gap is its own (largest where its scores are), so with
// the declared accumulation's LSE of every row (lse_acc) a row's bound is at least k |lse_acc - lse|
// + lse_atol. An LSE error within that passes though it is past the sampled lse_tol; past it, or
// without lse_acc, it fails.
TEST(FullCheck, WithTheDeclaredAccumulationsLseARowIsHeldToItsOwnGap) {
  Case c = make_case(small(false), 0.f);
  const double lse_tol = 1e-3;  // fp16's rule: k = 2, lse_atol = 1e-3
  std::vector<float> acc(c.g.lse.begin(), c.g.lse.end());
  const size_t gi = size_t(lse_index(c.p, 1, 2, 11));
  acc[gi] -= 0.01f;                 // the model's gap on that row: 0.01, so its bound is 0.021
  c.out.lse[gi] -= 0.015f;          // the kernel's error there: 0.015
  EXPECT_EQ(full_output_failure(c.p, c.g, c.out, 2e-3, lse_tol, acc), "");
  const std::string alone = full_output_failure(c.p, c.g, c.out, 2e-3, lse_tol);
  EXPECT_NE(alone.find("(b=1, h=2, s=11): LSE"), std::string::npos) << alone;
  c.out.lse[gi] -= 0.01f;           // 0.025 > 0.021
  const std::string past = full_output_failure(c.p, c.g, c.out, 2e-3, lse_tol, acc);
  EXPECT_NE(past.find("1 of 320 rows"), std::string::npos) << past;
  EXPECT_NE(past.find("LSE |err| 0.025 > 0.021"), std::string::npos) << past;
  // Another row's gap lends nothing: an error of 0.015 on a row whose own gap is 0 fails.
  c = make_case(small(false), 0.f);
  c.out.lse[size_t(lse_index(c.p, 0, 0, 4))] += 0.015f;
  const std::string other = full_output_failure(c.p, c.g, c.out, 2e-3, lse_tol, acc);
  EXPECT_NE(other.find("(b=0, h=0, s=4): LSE"), std::string::npos) << other;
}
