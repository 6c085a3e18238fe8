// Batch choice and the timing of one Execution.
#include "harness/timed_run.hpp"

#include <algorithm>
#include <cmath>

namespace fa {

int batch_size_for(double probe_ms) {
  if (probe_ms >= kBatchBelowMs) return 1;
  if (!(probe_ms > 0)) return kMaxBatch;  // below the clock's resolution
  return std::min(kMaxBatch, int(std::ceil(kBatchTargetMs / probe_ms)));
}

TimingStats time_execution(Execution& exec, const TimingPolicy& policy) {
  for (int i = 0; i < policy.warmup; ++i) exec.timed_sample_ms(policy.mode);
  const int n = batch_size_for(exec.timed_sample_ms(policy.mode));
  TimingPolicy rest = policy;
  rest.warmup = 0;  // done above, and the probe warmed the batch too
  TimingStats st = measure_time(rest, [&] { return n == 1 ? exec.timed_sample_ms(policy.mode)
                                                          : exec.timed_batch_ms(policy.mode, n) / n; });
  st.batch = n;
  return st;
}

}  // namespace fa
