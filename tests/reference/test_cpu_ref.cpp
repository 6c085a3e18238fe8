// The Eigen reference against an independent fp64 triple loop on the edge problems plus random
// small ones (at least 50), masked rows, row subsets, and the low-precision reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/check/row_sample.hpp"
#include "helpers.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

static std::string describe(const Problem& p) {
  return p.label() + " " + std::string(dtype_name(p.dtype)) + " " + std::string(layout_name(p.layout)) +
         (p.kv_cache ? " kv" : "") + " seed=" + std::to_string(p.seed);
}

static std::vector<int64_t> all_rows(const Problem& p) { return sample_rows(p, 0, 0); }

TEST(CpuRef, MatchesAnIndependentTripleLoopOnEdgeAndRandomProblems) {
  const auto problems = test::edge_and_random_problems(40);
  ASSERT_GE(problems.size(), 50u);
  for (const Problem& p : problems) {
    const HostInputs in = make_inputs(p);
    const test::Naive want = test::naive_attention(p, in);
    const Reference ref = compute_reference(p, in, all_rows(p), false);
    const Strides qs = q_strides(p);
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.H; ++h)
        for (int64_t s = 0; s < p.S; ++s) {
          const size_t ri = ref.row_index(b, h, size_t(s));
          const double wl = want.lse[size_t(lse_index(p, b, h, s))];
          if (std::isinf(wl)) ASSERT_TRUE(std::isinf(ref.lse[ri]) && ref.lse[ri] < 0) << describe(p) << " row " << s;
          else ASSERT_NEAR(ref.lse[ri], wl, 1e-10) << describe(p) << " row " << s;
          for (int64_t d = 0; d < p.D; ++d)
            ASSERT_NEAR(ref.o[ri * size_t(p.D) + size_t(d)], want.o[size_t(qs.at(b, s, h) + d)], 1e-11)
                << describe(p) << " b=" << b << " h=" << h << " s=" << s << " d=" << d;
        }
  }
}

TEST(CpuRef, FullyMaskedRowsHaveZeroOutputAndMinusInfinityLse) {
  Problem p;
  p.S = 10, p.Sk = 4, p.H = p.Hk = 2, p.D = 16, p.causal = true;
  const Reference ref = compute_reference(p, make_inputs(p), all_rows(p), true);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t s = 0; s < 6; ++s) {
      const size_t ri = ref.row_index(0, h, size_t(s));
      EXPECT_TRUE(std::isinf(ref.lse[ri]) && ref.lse[ri] < 0);
      EXPECT_TRUE(std::isinf(ref.lse_lp[ri]) && ref.lse_lp[ri] < 0);
      for (int64_t d = 0; d < p.D; ++d) {
        EXPECT_EQ(ref.o[ri * 16 + size_t(d)], 0.0);
        EXPECT_EQ(ref.o_lp[ri * 16 + size_t(d)], 0.0f);
      }
    }
  EXPECT_TRUE(std::isfinite(ref.lse[ref.row_index(0, 0, 6)]));
}

TEST(CpuRef, ASampledRowSubsetEqualsThoseRowsOfTheFullResult) {
  Problem p;
  p.B = 2, p.H = 4, p.Hk = 2, p.S = 300, p.Sk = 260, p.D = 32, p.causal = true;
  const HostInputs in = make_inputs(p);
  const Reference full = compute_reference(p, in, all_rows(p), false);
  const auto rows = sample_rows(p, 40, 123);
  ASSERT_EQ(rows.size(), 40u);
  for (int64_t must : {0, 299, 63, 64, 127, 128, 255, 256, 39, 40})
    EXPECT_TRUE(std::binary_search(rows.begin(), rows.end(), must)) << must;
  const Reference part = compute_reference(p, in, rows, false);
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (size_t r = 0; r < rows.size(); ++r) {
        const size_t a = part.row_index(b, h, r), f = full.row_index(b, h, size_t(rows[r]));
        // Only the GEMM blocking differs between the two calls: equal up to fp64 rounding.
        if (std::isinf(full.lse[f])) EXPECT_EQ(part.lse[a], full.lse[f]);
        else EXPECT_NEAR(part.lse[a], full.lse[f], 1e-12);
        for (int64_t d = 0; d < p.D; ++d) EXPECT_NEAR(part.o[a * 32 + size_t(d)], full.o[f * 32 + size_t(d)], 1e-13);
      }
}

TEST(CpuRef, LowPrecisionReferenceIsCloseButNotEqualToFp64) {
  Problem p;
  p.H = p.Hk = 2, p.S = 64, p.Sk = 200, p.D = 64;
  for (DType t : {DType::fp16, DType::bf16}) {
    p.dtype = t;
    const Reference ref = compute_reference(p, make_inputs(p), all_rows(p), true);
    double mx = 0;
    for (size_t i = 0; i < ref.o.size(); ++i) {
      mx = std::max(mx, std::fabs(double(ref.o_lp[i]) - ref.o[i]));
      ASSERT_EQ(round_to(t, ref.o_lp[i]), ref.o_lp[i]) << "o_lp must be rounded to the dtype";
    }
    EXPECT_GT(mx, 0.0);
    EXPECT_LT(mx, t == DType::fp16 ? 4e-3 : 3e-2);
  }
}

TEST(CpuRef, BudgetSamplingKeepsRowsWithinTheBudget) {
  Problem p;
  p.H = p.Hk = 2, p.S = p.Sk = 40000, p.D = 64;
  const int64_t n = rows_within_budget(p, 10e9);
  EXPECT_LT(n, p.S);
  EXPECT_LE(1.5 * p.flops() / double(p.S) * double(n), 10e9 * 1.0001);
  Problem small;
  small.S = small.Sk = 100;
  EXPECT_EQ(rows_within_budget(small, 10e9), 100);
}

// The oracle over host inputs that hold only its rows of Q gives the same bits as over the whole
// draw, and refuses a row that was not drawn.
TEST(CpuRef, InputsHoldingOnlyTheCheckedQueryRowsGiveTheSameReference) {
  Problem p;
  p.B = 2, p.H = 4, p.Hk = 2, p.S = 300, p.Sk = 260, p.D = 32, p.causal = true, p.layout = Layout::bhsd;
  const auto rows = sample_rows(p, 40, 123);
  const Reference whole = compute_reference(p, make_inputs(p), rows, DType::bf16);
  const HostInputs some = make_inputs(p, rows);
  const Reference part = compute_reference(p, some, rows, DType::bf16);
  EXPECT_EQ(part.o, whole.o);
  EXPECT_EQ(part.lse, whole.lse);
  EXPECT_EQ(part.o_lp, whole.o_lp);
  int64_t missing = 0;
  while (std::binary_search(rows.begin(), rows.end(), missing)) ++missing;
  std::vector<int64_t> more = rows;
  more.insert(std::lower_bound(more.begin(), more.end(), missing), missing);
  EXPECT_THROW(compute_reference(p, some, more, false), std::logic_error);
}
