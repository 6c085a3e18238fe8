// The GPU half as the host sees it (plain C++, no GPU headers): device discovery and the device
// copy bandwidth, defined in kernels/runtime/query_device.hip and copy_bandwidth.hip. The paths themselves register their rows
// from their own files (harness/path_registry.hpp). Only built with a GPU backend.
#pragma once
#include "harness/path.hpp"

namespace fa::gpu {

DeviceFacts query_device();  // gpu == false with the reason when no device answers

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written: the median of
// `reps` event-timed copies of `bytes` (the peer for memory-bound paths' GB/s).
double copy_bandwidth_gbps(size_t bytes, int reps);

// Test only (kernels/runtime/test_fault.hip): launches a kernel that writes to an unowned address and
// synchronizes, so the runtime's illegal-address error is thrown (and the context is lost).
void fault_device_for_test();

}  // namespace fa::gpu
