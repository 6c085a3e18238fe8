// `fa-bench fit`'s dispatch pieces: records grouped by (problem, requested G) with `auto` kept apart
// and the oracle, failures and one-path problems left out; picks in-sample and leave-one-out on
// hand-made times; regret, ties within the noise bands, rank-order fallbacks, and the fixed-path
// losses, each checked against its definition.
#include <gtest/gtest.h>

#include "fit/dispatch_fit.hpp"
#include "fit/split_fit.hpp"

using namespace fa;

namespace {

Record rec(int64_t Sk, const std::string& path, double ms, int G = 0, const std::string& ran = "") {
  Record r;
  r.problem.B = 1, r.problem.H = r.problem.Hk = 16, r.problem.S = 1, r.problem.Sk = Sk, r.problem.D = 128;
  r.path = path;
  r.ran_path = ran.empty() ? path : ran;
  r.g_req = SplitRequest{false, G};
  r.g_used = G;
  r.status = Status::pass;
  r.timing = TimingStats{};
  r.timing->median_ms = ms;
  r.timing->samples = 100;
  r.timing->spread = 0.001;  // band: the 0.5% floor
  return r;
}

auto no_rank = [](const std::string&) { return 0; };

}  // namespace

TEST(DispatchFit, GroupsByProblemAndGKeepingAutoApartAndLeavingOutOnePathProblems) {
  std::vector<Record> rs{rec(512, "mma", 0.010), rec(512, "mma-decode", 0.013), rec(512, "cpu-ref", 5.0),
                         rec(512, "auto", 0.0131, 0, "mma-decode"), rec(512, "mma", 0.03, 4),  // G=4: one path only
                         rec(4096, "mma", 0.08), rec(4096, "mma-decode", 0.05)};
  Record failed = rec(4096, "decode", 0.01);
  failed.status = Status::fail;
  rs.push_back(failed);
  Record untimed = rec(4096, "tiled", 0.01);
  untimed.timing.reset();
  rs.push_back(untimed);
  const DispatchData d = collect_dispatch_data(rs, {"cpu-ref"});
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.paths, (std::set<std::string>{"mma", "mma-decode"}));
  const DispatchRow& r = d.rows[0];
  EXPECT_EQ(r.entry.ms.size(), 2u) << "cpu-ref is the oracle; auto is the recorded dispatch";
  EXPECT_EQ(r.best(), "mma");
  ASSERT_TRUE(r.auto_ran);
  EXPECT_EQ(*r.auto_ran, "mma-decode");
  EXPECT_DOUBLE_EQ(r.auto_ms, 0.0131);
  EXPECT_DOUBLE_EQ(r.band.at("mma"), 0.005 * 0.010);
  EXPECT_FALSE(d.rows[1].auto_ran);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("1 problem(s) timed on fewer than two paths"), std::string::npos) << d.notes[0];
}

TEST(DispatchFit, InSamplePicksAreTheBestAndLeaveOneOutAsksTheNeighbours) {
  // Short keys: mma wins by 30%; long keys: mma-decode by 2x. Leaving 1024 out, its neighbour 512
  // still says mma; leaving 4096 out, 8192 says mma-decode.
  std::vector<Record> rs;
  for (int64_t Sk : {512, 1024}) rs.push_back(rec(Sk, "mma", 0.010)), rs.push_back(rec(Sk, "mma-decode", 0.013));
  for (int64_t Sk : {4096, 8192}) rs.push_back(rec(Sk, "mma", 0.2)), rs.push_back(rec(Sk, "mma-decode", 0.1));
  const DispatchData d = collect_dispatch_data(rs, {});
  const DispatchTable t = dispatch_table(d);
  for (Holdout h : {Holdout::none, Holdout::row, Holdout::shape}) {
    const auto picks = dispatch_picks(d, t, h, no_rank);
    ASSERT_EQ(picks.size(), 4u);
    for (size_t i = 0; i < picks.size(); ++i) {
      EXPECT_EQ(picks[i].pick, d.rows[i].best()) << d.rows[i].label << " holdout " << int(h);
      EXPECT_DOUBLE_EQ(picks[i].regret, 0);
      EXPECT_FALSE(picks[i].fallback);
    }
  }
}

TEST(DispatchFit, RegretTiesAndFallbacksFollowTheirDefinitions) {
  // Two problems far apart with opposite winners: left out, each takes the other's (wrong) winner.
  std::vector<Record> rs{rec(256, "mma", 0.100), rec(256, "mma-decode", 0.150), rec(65536, "mma", 0.300),
                         rec(65536, "mma-decode", 0.200)};
  const DispatchData d = collect_dispatch_data(rs, {});
  const auto loo = dispatch_picks(d, dispatch_table(d), Holdout::row, no_rank);
  EXPECT_EQ(loo[0].pick, "mma-decode");
  EXPECT_DOUBLE_EQ(loo[0].regret, 0.150 / 0.100 - 1);
  EXPECT_FALSE(loo[0].tie);
  EXPECT_EQ(loo[1].pick, "mma");
  EXPECT_DOUBLE_EQ(loo[1].regret, 0.5);

  // 0.4% slower with 0.5% bands on both: a tie, inside the bar.
  std::vector<Record> close{rec(256, "mma", 0.1000), rec(256, "mma-decode", 0.1004), rec(512, "mma", 0.1004),
                            rec(512, "mma-decode", 0.1000)};
  const DispatchData c = collect_dispatch_data(close, {});
  const auto near = dispatch_picks(c, dispatch_table(c), Holdout::row, no_rank);
  EXPECT_EQ(near[0].pick, "mma-decode");
  EXPECT_TRUE(near[0].tie);

  // Left out, a row whose paths no other row timed falls back: to the admitted path this binary
  // ranks highest, or, where it ranks none, the slowest.
  std::vector<Record> lonely{rec(256, "mma", 0.1), rec(256, "mma-decode", 0.2), rec(4096, "tiled", 1.0),
                             rec(4096, "splitk", 2.0)};
  const DispatchData l = collect_dispatch_data(lonely, {});
  const auto unranked = dispatch_picks(l, dispatch_table(l), Holdout::row, no_rank);
  EXPECT_TRUE(unranked[0].fallback);
  EXPECT_EQ(unranked[0].pick, "mma-decode");
  const auto ranked = dispatch_picks(l, dispatch_table(l), Holdout::row, [](const std::string& p) { return p == "mma" ? 20 : 0; });
  EXPECT_EQ(ranked[0].pick, "mma");
}

TEST(DispatchFit, LeaveShapeOutHidesTheRowsDtypeTwin) {
  // Sk 256 in fp16 and bf16 (mma wins both), Sk 65536 (mma-decode wins). Left out alone, the fp16
  // row is answered by its bf16 twin; left out with it, by the other shape.
  std::vector<Record> rs{rec(256, "mma", 0.100), rec(256, "mma-decode", 0.150), rec(256, "mma", 0.101),
                         rec(256, "mma-decode", 0.152), rec(65536, "mma", 0.300), rec(65536, "mma-decode", 0.200)};
  rs[2].problem.dtype = rs[3].problem.dtype = DType::bf16;
  const DispatchData d = collect_dispatch_data(rs, {});
  ASSERT_EQ(d.rows.size(), 3u);
  const DispatchTable t = dispatch_table(d);
  EXPECT_EQ(dispatch_picks(d, t, Holdout::row, no_rank)[0].pick, "mma");
  EXPECT_EQ(dispatch_picks(d, t, Holdout::shape, no_rank)[0].pick, "mma-decode");
  EXPECT_EQ(dispatch_picks(d, t, Holdout::shape, no_rank)[2].pick, "mma");
}

TEST(DispatchFit, TablesCountLossesToFixedPathsBeyondTheNoise) {
  std::vector<Record> rs{rec(256, "mma", 0.100), rec(256, "mma-decode", 0.150), rec(256, "auto", 0.151, 0, "mma-decode"),
                         rec(65536, "mma", 0.300), rec(65536, "mma-decode", 0.200), rec(65536, "auto", 0.2, 0, "mma-decode")};
  const DispatchData d = collect_dispatch_data(rs, {});
  const auto rec_auto = recorded_auto(d);
  ASSERT_TRUE(rec_auto[0] && rec_auto[1]);
  EXPECT_NEAR(rec_auto[0]->regret, 0.51, 1e-12);
  const std::vector<DispatchScoreSet> sets{{"auto as recorded", rec_auto}};
  const std::string losses = dispatch_losses(d, sets);
  // mma beats the recorded pick on the short row only; mma-decode never beats itself.
  EXPECT_NE(losses.find("| mma | 2 | 50.0% (1/2) |"), std::string::npos) << losses;
  EXPECT_NE(losses.find("| mma-decode | 2 | 0.0% (0/2) |"), std::string::npos) << losses;
  const std::string summary = dispatch_summary(d, sets);
  EXPECT_NE(summary.find("| auto as recorded | 2 | "), std::string::npos) << summary;
  EXPECT_NE(summary.find("51.0% (B1 H16 S1 Sk256 D128 G=0)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("| 1/2 |"), std::string::npos) << summary;
  const std::string behind = dispatch_rows(d, sets, true);
  EXPECT_NE(behind.find("Sk256 "), std::string::npos) << behind;
  EXPECT_EQ(behind.find("Sk65536"), std::string::npos) << behind;
}

TEST(DispatchFit, RecordsSpreadsWidenTheTieAndTheBestPathsOwnKernelMeetsTheBar) {
  // 6% apart: beyond the 0.5% bands; with spreads of 4% on both records the noise they show is
  // 0.106 * 0.04 + 0.100 * 0.04 = 8.24 us > 6 us: a tie.
  auto noisy = [](Record r) {
    r.timing->spread = 0.04;
    r.timing->samples = 1000000;  // band: the 0.5% floor, so only the spreads can make the tie
    return r;
  };
  std::vector<Record> rs{noisy(rec(256, "mma", 0.100)), noisy(rec(256, "mma-decode", 0.106)), rec(512, "mma", 0.106),
                         rec(512, "mma-decode", 0.100)};
  const DispatchData d = collect_dispatch_data(rs, {});
  const auto loo = dispatch_picks(d, dispatch_table(d), Holdout::row, no_rank);
  EXPECT_EQ(loo[0].pick, "mma-decode");
  EXPECT_TRUE(loo[0].tie);
  EXPECT_EQ(loo[1].pick, "mma");
  EXPECT_FALSE(loo[1].tie) << "quiet records (0.1% spread) 6% apart are no tie";

  // auto ran mma, the best path, at its G, 20% slower than mma's own record: the choice was right
  // (same kernel). So it was on a path 2% behind the best. At another G, or on a path 50% behind,
  // the same 20% misses the bar.
  std::vector<Record> same{rec(256, "mma", 0.100, 4), rec(256, "mma-decode", 0.150, 4), rec(256, "auto", 0.120, 4, "mma"),
                           rec(512, "mma", 0.100, 4), rec(512, "mma-decode", 0.150, 4), rec(512, "auto", 0.120, 4, "mma"),
                           rec(1024, "mma", 0.100, 4), rec(1024, "mma-decode", 0.150, 4), rec(1024, "auto", 0.12, 4, "mma-decode"),
                           rec(2048, "mma", 0.100, 4), rec(2048, "mma-decode", 0.102, 4), rec(2048, "auto", 0.12, 4, "mma-decode")};
  same[5].g_used = 8;
  const DispatchData s = collect_dispatch_data(same, {});
  const auto ran = recorded_auto(s);
  ASSERT_TRUE(ran[0] && ran[1] && ran[2] && ran[3]);
  EXPECT_TRUE(ran[0]->same_kernel);
  EXPECT_NEAR(ran[0]->regret, 0.2, 1e-12);
  EXPECT_FALSE(ran[1]->same_kernel) << "auto ran mma at G=8, the best record G=4";
  EXPECT_FALSE(ran[2]->same_kernel) << "mma-decode's own record is 50% behind";
  EXPECT_TRUE(ran[3]->same_kernel) << "mma-decode's own record is 2% behind";
  const std::string summary = dispatch_summary(s, {{"auto as recorded", ran}});
  EXPECT_NE(summary.find("| 2/4 | 2 |"), std::string::npos) << summary;
  EXPECT_NE(dispatch_rows(s, {{"auto as recorded", ran}}, false).find("mma 20.0% (same kernel)"), std::string::npos);
}
