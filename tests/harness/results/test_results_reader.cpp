// Reading results CSVs back for compare, gate, table and merge: records written by the real CSV
// writer come back with their plugin file and version; a file of an older schema (no plugin
// columns) reads them as empty; a bad cell names file:line and the column.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "harness/results/results_reader.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

Record timed(const std::string& name, const std::string& path, double ms) {
  Record r;
  r.problem.name = name;
  r.problem.B = 1, r.problem.H = 4, r.problem.Hk = 2, r.problem.S = 64, r.problem.Sk = 128, r.problem.D = 64;
  r.path = path;
  r.status = Status::pass;
  r.timing = TimingStats{};
  r.timing->median_ms = ms;
  r.timing->spread = 0.005;
  r.timing->samples = 20;
  return r;
}

}  // namespace

TEST(ResultsReader, APluginRecordReadsBackItsLibraryAndDeclaredVersionAndABuiltInOneReadsEmpty) {
  Record plugin = timed("p", "example-cpu", 1.0);
  plugin.plugin_file = "/opt/build-1.1/libfa_example_cpu.so";
  plugin.plugin_version = "1.1.0";
  const ResultsFile f = test::written({plugin, timed("p", "cpu-flash", 1.0)});
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.records[0].record.plugin_file, "/opt/build-1.1/libfa_example_cpu.so");
  EXPECT_EQ(f.records[0].record.plugin_version, "1.1.0");
  EXPECT_EQ(f.records[1].record.plugin_file, "");
  EXPECT_EQ(f.records[1].record.plugin_version, "");
}

TEST(ResultsReader, TheTileARuleCountedReadsBackWithThePackedHeadsAndAnOlderFileReadsOneHead) {
  Record packed = timed("p", "mma", 1.0);
  packed.units = 132;
  packed.tile = TileShape{16, 32, 3, 2};  // the problem's GQA group: H 4, Hk 2
  Record plain = timed("p", "tiled", 1.0);
  plain.units = 132;
  plain.tile = TileShape{64, 32, 2};
  const ResultsFile f = test::written({packed, plain});
  ASSERT_EQ(f.records.size(), 2u);
  const TileShape a = f.records[0].record.tile, b = f.records[1].record.tile;
  EXPECT_EQ(a.block_m, 16);
  EXPECT_EQ(a.block_n, 32);
  EXPECT_EQ(a.resident, 3);
  EXPECT_EQ(a.heads, 2);
  EXPECT_EQ(b.block_m, 64);
  EXPECT_EQ(b.resident, 2);
  EXPECT_EQ(b.heads, 1);
  // A count that does not divide the problem's H (4) is refused, naming the column.
  const auto good = test::temp_file(".csv", "");
  { CsvWriter w(OutputFile(good, {}), RunMeta{}, false); w.write(packed); }
  std::ifstream in(good);
  std::string header, row;
  std::getline(in, header), std::getline(in, row);
  const auto col = header.find(",tile_heads,"), pos = row.find(",16,32,3,2,");  // tile_m .. tile_heads
  ASSERT_NE(col, std::string::npos) << header;
  ASSERT_NE(pos, std::string::npos) << row;
  const auto bad = test::temp_file(".csv", header + "\n" + row.replace(pos, 11, ",16,32,3,3,") + "\n");
  try {
    read_results_csv(bad);
    FAIL() << "3 heads a block of H=4 must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad + ":2: field 'tile_heads'"), std::string::npos) << e.what();
  }
  // The schema-3 fixture below has no tile_heads column (nor tiles): one head a block.
  for (const auto& r : read_results_csv(test::source_dir() + "/tests/harness/results/sm_90-schema3.csv").records)
    EXPECT_EQ(r.record.tile.heads, 1) << r.at.str();
}

TEST(ResultsReader, AColdRecordsFlushSizeReadsBackBesideItsTimingModeAndAnOlderFileReadsItUnknown) {
  Record cold = timed("p", "mma", 1.0);
  cold.timing->mode = "cold";
  cold.flush_bytes = size_t(520) << 20;  // an MI300X: 2 x (4 + 256) MiB
  const ResultsFile f = test::written({cold, timed("p", "cpu-flash", 1.0)});
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.records[0].record.flush_bytes, size_t(520) << 20);
  EXPECT_EQ(f.records[1].record.flush_bytes, 0u);
  const auto cols = CsvWriter::columns();
  const auto mode = std::find(cols.begin(), cols.end(), "timing_mode");
  ASSERT_NE(mode, cols.end());
  ASSERT_NE(mode + 1, cols.end());
  EXPECT_EQ(*(mode + 1), "flush_bytes");
  for (const auto& r : read_results_csv(test::source_dir() + "/tests/harness/results/sm_90-schema3.csv").records)
    EXPECT_EQ(r.record.flush_bytes, 0u) << r.at.str();
}

// The fixture: the first 24 records of results/baselines/sm_90.csv as committed at 642296f (an
// H100 run, results schema 3), kept here since the baseline itself moved to a newer schema.
TEST(ResultsReader, ACommittedSchema3BaselineWithoutPluginColumnsReadsThemAsEmpty) {
  const std::string path = test::source_dir() + "/tests/harness/results/sm_90-schema3.csv";
  std::ifstream in(path);
  std::string header;
  std::getline(in, header);
  ASSERT_EQ(header.find("plugin"), std::string::npos) << "this test needs a file from before schema 6";
  const ResultsFile f = read_results_csv(path);
  ASSERT_EQ(f.records.size(), 24u);
  for (const auto& r : f.records) {
    EXPECT_EQ(r.record.plugin_file, "") << r.at.str();
    EXPECT_EQ(r.record.plugin_version, "") << r.at.str();
  }
}

TEST(ResultsReader, ABadCellNamesFileLineAndColumn) {
  const auto good = test::temp_file(".csv", "");
  { CsvWriter w(OutputFile(good, {}), RunMeta{}, false); w.write(timed("p", "x", 1.0)); w.write(timed("q", "x", 1.0)); }
  std::ifstream in(good);
  std::string header, row1, row2;
  std::getline(in, header), std::getline(in, row1), std::getline(in, row2);
  const auto pos = row2.find(",1,0,0,0.005,20,");  // median_ms, min_ms, max_ms, spread, samples
  ASSERT_NE(pos, std::string::npos) << row2;
  const auto bad = test::temp_file(".csv", header + "\n" + row1 + "\n" + row2.replace(pos, 3, ",1x,") + "\n");
  try {
    read_results_csv(bad);
    FAIL() << "a bad median_ms must be rejected";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad + ":3: field 'median_ms': '1x' is not a number"), std::string::npos) << e.what();
  }
  const auto short_row = test::temp_file(".csv", header + "\n1,2,3\n");
  EXPECT_THROW(read_results_csv(short_row), InputError);
  const auto not_results = test::temp_file(".csv", "B,H,S,D\n1,2,3,4\n");
  try {
    read_results_csv(not_results);
    FAIL() << "a sweep file is not a results file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: field 'name'"), std::string::npos) << e.what();
  }
}

namespace {

// A file of one serving record written by the real writer, with some cells replaced.
std::string with_cells(const std::vector<std::pair<std::string, std::string>>& changes) {
  Record r = timed("s", "x", 1.0);
  r.problem.B = 2, r.problem.seqlens_k = "100|128", r.problem.page_size = 16, r.problem.softcap = 30;
  r.problem.alibi = "0.5|0.25|0.125|0.0625";
  r.timed_check = "same";
  r.metrics = Metrics{};  // its counts are read too
  r.metrics->rows_checked = r.metrics->rows_total = 64;
  const auto file = test::temp_file(".csv", "");
  { CsvWriter w(OutputFile(file, {}), RunMeta{}, false); w.write(r); }
  std::ifstream in(file);
  std::string header, row;
  std::getline(in, header), std::getline(in, row);
  EXPECT_EQ(row.find('"'), std::string::npos) << "the split below takes unquoted cells";
  auto split = [](const std::string& line) {
    std::vector<std::string> cells(1);
    for (char c : line) {
      if (c == ',') cells.emplace_back();
      else cells.back().push_back(c);
    }
    return cells;
  };
  const auto names = split(header);
  auto cells = split(row);
  for (const auto& [column, cell] : changes) {
    const auto at = std::find(names.begin(), names.end(), column);
    EXPECT_NE(at, names.end()) << column;
    if (at != names.end()) cells[size_t(at - names.begin())] = cell;
  }
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cells[i];
  return test::temp_file(".csv", header + "\n" + out + "\n");
}

}  // namespace

TEST(ResultsReader, EveryColumnIsCheckedAsTheSweepReaderChecksItNamingFileLineAndColumn) {
  ASSERT_EQ(read_results_csv(with_cells({})).records.size(), 1u) << "the unchanged record reads";
  const std::pair<std::string, std::string> bad[] = {
      {"schema", "99"},      {"schema", "abc"},        {"schema", "0"},      {"schema", ""},
      {"timed_check", "maybe"},
      {"page_size", "-1"},   {"seqlens_k", "100"},     {"seqlens_k", "1|2|3"},
      {"softcap", "nan"},    {"softcap", "-1"},        {"alibi", "0.5|0.25"},
      {"window", "\"-2,0\""}, {"Hk", "3"},              {"nan_inf", "-1"},    {"rows_checked", "-5"}};
  for (const auto& [column, cell] : bad) {
    const auto file = with_cells({{column, cell}});
    try {
      read_results_csv(file);
      ADD_FAILURE() << column << "=" << cell << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(file + ":2: field '" + column + "'"), std::string::npos)
          << column << "=" << cell << ": " << e.what();
    }
  }
}

TEST(ResultsReader, AnInvalidRecordKeepsTheProblemThatFailedValidation) {
  const auto file = with_cells({{"status", "invalid"}, {"page_size", "-1"}});
  EXPECT_EQ(read_results_csv(file).records.at(0).record.status, Status::invalid);
}

// Schema 10's clock columns: written by the CSV writer and read back; a record no reader saw, and a
// file before schema 10, read as having no clocks; a bad count names its column.
TEST(ResultsReader, ARecordsClocksPowerAndThrottlingReadBackAndARecordWithoutThemReadsNone) {
  Record hot = timed("p", "mma", 1.9);
  ClockStats c;
  c.mhz_min = 1350, c.mhz_median = 1755, c.power_w_max = 699.5, c.cycles_median = 1.9 * 1755 * 1e3;
  c.throttled_samples = 12, c.throttle_reasons = "sw_power_cap|hw_slowdown", c.source = "nvml", c.readings = 40;
  hot.timing->clocks = c;
  const ResultsFile f = test::written({hot, timed("p", "cpu-flash", 1.0)});
  ASSERT_EQ(f.records.size(), 2u);
  ASSERT_TRUE(f.records[0].record.timing && f.records[0].record.timing->clocks);
  const ClockStats& back = *f.records[0].record.timing->clocks;
  EXPECT_DOUBLE_EQ(back.mhz_min, 1350);
  EXPECT_DOUBLE_EQ(back.mhz_median, 1755);
  EXPECT_DOUBLE_EQ(back.power_w_max, 699.5);
  EXPECT_NEAR(back.cycles_median, 1.9 * 1755 * 1e3, 1e-6 * back.cycles_median);
  EXPECT_EQ(back.throttled_samples, 12);
  EXPECT_EQ(back.throttle_reasons, "sw_power_cap|hw_slowdown");
  EXPECT_EQ(back.source, "nvml");
  EXPECT_FALSE(f.records[1].record.timing->clocks);
  for (const auto& r : read_results_csv(test::source_dir() + "/tests/harness/results/sm_90-schema3.csv").records)
    if (r.record.timing) {
      EXPECT_FALSE(r.record.timing->clocks) << r.at.str();
    }
  const auto cols = CsvWriter::columns();
  const auto note = std::find(cols.begin(), cols.end(), "timing_note");
  ASSERT_NE(note, cols.end());
  const std::vector<std::string> after(note + 1, note + 8);
  EXPECT_EQ(after, (std::vector<std::string>{"clock_mhz_min", "clock_mhz_median", "power_w_max", "throttled_samples",
                                             "throttle_reasons", "cycles_median", "clock_source"}));
  const auto file = with_cells({{"clock_mhz_median", "1800"}, {"throttled_samples", "-3"}});
  try {
    read_results_csv(file);
    ADD_FAILURE() << "a negative throttled_samples was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(file + ":2: field 'throttled_samples'"), std::string::npos) << e.what();
  }
}
