// The peak table and the roofline: the larger of compute time and memory time names the bound,
// %peak is roofline time over measured time, and an arch the table lacks gives nothing.
#include <gtest/gtest.h>

#include "harness/check/peaks.hpp"

using namespace fa;

TEST(Peaks, KnownArchsHaveTheirDatasheetPeaksAndFeatureSuffixesAreIgnored) {
  ASSERT_TRUE(peak_for("sm_90"));
  EXPECT_DOUBLE_EQ(peak_for("sm_90")->tflops, 989.0);
  EXPECT_DOUBLE_EQ(peak_for("sm_80")->gbps, 2039.0);
  ASSERT_TRUE(peak_for("gfx942:sramecc+:xnack-"));
  EXPECT_DOUBLE_EQ(peak_for("gfx942:sramecc+:xnack-")->tflops, 1307.0);
  EXPECT_DOUBLE_EQ(peak_for("gfx90a")->tflops, 191.5);
  EXPECT_DOUBLE_EQ(peak_for("gfx1100")->gbps, 960.0);
}

TEST(Peaks, UnknownArchsAndTheCpuHaveNoPeakAndNoRoofline) {
  EXPECT_FALSE(peak_for("host"));
  EXPECT_FALSE(peak_for("sm_75"));
  EXPECT_FALSE(roofline(1e12, 1e9, 1.0, peak_for("host")));
}

TEST(Peaks, AComputeHeavyProblemIsComputeBoundAndItsPercentIsOfTheFlopPeak) {
  // 989 GFLOP on sm_90 takes 1 ms at peak; 1 GB takes 0.3 ms: compute-bound. Measured 2 ms: 50%.
  const auto r = roofline(989e9, 1e9, 2.0, peak_for("sm_90"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bound, "compute");
  EXPECT_NEAR(r->pct_peak, 50.0, 1e-9);
}

TEST(Peaks, ADecodeLikeProblemIsMemoryBoundAndItsPercentIsOfTheBandwidth) {
  // 3.35 GB on sm_90 takes 1 ms at 3350 GB/s; 1 GFLOP is negligible. Measured 4 ms: 25%.
  const auto r = roofline(1e9, 3.35e9, 4.0, peak_for("sm_90"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bound, "memory");
  EXPECT_NEAR(r->pct_peak, 25.0, 1e-9);
}

TEST(Peaks, AnUntimedRecordHasNoRoofline) { EXPECT_FALSE(roofline(1e9, 1e9, 0.0, peak_for("sm_90"))); }
