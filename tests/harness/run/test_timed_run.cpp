// Timing an Execution: calls under 20 us are timed in batches through timed_batch_ms (one
// measurement per batch, divided by its size), longer ones one by one; the floor of min_samples
// holds however slow a sample; the default timed_batch_ms sums single calls; a planted slowdown
// (test only) is sized from the undelayed time and spent inside the timed region where the
// Execution can, else as a host wait.
#include <gtest/gtest.h>

#include <vector>

#include "harness/run/timed_run.hpp"

using namespace fa;

namespace {

// An Execution whose timings the test sets: every single call takes `call_ms`; a batch of n takes
// n * call_ms plus `batch_overhead_ms` (one pair of events around it).
struct FakeExecution : Execution {
  double call_ms = 1.0, batch_overhead_ms = 0.0;
  int singles = 0;
  std::vector<int> batches;
  void poison() override {}
  void run() override {}
  RunOutputs read_back() override { return {}; }
  double timed_sample_ms(TimingMode) override {
    ++singles;
    return call_ms;
  }
  double timed_batch_ms(TimingMode, int n) override {
    batches.push_back(n);
    return n * call_ms + batch_overhead_ms;
  }
};

// Takes a planted delay into its timed region, as GpuExecution does with its spin kernel.
struct DelayableExecution : FakeExecution {
  double delay_ms = 0;
  double timed_sample_ms(TimingMode m) override { return FakeExecution::timed_sample_ms(m) + delay_ms; }
  bool add_timed_delay(double ms) override {
    delay_ms = ms;
    return true;
  }
};

// Keeps the default timed_batch_ms.
struct PlainExecution : Execution {
  int calls = 0;
  void poison() override {}
  void run() override {}
  RunOutputs read_back() override { return {}; }
  double timed_sample_ms(TimingMode) override { return ++calls; }
};

}  // namespace

TEST(TimedRun, BatchSizeMakesABatchLastAtLeastFiftyMicroseconds) {
  EXPECT_EQ(batch_size_for(0.020), 1);
  EXPECT_EQ(batch_size_for(5.0), 1);
  EXPECT_EQ(batch_size_for(0.010), 5);
  EXPECT_EQ(batch_size_for(0.003), 17);  // 17 * 3 us = 51 us
  EXPECT_EQ(batch_size_for(0.0), kMaxBatch) << "a call below the clock's resolution";
}

TEST(TimedRun, AMicrosecondKernelIsTimedInBatchesAndReportedPerLaunch) {
  FakeExecution ex;
  ex.call_ms = 0.005;
  ex.batch_overhead_ms = 0.001;
  TimingPolicy pol;
  pol.warmup = 2;
  pol.min_samples = 10;
  pol.max_samples = 10;
  const TimingStats st = time_execution(ex, pol);
  EXPECT_EQ(st.batch, 10);
  EXPECT_EQ(ex.singles, 5) << "two warm-ups and the three probes run singly";
  ASSERT_EQ(ex.batches.size(), 10u);
  for (int n : ex.batches) EXPECT_EQ(n, 10);
  EXPECT_NEAR(st.median_ms, 0.0051, 1e-12) << "the batch's time divided by its size";
  EXPECT_EQ(st.samples, 10);
}

TEST(TimedRun, ALongKernelIsTimedOneLaunchPerSample) {
  FakeExecution ex;
  ex.call_ms = 2.0;
  TimingPolicy pol;
  const TimingStats st = time_execution(ex, pol);
  EXPECT_EQ(st.batch, 1);
  EXPECT_TRUE(ex.batches.empty());
  EXPECT_DOUBLE_EQ(st.median_ms, 2.0);
  EXPECT_EQ(st.stopped_by, "spread");
}

TEST(TimedRun, TheCapCannotUndercutTheMinimumSamples) {
  FakeExecution ex;
  ex.call_ms = 100.0;  // one sample alone is twice the cap
  TimingPolicy pol;
  pol.time_cap_s = 0.05;
  pol.target_spread = -1;  // never quiet enough: only the floor and the cap decide
  pol.min_samples = 10;
  const TimingStats st = time_execution(ex, pol);
  EXPECT_EQ(st.samples, 10);
  EXPECT_EQ(st.stopped_by, "cap");
  EXPECT_NE(st.note.find("after 10 samples (cap)"), std::string::npos) << st.note;
}

TEST(TimedRun, TheDefaultBatchSumsSingleCalls) {
  PlainExecution ex;
  EXPECT_DOUBLE_EQ(ex.timed_batch_ms(TimingMode::hot, 3), 1.0 + 2.0 + 3.0);
  EXPECT_EQ(ex.calls, 3);
}

TEST(TimedRun, APlantedSlowdownIsSizedFromTheUndelayedTimeAndSpentInsideTheTimedRegion) {
  DelayableExecution ex;
  ex.call_ms = 2.0;
  TimingPolicy pol;
  pol.planted_slowdown = 0.10;
  const TimingStats st = time_execution(ex, pol);
  EXPECT_DOUBLE_EQ(ex.delay_ms, 0.2) << "10% of the undelayed 2 ms";
  EXPECT_DOUBLE_EQ(st.median_ms, 2.2);
  EXPECT_EQ(st.note, "planted slowdown +10% (test only: +0.2 ms per call in the timed region)");
}

TEST(TimedRun, AnExecutionThatCannotTakeTheDelayIsSlowedByAHostWait) {
  FakeExecution ex;  // add_timed_delay: the default, false
  ex.call_ms = 1.0;
  TimingPolicy pol;
  pol.planted_slowdown = 0.5;
  pol.min_samples = pol.max_samples = 5;
  const TimingStats st = time_execution(ex, pol);
  EXPECT_GE(st.min_ms, 1.5) << "a real wait of at least 0.5 ms is added to every sample";
  // The least sample, not the median: a busy-wait preempted on a loaded machine overshoots, but a
  // wait added twice would put every sample at 2 ms or more.
  EXPECT_LT(st.min_ms, 1.5 + 0.5) << "and not twice that";
  EXPECT_EQ(st.note.rfind("planted slowdown +50% (test only: +0.5 ms per call as a host wait)", 0), 0u) << st.note;
}

TEST(TimedRun, WithoutAPlantedSlowdownNothingIsDelayedOrNoted) {
  DelayableExecution ex;
  const TimingStats st = time_execution(ex, TimingPolicy{});
  EXPECT_EQ(ex.delay_ms, 0);
  EXPECT_EQ(st.note, "");
}

namespace {

// Logs what the timing loop asks of it: "p" a poison, "s" a single timed call, "b" a batch.
struct LoggingExecution : FakeExecution {
  std::string log;
  void poison() override { log += 'p'; }
  double timed_sample_ms(TimingMode m) override {
    log += 's';
    return FakeExecution::timed_sample_ms(m);
  }
  double timed_batch_ms(TimingMode m, int n) override {
    log += 'b';
    return FakeExecution::timed_batch_ms(m, n);
  }
};

}  // namespace

// One slow probe (a 10 us call that took 25 us once) does not decide the batch: the median of
// three does, so the record is batched like its neighbours. A call far above the threshold is
// probed once.
TEST(TimedRun, OneSlowProbeDoesNotLeaveAFastCallUnbatched) {
  struct SlowFirstProbe : FakeExecution {
    double timed_sample_ms(TimingMode m) override {
      const double ms = FakeExecution::timed_sample_ms(m);
      return singles == 2 ? 0.025 : ms;  // the warm-up is call 1, the first probe call 2
    }
  } ex;
  ex.call_ms = 0.010;
  TimingPolicy pol;
  pol.warmup = 1, pol.min_samples = 4, pol.max_samples = 4;
  const TimingStats st = time_execution(ex, pol);
  EXPECT_EQ(st.batch, 5) << "sized from 10 us (the median probe), not 25 us";
  EXPECT_NEAR(st.median_ms, 0.010, 1e-12);
  FakeExecution slow;
  slow.call_ms = 1.0;
  time_execution(slow, pol);
  EXPECT_EQ(slow.singles, 1 + 1 + 4) << "warm-up, one probe, four samples";
}

TEST(TimedRun, PoisoningEachSampleLeavesTheLastTimedLaunchsOwnOutput) {
  for (double call_ms : {1.0, 0.001}) {  // one launch a sample, and batches
    LoggingExecution ex;
    ex.call_ms = call_ms;
    TimingPolicy pol;
    pol.warmup = 1, pol.min_samples = 5, pol.max_samples = 5;
    const TimingStats st = time_execution(ex, pol, true);
    const char launch = call_ms < kBatchBelowMs ? 'b' : 's';
    // Warm-up and probes (three near the batch threshold, else one) untouched, then every sample
    // right after its own poison.
    std::string want = call_ms < 2 * kBatchBelowMs ? "ssss" : "ss";
    for (int i = 0; i < st.samples; ++i) want += std::string("p") + launch;
    EXPECT_EQ(ex.log, want) << "call_ms " << call_ms;
    LoggingExecution quiet;
    quiet.call_ms = call_ms;
    time_execution(quiet, pol);
    EXPECT_EQ(quiet.log.find('p'), std::string::npos) << "no poisoning unless asked";
  }
}
