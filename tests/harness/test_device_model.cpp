// The last-level cache table and the cold flush, on devices described as their runtimes report them:
// the flush must cover L2 plus the cache in front of DRAM, which only AMD has and no runtime reports.
#include <gtest/gtest.h>

#include "harness/device_model.hpp"

using namespace fa;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

DeviceFacts described(const std::string& arch, int units, size_t l2_mib) {
  DeviceFacts d;
  d.gpu = true;
  d.arch = arch;
  d.units = units;
  d.l2_bytes = l2_mib * kMiB;
  return d;
}

}  // namespace

TEST(DeviceModel, AnMi300xFlushCoversItsInfinityCacheAndNotJustTheOneXcdL2ItReports) {
  // hipDeviceProp_t::l2CacheSize on MI300X is one XCD's 4 MB; llc_bytes left 0 falls to the table.
  const DeviceFacts d = described("gfx942:sramecc+:xnack-", 304, 4);
  EXPECT_EQ(llc_bytes(d), 256 * kMiB);
  EXPECT_GE(cold_flush_bytes(d), 512 * kMiB);
  EXPECT_EQ(cold_flush_bytes(d), 2 * (4 + 256) * kMiB);
}

TEST(DeviceModel, AnH100HasNoCachePastL2AndFlushesTwiceIts50MB) {
  const DeviceFacts d = described("sm_90", 132, 50);
  EXPECT_EQ(llc_bytes(d), 0u);
  EXPECT_EQ(cold_flush_bytes(d), 2 * 50 * kMiB);
}

TEST(DeviceModel, A7900XtxFlushCoversIts96MBInfinityCacheAndThe7900XtIts80MB) {
  EXPECT_EQ(cold_flush_bytes(described("gfx1100", 96, 6)), 2 * (6 + 96) * kMiB);
  EXPECT_EQ(llc_table_bytes("gfx1100", 84), 80 * kMiB);
  EXPECT_EQ(llc_table_bytes("gfx1101", 60), 64 * kMiB);
  EXPECT_EQ(llc_table_bytes("gfx1201", 64), 64 * kMiB);
}

TEST(DeviceModel, ACuCountTheTableLacksTakesItsArchsLargestCacheSoTheFlushErrsLarge) {
  EXPECT_EQ(llc_table_bytes("gfx1100", 70), 96 * kMiB);
}

TEST(DeviceModel, ACacheTheProbeFilledInWinsOverTheTable) {
  DeviceFacts d = described("gfx942", 304, 4);
  d.llc_bytes = 128 * kMiB;
  EXPECT_EQ(cold_flush_bytes(d), 2 * (4 + 128) * kMiB);
}

TEST(DeviceModel, ADeviceWithNoL2AndNoRowStillFlushesTheFloor) {
  EXPECT_EQ(cold_flush_bytes(described("gfx9999", 10, 0)), kFlushFloorBytes);
  EXPECT_EQ(cold_flush_bytes(described("sm_80", 108, 40)), 2 * 40 * kMiB);  // past the floor: 2 x L2
}
