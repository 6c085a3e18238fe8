// Run metadata: host, CPU, device facts, runtime, build backend, git commit, compiler, start time.
#pragma once
#include "harness/path.hpp"
#include "harness/results/results.hpp"

namespace fa {

RunMeta collect_meta(const DeviceFacts& device, TimingMode mode);
std::string cpu_model();

}  // namespace fa
