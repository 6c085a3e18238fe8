// Sampling loop and statistics for path timing.
#include "harness/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace fa {

TimingStats measure_time(const TimingPolicy& policy, const std::function<double()>& sample) {
  for (int i = 0; i < policy.warmup; ++i) sample();
  std::vector<double> xs;
  double sum = 0, sum2 = 0;
  TimingStats st;
  const int floor = std::max(1, std::min(policy.min_samples, policy.max_samples));
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const double x = sample();
    xs.push_back(x);
    sum += x;
    sum2 += x * x;
    const double n = double(xs.size());
    const double mean = sum / n;
    const double var = std::max(0.0, sum2 / n - mean * mean) * (n > 1 ? n / (n - 1) : 0.0);
    st.spread = mean > 0 ? std::sqrt(var) / mean : 0.0;
    const bool floor_met = int(xs.size()) >= floor;
    if (floor_met && st.spread <= policy.target_spread) {
      st.stopped_by = "spread";
      break;
    }
    if (int(xs.size()) >= policy.max_samples) {
      st.stopped_by = "max-samples";
      break;
    }
    if (floor_met && sum * 1e-3 >= policy.time_cap_s) {
      st.stopped_by = "cap";
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= policy.time_limit_s) {
      st.stopped_by = "time-limit";
      break;
    }
  }
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  st.samples = int(n);
  st.median_ms = n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
  st.min_ms = xs.front();
  st.max_ms = xs.back();
  st.mean_ms = sum / double(n);
  st.mode = timing_mode_name(policy.mode);
  if (st.spread > policy.target_spread)
    st.note = fmt::format("noisy: spread {:.1f}% > {:.1f}% after {} samples ({})", 100 * st.spread,
                          100 * policy.target_spread, st.samples, st.stopped_by);
  if (st.samples < policy.min_samples && st.stopped_by == "time-limit")
    st.note += fmt::format("{}{} samples < min-samples {}: the time limit is {} s", st.note.empty() ? "" : "; ",
                           st.samples, policy.min_samples, policy.time_limit_s);
  else if (st.samples < policy.min_samples)
    st.note += fmt::format("{}{} samples < min-samples {}: max-samples is {}", st.note.empty() ? "" : "; ", st.samples,
                           policy.min_samples, policy.max_samples);
  return st;
}

}  // namespace fa
