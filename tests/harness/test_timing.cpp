// The sampling loop: warm-up excluded, stops on spread after min_samples, on the cap with noisy
// samples (never below min_samples), on max_samples; statistics are those of the samples; a noisy
// stop is noted, and so is a record left under min_samples by a lower max_samples; the wall-clock
// limit stops slow or overhead-heavy sampling even under the floor, and says so. With a ClockSource
// the samples are joined to readings taken during them: clock, cycles and throttling.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
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

// Readings at made-up times: a window with readings takes their mean, one without takes the nearest
// reading (before or after), and a sample is throttled when any reading joined to it names a reason.
TEST(Timing, ClockStatsJoinEachSampleToTheReadingsTakenDuringIt) {
  const std::vector<ClockReading> rs = {{0.00, 1980, 300, 0},
                                        {0.10, 1900, 650, kThrottlePowerCap},
                                        {0.12, 1700, 700, kThrottlePowerCap | kThrottleSwThermal},
                                        {0.50, 1980, 310, 0}};
  // Sample 0 holds readings 1 and 2 (mean 1800, throttled); sample 1 none: nearest is 0.50 (after);
  // sample 2 none: nearest is 0.00 (before); sample 3 holds reading 0 only.
  const std::vector<std::pair<double, double>> windows = {{0.09, 0.13}, {0.45, 0.46}, {0.02, 0.03}, {-0.01, 0.005}};
  const std::vector<double> ms = {2.0, 1.0, 1.5, 1.2};
  const auto c = clock_stats(windows, ms, rs, "fake");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->source, "fake");
  EXPECT_EQ(c->readings, 4);
  EXPECT_DOUBLE_EQ(c->mhz_min, 1800);
  EXPECT_DOUBLE_EQ(c->mhz_median, 1980);  // of 1800, 1980, 1980, 1980
  EXPECT_DOUBLE_EQ(c->power_w_max, 700);
  EXPECT_EQ(c->throttled_samples, 1);
  EXPECT_EQ(c->throttle_reasons, "sw_power_cap|sw_thermal");
  // cycles: 2.0 x 1800, 1.0 x 1980, 1.5 x 1980, 1.2 x 1980 (x 1e3): median of 3.6e6, 1.98e6, 2.97e6, 2.376e6.
  EXPECT_NEAR(c->cycles_median, 0.5 * (2.376e6 + 2.97e6), 1e-3);
  EXPECT_FALSE(clock_stats(windows, ms, {}, "fake")) << "no reading: no clock columns";
}

TEST(Timing, ThrottleNamesFollowTheBitsOrder) {
  EXPECT_EQ(throttle_names(0), "");
  EXPECT_EQ(throttle_names(kThrottleHwThermal | kThrottlePowerCap), "sw_power_cap|hw_thermal");
  EXPECT_EQ(throttle_names(kThrottleCurrent | kThrottleHwSlowdown | kThrottlePowerBrake),
            "hw_slowdown|power_brake|current_limit");
}

namespace {
// A device whose clock halves, under a power cap, once `hot` is set; counts its reads and the
// thread they come from.
class FakeClock : public ClockSource {
 public:
  std::atomic<bool> hot{false};
  std::atomic<int> reads{0};
  std::string name() const override { return "fake"; }
  std::optional<ClockReading> read() override {
    ++reads;
    ClockReading r;
    r.mhz = hot ? 990 : 1980;
    r.power_w = hot ? 700 : 350;
    r.reasons = hot ? unsigned(kThrottlePowerCap) : 0u;
    return r;
  }
};
}  // namespace

// The poller reads during the loop, at about one reading per 10 ms: samples of 4 ms share readings.
// A kernel that takes twice the time at half the clock has the same cycles: cool and hot records
// differ 2x in milliseconds and not in cycles.
TEST(Timing, ASampledLoopCarriesItsClockAndCyclesThatDoNotMoveWithTheClock) {
  auto clock = std::make_shared<FakeClock>();
  TimingPolicy p;
  p.warmup = 0, p.min_samples = 30, p.max_samples = 30, p.target_spread = 0, p.time_cap_s = 100, p.time_limit_s = 100;
  p.clocks = clock;
  auto sample = [&] {
    const double ms = clock->hot ? 4.0 : 2.0;  // the work is fixed in cycles
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    return ms;
  };
  const TimingStats cool = measure_time(p, sample);
  ASSERT_TRUE(cool.clocks);
  EXPECT_EQ(cool.clocks->source, "fake");
  EXPECT_DOUBLE_EQ(cool.clocks->mhz_median, 1980);
  EXPECT_EQ(cool.clocks->throttled_samples, 0);
  EXPECT_EQ(cool.clocks->throttle_reasons, "");
  // 30 samples of >= 2 ms: >= 60 ms, so >= 6 polls plus the first and the last; far fewer than one a sample.
  EXPECT_GE(cool.clocks->readings, 6);
  EXPECT_LT(cool.clocks->readings, 30);
  clock->hot = true;
  const TimingStats hot = measure_time(p, sample);
  ASSERT_TRUE(hot.clocks);
  EXPECT_DOUBLE_EQ(hot.clocks->mhz_median, 990);
  EXPECT_EQ(hot.clocks->throttled_samples, 30);
  EXPECT_EQ(hot.clocks->throttle_reasons, "sw_power_cap");
  EXPECT_DOUBLE_EQ(hot.clocks->power_w_max, 700);
  EXPECT_NEAR(hot.median_ms / cool.median_ms, 2.0, 1e-12);
  EXPECT_NEAR(hot.clocks->cycles_median / cool.clocks->cycles_median, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(cool.clocks->cycles_median, 2.0 * 1980 * 1e3);
}

TEST(Timing, WithoutAClockSourceARecordHasNoClocks) {
  TimingPolicy p;
  p.warmup = 0, p.min_samples = 3, p.max_samples = 3;
  EXPECT_FALSE(measure_time(p, [] { return 1.0; }).clocks);
}
