// Times one prepared Execution: three probe calls after the warm-up (their median) decide between single calls and
// batches (a call under kBatchBelowMs is timed as n back-to-back launches with n chosen so one
// batch lasts at least kBatchTargetMs; per-call time = batch time / n, recorded as `batch`), then
// the noise-driven sampling loop of harness/timing.hpp runs over those samples.
// A planted slowdown (TimingPolicy::planted_slowdown, test only) is sized from the median of up to
// ten undelayed samples and then spent in every later one: inside the timed region where the
// Execution can (add_timed_delay), else as a host busy-wait added to each sample; the note says
// which, without commas: "planted slowdown +10% (test only: +0.0123 ms per call in the timed region)".
// With poison_each_sample the outputs are poisoned before every sample (outside the timed region,
// before a cold sample's flush), so what read_back() returns afterwards is the last timed launch's
// own output: a launch that skips a write leaves the poison, not the validated run's values.
#pragma once
#include <string>

#include "harness/path.hpp"

namespace fa {

// 20 us: below it event resolution (~0.5 us) and launch jitter are a visible share of one call.
constexpr double kBatchBelowMs = 0.020;
constexpr double kBatchTargetMs = 0.050;
constexpr int kMaxBatch = 4096;

// Launches per sample for a call that took `probe_ms`: 1 at or above kBatchBelowMs.
int batch_size_for(double probe_ms);

TimingStats time_execution(Execution& exec, const TimingPolicy& policy, bool poison_each_sample = false);

// --throttle-policy: what a record whose samples ran throttled (ClockStats::throttled_samples > 0)
// gets. warn: a note and the table's mark; retry: up to `retries` times, wait (at most wait_s) for
// the device to read unthrottled, then time again (the last attempt is kept); fail: the record is
// an error naming the reasons (run_record), so a resumed sweep times it again.
enum class ThrottlePolicy { warn, retry, fail };
struct ThrottleOptions {
  ThrottlePolicy policy = ThrottlePolicy::warn;
  int retries = 2;
  double wait_s = 10;
};
// "throttled: 12 of 40 samples (sw_power_cap)"; empty when no sample was.
std::string throttle_note(const TimingStats& t);
// time_execution under the policy's retries; the note says how many were taken and what was waited.
TimingStats time_execution(Execution& exec, const TimingPolicy& policy, bool poison_each_sample,
                           const ThrottleOptions& throttle);

}  // namespace fa
