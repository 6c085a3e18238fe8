// Peaks computed from a device (units x clock x the arch's rate; bus x memory clock x transfers),
// cross-checked against every datasheet row, and the roofline: the larger of compute time and
// memory time names the bound, %peak is roofline time over measured time, and FP8 problems are
// measured against the FP8 rate.
#include <gtest/gtest.h>

#include "harness/check/peaks.hpp"

using namespace fa;

namespace {

// A device as its runtime reports it: the row's SKU at `clock_mhz` (NVIDIA reports its max boost).
DeviceFacts device_of(const DatasheetRow& row, int clock_mhz) {
  DeviceFacts d;
  d.gpu = true;
  d.arch = row.arch;
  d.units = row.units;
  d.sm_clock_mhz = clock_mhz;
  d.mem_clock_mhz = row.mem_clock_mhz;
  d.mem_bus_bits = row.bus_bits;
  return d;
}

const DatasheetRow& row_named(const std::string& part) {
  for (const DatasheetRow& r : datasheet_rows())
    if (part == r.part) return r;
  throw std::logic_error("no datasheet row " + part);
}

}  // namespace

TEST(Peaks, EveryDatasheetRowIsReDerivedFromItsUnitsAndClocksWithinTwoPercent) {
  const char* want[] = {"MI300X", "MI300A", "MI325X", "MI355X", "MI250X (one GCD)", "RX 7900 XTX", "RX 9070 XT",
                        "H100 SXM", "H100 PCIe", "H200", "A100 SXM"};
  for (const char* part : want) EXPECT_NO_THROW(row_named(part)) << part;
  for (const DatasheetRow& r : datasheet_rows()) {
    SCOPED_TRACE(r.part);
    const ArchRate* rate = arch_rate(r.arch);
    ASSERT_NE(rate, nullptr);
    EXPECT_NEAR(tflops_at(r.units, r.clock_mhz, rate->flop16) / r.tflops16, 1.0, 0.02);
    EXPECT_EQ(r.tflops8 > 0, rate->flop8 > 0);
    if (r.tflops8 > 0) {
      EXPECT_NEAR(tflops_at(r.units, r.clock_mhz, rate->flop8) / r.tflops8, 1.0, 0.02);
    }
    // Vendors round bandwidth down (MI355X: 8192 GB/s published as 8 TB/s): 2.5%.
    EXPECT_NEAR(gbps_at(r.bus_bits, r.mem_clock_mhz, rate->mem_factor) / r.gbps, 1.0, 0.025);
  }
}

TEST(Peaks, AnH100SxmReportingItsBoostClockIsMeasuredAtTheDatasheetClock) {
  // The H100 SXM reports 1980 MHz; NVIDIA's 989 TFLOP/s is 132 SMs x 1830 MHz x 4096.
  const auto p = device_peak(device_of(row_named("H100 SXM"), 1980), PeakClass::bit16);
  ASSERT_TRUE(p);
  EXPECT_NEAR(p->tflops / 989.0, 1.0, 0.02);
  EXPECT_NEAR(p->gbps / 3350.0, 1.0, 0.02);
  EXPECT_NE(p->tflops_from.find("132 SMs x 1830 MHz (H100 SXM datasheet clock; the device reports 1980 MHz)"),
            std::string::npos)
      << p->tflops_from;
  EXPECT_EQ(p->gbps_from, "computed: 5120-bit x 2619 MHz x 2");
}

// What a lent H200 reported (`fa-bench info`, 2026-11-28): its row is found by the bus width the
// runtime gives (6016 bits, not 6 x 1024), so the peaks are the datasheet's, not 1980 MHz's.
TEST(Peaks, AnH200AsItReportsItselfIsMeasuredAgainstItsDatasheetRow) {
  DeviceFacts d;
  d.gpu = true, d.arch = "sm_90", d.units = 132, d.sm_clock_mhz = 1980, d.mem_clock_mhz = 3201, d.mem_bus_bits = 6016;
  const auto p = device_peak(d, PeakClass::bit16);
  ASSERT_TRUE(p);
  EXPECT_NEAR(p->tflops / 989.0, 1.0, 0.02) << p->tflops_from;
  EXPECT_NEAR(p->gbps / 4800.0, 1.0, 0.02) << p->gbps_from;
  EXPECT_NE(p->tflops_from.find("H200 datasheet clock"), std::string::npos) << p->tflops_from;
}

TEST(Peaks, SkusOfOneArchGetTheirOwnPeaks) {
  const auto mi300x = device_peak(device_of(row_named("MI300X"), 2100), PeakClass::bit16);
  const auto mi300a = device_peak(device_of(row_named("MI300A"), 2100), PeakClass::bit16);
  const auto mi325x = device_peak(device_of(row_named("MI325X"), 2100), PeakClass::bit16);
  const auto h100 = device_peak(device_of(row_named("H100 SXM"), 1980), PeakClass::bit16);
  const auto h200 = device_peak(device_of(row_named("H200"), 1980), PeakClass::bit16);
  ASSERT_TRUE(mi300x && mi300a && mi325x && h100 && h200);
  EXPECT_NEAR(mi300a->tflops / mi300x->tflops, 228.0 / 304.0, 1e-12);
  EXPECT_GT(mi325x->gbps, mi300x->gbps * 1.1);
  EXPECT_GT(h200->gbps, h100->gbps * 1.4);
}

TEST(Peaks, ADeviceNoRowDescribesIsComputedFromItsOwnClock) {
  DeviceFacts d;  // an MI308X-like part: gfx942 with 80 CUs
  d.gpu = true, d.arch = "gfx942:sramecc+:xnack-", d.units = 80, d.sm_clock_mhz = 2100;
  d.mem_bus_bits = 8192, d.mem_clock_mhz = 1300;
  const auto p = device_peak(d, PeakClass::bit16);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->tflops, 80 * 2100e6 * 2048 / 1e12);
  EXPECT_DOUBLE_EQ(p->gbps, 8192 / 8 * 1300e6 * 4 / 1e9);
  EXPECT_EQ(p->tflops_from, "computed: 80 CUs x 2100 MHz x 2048 16-bit FLOP/clk/CU");
  // Without a bus width and no row to fall back on, there is no memory peak and so no peak at all.
  d.mem_bus_bits = 0;
  EXPECT_FALSE(device_peak(d, PeakClass::bit16));
}

TEST(Peaks, UnknownArchsAndTheCpuHaveNoPeakAndNoRoofline) {
  DeviceFacts cpu;
  EXPECT_FALSE(device_peak(cpu, PeakClass::bit16));
  DeviceFacts turing = device_of(row_named("A100 SXM"), 1410);
  turing.arch = "sm_75";
  EXPECT_FALSE(device_peak(turing, PeakClass::bit16));
  EXPECT_FALSE(roofline(1e12, 1e9, 1.0, device_peak(cpu, PeakClass::bit16)));
}

TEST(Peaks, AComputeHeavyProblemIsComputeBoundAndItsPercentIsOfTheFlopPeak) {
  const Peak peak{989.0, 3350.0, "", ""};
  // 989 GFLOP takes 1 ms at peak; 1 GB takes 0.3 ms: compute-bound. Measured 2 ms: 50%.
  const auto r = roofline(989e9, 1e9, 2.0, peak);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bound, "compute");
  EXPECT_NEAR(r->pct_peak, 50.0, 1e-9);
}

TEST(Peaks, ADecodeLikeProblemIsMemoryBoundAndItsPercentIsOfTheBandwidth) {
  const Peak peak{989.0, 3350.0, "", ""};
  // 3.35 GB takes 1 ms at 3350 GB/s; 1 GFLOP is negligible. Measured 4 ms: 25%.
  const auto r = roofline(1e9, 3.35e9, 4.0, peak);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bound, "memory");
  EXPECT_NEAR(r->pct_peak, 25.0, 1e-9);
}

TEST(Peaks, AnFp8RecordsPercentIsOfTheFp8PeakWhereTheArchHasOne) {
  const DeviceFacts h100 = device_of(row_named("H100 SXM"), 1980);
  EXPECT_EQ(peak_class(DType::fp8_e4m3), PeakClass::fp8);
  EXPECT_EQ(peak_class(DType::bf16), PeakClass::bit16);
  const auto p8 = device_peak(h100, peak_class(DType::fp8_e4m3)), p16 = device_peak(h100, peak_class(DType::bf16));
  ASSERT_TRUE(p8 && p16);
  EXPECT_NEAR(p8->tflops / 1979.0, 1.0, 0.02);
  // A compute-bound FP8 problem at 1 ms that does 989 GFLOP ran at half the FP8 peak, not all of the 16-bit one.
  const auto r = roofline(989e9, 1e6, 1.0, p8);
  ASSERT_TRUE(r);
  EXPECT_NEAR(r->pct_peak, 100.0 * 989.0 / p8->tflops, 1e-9);
  EXPECT_NEAR(r->pct_peak, 50.0, 1.0);
  // An arch without an FP8 rate measures FP8 problems against its 16-bit rate, and says so.
  const DeviceFacts mi250 = device_of(row_named("MI250X (one GCD)"), 1700);
  const auto q8 = device_peak(mi250, PeakClass::fp8), q16 = device_peak(mi250, PeakClass::bit16);
  ASSERT_TRUE(q8 && q16);
  EXPECT_DOUBLE_EQ(q8->tflops, q16->tflops);
  EXPECT_NE(q8->tflops_from.find("no FP8 rate"), std::string::npos) << q8->tflops_from;
}

TEST(Peaks, TheReportNamesEachFiguresSourceAndTheDatasheetRowItIsCheckedAgainst) {
  const auto lines = peak_report(device_of(row_named("H100 SXM"), 1980));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("16-bit 989.4 TFLOP/s  computed: 132 SMs x 1830 MHz", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("FP8    1978.9 TFLOP/s  computed:", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2], "memory 3352 GB/s  computed: 5120-bit x 2619 MHz x 2");
  EXPECT_EQ(lines[3].rfind("datasheet row: H100 SXM: 989 TFLOP/s 16-bit (+0.0%), 1979 FP8 (-0.0%), 3350 GB/s (+0.1%)", 0), 0u)
      << lines[3];
}

TEST(Peaks, AnUntimedRecordHasNoRoofline) { EXPECT_FALSE(roofline(1e9, 1e9, 0.0, Peak{989.0, 3350.0, "", ""})); }
