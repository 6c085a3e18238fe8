// Noise-driven timing: warm-up, then samples until the relative spread (stddev / mean) is at or
// under the target with at least min_samples, or the time cap or max_samples is reached. Reports
// median, min, max, spread, the sample count, the mode (cold: caches flushed before each sample;
// hot: not) and what stopped the loop.
#pragma once
#include <functional>
#include <string>

namespace fa {

enum class TimingMode { cold, hot };
inline const char* timing_mode_name(TimingMode m) { return m == TimingMode::cold ? "cold" : "hot"; }

struct TimingPolicy {
  int warmup = 1;
  int min_samples = 10;
  int max_samples = 1000;
  double target_spread = 0.005;
  double time_cap_s = 0.5;  // wall time for the samples of one record (at least one sample)
  TimingMode mode = TimingMode::cold;
};

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0, spread = 0;
  int samples = 0;
  std::string mode, stopped_by;  // stopped_by: spread | cap | max-samples
};

// `sample` runs one timed sample and returns its milliseconds.
TimingStats measure_time(const TimingPolicy& policy, const std::function<double()>& sample);

}  // namespace fa
