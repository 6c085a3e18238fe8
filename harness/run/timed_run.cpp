// Batch choice, the planted test delay, and the timing of one Execution.
#include "harness/run/timed_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

namespace fa {
namespace {

// Spins on the host clock for `ms`; returns the milliseconds that actually passed.
double busy_wait_ms(double ms) {
  const auto t0 = std::chrono::steady_clock::now();
  double passed = 0;
  while (passed < ms)
    passed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return passed;
}

std::string planted_note(double fraction, double ms_per_call, bool in_region) {
  return fmt::format("planted slowdown +{:g}% (test only: +{:.3g} ms per call {})", 100 * fraction, ms_per_call,
                     in_region ? "in the timed region" : "as a host wait");
}

}  // namespace

int batch_size_for(double probe_ms) {
  if (probe_ms >= kBatchBelowMs) return 1;
  if (!(probe_ms > 0)) return kMaxBatch;  // below the clock's resolution
  return std::min(kMaxBatch, int(std::ceil(kBatchTargetMs / probe_ms)));
}

TimingStats time_execution(Execution& exec, const TimingPolicy& policy, bool poison_each_sample) {
  for (int i = 0; i < policy.warmup; ++i) exec.timed_sample_ms(policy.mode);
  // The batch is sized from the median of three probes, not one: on the H200 one slow probe of a
  // 10.5 us decode call (0.020 ms or more) left its record unbatched at 12.8 us, 22% over the same
  // kernel's batched records beside it (whisper-cross-b5-1500, session 24's call 13).
  // A call far above the threshold (a 200 ms kernel) needs no second look.
  double probes[3] = {exec.timed_sample_ms(policy.mode), 0, 0};
  int n = 1;
  if (probes[0] < 2 * kBatchBelowMs) {
    probes[1] = exec.timed_sample_ms(policy.mode), probes[2] = exec.timed_sample_ms(policy.mode);
    std::sort(probes, probes + 3);
    n = batch_size_for(probes[1]);
  }
  const auto undelayed = [&] {
    if (poison_each_sample) exec.poison();  // a batch is poisoned once: its last launch's output stays
    return n == 1 ? exec.timed_sample_ms(policy.mode) : exec.timed_batch_ms(policy.mode, n) / n;
  };
  std::function<double()> sample = undelayed;
  std::string planted;
  if (policy.planted_slowdown > 0) {
    // The delay is a fraction of this execution's own time: the median of samples taken the way
    // the loop below takes them, before any delay is in place. Up to ten, not three: on a shared
    // CPU an OpenMP barrier that waited out a scheduler tick made two of three samples 270x slower.
    std::vector<double> xs(size_t(std::clamp(policy.min_samples, 3, 10)));
    for (double& x : xs) x = undelayed();
    std::nth_element(xs.begin(), xs.begin() + xs.size() / 2, xs.end());
    const double extra = policy.planted_slowdown * xs[xs.size() / 2];
    const bool in_region = exec.add_timed_delay(extra);
    if (!in_region) sample = [undelayed, extra, n] { return undelayed() + busy_wait_ms(extra * n) / n; };
    planted = planted_note(policy.planted_slowdown, extra, in_region);
  }
  TimingPolicy rest = policy;
  rest.warmup = 0;  // done above, and the probe warmed the batch too
  TimingStats st = measure_time(rest, sample);
  st.batch = n;
  st.total_ms *= n;
  if (!planted.empty()) st.note = st.note.empty() ? planted : planted + "; " + st.note;
  return st;
}

std::string throttle_note(const TimingStats& t) {
  if (!t.clocks || t.clocks->throttled_samples == 0) return {};
  return fmt::format("throttled: {} of {} samples ({})", t.clocks->throttled_samples, t.samples,
                     t.clocks->throttle_reasons);
}

namespace {

// Polls until `need` readings in a row show no throttle reason, or `limit_s` passes; the seconds waited.
double wait_unthrottled(ClockSource& src, double limit_s) {
  constexpr int need = 3;
  constexpr auto step = std::chrono::milliseconds(50);
  const auto t0 = std::chrono::steady_clock::now();
  int clear = 0;
  double waited = 0;
  while (clear < need && waited < limit_s) {
    const std::optional<ClockReading> r = src.read();
    clear = r && r->reasons == 0 ? clear + 1 : 0;
    if (clear < need) std::this_thread::sleep_for(step);
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return waited;
}

}  // namespace

TimingStats time_execution(Execution& exec, const TimingPolicy& policy, bool poison_each_sample,
                           const ThrottleOptions& throttle) {
  TimingStats st = time_execution(exec, policy, poison_each_sample);
  int tries = 0;
  double waited = 0, earlier_ms = 0;
  while (throttle.policy == ThrottlePolicy::retry && policy.clocks && tries < throttle.retries &&
         !throttle_note(st).empty()) {
    waited += wait_unthrottled(*policy.clocks, throttle.wait_s);
    earlier_ms += st.total_ms;
    st = time_execution(exec, policy, poison_each_sample);
    ++tries;
  }
  st.total_ms += earlier_ms;
  std::string note = throttle_note(st);
  if (tries > 0)
    note = fmt::format("{}retimed {} time{} after waiting {:.1f} s for the clock", note.empty() ? "" : note + "; ",
                       tries, tries == 1 ? "" : "s", waited);
  if (!note.empty()) st.note = st.note.empty() ? note : st.note + "; " + note;
  return st;
}

}  // namespace fa
