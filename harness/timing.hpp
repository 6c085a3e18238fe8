// Noise-driven timing: warm-up, then samples until the relative spread (stddev / mean) is at or
// under the target, with at least min_samples whatever the cap says (the floor), or until the time
// cap (measured time only: cache flushes and launch overhead sit outside it) or max_samples; and,
// whatever the floor, at the wall-clock limit (flushes, launches and sync included, as nvbench's
// --timeout): without it a fast call whose samples stay noisy paid max_samples cold flushes (the
// CPU's 256 MB memset each: 20-30 s a record, most of the 2-core main job's minutes).
// Reports median, min, max, spread, the sample count, the mode (cold: caches flushed before each
// sample; hot: not), launches per sample (batch), what stopped the loop, and a note when the
// samples stayed noisier than the target or (max_samples under min_samples) fewer than min_samples.
#pragma once
#include <functional>
#include <string>

namespace fa {

enum class TimingMode { cold, hot };
inline const char* timing_mode_name(TimingMode m) { return m == TimingMode::cold ? "cold" : "hot"; }

struct TimingPolicy {
  int warmup = 1;
  int min_samples = 10;  // a floor: the cap never stops the loop below it
  int max_samples = 1000;
  double target_spread = 0.005;
  double time_cap_s = 0.5;  // measured seconds of samples for one record, once min_samples are in
  TimingMode mode = TimingMode::cold;
  double time_limit_s = 1.0;  // wall seconds of the sampling loop (warm-up excluded), floor or not
  // Test only (--plant-slowdown, FABENCH_TEST_PATHS=1): every timed call is made this fraction
  // slower by a real delay (harness/run/timed_run.hpp); 0: off.
  double planted_slowdown = 0;
};

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0, spread = 0;
  int samples = 0;
  int batch = 1;  // launches per sample; each sample is the batch's time divided by it
  std::string mode, stopped_by;  // stopped_by: spread | cap | max-samples | time-limit
  std::string note;              // "noisy: spread 3.1% > 0.5% after 10 samples (cap)"; empty when quiet
};

// `sample` runs one timed sample and returns its milliseconds.
TimingStats measure_time(const TimingPolicy& policy, const std::function<double()>& sample);

}  // namespace fa
