// The error path of FA_GPU_CHECK and FA_GPU_CHECK_LAUNCH (kernels/device/gpu.hpp): every failed
// runtime call or launch throws, naming the call (or kernel) and file:line; allocation failures
// throw fa::OutOfMemory so that the runner records `oom`, not `error`.
#include <fmt/format.h>

#include <stdexcept>

#include "harness/path.hpp"
#include "kernels/device/gpu.hpp"

namespace fa::gpu {

void throw_error(Error e, const char* call, const char* file, int line) {
  // Consume the error: CUDA, and HIP from ROCm 7.0 on (its "HIP API 7.0 changes"), keep a failed
  // call's error for the next Get-Last-Error, which is FA_GPU_CHECK_LAUNCH's: a device allocation
  // recorded as `oom` would otherwise fail the next problem's first launch with "out of memory".
  (void)last_error();
  const std::string msg = fmt::format("{} failed: {} ({}:{})", call, error_string(e), file, line);
  if (is_oom(e)) throw OutOfMemory(msg);
  throw std::runtime_error(msg);
}

void check_last_launch(const char* kernel_name, const char* file, int line) {
  const Error e = last_error();
  if (e != kSuccess) throw_error(e, fmt::format("launch of {}", kernel_name).c_str(), file, line);
}

}  // namespace fa::gpu
