// The sampling loop: warm-up excluded, stops on spread after min_samples, on the cap with noisy
// samples (never below min_samples), on max_samples; statistics are those of the samples; a noisy
// stop is noted, and so is a record left under min_samples by a lower max_samples; the wall-clock
// limit stops slow or overhead-heavy sampling even under the floor, and says so.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "harness/timing.hpp"

using namespace fa;

TEST(Timing, SteadySamplesStopOnSpreadAfterTheMinimumCount) {
  int calls = 0;
  TimingPolicy pol;
  pol.warmup = 3;
  pol.min_samples = 10;
  const TimingStats st = measure_time(pol, [&] { return ++calls <= 3 ? 1000.0 : 2.0; });  // warm-ups are slow
  EXPECT_EQ(st.samples, 10);
  EXPECT_EQ(calls, 13);
  EXPECT_EQ(st.stopped_by, "spread");
  EXPECT_DOUBLE_EQ(st.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(st.max_ms, 2.0) << "warm-up samples must not be counted";
  EXPECT_EQ(st.mode, "cold");
}

TEST(Timing, NoisySamplesStopAtTheTimeCap) {
  int i = 0;
  TimingPolicy pol;
  pol.time_cap_s = 0.05;
  pol.max_samples = 1000000;
  const TimingStats st = measure_time(pol, [&] {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return (++i % 2) ? 1.0 : 3.0;
  });
  EXPECT_EQ(st.stopped_by, "cap");
  EXPECT_GT(st.spread, 0.4);
  EXPECT_DOUBLE_EQ(st.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(st.max_ms, 3.0);
  EXPECT_LT(st.samples, 1000);
}

TEST(Timing, MaxSamplesBoundsTheLoopAndTheMedianIsOfTheSortedSamples) {
  const double xs[] = {5, 1, 4, 2, 3};
  int i = 0;
  TimingPolicy pol;
  pol.warmup = 0;
  pol.max_samples = 5;
  pol.min_samples = 100;
  pol.mode = TimingMode::hot;
  const TimingStats st = measure_time(pol, [&] { return xs[i++]; });
  EXPECT_EQ(st.samples, 5);
  EXPECT_EQ(st.stopped_by, "max-samples");
  EXPECT_DOUBLE_EQ(st.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(st.mean_ms, 3.0);
  EXPECT_EQ(st.mode, "hot");
}

TEST(Timing, TheTimeCapNeverStopsTheLoopBeforeTheMinimumSamples) {
  TimingPolicy pol;
  pol.warmup = 0;
  pol.min_samples = 10;
  pol.time_cap_s = 0.001;  // a single 40 ms sample is far over it
  int i = 0;
  const TimingStats st = measure_time(pol, [&] { return (++i % 2) ? 40.0 : 44.0; });
  EXPECT_EQ(st.samples, 10);
  EXPECT_EQ(st.stopped_by, "cap");
}

TEST(Timing, ARecordStoppedAboveTheNoiseTargetCarriesANote) {
  TimingPolicy pol;
  pol.warmup = 0;
  pol.min_samples = 4;
  pol.max_samples = 4;
  int i = 0;
  const TimingStats st = measure_time(pol, [&] { return (++i % 2) ? 1.0 : 1.1; });
  EXPECT_EQ(st.stopped_by, "max-samples");
  EXPECT_EQ(st.note, "noisy: spread 5.5% > 0.5% after 4 samples (max-samples)");
}

TEST(Timing, ARecordThatMetTheNoiseTargetHasNoNote) {
  TimingPolicy pol;
  const TimingStats st = measure_time(pol, [] { return 2.0; });
  EXPECT_EQ(st.stopped_by, "spread");
  EXPECT_EQ(st.note, "");
}

TEST(Timing, AMaxSamplesUnderTheFloorSaysWhyTheRecordHasFewerThanMinSamples) {
  TimingPolicy pol;
  pol.min_samples = 20;
  pol.max_samples = 5;
  const TimingStats quiet = measure_time(pol, [] { return 2.0; });
  EXPECT_EQ(quiet.samples, 5);
  EXPECT_EQ(quiet.note, "5 samples < min-samples 20: max-samples is 5");
  int i = 0;
  const TimingStats noisy = measure_time(pol, [&] { return (++i % 2) ? 1.0 : 1.1; });
  EXPECT_EQ(noisy.note.rfind("noisy: ", 0), 0u) << noisy.note;
  EXPECT_NE(noisy.note.find("; 5 samples < min-samples 20: max-samples is 5"), std::string::npos) << noisy.note;
}

// Each sample costs 30 ms of wall time (a cold flush) but measures 0.01 ms: the measured-time cap
// is never reached, so only the wall-clock limit keeps the record from running 1000 samples.
TEST(Timing, TheWallClockLimitStopsSamplesWhoseOverheadTheCapDoesNotSee) {
  TimingPolicy pol;
  pol.warmup = 0;
  pol.time_limit_s = 0.2;
  int i = 0;
  const TimingStats st = measure_time(pol, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return (++i % 2) ? 0.010 : 0.012;
  });
  EXPECT_EQ(st.stopped_by, "time-limit");
  EXPECT_GE(st.samples, 3);
  EXPECT_LE(st.samples, 8);
  EXPECT_NE(st.note.find(fmt::format("{} samples < min-samples 10: the time limit is 0.2 s", st.samples)), std::string::npos)
      << st.note;
}

TEST(Timing, TheWallClockLimitLeavesFastSteadySamplingAlone) {
  TimingPolicy pol;
  pol.time_limit_s = 0.2;
  const TimingStats st = measure_time(pol, [] { return 2.0; });
  EXPECT_EQ(st.stopped_by, "spread");
  EXPECT_EQ(st.samples, 10);
}
