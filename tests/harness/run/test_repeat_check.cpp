// --repeat-check: cpu-flash is bit-identical over 10 reruns at G=0 and G=4 (OpenMP threads do
// not change its results); a path whose output changes between runs fails with the count of
// differing reruns; a poisoned (unwritten) element in a rerun is a difference. The timed-launch
// check: a path whose timed launches skip their writes fails (samples are poisoned), a one-ulp
// change fails a deterministic path and passes a nondeterministic one through the rule.
#include <gtest/gtest.h>

#include "harness/run/repeat_check.hpp"

#include "harness/run/runner.hpp"
#include "helpers.hpp"
#include "paths/builtin.hpp"
#include "paths/wrapped_execution.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

// cpu-flash whose O element 0 has its low bit flipped on every third run (runs 2, 5, 8, ...).
class Flaky : public Execution {
 public:
  explicit Flaky(std::unique_ptr<Execution> inner) : inner_(std::move(inner)) {}
  void poison() override { inner_->poison(); }
  void run() override { inner_->run(); }
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    if (runs_++ % 3 == 2) out.o.set_bits(0, out.o.bits(0) ^ 1u);
    return out;
  }
  double timed_sample_ms(TimingMode m) override { return inner_->timed_sample_ms(m); }

 private:
  std::unique_ptr<Execution> inner_;
  int runs_ = 0;
};

Sweep one_row(std::vector<SplitRequest> g) {
  Sweep s;
  SweepRow r;
  r.problem.B = 2, r.problem.H = 8, r.problem.Hk = 2, r.problem.S = 130, r.problem.Sk = 300, r.problem.D = 64;
  r.problem.causal = true;
  r.splits = std::move(g);
  s.rows = {r};
  return s;
}

GateContext ctx() {
  GateContext c;
  c.device.cpu_threads = 2;
  c.device.gpu_absent_why = "no GPU in this test";
  return c;
}

RunOptions repeat(const char* path, int n) {
  RunOptions o;
  o.paths = {path};
  o.time_paths = false;
  o.repeat_check = n;
  o.reference = compute_reference;
  return o;
}

// cpu-flash from its second launch on (timed samples included): `skip` launches write nothing;
// otherwise O element 0 comes back one ulp off.
class LaterLaunches : public WrappedExecution {
 public:
  LaterLaunches(std::unique_ptr<Execution> inner, bool skip) : WrappedExecution(std::move(inner)), skip_(skip) {}
  void run() override {
    if (launches_++ == 0 || !skip_) inner_->run();
  }
  double timed_sample_ms(TimingMode m) override {
    if (launches_++ > 0 && skip_) return 1.0;
    return inner_->timed_sample_ms(m);
  }
  double timed_batch_ms(TimingMode m, int n) override {
    double ms = 0;
    for (int i = 0; i < n; ++i) ms += timed_sample_ms(m);
    return ms;
  }
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    if (launches_ > 1 && !skip_) out.o.set_bits(0, out.o.bits(0) ^ 1u);
    return out;
  }

 private:
  bool skip_;
  int launches_ = 0;
};

Registry with_later_launches(const GateContext& c, bool skip, bool deterministic) {
  Registry reg = builtin_registry(c.device);
  const PathRow& flash = test::cpu_row("cpu-flash");
  PathRow r{"later", "cpu", "", "", false, flash.supports,
            [&flash, skip](const Problem& p, const HostInputs& in, int G, const GateContext& g) -> std::unique_ptr<Execution> {
              return std::make_unique<LaterLaunches>(flash.prepare(p, in, G, g), skip);
            }};
  r.deterministic = deterministic;
  reg.add(std::move(r));
  return reg;
}

RunOptions timed(const char* path, bool check) {
  RunOptions o = repeat(path, 0);
  o.time_paths = true;
  o.timing.mode = TimingMode::hot;
  o.timing.min_samples = 3, o.timing.max_samples = 3;
  o.check_timed = check;
  return o;
}

}  // namespace

TEST(TimedCheck, CpuFlashsLastTimedLaunchIsBitIdenticalToTheValidatedRun) {
  const GateContext c = ctx();
  const auto recs = run_sweep(one_row({SplitRequest{false, 0}, SplitRequest{false, 4}}), timed("cpu-flash", true),
                              builtin_registry(c.device), c, {});
  ASSERT_EQ(recs.size(), 2u);
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::pass) << r.reason;
    EXPECT_EQ(r.timed_check, "same");
  }
}

TEST(TimedCheck, TimedLaunchesThatSkipTheirWritesFailBecauseEachSampleIsPoisoned) {
  const GateContext c = ctx();
  const auto recs = run_sweep(one_row({SplitRequest{}}), timed("later", true), with_later_launches(c, true, true), c, {});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].status, Status::fail);
  EXPECT_EQ(recs[0].timed_check, "differs");
  EXPECT_NE(recs[0].reason.find("timed launches differ from the validated run"), std::string::npos) << recs[0].reason;
  EXPECT_NE(recs[0].reason.find("LSE values"), std::string::npos) << "LSE left poisoned too: " << recs[0].reason;
  ASSERT_TRUE(recs[0].timing);
}

TEST(TimedCheck, OneUlpOffFailsADeterministicPathAndPassesANondeterministicOneThroughTheRule) {
  const GateContext c = ctx();
  for (bool deterministic : {true, false}) {
    const auto recs = run_sweep(one_row({SplitRequest{}}), timed("later", true),
                                with_later_launches(c, false, deterministic), c, {});
    ASSERT_EQ(recs.size(), 1u);
    if (deterministic) {
      EXPECT_EQ(recs[0].status, Status::fail);
      EXPECT_NE(recs[0].reason.find("1 of "), std::string::npos) << recs[0].reason;
      EXPECT_NE(recs[0].reason.find("bit for bit"), std::string::npos) << recs[0].reason;
    } else {
      EXPECT_EQ(recs[0].status, Status::pass) << recs[0].reason;
      EXPECT_EQ(recs[0].timed_check, "rule");
    }
  }
}

TEST(TimedCheck, TurnedOffItRecordsTheTimingAndChecksNothing) {
  const GateContext c = ctx();
  const auto recs = run_sweep(one_row({SplitRequest{}}), timed("later", false), with_later_launches(c, true, true), c, {});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].status, Status::pass) << recs[0].reason;
  EXPECT_EQ(recs[0].timed_check, "");
  EXPECT_TRUE(recs[0].timing);
}

TEST(TimedCheck, ANondeterministicPathWhoseTimedOutputBreaksTheRuleFailsSayingWhy) {
  RunOutputs first;
  first.o = TypedBuffer(DType::fp16, 4);
  first.lse = {0.f};
  RunOutputs timed_out = first;
  timed_out.o.set(2, 1.0f);
  const TimedCheck c = check_timed_outputs(first, timed_out, false, [](const RunOutputs&) { return std::string("max |err| 1 > 0.001"); });
  EXPECT_EQ(c.outcome, "differs");
  EXPECT_NE(c.reason.find("fails the rule: max |err| 1 > 0.001 (1 of 4 O elements (max |diff| 1) differ)"), std::string::npos)
      << c.reason;
}

TEST(RepeatCheck, CpuFlashIsBitIdenticalOverTenRerunsAtG0AndG4) {
  const GateContext c = ctx();
  const auto recs = run_sweep(one_row({SplitRequest{false, 0}, SplitRequest{false, 4}}), repeat("cpu-flash", 10),
                              builtin_registry(c.device), c, {});
  ASSERT_EQ(recs.size(), 2u);
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::pass) << "G=" << r.g_used << ": " << r.reason;
    EXPECT_EQ(r.repeat_runs, 10);
    EXPECT_EQ(r.repeat_diffs, 0) << "G=" << r.g_used;
  }
}

TEST(RepeatCheck, APathWhoseOutputChangesFailsWithTheCountOfDifferingReruns) {
  const GateContext c = ctx();
  Registry reg = builtin_registry(c.device);
  const PathRow& flash = test::cpu_row("cpu-flash");
  reg.add(PathRow{"flaky", "cpu", "", "", false, flash.supports,
                  [&flash](const Problem& p, const HostInputs& in, int G, const GateContext& g) -> std::unique_ptr<Execution> {
                    return std::make_unique<Flaky>(flash.prepare(p, in, G, g));
                  }});
  const auto recs = run_sweep(one_row({SplitRequest{}}), repeat("flaky", 6), reg, c, {});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].status, Status::fail);
  EXPECT_EQ(recs[0].repeat_diffs, 2) << "reruns 2 and 5 of 6 differ";
  EXPECT_NE(recs[0].reason.find("2 of 6 reruns differ"), std::string::npos) << recs[0].reason;
}

TEST(RepeatCheck, AnElementLeftPoisonedInARerunIsADifference) {
  RunOutputs a;
  a.o = TypedBuffer(DType::bf16, 4);
  a.lse = {0.f, 1.f};
  for (int i = 0; i < 4; ++i) a.o.set(i, float(i));
  RunOutputs b = a;
  EXPECT_TRUE(bit_identical(a, b));
  b.o.set_bits(3, poison_bits(DType::bf16));
  EXPECT_FALSE(bit_identical(a, b));
  b = a;
  b.lse[0] = -0.f;
  EXPECT_FALSE(bit_identical(a, b)) << "-0 and +0 differ in bits";
}
