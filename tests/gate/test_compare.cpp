// compare: records written by the real CSV writer and read back are matched by (problem incl.
// name, path, G) and judged SAME/FAST/SLOW against both sides' noise, AMBIGUOUS on few samples
// or a missing timing; accuracy changes, missing records, geomeans and a pair's change of plugin
// build (beside its verdict, in the markdown, CSV and JSON) are reported. Records with made-up clocks
// (schema 10's columns, through the real writer and reader) are judged in cycles too where the clocks
// moved, AMBIGUOUS where ms and cycles disagree, and AMBIGUOUS when throttled unless allowed.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gate/compare.hpp"
#include "gate/compare_print.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

Record timed(const std::string& name, const std::string& path, double ms, double spread = 0.005, int samples = 20) {
  Record r;
  r.problem.name = name;
  r.problem.B = 1, r.problem.H = 4, r.problem.Hk = 2, r.problem.S = 64, r.problem.Sk = 128, r.problem.D = 64;
  r.path = path;
  r.status = Status::pass;
  r.metrics = Metrics{};
  r.metrics->max_abs = 1e-3;
  r.timing = TimingStats{};
  r.timing->median_ms = ms;
  r.timing->spread = spread;
  r.timing->samples = samples;
  return r;
}

const RecordChange& only_change(const Comparison& c) {
  EXPECT_EQ(c.changes.size(), 1u);
  return c.changes.at(0);
}

Comparison pair(const Record& o, const Record& n) {
  static std::vector<ResultsFile> keep;  // the comparison points into the files
  keep.push_back(test::written({o}));
  keep.push_back(test::written({n}));
  return compare_results(keep[keep.size() - 2], keep.back(), CompareRule{});
}

}  // namespace

TEST(Compare, ASmallChangeWithinTheThresholdIsSame) {
  const auto c = pair(timed("p", "cpu-flash", 1.0), timed("p", "cpu-flash", 1.04));
  EXPECT_EQ(only_change(c).verdict, SpeedVerdict::same);
  EXPECT_NEAR(*only_change(c).ratio, 1.04, 1e-9);
}

TEST(Compare, TenPercentSlowerWithTightSpreadsIsSlow) {
  const auto c = pair(timed("p", "cpu-flash", 1.0), timed("p", "cpu-flash", 1.10));
  EXPECT_EQ(only_change(c).verdict, SpeedVerdict::slow);
  EXPECT_DOUBLE_EQ(only_change(c).margin, 0.05) << "k x spread (2.1%) is under the 5% threshold";
}

TEST(Compare, FifteenPercentFasterIsFast) {
  EXPECT_EQ(only_change(pair(timed("p", "x", 1.0), timed("p", "x", 0.85))).verdict, SpeedVerdict::fast);
  EXPECT_EQ(only_change(pair(timed("p", "x", 1.0), timed("p", "x", 0.96))).verdict, SpeedVerdict::same);
}

TEST(Compare, LargeSpreadsSuppressASlowVerdict) {
  // Combined spread sqrt(2) x 4% = 5.7%; 3x that is a 17% margin, so 10% slower is noise.
  const auto c = pair(timed("p", "x", 1.0, 0.04), timed("p", "x", 1.10, 0.04));
  EXPECT_EQ(only_change(c).verdict, SpeedVerdict::same);
  EXPECT_NEAR(only_change(c).margin, 3 * std::hypot(0.04, 0.04), 1e-12);
  EXPECT_EQ(only_change(pair(timed("p", "x", 1.0, 0.04), timed("p", "x", 1.25, 0.04))).verdict, SpeedVerdict::slow);
}

TEST(Compare, FewSamplesOrNoTimingIsAmbiguousAndSaysWhichSide) {
  const auto few = pair(timed("p", "x", 1.0), timed("p", "x", 2.0, 0.005, 3));
  EXPECT_EQ(only_change(few).verdict, SpeedVerdict::ambiguous) << "even at 2x: 3 samples prove nothing";
  EXPECT_EQ(only_change(few).why, "new has 3 samples < 5");
  Record skipped = timed("p", "x", 1.0);
  skipped.timing.reset();
  skipped.metrics.reset();
  skipped.status = Status::skip;
  const auto untimed_new = pair(timed("p", "x", 1.0), skipped);
  EXPECT_EQ(only_change(untimed_new).verdict, SpeedVerdict::ambiguous);
  EXPECT_EQ(only_change(untimed_new).why, "new has no timing");
  EXPECT_TRUE(only_change(untimed_new).lost_coverage);
  EXPECT_EQ(only_change(pair(skipped, skipped)).verdict, SpeedVerdict::untimed);
}

TEST(Compare, PassToFailAndAThreefoldErrorGrowthAreFlagged) {
  Record failed = timed("p", "x", 1.0);
  failed.status = Status::fail;
  const Comparison c = pair(timed("p", "x", 1.0), failed);  // kept: f refers into it
  const auto& f = only_change(c);
  EXPECT_TRUE(f.became_wrong);
  EXPECT_EQ(f.accuracy, "pass → fail");
  Record worse = timed("p", "x", 1.0);
  worse.metrics->max_abs = 3e-3;
  EXPECT_EQ(only_change(pair(timed("p", "x", 1.0), worse)).accuracy, "max err 3.0x");
  worse.metrics->max_abs = 1.5e-3;
  EXPECT_EQ(only_change(pair(timed("p", "x", 1.0), worse)).accuracy, "") << "1.5x is within the 2x growth allowed";
}

TEST(Compare, RecordsMatchByNamePathAndGAndTheRestAreMissingOrAdded) {
  Record g4 = timed("p", "x", 1.0);
  g4.g_req = SplitRequest{false, 4};
  const ResultsFile old_f = test::written({timed("p", "x", 1.0), timed("q", "x", 1.0), g4, timed("p", "y", 1.0)});
  const ResultsFile new_f = test::written({timed("p", "x", 1.1), timed("renamed", "x", 1.0), g4});
  const Comparison c = compare_results(old_f, new_f, CompareRule{});
  ASSERT_EQ(c.changes.size(), 2u);
  EXPECT_EQ(c.changes[0].verdict, SpeedVerdict::slow);
  EXPECT_EQ(c.changes[1].new_rec->record.g_req.value, 4);
  ASSERT_EQ(c.missing.size(), 2u);
  EXPECT_EQ(c.missing[0]->record.problem.name, "q");
  EXPECT_EQ(c.missing[1]->record.path, "y");
  ASSERT_EQ(c.added.size(), 1u);
  EXPECT_EQ(c.added[0]->record.problem.name, "renamed");
}

TEST(Compare, ALaterLineOfTheSameRecordReplacesTheEarlierOne) {
  Record err = timed("p", "x", 1.0);
  err.status = Status::error;
  err.timing.reset();
  const ResultsFile old_f = test::written({timed("p", "x", 1.0)});
  const ResultsFile new_f = test::written({err, timed("p", "x", 1.0)});  // a resumed sweep re-ran the error
  const Comparison c = compare_results(old_f, new_f, CompareRule{});
  EXPECT_EQ(only_change(c).verdict, SpeedVerdict::same);
  EXPECT_EQ(only_change(c).new_rec->at.line, 3);
}

TEST(Compare, GeomeanRatiosCoverAllTimedPairsAndEachPath) {
  const ResultsFile old_f = test::written({timed("a", "x", 1.0), timed("b", "x", 1.0), timed("a", "y", 2.0)});
  const ResultsFile new_f = test::written({timed("a", "x", 1.21), timed("b", "x", 1.0), timed("a", "y", 1.0)});
  const Comparison c = compare_results(old_f, new_f, CompareRule{});
  ASSERT_EQ(c.geomeans.size(), 3u);
  EXPECT_EQ(c.geomeans[0].path, "all");
  EXPECT_NEAR(c.geomeans[0].ratio, std::cbrt(1.21 * 0.5), 1e-9);
  EXPECT_EQ(c.geomeans[1].path, "x");
  EXPECT_NEAR(c.geomeans[1].ratio, 1.1, 1e-9);
  EXPECT_EQ(c.geomeans[1].n, 2);
  EXPECT_NEAR(c.geomeans[2].ratio, 0.5, 1e-9);
}

namespace {

Record from_plugin(Record r, const std::string& file, const std::string& version) {
  r.plugin_file = file;
  r.plugin_version = version;
  return r;
}

}  // namespace

TEST(Compare, ANewPluginVersionIsReportedOnThePairAndLeavesItsVerdictAlone) {
  const Record old_r = from_plugin(timed("p", "example-cpu", 1.0), "/opt/fa/libfa_example_cpu.so", "1.0.0");
  const Comparison slow = pair(old_r, from_plugin(timed("p", "example-cpu", 1.10), "/opt/fa/libfa_example_cpu.so", "1.1.0"));
  EXPECT_EQ(only_change(slow).plugin, "plugin /opt/fa/libfa_example_cpu.so 1.0.0 → 1.1.0");
  EXPECT_EQ(only_change(slow).verdict, SpeedVerdict::slow) << "the slowdown is judged as it would be without the new build";
  EXPECT_EQ(slow.plugin_changes(), 1);
  const Comparison same = pair(old_r, from_plugin(timed("p", "example-cpu", 1.0), "/opt/fa/libfa_example_cpu.so", "1.1.0"));
  EXPECT_EQ(only_change(same).verdict, SpeedVerdict::same) << "a new build alone is no change in speed";
  EXPECT_EQ(only_change(same).accuracy, "");
  EXPECT_EQ(only_change(pair(old_r, old_r)).plugin, "") << "the same build on both sides says nothing";
}

TEST(Compare, AnotherLibraryFileOrABuiltInSideIsNamedInFull) {
  const Record a = from_plugin(timed("p", "mine", 1.0), "/a/libmine.so", "2.0");
  EXPECT_EQ(plugin_change(a, from_plugin(a, "/b/libmine.so", "2.0")),
            "plugin /a/libmine.so 2.0 → /b/libmine.so 2.0");
  EXPECT_EQ(plugin_change(timed("p", "mine", 1.0), a), "plugin built in → /a/libmine.so 2.0");
  EXPECT_EQ(plugin_change(a, from_plugin(a, "/a/libmine.so", "")), "plugin /a/libmine.so 2.0 → (no version)");
}

TEST(ComparePrint, TheMarkdownCsvAndJsonNameBothPluginBuildsOfAPath) {
  const ResultsFile old_f = test::written({from_plugin(timed("p", "example-cpu", 1.0), "/opt/fa/libfa_example_cpu.so", "1.0.0"),
                                           from_plugin(timed("q", "example-cpu", 1.0), "/opt/fa/libfa_example_cpu.so", "1.0.0"),
                                           timed("p", "cpu-flash", 1.0)});
  const ResultsFile new_f = test::written({from_plugin(timed("p", "example-cpu", 1.2), "/opt/fa/libfa_example_cpu.so", "1.1.0"),
                                           from_plugin(timed("q", "example-cpu", 1.0), "/opt/fa/libfa_example_cpu.so", "1.1.0"),
                                           timed("p", "cpu-flash", 1.0)});
  const Comparison c = compare_results(old_f, new_f, CompareRule{});
  std::ostringstream md;
  print_compare_markdown(md, c, CompareRule{});
  EXPECT_NE(md.str().find("\nPlugin builds that differ (reported beside the verdicts, which judge the timings alone):\n\n"
                          "- example-cpu: plugin /opt/fa/libfa_example_cpu.so 1.0.0 → 1.1.0; 2 records: 1 same, 1 slow\n"),
            std::string::npos)
      << md.str();
  EXPECT_NE(md.str().find("1 slow, 0 fast, 0 ambiguous, 0 untimed; 0 missing, 0 added; 0 accuracy changes; 2 from another plugin build\n"),
            std::string::npos)
      << md.str();

  const std::string csv = compare_csv({c});
  std::istringstream lines(csv);
  std::string header, first;
  std::getline(lines, header), std::getline(lines, first);
  EXPECT_NE(header.find(",path,G_req,old_plugin,old_plugin_version,new_plugin,new_plugin_version,old_status,"), std::string::npos)
      << header;
  EXPECT_NE(first.find(",example-cpu,0,/opt/fa/libfa_example_cpu.so,1.0.0,/opt/fa/libfa_example_cpu.so,1.1.0,pass,"),
            std::string::npos)
      << first;

  const auto j = nlohmann::json::parse(compare_json({c}, CompareRule{}));
  const auto& recs = j["comparisons"][0]["records"];
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0]["old_plugin_version"], "1.0.0");
  EXPECT_EQ(recs[0]["new_plugin_version"], "1.1.0");
  EXPECT_EQ(recs[0]["new_plugin"], "/opt/fa/libfa_example_cpu.so");
  EXPECT_EQ(recs[2]["new_plugin"], "") << "a built-in path has no plugin";
  EXPECT_NE(j["comparisons"][0]["summary"].get<std::string>().find("; 2 from another plugin build"), std::string::npos);
}

TEST(ComparePrint, NoPluginChangeAddsNoSectionAndNoCount) {
  const ResultsFile f = test::written({timed("p", "cpu-flash", 1.0)});
  std::ostringstream md;
  print_compare_markdown(md, compare_results(f, f, CompareRule{}), CompareRule{});
  EXPECT_EQ(md.str().find("Plugin builds"), std::string::npos) << md.str();
  EXPECT_EQ(md.str().find("plugin build"), std::string::npos) << md.str();
}

namespace {

// r with the clock columns of a record whose every sample ran at `mhz`: its cycles are ms x MHz x 1e3
// (harness/timing.hpp's definition), `throttled` of its samples under the SW power cap.
Record at_clock(Record r, double mhz, int throttled = 0) {
  ClockStats c;
  c.mhz_min = c.mhz_median = mhz;
  c.power_w_max = 700;
  c.cycles_median = r.timing->median_ms * mhz * 1e3;
  c.throttled_samples = throttled;
  c.throttle_reasons = throttled ? "sw_power_cap" : "";
  c.source = "nvml";
  r.timing->clocks = c;
  return r;
}

Comparison pair_with(const Record& o, const Record& n, const CompareRule& rule) {
  static std::vector<ResultsFile> keep;
  keep.push_back(test::written({o}));
  keep.push_back(test::written({n}));
  return compare_results(keep[keep.size() - 2], keep.back(), rule);
}

// The power cap took the clock from 1980 to 1815 MHz: the same cycles take 1980 / 1815 = 9.1% longer.
constexpr double kCool = 1980, kHot = 1815, kHotSlower = kCool / kHot;

}  // namespace

TEST(CompareClocks, ACoolBaselineAgainstAHotCurrentSlowerOnlyInMsIsAmbiguousNotSlow) {
  const auto c = pair(at_clock(timed("p", "mma", 1.0), kCool), at_clock(timed("p", "mma", kHotSlower), kHot, 4));
  const auto& ch = only_change(c);
  EXPECT_EQ(ch.verdict, SpeedVerdict::ambiguous);
  EXPECT_NEAR(*ch.ratio, kHotSlower, 1e-5);
  ASSERT_TRUE(ch.cycles_ratio);
  EXPECT_NEAR(*ch.cycles_ratio, 1.0, 1e-5);
  EXPECT_EQ(ch.why, "+9.1% in ms (SLOW) but +0.0% in cycles (SAME): clock 1980 → 1815 MHz (new sw_power_cap on 4 of 20 samples)");
  EXPECT_TRUE(ch.judged) << "the margin still applies to both ratios";
  EXPECT_DOUBLE_EQ(ch.margin, 0.05);
}

TEST(CompareClocks, AHotBaselineAgainstACoolCurrentFasterOnlyInMsIsAmbiguousNotFast) {
  // 5 of 20 throttled: the 25% allowed, so the clocks alone make it ambiguous.
  const Comparison cmp = pair(at_clock(timed("p", "mma", kHotSlower), kHot, 5), at_clock(timed("p", "mma", 1.0), kCool));
  const auto& ch = only_change(cmp);
  EXPECT_EQ(ch.verdict, SpeedVerdict::ambiguous);
  EXPECT_EQ(ch.why, "-8.3% in ms (FAST) but +0.0% in cycles (SAME): clock 1815 → 1980 MHz (old sw_power_cap on 5 of 20 samples)");
}

TEST(CompareClocks, ARealRegressionAtEqualClocksIsSlowAndJudgedInMsAlone) {
  const Comparison cmp = pair(at_clock(timed("p", "mma", 1.0), kCool), at_clock(timed("p", "mma", 1.10), kCool));
  const auto& ch = only_change(cmp);
  EXPECT_EQ(ch.verdict, SpeedVerdict::slow);
  EXPECT_FALSE(ch.cycles_ratio) << "equal clocks: cycles add nothing";
  EXPECT_EQ(ch.why, "");
}

TEST(CompareClocks, ARealRegressionWithTheClockAlsoDownIsSlowInBothAndShowsTheCyclesRatio) {
  // 10% more cycles, each 1980 / 1815 longer: 20% more ms.
  const Comparison cmp = pair(at_clock(timed("p", "mma", 1.0), kCool), at_clock(timed("p", "mma", 1.10 * kHotSlower), kHot, 4));
  const auto& ch = only_change(cmp);
  EXPECT_EQ(ch.verdict, SpeedVerdict::slow);
  ASSERT_TRUE(ch.cycles_ratio);
  EXPECT_NEAR(*ch.cycles_ratio, 1.10, 1e-5);
  EXPECT_EQ(ch.clocks, "clock 1980 → 1815 MHz (new sw_power_cap on 4 of 20 samples)");
  EXPECT_EQ(ch.why, "");
}

TEST(CompareClocks, ARegressionHiddenByAFasterClockIsAmbiguousNotSame) {
  // Hot baseline, cool current, 9.1% more cycles: the same ms. The true change lies between the two.
  const Comparison cmp = pair(at_clock(timed("p", "mma", 1.0), kHot), at_clock(timed("p", "mma", 1.0), kCool));
  const auto& ch = only_change(cmp);
  EXPECT_EQ(ch.verdict, SpeedVerdict::ambiguous);
  EXPECT_EQ(ch.why.rfind("+0.0% in ms (SAME) but +9.1% in cycles (SLOW): clock 1815 → 1980 MHz", 0), 0u) << ch.why;
}

TEST(CompareClocks, ClocksWithinOnePercentAreEqualAndTheMsVerdictStands) {
  // 1965 MHz is one 15 MHz step under 1980 (0.76%).
  const Comparison cmp = pair(at_clock(timed("p", "mma", 1.0), kCool), at_clock(timed("p", "mma", 1.06), 1965));
  const auto& ch = only_change(cmp);
  EXPECT_EQ(ch.verdict, SpeedVerdict::slow);
  EXPECT_FALSE(ch.cycles_ratio);
  CompareRule tight;
  tight.clock_threshold = 0.005;
  const Comparison judged_pair = pair_with(at_clock(timed("p", "mma", 1.0), kCool), at_clock(timed("p", "mma", 1.06), 1965), tight);
  const auto& judged = only_change(judged_pair);
  ASSERT_TRUE(judged.cycles_ratio) << "under a 0.5% threshold one step is a change of clock";
  EXPECT_NEAR(*judged.cycles_ratio, 1.06 * 1965 / 1980, 1e-5);
  EXPECT_EQ(judged.verdict, SpeedVerdict::slow) << "5.2% more cycles: slow in both";
}

TEST(CompareClocks, ASideWithoutClocksIsJudgedInMsAsBefore) {
  const Comparison hot_new_pair = pair(timed("p", "mma", 1.0), at_clock(timed("p", "mma", kHotSlower), kHot));
  const auto& hot_new = only_change(hot_new_pair);
  EXPECT_EQ(hot_new.verdict, SpeedVerdict::slow);
  EXPECT_FALSE(hot_new.cycles_ratio);
  const Comparison hot_old_pair = pair(at_clock(timed("p", "mma", kHotSlower), kHot), timed("p", "mma", 1.0));
  const auto& hot_old = only_change(hot_old_pair);
  EXPECT_EQ(hot_old.verdict, SpeedVerdict::fast);
}

TEST(CompareClocks, MoreThanAQuarterOfASideThrottledIsAmbiguousUnlessAllowed) {
  const Record cool = at_clock(timed("p", "mma", 1.0), kCool);
  // 6 of 20 throttled (30%) at the cool clock: the median clock did not move, so only the share decides.
  const Record slower = at_clock(timed("p", "mma", 1.10), kCool, 6);
  const Comparison cmp = pair(cool, slower);
  const auto& ch = only_change(cmp);
  EXPECT_EQ(ch.verdict, SpeedVerdict::ambiguous);
  EXPECT_EQ(ch.why, "new: 6 of 20 samples throttled (sw_power_cap), over the 25% allowed (--allow-throttled judges it)");
  CompareRule allow;
  allow.allow_throttled = true;
  EXPECT_EQ(only_change(pair_with(cool, slower, allow)).verdict, SpeedVerdict::slow);
  EXPECT_EQ(only_change(pair_with(cool, at_clock(timed("p", "mma", 1.0), kCool, 6), allow)).verdict, SpeedVerdict::same);
  EXPECT_EQ(only_change(pair(cool, at_clock(timed("p", "mma", 1.10), kCool, 5))).verdict, SpeedVerdict::slow)
      << "5 of 20 is the 25% allowed, not more";
  EXPECT_EQ(only_change(pair(at_clock(timed("p", "mma", 1.0), kCool, 6), slower)).why.rfind("old: 6 of 20", 0), 0u)
      << "either side";
}

TEST(CompareClocks, AThrottledPairWhoseClocksAlsoDisagreeGivesBothReasons) {
  const Comparison cmp = pair(at_clock(timed("p", "mma", 1.0), kCool), at_clock(timed("p", "mma", kHotSlower), kHot, 20));
  const auto& ch = only_change(cmp);
  EXPECT_EQ(ch.verdict, SpeedVerdict::ambiguous);
  EXPECT_EQ(ch.why.rfind("new: 20 of 20 samples throttled (sw_power_cap), over the 25% allowed", 0), 0u) << ch.why;
  EXPECT_NE(ch.why.find("; +9.1% in ms (SLOW) but +0.0% in cycles (SAME)"), std::string::npos) << ch.why;
}

TEST(ComparePrint, TheTableCsvAndJsonShowTheClocksAndTheCyclesRatioWhereItWasUsed) {
  const ResultsFile old_f = test::written({at_clock(timed("p", "mma", 1.0), kCool), at_clock(timed("q", "mma", 1.0), kCool)});
  const ResultsFile new_f =
      test::written({at_clock(timed("p", "mma", 1.10 * kHotSlower), kHot, 4), at_clock(timed("q", "mma", 1.0), kCool)});
  const Comparison c = compare_results(old_f, new_f, CompareRule{});
  std::ostringstream md;
  print_compare_markdown(md, c, CompareRule{});
  EXPECT_NE(md.str().find("| 1 ±0.5% (20) at 1980 MHz | 1.2 ±0.5% (20) at 1815 MHz, 4 throttled | 1.200 (1.100 in cycles) | 5.0% | SLOW |"),
            std::string::npos)
      << md.str();
  EXPECT_NE(md.str().find("| 1 ±0.5% (20) at 1980 MHz | 1 ±0.5% (20) at 1980 MHz | 1.000 | 5.0% | SAME |"), std::string::npos)
      << "no cycles ratio where the clocks agree\n" << md.str();
  EXPECT_NE(md.str().find("judged in cycles too"), std::string::npos) << md.str();

  const std::string csv = compare_csv({c});
  std::istringstream lines(csv);
  std::string header, first, second;
  std::getline(lines, header), std::getline(lines, first), std::getline(lines, second);
  EXPECT_NE(header.find(",old_clock_mhz_median,new_clock_mhz_median,old_throttled_samples,new_throttled_samples,"
                        "old_throttle_reasons,new_throttle_reasons,ratio,cycles_ratio,margin,verdict,"),
            std::string::npos)
      << header;
  EXPECT_NE(first.find(",1980,1815,0,4,,sw_power_cap,1.2,1.1,0.05,SLOW,"), std::string::npos) << first;
  EXPECT_NE(second.find(",1980,1980,0,0,,,1,,0.05,SAME,"), std::string::npos) << second;

  const auto j = nlohmann::json::parse(compare_json({c}, CompareRule{}));
  EXPECT_EQ(j["rule"]["clock_threshold"], 0.01);
  EXPECT_EQ(j["rule"]["max_throttled_share"], 0.25);
  EXPECT_EQ(j["rule"]["allow_throttled"], false);
  EXPECT_EQ(j["comparisons"][0]["records"][0]["cycles_ratio"], "1.1");
}

TEST(ComparePrint, ThrottleReasonsJoinedByABarStayInOneTableCell) {
  Record hot = at_clock(timed("p", "mma", 0.9999 * kHotSlower), kHot, 20);
  hot.timing->clocks->throttle_reasons = "sw_power_cap|hw_slowdown";
  const ResultsFile old_f = test::written({at_clock(timed("p", "mma", 1.0), kCool)});
  const ResultsFile new_f = test::written({hot});
  const Comparison c = compare_results(old_f, new_f, CompareRule{});
  // 0.01% fewer cycles rounds to none: +0.0%, never -0.0%.
  EXPECT_NE(only_change(c).why.find("+9.1% in ms (SLOW) but +0.0% in cycles (SAME)"), std::string::npos) << only_change(c).why;
  EXPECT_EQ(only_change(c).why.find("-0.0%"), std::string::npos) << only_change(c).why;
  std::ostringstream md;
  print_compare_markdown(md, c, CompareRule{});
  std::istringstream lines(md.str());
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("| p fp16 |", 0) == 0) {
      EXPECT_NE(l.find("(sw_power_cap\\|hw_slowdown)"), std::string::npos) << l;
      size_t bars = 0;
      for (size_t i = 0; i < l.size(); ++i) bars += l[i] == '|' && (i == 0 || l[i - 1] != '\\');
      EXPECT_EQ(bars, 10u) << "nine cells: " << l;
    }
}
