// The compact table: three significant digits at every magnitude, GB/s on memory-bound rows,
// one column per (path, G), statuses where nothing was timed; the same grid as CSV.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/results/tables/compact_table.hpp"
#include "harness/results/tables/sig_digits.hpp"

using namespace fa;

namespace {

Record timed(const std::string& path, int64_t S, double tflops, double gbps, int G = 0) {
  Record r;
  r.problem.H = r.problem.Hk = 2, r.problem.S = S, r.problem.Sk = 512, r.problem.D = 64;
  r.path = path;
  r.g_req = SplitRequest{false, G};
  r.status = Status::pass;
  r.timing = TimingStats{};
  r.timing->median_ms = 1;
  r.tflops = tflops, r.gbps = gbps;
  return r;
}

}  // namespace

TEST(CompactTable, NumbersKeepThreeSignificantDigitsAtEveryMagnitude) {
  EXPECT_EQ(sig3(0.00123456), "0.00123");
  EXPECT_EQ(sig3(0.0456), "0.0456");
  EXPECT_EQ(sig3(1.23456), "1.23");
  EXPECT_EQ(sig3(45.66), "45.7");
  EXPECT_EQ(sig3(789.4), "789");
  EXPECT_EQ(sig3(1234.0), "1230");
  EXPECT_EQ(sig3(9.996), "10.0") << "rounding up gains a digit left of the point";
  EXPECT_EQ(sig3(0.0), "0");
}

TEST(CompactTable, RowsAreProblemsColumnsArePathsAndGAndCellsAreThroughput) {
  std::vector<Record> rs = {timed("tiled", 256, 0.00123456, 9), timed("mma", 256, 123.456, 9),
                            timed("mma", 256, 150.0, 9, 4)};
  std::ostringstream os;
  print_compact_table(os, rs);
  EXPECT_NE(os.str().find("| problem | unit | tiled | mma | mma G=4 |"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("| TFLOP/s | 0.00123 | 123 | 150 |"), std::string::npos) << os.str();
}

TEST(CompactTable, DecodeRowsReportGigabytesPerSecond) {
  std::ostringstream os;
  print_compact_table(os, {timed("decode", 1, 0.5, 2345.6)});
  EXPECT_NE(os.str().find("| GB/s | 2350 |"), std::string::npos) << os.str();
}

TEST(CompactTable, TheRooflineBoundDecidesTheUnitWhenThereIsOne) {
  Record r = timed("mma", 256, 12.0, 3000.0);
  r.roof = Roofline{"memory", 90.0};
  std::ostringstream os;
  print_compact_table(os, {r});
  EXPECT_NE(os.str().find("| GB/s | 3000 |"), std::string::npos) << os.str();
}

TEST(CompactTable, UntimedCellsShowTheStatusAndFailuresAreMarked) {
  Record skip = timed("wmma", 256, 0, 0);
  skip.timing.reset();
  skip.status = Status::skip;
  Record fail = timed("tiled", 256, 2.5, 1);
  fail.status = Status::fail;
  std::ostringstream os;
  print_compact_table(os, {skip, fail});
  EXPECT_NE(os.str().find("| skip | 2.50 (fail) |"), std::string::npos) << os.str();
}

TEST(CompactTable, TheCsvHoldsTheSameGridOneLinePerProblem) {
  Record other = timed("mma", 1, 0.5, 2345.6);
  other.problem.name = "dec, GQA";  // a comma: the field is quoted
  std::ostringstream os;
  write_compact_csv(os, compact_grid({timed("tiled", 256, 1.5, 9), timed("mma", 256, 123.456, 9, 4), other}));
  EXPECT_EQ(os.str(),
            "problem,unit,tiled,mma G=4,mma\n"
            "B1 H2 S256 Sk512 D64 fp16,TFLOP/s,1.50,123,\n"
            "\"dec, GQA fp16\",GB/s,,,2350\n");
}

// A number whose samples ran throttled carries the mark, and the table then ends with its legend;
// a table with no throttled number has neither.
TEST(CompactTable, ThrottledNumbersAreMarkedAndTheLegendFollowsOnlyThen) {
  Record hot = timed("mma", 256, 583, 9), cool = timed("auto", 256, 639, 9);
  hot.timing->clocks = ClockStats{};
  hot.timing->clocks->throttled_samples = 30;
  cool.timing->clocks = ClockStats{};  // clocks read, none throttled
  const CompactGrid g = compact_grid({hot, cool});
  ASSERT_EQ(g.rows.size(), 1u);
  EXPECT_EQ(g.rows[0].cells, (std::vector<std::string>{std::string("583") + kThrottledMark, "639"}));
  std::ostringstream marked, plain;
  print_compact_table(marked, {hot, cool});
  EXPECT_NE(marked.str().find(std::string(kThrottledMark) + " throttled: "), std::string::npos) << marked.str();
  print_compact_table(plain, {cool});
  EXPECT_EQ(plain.str().find("throttled"), std::string::npos) << plain.str();
}
