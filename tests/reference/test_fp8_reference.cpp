// FP8 inputs through the oracle and cpu-flash: a hand-computed case with descales, cpu-flash
// passing the rule for every G in the four formats (OCP e4m3/e5m2, FNUZ e4m3fnuz/e5m2fnuz), P
// rounded to the e4m3 of the inputs' family, the mistakes an FP8 kernel makes (a descale left out,
// P rounded coarser than the path declares) failing it, and FNUZ's poisoned cache slots caught.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "harness/check/metrics.hpp"
#include "harness/check/row_sample.hpp"
#include "harness/check/tolerance.hpp"
#include "helpers.hpp"
#include "reference/cpu_flash.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

RunOutputs flash(const Problem& p, const HostInputs& in, int G, DType fp8_p = kFp8PDefault) {
  RunOutputs out;
  out.o = TypedBuffer(out_dtype(p.dtype), p.q_elements());
  out.lse.assign(size_t(p.B * p.H * p.S), 0.f);
  SplitPartials parts;
  cpu_flash_forward(p, in.q.data(), in.k.data(), in.v.data(), G, out.o, out.lse, parts, in.descale, fp8_p);
  return out;
}

Problem fp8_problem(DType t, int64_t S, int64_t Sk, int64_t D, bool causal) {
  Problem p;
  p.B = 1, p.H = 4, p.Hk = 2, p.S = S, p.Sk = Sk, p.D = D, p.causal = causal, p.dtype = t, p.seed = 21;
  return p;
}

}  // namespace

TEST(Fp8Reference, OneQueryOverTwoKeysMatchesTheSoftmaxOfTheDescaledValues) {
  // D = 2, one head: q = (1, 2) * 0.5, k0 = (1, 0) * 0.25, k1 = (0, 1) * 0.25, v = rows * 2.
  Problem p;
  p.B = p.H = p.Hk = 1, p.S = 1, p.Sk = 2, p.D = 2, p.dtype = DType::fp8_e4m3, p.scale = 1.0;
  HostInputs in;
  in.q = {1.f, 2.f};
  in.k = {1.f, 0.f, 0.f, 1.f};
  in.v = {3.f, -1.f, 0.5f, 4.f};
  in.descale = {0.5f, 0.25f, 2.f};
  const double s0 = 0.5 * 0.25 * 1, s1 = 0.5 * 0.25 * 2;  // descaled dot products, scale 1
  const double w0 = std::exp(s0), w1 = std::exp(s1), l = w0 + w1;
  const double o0 = 2 * (w0 * 3 + w1 * 0.5) / l, o1 = 2 * (w0 * -1 + w1 * 4) / l;
  const Reference ref = compute_reference(p, in, {0}, true);
  EXPECT_NEAR(ref.o[0], o0, 1e-12);
  EXPECT_NEAR(ref.o[1], o1, 1e-12);
  EXPECT_NEAR(ref.lse[0], std::log(l), 1e-12);
  // Low precision: P rounded to e4m3, O to bf16.
  const double p0 = round_to(DType::fp8_e4m3, float(std::exp(s0 - s1))), p1 = 1.0;
  const double lp_l = std::exp(s0 - s1) + 1;
  EXPECT_NEAR(ref.o_lp[0], round_to(DType::bf16, float(2 * (p0 * 3 + p1 * 0.5) / lp_l)), 1e-6);
  EXPECT_EQ(ref.lp_p, DType::fp8_e4m3);
  // cpu-flash rounds where the low-precision reference does (one tile: the same running max).
  const RunOutputs o = flash(p, in, 0);
  EXPECT_EQ(o.o.dtype, DType::bf16);
  EXPECT_EQ(o.o.at(0), ref.o_lp[0]);
  EXPECT_EQ(o.o.at(1), ref.o_lp[1]);
  EXPECT_NEAR(o.o.at(0), o0, 0.04) << "P rounded to e4m3 moves O by a few percent";
}

TEST(Fp8Reference, CpuFlashPassesTheRuleInTheFourFormatsForEveryG) {
  for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2, DType::fp8_e4m3fnuz, DType::fp8_e5m2fnuz})
    for (const Problem& base : test::edge_and_random_problems(12, 31)) {
      if (base.kv_cache) continue;  // kv-cache appends are a GPU path's (cpu-flash's own are exact bits)
      Problem p = base;
      p.dtype = t;
      const HostInputs in = make_inputs(p);
      const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
      for (int G : {0, 2, 4, 8, 16}) {
        const Metrics m = measure(p, in, ref, flash(p, in, G));
        const Verdict v = judge(m, p.dtype, Thresholds{});
        EXPECT_TRUE(v.pass) << p.label() << " " << dtype_name(t) << " G=" << G << ": " << v.reason;
      }
    }
}

namespace {

void descale_and_p_mistakes_fail(DType t) {
  SCOPED_TRACE(dtype_name(t));
  Problem p = fp8_problem(t, 64, 256, 64, false);
  p.scale = 0.5;  // peaked rows: O of order 1, where P's rounding shows
  const HostInputs in = make_inputs(p);
  const std::vector<int64_t> rows = sample_rows(p, 0, 0);
  const Reference e4m3_ref = compute_reference(p, in, rows, lowprec_p_dtype(p, DType::fp8_e4m3));
  const Reference bf16_ref = compute_reference(p, in, rows, DType::bf16);
  auto verdict = [&](const Reference& ref, const RunOutputs& o) { return judge(measure(p, in, ref, o), p.dtype, Thresholds{}); };
  EXPECT_TRUE(verdict(e4m3_ref, flash(p, in, 0, DType::fp8_e4m3)).pass);
  EXPECT_TRUE(verdict(bf16_ref, flash(p, in, 0, DType::bf16)).pass);
  EXPECT_TRUE(verdict(e4m3_ref, flash(p, in, 0, DType::bf16)).pass) << "finer P than declared passes";
  const Verdict coarse = verdict(bf16_ref, flash(p, in, 0, DType::fp8_e4m3));
  EXPECT_FALSE(coarse.pass) << "P rounded to e4m3 by a path that declares bf16";
  EXPECT_NE(coarse.reason.find("max |err|"), std::string::npos) << coarse.reason;

  HostInputs no_v = in, no_q = in;
  no_v.descale.v = 1.f;  // the epilogue forgot v's descale
  no_q.descale.q = 1.f;  // the scores forgot q's
  for (const HostInputs* wrong : {&no_v, &no_q}) {
    const Verdict v = verdict(e4m3_ref, flash(p, *wrong, 0));
    EXPECT_FALSE(v.pass);
    EXPECT_NE(v.reason.find("max |err|"), std::string::npos) << v.reason;
  }
}

}  // namespace

TEST(Fp8Reference, ALeftOutDescaleFailsAndSoDoesPRoundedCoarserThanDeclared) {
  descale_and_p_mistakes_fail(DType::fp8_e4m3);
  descale_and_p_mistakes_fail(DType::fp8_e4m3fnuz);
}

TEST(Fp8Reference, FnuzProblemsRoundPToE4m3fnuzWhereAPathDeclaresE4m3) {
  Problem p = fp8_problem(DType::fp8_e5m2fnuz, 1, 2, 2, false);
  EXPECT_EQ(lowprec_p_dtype(p, DType::fp8_e4m3), DType::fp8_e4m3fnuz) << "the e4m3 of the inputs' family";
  EXPECT_EQ(lowprec_p_dtype(p, DType::bf16), DType::bf16);
  p.dtype = DType::fp8_e5m2;
  EXPECT_EQ(lowprec_p_dtype(p, DType::fp8_e4m3), DType::fp8_e4m3);
  // One query over two keys, as above, in e4m3fnuz: P's second value rounds on e4m3fnuz's grid.
  p = fp8_problem(DType::fp8_e4m3fnuz, 1, 2, 2, false);
  p.H = p.Hk = 1, p.scale = 1.0;
  HostInputs in;
  in.q = {1.f, 2.f};
  in.k = {1.f, 0.f, 0.f, 1.f};
  in.v = {3.f, -1.f, 0.5f, 4.f};
  in.descale = {0.5f, 0.25f, 2.f};
  const double s0 = 0.5 * 0.25 * 1, s1 = 0.5 * 0.25 * 2;
  const Reference ref = compute_reference(p, in, {0}, true);
  EXPECT_EQ(ref.lp_p, DType::fp8_e4m3fnuz);
  const double p0 = round_to(DType::fp8_e4m3fnuz, float(std::exp(s0 - s1))), lp_l = std::exp(s0 - s1) + 1;
  EXPECT_NEAR(ref.o_lp[0], round_to(DType::bf16, float(2 * (p0 * 3 + 0.5) / lp_l)), 1e-6);
  const RunOutputs o = flash(p, in, 0);
  EXPECT_EQ(o.o.at(0), ref.o_lp[0]) << "cpu-flash rounds P where the low-precision reference does";
}

TEST(Fp8Reference, AnFnuzCacheSlotLeftPoisonedIsCaughtThoughAllOnesWouldBeMinus240) {
  Problem p = fp8_problem(DType::fp8_e4m3fnuz, 1, 130, 32, true);
  p.B = 2, p.kv_cache = true;
  const HostInputs in = make_inputs(p);
  GateContext ctx;
  auto exec = test::cpu_row("cpu-flash").prepare(p, in, 0, ctx);
  exec->poison();
  const Strides ks = kv_strides(p);
  EXPECT_EQ(exec->read_back().k_cache.bits(ks.at(0, 129, 1)), 0x80u) << "new slots start as FNUZ's NaN";
  exec->run();
  RunOutputs r = exec->read_back();
  const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
  EXPECT_EQ(measure(p, in, ref, r).cache_mismatch, 0);
  EXPECT_TRUE(judge(measure(p, in, ref, r), p.dtype, Thresholds{}).pass);
  r.k_cache.set_bits(ks.at(1, 129, 0), poison_bits(p.dtype));  // a kernel that skipped one append
  const Metrics m = measure(p, in, ref, r);
  EXPECT_EQ(m.cache_mismatch, 1);
  EXPECT_FALSE(judge(m, p.dtype, Thresholds{}).pass);
  EXPECT_EQ(from_bits(p.dtype, 0xff), -240.f) << "why the poison is not all-ones here";
}

TEST(Fp8Reference, FlopsAreTheDenseCountAndBytesReadOneByteAnInputAndTwoAnOutput) {
  const Problem p8 = fp8_problem(DType::fp8_e4m3, 100, 300, 64, false);
  Problem p16 = p8;
  p16.dtype = DType::bf16;
  EXPECT_EQ(p8.flops(), p16.flops());
  const double q = 100.0 * 4 * 64, kv = 300.0 * 2 * 64, lse = 100.0 * 4 * 4;
  EXPECT_DOUBLE_EQ(p8.bytes(), q * 1 + 2 * kv * 1 + q * 2 + lse);
  EXPECT_DOUBLE_EQ(p16.bytes(), q * 2 + 2 * kv * 2 + q * 2 + lse);
}

TEST(Fp8Reference, TheBiasCheckStillCatchesStoresThatTruncateTowardZero) {
  // A perfect kernel whose bf16 stores truncate: every element within one ulp, so only the bias
  // check can see it (about -0.5 ulp against the rounded reference; a rounding store gives 0).
  const Problem p = fp8_problem(DType::fp8_e4m3, 64, 96, 32, true);
  const HostInputs in = make_inputs(p);
  const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
  RunOutputs good = flash(p, in, 0), rtz = good;
  const Strides qs = q_strides(p);
  for (int64_t h = 0; h < p.H; ++h)
    for (size_t r = 0; r < ref.rows.size(); ++r)
      for (int64_t d = 0; d < p.D; ++d) {
        const float x = float(ref.o[ref.row_index(0, h, r) * size_t(p.D) + size_t(d)]);
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        const int64_t at = qs.at(0, ref.rows[r], h) + d;
        rtz.o.set_bits(at, bits >> 16);               // bf16 by truncation
        good.o.set(at, x);                            // bf16 by round to nearest even
      }
  const Metrics mg = measure(p, in, ref, good), mr = measure(p, in, ref, rtz);
  EXPECT_TRUE(judge(mg, p.dtype, Thresholds{}).pass);
  EXPECT_NEAR(mg.bias.mean_ulp, 0.0, 1e-9) << "a rounding store is the rounded reference itself";
  const Verdict v = judge(mr, p.dtype, Thresholds{});
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reason.find("rounding bias"), std::string::npos) << v.reason;
}
