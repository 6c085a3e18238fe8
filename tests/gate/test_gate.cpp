// gate: fails on a wrong record in current, a baseline record current lacks or no longer runs,
// and any SLOW; AMBIGUOUS fails only when strict; the summary counts each kind; a NaN, infinite or
// negative median or spread on either side is wrong; a new plugin build alone fails nothing, and a
// failing record names the build it came with; with made-up clocks, a hot run against a cool
// baseline is ambiguous (listed with its reason), a real slowdown under it is slow in ms and in
// cycles, and a throttled record fails nothing unless strict, or is judged under allow_throttled.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "gate/gate.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

Record timed(const std::string& name, double ms, Status st = Status::pass, int samples = 20) {
  Record r;
  r.problem.name = name;
  r.problem.S = 32, r.problem.Sk = 32, r.problem.D = 16;
  r.path = "cpu-flash";
  r.status = st;
  r.timing = TimingStats{};
  r.timing->median_ms = ms;
  r.timing->spread = 0.005;
  r.timing->samples = samples;
  return r;
}

}  // namespace

TEST(Gate, IdenticalResultsPass) {
  const ResultsFile base = test::written({timed("a", 1.0), timed("b", 2.0)});
  const GateReport g = run_gate(base, base, CompareRule{}, false);
  EXPECT_FALSE(g.failed());
  EXPECT_EQ(g.summary(), "gate: PASS 0 slow, 0 missing, 0 wrong, 0 ambiguous of 2 records");
}

TEST(Gate, SlowMissingAndWrongEachFailAndAreCounted) {
  const ResultsFile base = test::written({timed("a", 1.0), timed("b", 1.0), timed("c", 1.0), timed("d", 1.0)});
  Record skipped = timed("d", 0);
  skipped.timing.reset();
  skipped.status = Status::skip;
  const ResultsFile cur = test::written({timed("a", 1.2), timed("b", 1.0, Status::fail), skipped, timed("new", 1.0, Status::error)});
  const GateReport g = run_gate(base, cur, CompareRule{}, false);
  EXPECT_TRUE(g.failed());
  EXPECT_EQ(g.summary(), "gate: FAIL 1 slow, 2 missing, 2 wrong, 1 ambiguous of 4 records")
      << "c is absent, d passed before and skips now; b fails and an added record errors";
  std::ostringstream os;
  print_gate_report(os, g, CompareRule{});
  const std::string out = os.str();
  EXPECT_EQ(out.substr(out.rfind("gate: ")), g.summary() + "\n") << "the summary is the last line";
  EXPECT_NE(out.find("- a fp16 cpu-flash G=0: 1.200x the baseline"), std::string::npos) << out;
}

TEST(Gate, EachFailureAloneFailsTheGate) {
  const ResultsFile base = test::written({timed("a", 1.0), timed("b", 1.0)});
  EXPECT_TRUE(run_gate(base, test::written({timed("a", 1.0), timed("b", 1.11)}), CompareRule{}, false).failed());
  EXPECT_TRUE(run_gate(base, test::written({timed("a", 1.0)}), CompareRule{}, false).failed());
  EXPECT_TRUE(run_gate(base, test::written({timed("a", 1.0), timed("b", 1.0, Status::invalid)}), CompareRule{}, false).failed());
  EXPECT_FALSE(run_gate(base, test::written({timed("a", 1.0), timed("b", 0.5)}), CompareRule{}, false).failed())
      << "faster is not a failure";
}

TEST(Gate, AmbiguousRecordsFailOnlyWhenStrict) {
  const ResultsFile base = test::written({timed("a", 1.0)});
  const ResultsFile few = test::written({timed("a", 1.5, Status::pass, 2)});
  EXPECT_FALSE(run_gate(base, few, CompareRule{}, false).failed());
  const GateReport strict = run_gate(base, few, CompareRule{}, true);
  EXPECT_TRUE(strict.failed());
  EXPECT_EQ(strict.summary(), "gate: FAIL 0 slow, 0 missing, 0 wrong, 1 ambiguous (strict) of 1 records");
}

TEST(Gate, ATimingThatIsNotAFiniteNumberAtLeastZeroIsWrongOnEitherSide) {
  const double nan = std::nan(""), inf = HUGE_VAL;
  auto with_spread = [](Record r, double s) { return r.timing->spread = s, r; };
  const ResultsFile base = test::written({timed("a", 1.0), timed("b", 1.0), timed("c", 1.0), timed("d", 1.0)});
  const std::vector<Record> bad_current[] = {
      {timed("a", nan), timed("b", 1.0), timed("c", 1.0), timed("d", 1.0)},
      {timed("a", -1.0), timed("b", 1.0), timed("c", 1.0), timed("d", 1.0)},
      {with_spread(timed("a", 10.0), inf), timed("b", 1.0), timed("c", 1.0), timed("d", 1.0)},
      {with_spread(timed("a", 10.0), -0.5), timed("b", 1.0), timed("c", 1.0), timed("d", 1.0)},
  };
  for (const auto& recs : bad_current) {
    const ResultsFile cur = test::written(recs);
    const GateReport g = run_gate(base, cur, CompareRule{}, false);
    EXPECT_TRUE(g.failed()) << g.summary();
    ASSERT_EQ(g.wrong.size(), 1u) << g.summary();
    EXPECT_NE(g.wrong[0].why.find("a timing must be a finite number >= 0"), std::string::npos) << g.wrong[0].why;
  }
  const ResultsFile nan_base = test::written({timed("a", nan), timed("b", 1.0), timed("c", 1.0), timed("d", 1.0)});
  const GateReport g = run_gate(nan_base, base, CompareRule{}, false);
  EXPECT_TRUE(g.failed()) << "a baseline that cannot be judged against fails too: " << g.summary();
  ASSERT_EQ(g.wrong.size(), 1u);
  EXPECT_NE(g.wrong[0].why.find("in the baseline"), std::string::npos);
}

TEST(Gate, ANewPluginBuildAlonePassesAndAFailingRecordNamesTheBuildItCameWith) {
  auto built = [](Record r, const std::string& version) {
    r.path = "example-cpu";
    r.plugin_file = "/opt/fa/libfa_example_cpu.so";
    r.plugin_version = version;
    return r;
  };
  const ResultsFile base = test::written({built(timed("a", 1.0), "1.0.0"), built(timed("b", 1.0), "1.0.0")});
  const GateReport same = run_gate(base, test::written({built(timed("a", 1.0), "1.1.0"), built(timed("b", 1.0), "1.1.0")}),
                                   CompareRule{}, false);
  EXPECT_FALSE(same.failed()) << "a new build as fast and as right as the old passes: " << same.summary();

  const ResultsFile cur = test::written({built(timed("a", 1.2), "1.1.0"), built(timed("b", 1.0, Status::fail), "1.1.0")});
  const GateReport g = run_gate(base, cur, CompareRule{}, false);
  EXPECT_EQ(g.summary(), "gate: FAIL 1 slow, 0 missing, 1 wrong, 0 ambiguous of 2 records");
  std::ostringstream os;
  print_gate_report(os, g, CompareRule{});
  const std::string out = os.str();
  EXPECT_NE(out.find("- a fp16 example-cpu G=0: 1.200x the baseline, beyond its 5.0% margin (" + cur.path +
                     ":2); plugin /opt/fa/libfa_example_cpu.so 1.0.0 → 1.1.0\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("- b fp16 example-cpu G=0: fail (" + cur.path + ":3); plugin /opt/fa/libfa_example_cpu.so 1.0.0 → 1.1.0\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.substr(out.rfind("gate: ")), g.summary() + "\n") << "the summary stays the last line";
}

TEST(Gate, ARecordWhoseTimedLaunchDiffersIsWrongWhateverItsStatusSays) {
  const ResultsFile base = test::written({timed("a", 1.0), timed("b", 1.0)});
  Record differs = timed("b", 1.0);
  differs.timed_check = "differs";
  Record same = timed("a", 1.0);
  same.timed_check = "same";
  const ResultsFile current = test::written({same, differs});  // the report points into it
  const GateReport g = run_gate(base, current, CompareRule{}, false);
  EXPECT_TRUE(g.failed());
  ASSERT_EQ(g.wrong.size(), 1u);
  EXPECT_EQ(g.wrong[0].rec->record.problem.name, "b");
  std::ostringstream os;
  print_gate_report(os, g, CompareRule{});
  EXPECT_NE(os.str().find("timed_check is differs"), std::string::npos) << os.str();
}

namespace {

// r as if every sample ran at `mhz` (cycles = ms x MHz x 1e3), `throttled` of them under the power cap.
Record at_clock(Record r, double mhz, int throttled) {
  ClockStats c;
  c.mhz_min = c.mhz_median = mhz;
  c.cycles_median = r.timing->median_ms * mhz * 1e3;
  c.throttled_samples = throttled;
  c.throttle_reasons = throttled ? "sw_power_cap" : "";
  c.source = "nvml";
  r.timing->clocks = c;
  return r;
}

}  // namespace

TEST(GateClocks, AHotRunAgainstACoolBaselineIsAmbiguousAndAPlantedSlowdownInItIsSlow) {
  // The power cap at 1815 MHz against 1980 idle: the same cycles take 9.1% longer.
  const double hot = 1980.0 / 1815;
  const ResultsFile base = test::written({at_clock(timed("a", 1.0), 1980, 0), at_clock(timed("b", 2.0), 1980, 0)});
  const ResultsFile heated = test::written({at_clock(timed("a", hot), 1815, 5), at_clock(timed("b", 2.0 * hot), 1815, 5)});
  const GateReport g = run_gate(base, heated, CompareRule{}, false);
  EXPECT_FALSE(g.failed()) << g.summary();
  EXPECT_EQ(g.summary(), "gate: PASS 0 slow, 0 missing, 0 wrong, 2 ambiguous of 2 records");
  std::ostringstream os;
  print_gate_report(os, g, CompareRule{});
  EXPECT_NE(os.str().find("\nAmbiguous (reported; they fail only with --strict):\n\n- a fp16 cpu-flash G=0: +9.1% in ms (SLOW) "
                          "but +0.0% in cycles (SAME): clock 1980 → 1815 MHz (new sw_power_cap on 5 of 20 samples) (" +
                          heated.path + ":2)\n"),
            std::string::npos)
      << os.str();
  EXPECT_TRUE(run_gate(base, heated, CompareRule{}, true).failed()) << "strict fails what it cannot tell";

  // The planted delay is wall time on the GPU: 10% more ms at the hot clock, so 10% more cycles too.
  const ResultsFile planted =
      test::written({at_clock(timed("a", 1.1 * hot), 1815, 5), at_clock(timed("b", 2.0 * hot), 1815, 5)});
  const GateReport p = run_gate(base, planted, CompareRule{}, false);
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.summary(), "gate: FAIL 1 slow, 0 missing, 0 wrong, 1 ambiguous of 2 records");
  std::ostringstream ps;
  print_gate_report(ps, p, CompareRule{});
  EXPECT_NE(ps.str().find("- a fp16 cpu-flash G=0: 1.200x the baseline and 1.100x in cycles, clock 1980 → 1815 MHz (new "
                          "sw_power_cap on 5 of 20 samples), beyond its 5.0% margin (" + planted.path + ":2)\n"),
            std::string::npos)
      << ps.str();
}

TEST(GateClocks, AThrottledRecordIsAmbiguousUnlessAllowedThenJudged) {
  const ResultsFile base = test::written({at_clock(timed("a", 1.0), 1980, 0), at_clock(timed("b", 1.0), 1980, 0)});
  // Both throttled on 12 of 20 samples at the cool median clock; a is 10% slower, b the same.
  const ResultsFile cur = test::written({at_clock(timed("a", 1.10), 1980, 12), at_clock(timed("b", 1.0), 1980, 12)});
  const GateReport g = run_gate(base, cur, CompareRule{}, false);
  EXPECT_EQ(g.summary(), "gate: PASS 0 slow, 0 missing, 0 wrong, 2 ambiguous of 2 records");
  std::ostringstream os;
  print_gate_report(os, g, CompareRule{});
  EXPECT_NE(os.str().find("- a fp16 cpu-flash G=0: new: 12 of 20 samples throttled (sw_power_cap), over the 25% allowed "
                          "(--allow-throttled judges it) ("),
            std::string::npos)
      << os.str();
  CompareRule allow;
  allow.allow_throttled = true;
  const GateReport judged = run_gate(base, cur, allow, false);
  EXPECT_EQ(judged.summary(), "gate: FAIL 1 slow, 0 missing, 0 wrong, 0 ambiguous of 2 records");
  EXPECT_EQ(judged.cmp.changes[1].verdict, SpeedVerdict::same);
}
