// Sampling loop and statistics for path timing.
#include "harness/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace fa {
namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Reads `src` now and then every `poll_ms` on its own thread until stop(), which takes one last
// reading: a loop shorter than the interval still has readings at both ends.
class ClockPoller {
 public:
  ClockPoller(ClockSource* src, double poll_ms) : src_(src) {
    if (!src_) return;
    take();
    thread_ = std::thread([this, poll_ms] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::duration<double, std::milli>(poll_ms), [this] { return stop_; })) {
        lock.unlock();
        take();
        lock.lock();
      }
    });
  }
  ~ClockPoller() { stop(); }
  std::vector<ClockReading> stop() {
    if (!src_) return {};
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join();
      take();
    }
    std::lock_guard<std::mutex> lock(read_mu_);
    return readings_;
  }

 private:
  // A reader that throws loses that reading, never the process (this runs on the poller's thread
  // and in the destructor during unwinding).
  void take() noexcept {
    try {
      const double t0 = steady_s();
      std::optional<ClockReading> r = src_->read();
      if (!r) return;
      r->t = 0.5 * (t0 + steady_s());
      std::lock_guard<std::mutex> lock(read_mu_);
      readings_.push_back(*r);
    } catch (...) {
    }
  }
  ClockSource* src_;
  std::thread thread_;
  std::mutex mu_, read_mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<ClockReading> readings_;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::string throttle_names(unsigned bits) {
  static const std::pair<unsigned, const char*> names[] = {
      {kThrottlePowerCap, "sw_power_cap"}, {kThrottleHwSlowdown, "hw_slowdown"}, {kThrottleSwThermal, "sw_thermal"},
      {kThrottleHwThermal, "hw_thermal"},  {kThrottlePowerBrake, "power_brake"}, {kThrottleCurrent, "current_limit"}};
  std::string s;
  for (const auto& [bit, name] : names)
    if (bits & bit) s += (s.empty() ? "" : "|") + std::string(name);
  return s;
}

std::optional<ClockStats> clock_stats(const std::vector<std::pair<double, double>>& windows,
                                      const std::vector<double>& ms, const std::vector<ClockReading>& readings,
                                      const std::string& source) {
  if (readings.empty() || windows.empty() || windows.size() != ms.size()) return std::nullopt;
  ClockStats c;
  c.source = source;
  c.readings = int(readings.size());
  std::vector<double> mhz, cycles;
  unsigned any = 0;
  for (const ClockReading& r : readings) c.power_w_max = std::max(c.power_w_max, r.power_w);
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto [t0, t1] = windows[i];
    auto first = std::lower_bound(readings.begin(), readings.end(), t0,
                                  [](const ClockReading& r, double t) { return r.t < t; });
    auto last = std::upper_bound(first, readings.end(), t1, [](double t, const ClockReading& r) { return t < r.t; });
    double sum = 0;
    unsigned reasons = 0;
    if (first != last) {
      for (auto it = first; it != last; ++it) sum += it->mhz, reasons |= it->reasons;
      sum /= double(last - first);
    } else {  // none during it: the nearest before or after the window
      const ClockReading* near = nullptr;
      if (first != readings.end()) near = &*first;
      if (first != readings.begin() && (!near || t0 - std::prev(first)->t < near->t - t1)) near = &*std::prev(first);
      sum = near->mhz, reasons = near->reasons;
    }
    mhz.push_back(sum);
    cycles.push_back(ms[i] * sum * 1e3);
    if (reasons) ++c.throttled_samples, any |= reasons;
  }
  c.mhz_min = *std::min_element(mhz.begin(), mhz.end());
  c.mhz_median = median_of(mhz);
  c.cycles_median = median_of(cycles);
  c.throttle_reasons = throttle_names(any);
  return c;
}

TimingStats measure_time(const TimingPolicy& policy, const std::function<double()>& sample) {
  for (int i = 0; i < policy.warmup; ++i) sample();
  std::vector<double> xs;
  std::vector<std::pair<double, double>> windows;
  double sum = 0, sum2 = 0;
  TimingStats st;
  const int floor = std::max(1, std::min(policy.min_samples, policy.max_samples));
  ClockPoller poller(policy.clocks.get(), policy.clock_poll_ms);
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const double t0 = steady_s();
    const double x = sample();
    windows.emplace_back(t0, steady_s());
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
  if (policy.clocks) st.clocks = clock_stats(windows, xs, poller.stop(), policy.clocks->name());
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  st.samples = int(n);
  st.median_ms = n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
  st.min_ms = xs.front();
  st.max_ms = xs.back();
  st.mean_ms = sum / double(n);
  st.total_ms = sum;
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
