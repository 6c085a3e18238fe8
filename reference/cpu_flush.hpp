// Host-clock timing for CPU-timed paths (cpu-ref, cpu-flash, CPU plugin paths): cold mode first
// evicts the caches by reading a buffer twice this machine's last-level cache (8-256 MB) through
// them, outside the timed region. flush_cpu_caches is defined in reference/cpu_paths.cpp.
#pragma once
#include <chrono>

#include "harness/timing.hpp"

namespace fa {

void flush_cpu_caches();

// One timed sample of `run` in milliseconds (Execution::timed_sample_ms of a host path).
template <class Run>
double host_timed_sample_ms(TimingMode mode, Run&& run) {
  if (mode == TimingMode::cold) flush_cpu_caches();
  const auto t0 = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace fa
