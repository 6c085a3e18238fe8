// compare: records written by the real CSV writer and read back are matched by (problem incl.
// name, path, G) and judged SAME/FAST/SLOW against both sides' noise, AMBIGUOUS on few samples
// or a missing timing; accuracy changes, missing records, geomeans and a pair's change of plugin
// build (beside its verdict, in the markdown, CSV and JSON) are reported.
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
