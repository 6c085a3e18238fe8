// `fa-bench fit`'s pieces: the fitter recovers known parameters from timings the model itself
// generated (exactly, and within a few percent under 1% noise), held-out picks on such data are
// perfect, the scores follow their definitions on hand-made times, and fit data is collected only
// from problems timed at every G.
#include <gtest/gtest.h>

#include <cmath>

#include "fit/split_fit.hpp"

using namespace fa;

namespace {

// A spread of problems like the heuristic sweeps: few to many row blocks, short to long keys.
std::vector<FitProblem> synthetic(const ModelParams& truth, double noise) {
  std::vector<FitProblem> ps;
  uint64_t state = 12345;
  auto uniform = [&] {  // deterministic, in [-1, 1)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return double(state >> 11) / double(1ull << 52) - 1.0;
  };
  int n = 0;
  for (int64_t B : {1, 2, 8})
    for (int64_t H : {1, 8, 32})
      for (int64_t S : {1, 512, 4096})
        for (int64_t Sk : {1024, 16384, 131072})
          for (bool causal : {false, true}) {
            if (S > Sk || (++n % 2)) continue;  // every other one keeps the test quick
            FitProblem p;
            p.in.problem.B = B, p.in.problem.H = p.in.problem.Hk = H, p.in.problem.S = S, p.in.problem.Sk = Sk;
            p.in.problem.D = 64, p.in.problem.causal = causal;
            p.in.units = 132;
            for (size_t i = 0; i < kNumSplitChoices; ++i)  // the D=64 kernel's switch at 4096 keys a block
              p.in.tiles[i] = Sk / std::max(kSplitChoices[i], 1) >= 4096 ? TileShape{128, 128, 1} : TileShape{128, 64, 2};
            for (size_t i = 0; i < kNumSplitChoices; ++i) {
              p.t[i] = model_time_ms(truth, p.in, kSplitChoices[i]) * (1 + noise * uniform());
              p.band[i] = 0.005 * p.t[i];
            }
            p.family = "B=" + std::to_string(B) + " H=" + std::to_string(H);
            ps.push_back(p);
          }
  return ps;
}

ModelParams truth() {
  ModelParams m;
  m.coef = {2e-4, 1e-4, 3e-3, 2e-3, 4e-3};
  return m;
}

}  // namespace

TEST(SplitFit, RecoversTheParametersOfTimingsTheModelGenerated) {
  const auto ps = synthetic(truth(), 0);
  ASSERT_GE(ps.size(), 50u);
  const ModelParams fit = fit_model(ps);
  for (size_t i = 0; i < fit.coef.size(); ++i)
    EXPECT_NEAR(fit.coef[i], truth().coef[i], 1e-9 * truth().coef[0] + 1e-6 * truth().coef[i]) << kModelCoefNames[i];
  for (const auto& p : ps) EXPECT_DOUBLE_EQ(p.regret(split_model(p.in, fit)), 0) << p.label;
}

TEST(SplitFit, RecoversThemWithinAFewPercentUnderOnePercentNoise) {
  const auto ps = synthetic(truth(), 0.01);
  const ModelParams fit = fit_model(ps);
  // The per-tile terms carry most of the time: they come back within 5%; the launch terms within 50%.
  EXPECT_NEAR(fit.coef[0] + fit.coef[1], truth().coef[0] + truth().coef[1], 0.05 * (truth().coef[0] + truth().coef[1]));
  EXPECT_NEAR(fit.coef[3], truth().coef[3], 0.5 * truth().coef[3]);
}

TEST(SplitFit, HeldOutPicksOnModelTimingsAreTheBest) {
  const auto ps = synthetic(truth(), 0);
  const auto kfold = kfold_picks(ps, 5, 1);
  const auto lofo = lofo_picks(ps);
  const RuleScore k = score_picks("k", ps, kfold), l = score_picks("l", ps, lofo);
  EXPECT_DOUBLE_EQ(k.within1, 1);
  EXPECT_DOUBLE_EQ(l.within1, 1);
  EXPECT_DOUBLE_EQ(k.max_regret, 0);
  EXPECT_NEAR(k.oracle_capture, 1, 1e-12);
}

TEST(SplitFit, ScoresFollowTheirDefinitions) {
  auto problem = [](std::array<double, 5> t) {
    FitProblem p;
    p.t = t;
    p.band.fill(0.001);
    return p;
  };
  // Best G=4 (index 2) in the first, G=0 in the second.
  const std::vector<FitProblem> ps = {problem({10, 6, 4, 5, 8}), problem({2, 2.1, 2.15, 2.3, 3})};
  const RuleScore s = score_picks("r", ps, {8, 4});  // regrets 0.25 and 0.075
  EXPECT_EQ(s.n, 2u);
  EXPECT_DOUBLE_EQ(s.within1, 0);
  EXPECT_DOUBLE_EQ(s.within10, 0.5);
  EXPECT_NEAR(s.geomean_regret, std::sqrt(1.25 * 1.075) - 1, 1e-12);
  EXPECT_DOUBLE_EQ(s.max_regret, 0.25);
  EXPECT_DOUBLE_EQ(s.p90_regret, 0.25);
  EXPECT_DOUBLE_EQ(s.harm, 0.5);  // 2.15 > 1.02 x 2
  EXPECT_NEAR(s.speedup_vs_0, std::sqrt((10.0 / 5) * (2 / 2.15)), 1e-12);
  EXPECT_NEAR(s.oracle_capture, (10 - 5 + 2 - 2.15) / (10 - 4 + 0.0), 1e-12);
  EXPECT_TRUE(std::isnan(score_picks("zero", {ps[1]}, {0}).oracle_capture));  // G=0 is the best: nothing to capture
}

TEST(SplitFit, TheTieSetHoldsEveryGWithinBothNoiseBandsOfTheBest) {
  FitProblem p;
  p.t = {1.00, 1.01, 1.05, 1.009, 2};
  p.band = {0.006, 0.006, 0.006, 0.002, 0.006};
  EXPECT_EQ(p.best(), 0u);
  // G=2: 0.01 <= 0.006 + 0.006; G=8 is closer (0.009) but its band is narrow: 0.009 > 0.002 + 0.006.
  EXPECT_EQ(p.tie_set(), (std::vector<int>{0, 2}));
}

TEST(SplitFit, CollectsOnlyProblemsTimedAtEveryG) {
  auto rec = [](int64_t Sk, int G, bool timed) {
    Record r;
    r.problem.S = 1, r.problem.Sk = Sk;
    r.path = "mma";
    r.g_req = SplitRequest{false, G};
    r.status = Status::pass;
    r.units = 132;
    r.tile = TileShape{128, 64, 2};
    if (timed) {
      r.timing = TimingStats{};
      r.timing->median_ms = 1.0 + G;
      r.timing->samples = 10;
      r.timing->spread = 0.01;
    }
    return r;
  };
  std::vector<Record> rs;
  for (int G : kSplitChoices) rs.push_back(rec(4096, G, true));
  for (int G : kSplitChoices) rs.push_back(rec(8192, G, G != 8));  // G=8 untimed: left out
  const FitData d = collect_fit_data(rs, "");
  EXPECT_EQ(d.path, "mma");
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].in.problem.Sk, 4096);
  EXPECT_DOUBLE_EQ(d.problems[0].t[4], 17.0);
  EXPECT_DOUBLE_EQ(d.problems[0].band[4], 17.0 * 2 * 0.01 / std::sqrt(10.0));
  ASSERT_EQ(d.dropped.size(), 1u);
  EXPECT_NE(d.dropped[0].find("G=8"), std::string::npos) << d.dropped[0];

  for (auto& r : rs) r.tile = TileShape{0, 0, 0};  // records of another schema: no rule inputs
  EXPECT_THROW(collect_fit_data(rs, "mma"), std::runtime_error);
  EXPECT_THROW(collect_fit_data(rs, "tiled"), std::runtime_error);
}
