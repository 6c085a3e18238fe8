// The GPU half as the host sees it (plain C++, no GPU headers): device discovery and the device
// copy bandwidth, defined in kernels/runtime/query_device.hip and copy_bandwidth.hip. The paths themselves register their rows
// from their own files (harness/path_registry.hpp). Only built with a GPU backend.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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

// Q, K and V drawn on the device (kernels/runtime/device_inputs.hip): tensor `stream` (1 Q, 2 K, 3 V)
// of p in p.dtype, its bytes copied back; empty where p is not drawn there (packed or paged
// layouts, kv caches). make_inputs + to_typed give the same bytes on the host.
std::vector<uint8_t> drawn_input_bytes(const Problem& p, uint32_t stream);
// Test only (test_fault.hip): a GPU execution of p's seeded inputs, drawn on the device, whose
// launch writes element `at` of K: what read_back() reports as its fault.
std::string drawn_input_written_for_test(const Problem& p, int64_t at);

}  // namespace fa::gpu
