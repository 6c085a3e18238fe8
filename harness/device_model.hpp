// The cache hierarchy in front of a device's DRAM as fa-bench models it: L2 as the runtime reports
// it, plus the last-level cache the runtime does not report (AMD's Infinity Cache / MALL: a table
// by arch and CU count; NVIDIA has none past L2), and the cold flush that must cover both. Host
// code only: the GPU runtime (kernels/runtime/query_device.hip, gpu_execution.hip) calls it, and
// tests/harness/test_device_model.cpp checks it with described devices.
#pragma once
#include <cstddef>
#include <string>

#include "harness/path.hpp"

namespace fa {

// The last-level cache of `arch` ("gfx942:sramecc+:xnack-") with `units` CUs, from the table; an
// arch listed with another CU count gets its largest row; 0 for an arch without rows (NVIDIA).
size_t llc_table_bytes(const std::string& arch, int units);
// d.llc_bytes, or the table's where it is 0 (a DeviceFacts filled by hand or by an older probe).
size_t llc_bytes(const DeviceFacts& d);
// Bytes the cold flush reads between samples: 2 x (L2 + LLC), at least kFlushFloorBytes.
size_t cold_flush_bytes(const DeviceFacts& d);
inline constexpr size_t kFlushFloorBytes = size_t(64) << 20;

}  // namespace fa
