// mma-decode's choices that depend on the card (kernels/mma/fa_mma_decode_traits.hpp), on the CPU:
// the L2 promotion of the TMA stream's boxes, 256 bytes on the cards where it measured faster (H100:
// 3.35 TB/s) and 128 where the extra L2 traffic capped the stream (H200: 4.8 TB/s, 10% slower with
// 256). Run: ctest -R MmaDecodeTraits
#include <gtest/gtest.h>

#include "harness/check/peaks.hpp"
#include "kernels/mma/fa_mma_decode_traits.hpp"

using namespace fa;
using fa::gpu::mma_decode::decode_l2_promote;

namespace {

DeviceFacts nvidia(int units, int bus_bits, int mem_clock_mhz) {
  DeviceFacts d;
  d.gpu = true, d.arch = "sm_90", d.units = units, d.sm_clock_mhz = 1980;
  d.mem_bus_bits = bus_bits, d.mem_clock_mhz = mem_clock_mhz;
  return d;
}

}  // namespace

TEST(MmaDecodeTraits, L2PromotionIs256BytesUnder4TBPerSecondAnd128Above) {
  EXPECT_EQ(decode_l2_promote(nvidia(132, 5120, 2619)), 256) << "H100 SXM, 3.35 TB/s: 256 measured faster";
  EXPECT_EQ(decode_l2_promote(nvidia(114, 5120, 1593)), 256) << "H100 PCIe, 2.0 TB/s";
  EXPECT_EQ(decode_l2_promote(nvidia(132, 6016, 3201)), 128) << "a lent H200 as it reports itself, 4.8 TB/s";
  // 3906 MHz x 4096 bits x 2 / 8 = 3999.7 GB/s, and one MHz more crosses 4000.
  EXPECT_EQ(decode_l2_promote(nvidia(132, 4096, 3906)), 256);
  EXPECT_EQ(decode_l2_promote(nvidia(132, 4096, 3907)), 128);
  DeviceFacts none;
  EXPECT_EQ(decode_l2_promote(none), 256) << "no device, no peak: the H100's measured choice";
  DeviceFacts unreported = nvidia(132, 0, 0);  // no bus or memory clock: the H100 SXM's datasheet row
  EXPECT_EQ(decode_l2_promote(unreported), 256);
}
