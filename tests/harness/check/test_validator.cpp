// The validator fails outputs corrupted in known ways and passes correct ones: an element off by
// just over the tolerance, a shifted row, a NaN, an unwritten element, an LSE off by a constant,
// a corrupted kv cache; and the fixed rule applies its own thresholds.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/check/metrics.hpp"
#include "harness/check/row_sample.hpp"
#include "harness/check/tolerance.hpp"
#include "helpers.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

class Validator : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    p.B = 2, p.H = 4, p.Hk = 2, p.S = 70, p.Sk = 90, p.D = 32, p.causal = true, p.dtype = GetParam();
    in = make_inputs(p);
    ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
    // A correct output: the low-precision reference's own values, in the layout.
    good.o = TypedBuffer(p.dtype, p.B * p.S * p.H * p.D);
    good.lse.resize(size_t(p.B * p.H * p.S));
    const Strides qs = q_strides(p);
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.H; ++h)
        for (int64_t s = 0; s < p.S; ++s) {
          const size_t ri = ref.row_index(b, h, size_t(s));
          for (int64_t d = 0; d < p.D; ++d) good.o.set(qs.at(b, s, h) + d, ref.o_lp[ri * size_t(p.D) + size_t(d)]);
          good.lse[size_t(lse_index(p, b, h, s))] = ref.lse_lp[ri];
        }
  }
  Verdict verdict(const RunOutputs& out, const Thresholds& t = {}) { return judge(measure(p, in, ref, out), p.dtype, t); }
  int64_t at(int64_t b, int64_t s, int64_t h, int64_t d) const { return q_strides(p).at(b, s, h) + d; }

  Problem p;
  HostInputs in;
  Reference ref;
  RunOutputs good;
};

TEST_P(Validator, PassesACorrectOutput) {
  const Verdict v = verdict(good);
  EXPECT_TRUE(v.pass) << v.reason;
  EXPECT_EQ(v.rule, "adaptive");
}

TEST_P(Validator, FailsOneElementJustOverTheToleranceAndPassesOneJustUnder) {
  const Verdict v0 = verdict(good);
  const int64_t i = at(1, 69, 3, 5);
  const double truth = ref.o[ref.row_index(1, 3, 69) * size_t(p.D) + 5];
  // Find dtype values just over and just under the bound: step by ulps from the true value.
  auto next_up = [&](float x) { return from_bits(p.dtype, to_bits(p.dtype, x) + (x >= 0 ? 1 : -1)); };
  float x = round_to(p.dtype, float(truth));
  while (std::fabs(double(next_up(x)) - truth) <= v0.tol) x = next_up(x);
  RunOutputs under = good, over = good;
  under.o.set(i, x);
  for (int k = 0; k < 3; ++k) x = next_up(x);  // a few ulps beyond the tolerance
  over.o.set(i, x);
  EXPECT_TRUE(verdict(under).pass) << verdict(under).reason;
  const Verdict v = verdict(over);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("max |err|"), std::string::npos) << v.reason;
}

TEST_P(Validator, FailsARowShiftedByOnePosition) {
  RunOutputs bad = good;
  for (int64_t d = 0; d < p.D; ++d) bad.o.set(at(0, 40, 1, d), good.o.at(at(0, 41, 1, d)));
  EXPECT_FALSE(verdict(bad).pass);
}

TEST_P(Validator, FailsASingleNaN) {
  RunOutputs bad = good;
  bad.o.set(at(0, 3, 0, 0), std::nanf(""));
  const Verdict v = verdict(bad);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("NaN"), std::string::npos) << v.reason;
}

TEST_P(Validator, FailsASingleUnwrittenElement) {
  RunOutputs bad = good;
  bad.o.set_bits(at(1, 0, 2, 31), poison_bits(p.dtype));
  const Verdict v = verdict(bad);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("never written"), std::string::npos) << v.reason;
}

TEST_P(Validator, FailsAnLseOffByAConstant) {
  RunOutputs bad = good;
  for (auto& l : bad.lse)
    if (std::isfinite(l)) l += 0.01f;
  const Verdict v = verdict(bad);
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("LSE"), std::string::npos) << v.reason;
}

TEST_P(Validator, FailsAFiniteLseWhereTheRowIsMasked) {
  Problem q = p;
  q.S = 100, q.Sk = 30;  // rows 0..69 fully masked
  const HostInputs qi = make_inputs(q);
  const Reference qr = compute_reference(q, qi, sample_rows(q, 0, 0), true);
  GateContext ctx;
  auto exec = test::cpu_row("cpu-flash").prepare(q, qi, 0, ctx);
  exec->poison();
  exec->run();
  RunOutputs out = exec->read_back();
  EXPECT_TRUE(judge(measure(q, qi, qr, out), q.dtype, {}).pass);
  out.lse[size_t(lse_index(q, 0, 0, 5))] = 0.0f;
  EXPECT_FALSE(judge(measure(q, qi, qr, out), q.dtype, {}).pass);
}

TEST_P(Validator, TheFixedRuleUsesItsOwnThresholds) {
  Thresholds loose;
  loose.max_err = 1.0;
  loose.cosine = 0.99;  // one element off by 0.25 costs fp32's default cosine bound too
  RunOutputs bad = good;
  bad.o.set(at(0, 50, 0, 0), good.o.at(at(0, 50, 0, 0)) + 0.25f);
  EXPECT_FALSE(verdict(bad).pass);
  const Verdict v = verdict(bad, loose);
  EXPECT_TRUE(v.pass) << v.reason;
  EXPECT_EQ(v.rule, "fixed");
  Thresholds strict_cos;
  strict_cos.cosine = 1.0 + 1e-9;
  EXPECT_FALSE(verdict(good, strict_cos).pass);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Validator, ::testing::Values(DType::fp16, DType::bf16, DType::fp32),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });
