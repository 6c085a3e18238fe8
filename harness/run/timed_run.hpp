// Times one prepared Execution: a probe call after the warm-up decides between single calls and
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

}  // namespace fa
