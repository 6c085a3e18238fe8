// cpu-flash against the fp64 reference for every split count, the combine's handling of empty
// splits and masked rows, and the kv-cache append.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "harness/check/metrics.hpp"
#include "harness/check/row_sample.hpp"
#include "harness/check/tolerance.hpp"
#include "helpers.hpp"
#include "reference/cpu_flash.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

static RunOutputs run_flash(const Problem& p, const HostInputs& in, int G) {
  GateContext ctx;
  auto exec = test::cpu_row("cpu-flash").prepare(p, in, G, ctx);
  exec->poison();
  exec->run();
  return exec->read_back();
}

TEST(CpuFlash, PassesTheAdaptiveRuleForEveryGOnEdgeAndRandomProblems) {
  for (const Problem& p : test::edge_and_random_problems(30, 11)) {
    const HostInputs in = make_inputs(p);
    const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
    for (int G : {0, 2, 4, 8, 16}) {
      const Metrics m = measure(p, in, ref, run_flash(p, in, G));
      const Verdict v = judge(m, p.dtype, Thresholds{});
      EXPECT_TRUE(v.pass) << p.label() << " " << dtype_name(p.dtype) << " G=" << G << ": " << v.reason
                          << " (max err " << m.max_abs << ", tol " << v.tol << ")";
      EXPECT_EQ(m.unwritten, 0);
      EXPECT_EQ(m.nan_inf, 0);
    }
  }
}

TEST(CpuFlash, SplitsGiveTheSameResultAsNoSplitUpToFp32Rounding) {
  Problem p;
  p.B = 1, p.H = p.Hk = 2, p.S = 100, p.Sk = 700, p.D = 32, p.causal = true, p.dtype = DType::fp32;
  const HostInputs in = make_inputs(p);
  const RunOutputs base = run_flash(p, in, 0);
  for (int G : {2, 4, 8, 16}) {
    const RunOutputs r = run_flash(p, in, G);
    for (int64_t i = 0; i < base.o.size(); ++i) ASSERT_NEAR(r.o.at(i), base.o.at(i), 2e-6) << "G=" << G << " i=" << i;
    for (size_t i = 0; i < base.lse.size(); ++i) ASSERT_NEAR(r.lse[i], base.lse[i], 2e-5) << "G=" << G;
  }
}

TEST(CpuFlash, MaskedRowsAndEmptySplitsGiveZeroAndMinusInfinityWithoutNaNInEveryDtype) {
  // S > Sk causal: rows 0..59 see nothing; Sk = 20 is one tile, so with G = 16 fifteen splits are empty.
  // Every dtype: bf16 and fp32 keep the denormal weights a SIMD exp(-inf) may return, fp16 hides them.
  for (DType t : {DType::fp16, DType::bf16, DType::fp32}) {
    Problem p;
    p.H = p.Hk = 2, p.S = 80, p.Sk = 20, p.D = 16, p.causal = true, p.dtype = t;
    const HostInputs in = make_inputs(p);
    for (int G : {0, 16}) {
      const RunOutputs r = run_flash(p, in, G);
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s < 80; ++s) {
          const std::string at = fmt::format("{} G={} h={} s={}", dtype_name(t), G, h, s);
          const float l = r.lse[size_t(lse_index(p, 0, h, s))];
          if (s < 60) EXPECT_TRUE(std::isinf(l) && l < 0) << at << " lse " << l;
          else EXPECT_TRUE(std::isfinite(l)) << at;
          for (int64_t d = 0; d < p.D; ++d) {
            const float x = r.o.at(q_strides(p).at(0, s, h) + d);
            EXPECT_FALSE(std::isnan(x)) << at;
            if (s < 60) {
              EXPECT_EQ(x, 0.f) << at << " d=" << d;
            }
          }
        }
    }
  }
}

TEST(CpuFlash, CombineWeighsSplitsByTheirLseAndSkipsEmptyOnes) {
  Problem p;
  p.B = p.H = p.Hk = 1, p.S = 1, p.Sk = 1, p.D = 2, p.dtype = DType::fp32;
  SplitPartials part;
  const float ninf = -std::numeric_limits<float>::infinity();
  part.o = {1, 2, 99, 99, 3, 4, 99, 99};  // split 1 and 3 are empty: their O must not count
  part.lse = {std::log(1.f), ninf, std::log(3.f), ninf};
  TypedBuffer o(DType::fp32, 2);
  std::vector<float> lse(1);
  combine_splits(p, 4, part, o, lse);
  EXPECT_NEAR(o.at(0), (1 * 1 + 3 * 3) / 4.0, 1e-6);
  EXPECT_NEAR(o.at(1), (1 * 2 + 3 * 4) / 4.0, 1e-6);
  EXPECT_NEAR(lse[0], std::log(4.0), 1e-6);
}

TEST(CpuFlash, KvCacheProblemsAppendTheNewTokensAndReportTheCache) {
  Problem p;
  p.B = 2, p.H = 4, p.Hk = 2, p.S = 1, p.Sk = 130, p.D = 32, p.kv_cache = true;
  const HostInputs in = make_inputs(p);
  GateContext ctx;
  auto exec = test::cpu_row("cpu-flash").prepare(p, in, 0, ctx);
  exec->poison();
  RunOutputs before = exec->read_back();
  const Strides ks = kv_strides(p);
  EXPECT_EQ(before.k_cache.bits(ks.at(0, 129, 1)), poison_bits(p.dtype)) << "new slot must start poisoned";
  EXPECT_EQ(before.k_cache.at(ks.at(0, 128, 1)), in.k[size_t(ks.at(0, 128, 1))]) << "old slots hold the cache";
  exec->run();
  const RunOutputs r = exec->read_back();
  const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
  const Metrics m = measure(p, in, ref, r);
  EXPECT_EQ(m.cache_mismatch, 0);
  EXPECT_TRUE(judge(m, p.dtype, Thresholds{}).pass);
}

TEST(CpuFlash, TheGateSkipsProblemsOverTheCpuBudgetWithAReason) {
  Problem p;
  p.H = p.Hk = 16, p.S = p.Sk = 40000, p.D = 64;
  GateContext ctx;
  ctx.cpu_budget_flops = 1e9;
  const auto& supports = test::cpu_row("cpu-flash").supports;
  const auto why = supports(p, 0, ctx);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("--cpu-budget"), std::string::npos);
  ctx.cpu_budget_flops = 1e15;
  EXPECT_FALSE(supports(p, 0, ctx));
  EXPECT_TRUE(supports(p, 3, ctx)) << "G=3 is not a split count";
}
