// The GPU half as the host sees it (plain C++, no GPU headers): device discovery and the device
// copy bandwidth, defined in kernels/runtime/query_device.hip and copy_bandwidth.hip. The paths themselves register their rows
// from their own files (harness/path_registry.hpp). Only built with a GPU backend.
#pragma once
#include <string>

#include "harness/path.hpp"

namespace fa::gpu {

DeviceFacts query_device();  // gpu == false with the reason when no device answers

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written: the median of
// `reps` event-timed copies of `bytes` (the peer for memory-bound paths' GB/s).
double copy_bandwidth_gbps(size_t bytes, int reps);

// Test only (kernels/runtime/test_fault.hip): launches a kernel that writes to an unowned address and
// synchronizes, so the runtime's illegal-address error is thrown (and the context is lost).
void fault_device_for_test();
// Test only (test_fault.hip): a device allocation no GPU can satisfy (its error thrown and caught, as
// the runner catches an `oom`), then a launch checked as every launch is. Returns what the
// allocation threw and what the launch check threw ("" where nothing was).
struct AfterFailedCall {
  std::string allocation, launch;
};
AfterFailedCall launch_after_failed_allocation_for_test();

}  // namespace fa::gpu
