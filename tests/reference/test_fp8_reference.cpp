// FP8 inputs through the oracle and cpu-flash: a hand-computed case with descales, cpu-flash
// passing the rule for every G in the four formats (OCP e4m3/e5m2, FNUZ e4m3fnuz/e5m2fnuz), P
// rounded to the e4m3 of the inputs' family, the mistakes an FP8 kernel makes (a descale left out,
// P rounded coarser than the path declares) failing it, and FNUZ's poisoned cache slots caught;
// scores added as Hopper's FP8 tensor cores add them (reference/fp8_accumulate.hpp) where a path
// declares it, and the LSE rule then admitting what that accumulation moves, and no more.
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
#include "harness/fp8_accumulate.hpp"

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

TEST(Fp8Accumulate, AStepAddsItsProductsOnTheLargestTermsGridCuttingTowardZero) {
  // 4 x 4 = 16 = 2^4 and 2^-5 x 2^-5 = 2^-10: on 13 bits below 2^4 the grid is 2^-9, so the small
  // product is cut, toward zero on either sign; on 23 bits it stays.
  float q[32] = {4.f, 0.03125f}, k[32] = {4.f, 0.03125f};
  EXPECT_EQ(fp8_truncated_dot(q, k, 32, 13), 16.0);
  EXPECT_EQ(fp8_truncated_dot(q, k, 32, 23), 16.0 + std::ldexp(1.0, -10));
  q[0] = -4.f, q[1] = -0.03125f;
  EXPECT_EQ(fp8_truncated_dot(q, k, 32, 13), -16.0) << "toward zero, not down to -16 - 2^-9";
  // Three products of 2^-9 below 2^4 on 12 bits (grid 2^-8): each is cut on its own, not their sum.
  float q3[32] = {4.f, 0.0625f, 0.0625f, 0.0625f}, k3[32] = {4.f, 0.03125f, 0.03125f, 0.03125f};
  EXPECT_EQ(fp8_truncated_dot(q3, k3, 32, 12), 16.0) << "3 x 2^-9 > 2^-8, but each 2^-9 < 2^-8";
  EXPECT_EQ(fp8_truncated_dot(q3, k3, 32, 13), 16.0 + 3 * std::ldexp(1.0, -9));
}

TEST(Fp8Accumulate, TheAccumulatorIsCutOnTheNextStepsGrid) {
  // Step 1 (elements 0-31): 1 + 2^-7 x 2^-6 = 1 + 2^-13, exact on 13 bits below 2^0. Step 2
  // (32-63) adds 2 x 1: its grid is 2^-12 below 2^1, so the carried 2^-13 is lost: 3, not 3 + 2^-13.
  float q[64] = {1.f, 0.0078125f}, k[64] = {1.f, 0.015625f};
  q[32] = 2.f, k[32] = 1.f;
  EXPECT_EQ(fp8_truncated_dot(q, k, 32, 13), 1.0 + std::ldexp(1.0, -13));
  EXPECT_EQ(fp8_truncated_dot(q, k, 64, 13), 3.0);
  EXPECT_EQ(fp8_truncated_dot(q, k, 64, 14), 3.0 + std::ldexp(1.0, -13));
  // A last step shorter than 32 (D = 40) is a step too.
  EXPECT_EQ(fp8_truncated_dot(q, k, 40, 13), 3.0);
}

namespace {

// The largest a row's scores move under fp8_truncated_dot, times the softmax scale: each of D / 32
// steps cuts at most 33 terms by one grid unit, 2^(e - bits), where 2^e is at most sum_d |q_d k_d|.
double lse_shift_bound(const Problem& p, const HostInputs& in, int64_t h, int64_t s, int bits) {
  const Strides qs = q_strides(p), ks = kv_strides(p);
  const int64_t hk = h / p.group_size();
  double worst = 0;
  for (int64_t j = 0; j < p.Sk; ++j) {
    double a = 0;
    for (int64_t d = 0; d < p.D; ++d)
      a += std::fabs(double(in.q[size_t(qs.at(0, s, h) + d)]) * double(in.k[size_t(ks.at(0, j, hk) + d)]));
    worst = std::max(worst, a);
  }
  const double steps = double((p.D + kFp8KStep - 1) / kFp8KStep);
  return p.softmax_scale() * double(in.descale.q) * double(in.descale.k) * steps * 33 * std::ldexp(worst, -bits);
}

// Softmax scale 10, as sessions 31-32 ran FP8 mma: the low-precision reference of every row with
// fp32 scores and with 13-bit ones.
struct Scale10 {
  Problem p = [] {
    Problem q = fp8_problem(DType::fp8_e4m3, 48, 160, 128, false);
    q.scale = 10;
    return q;
  }();
  HostInputs in = make_inputs(p);
  std::vector<int64_t> rows = sample_rows(p, 0, 0);
  Reference f32 = compute_reference(p, in, rows, LowPrecision(DType::fp8_e4m3, 0));
  Reference h13 = compute_reference(p, in, rows, LowPrecision(DType::fp8_e4m3, 13));
};

}  // namespace

TEST(Fp8Accumulate, ThirteenBitScoresMoveTheLseWithinTheModelsBoundAndOnAverageDown) {
  // The LSE follows the largest scores, which are positive; a product's cut points either way with
  // its sign, but the accumulator's, once it is the largest term, shortens a positive score: on
  // average the low-precision LSE falls.
  const Scale10 c;
  const Problem& p = c.p;
  const HostInputs& in = c.in;
  const std::vector<int64_t>& rows = c.rows;
  const Reference &f32 = c.f32, &h13 = c.h13;
  const Reference plain = compute_reference(p, in, rows, true);
  EXPECT_EQ(f32.lse_lp, plain.lse_lp) << "0 bits: the fp32 scores of before";
  EXPECT_EQ(h13.lp_s_acc_bits, 13);
  EXPECT_EQ(h13.lse, f32.lse) << "the fp64 oracle does not change";
  double f32_worst = 0, h13_worst = 0, sum13 = 0;
  for (int64_t h = 0; h < p.H; ++h)
    for (size_t r = 0; r < rows.size(); ++r) {
      const size_t i = h13.row_index(0, h, r);
      const double d13 = double(h13.lse_lp[i]) - h13.lse[i], d32 = double(f32.lse_lp[i]) - f32.lse[i];
      f32_worst = std::max(f32_worst, std::fabs(d32));
      h13_worst = std::max(h13_worst, std::fabs(d13));
      sum13 += d13;
      EXPECT_LE(std::fabs(d13), lse_shift_bound(p, in, h, rows[r], 13) + 2 * std::fabs(d32) + 1e-5)
          << "h " << h << " row " << rows[r];
    }
  EXPECT_LT(sum13, 0) << "the accumulator's cuts point toward zero";
  EXPECT_GT(h13_worst, 20 * f32_worst) << "13 bits move the LSE far more than fp32's rounding";
}

TEST(Fp8Accumulate, OnlyFp8ScoresAreAddedOnThirteenBits) {
  Problem p = fp8_problem(DType::bf16, 40, 96, 64, true);
  const HostInputs in = make_inputs(p);
  const std::vector<int64_t> rows = sample_rows(p, 0, 0);
  const Reference a = compute_reference(p, in, rows, LowPrecision(DType::bf16, 13));
  const Reference b = compute_reference(p, in, rows, LowPrecision(DType::bf16, 0));
  EXPECT_EQ(a.lp_s_acc_bits, 0);
  EXPECT_EQ(a.o_lp, b.o_lp);
  EXPECT_EQ(a.lse_lp, b.lse_lp);
}

TEST(Fp8Accumulate, AKernelThatAddsLikeHopperPassesTheLseRuleOnlyWhereItsPathSaysSo) {
  // The kernel: the 13-bit reference's own O and LSE, stored as a kernel stores them. Against fp32
  // scores its LSE fails at softmax scale 10 (session 31's false failures); against the 13-bit
  // model it passes; an LSE off by 0.05 more still fails.
  const Scale10 c;
  const Problem& p = c.p;
  const HostInputs& in = c.in;
  const std::vector<int64_t>& rows = c.rows;
  const Reference &f32 = c.f32, &h13 = c.h13;
  RunOutputs k;
  k.o = TypedBuffer(out_dtype(p.dtype), p.q_elements());
  k.lse.assign(size_t(p.B * p.H * p.S), 0.f);
  const Strides qs = q_strides(p);
  for (int64_t h = 0; h < p.H; ++h)
    for (size_t r = 0; r < rows.size(); ++r) {
      const size_t i = h13.row_index(0, h, r);
      for (int64_t d = 0; d < p.D; ++d) k.o.set(qs.at(0, rows[r], h) + d, h13.o_lp[i * size_t(p.D) + size_t(d)]);
      k.lse[size_t(lse_index(p, 0, h, rows[r]))] = h13.lse_lp[i];
    }
  const Verdict v32 = judge(measure(p, in, f32, k), p.dtype, Thresholds{});
  EXPECT_FALSE(v32.pass);
  EXPECT_NE(v32.reason.find("LSE error"), std::string::npos) << v32.reason;
  const Metrics m13 = measure(p, in, h13, k);
  const Verdict v13 = judge(m13, p.dtype, Thresholds{});
  EXPECT_TRUE(v13.pass) << v13.reason;
  RunOutputs off = k;
  off.lse[size_t(lse_index(p, 0, 1, 7))] += 0.05f + float(v13.lse_tol);
  const Verdict voff = judge(measure(p, in, h13, off), p.dtype, Thresholds{});
  EXPECT_FALSE(voff.pass);
  EXPECT_NE(voff.reason.find("LSE error"), std::string::npos) << voff.reason;
}
