// Printers: the CSV has the documented columns, escapes text and writes each row at once; JSON
// Lines starts with the run's metadata. Reading back for --resume: tests/harness/results/test_resume.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness/results/results.hpp"
#include "harness/results/tables/summary.hpp"
#include "helpers.hpp"

using namespace fa;

static Record record(const std::string& path, Status st, const std::string& reason) {
  Record r;
  r.problem.name = "p, with comma";
  r.problem.B = 2, r.problem.H = 8, r.problem.Hk = 2, r.problem.S = 100, r.problem.Sk = 200, r.problem.D = 64;
  r.path = path;
  r.g_req = SplitRequest{false, 4};
  r.g_used = 4;
  r.status = st;
  r.reason = reason;
  return r;
}

static std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

TEST(Results, CsvRowsAreFlushedAsTheyAreWrittenAndQuoteText) {
  const auto path = test::temp_file(".csv", "");
  RunMeta meta;
  meta.run_id = "r1";
  CsvWriter w(OutputFile(path, {}), meta, false);
  w.write(record("cpu-flash", Status::fail, "max |err| \"big\""));
  const auto lines = lines_of(path);  // read while the writer is still open
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("schema,run_id,time,name,B,H,Hk,S,Sk,D,causal,dtype", 0), 0u) << lines[0];
  EXPECT_NE(lines[1].find("\"p, with comma\""), std::string::npos);
  EXPECT_NE(lines[1].find("\"max |err| \"\"big\"\"\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(",fail,"), std::string::npos);
}

TEST(Results, JsonLinesStartWithMetaThenOneObjectPerRecord) {
  const auto path = test::temp_file(".jsonl", "");
  RunMeta meta;
  meta.device = "NVIDIA H100";
  {
    JsonLinesWriter w(OutputFile(path, {}), meta, false);
    w.write(record("decode", Status::pass, ""));
  }
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 2u);
  const auto m = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(m["meta"]["device"], "NVIDIA H100");
  EXPECT_EQ(m["meta"]["schema"], kSchemaVersion);
  const auto r = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(r["path"], "decode");
  EXPECT_EQ(r["G_req"], "4");
  EXPECT_EQ(r["Hk"], 2);
}

TEST(Results, JsonLinesCarryNumbersBooleansAndNullsNotStrings) {
  const auto path = test::temp_file(".jsonl", "");
  Record rec = record("cpu-flash", Status::pass, "");
  rec.problem.causal = true;
  rec.problem.seed = 18446744073709551615ull;  // all 64 bits survive
  rec.problem.name = "123";                    // a name that looks like a number stays text
  rec.timing = TimingStats{};
  rec.timing->median_ms = 0.25;
  rec.timing->samples = 10;
  rec.tflops = 1.5;
  {
    JsonLinesWriter w(OutputFile(path, {}), RunMeta{}, false);
    w.write(rec);
  }
  const auto r = nlohmann::json::parse(lines_of(path).at(1));
  EXPECT_TRUE(r["B"].is_number_integer());
  EXPECT_EQ(r["B"], 2);
  EXPECT_TRUE(r["causal"].is_boolean());
  EXPECT_EQ(r["causal"], true);
  EXPECT_EQ(r["kv_cache"], false);
  EXPECT_TRUE(r["median_ms"].is_number_float());
  EXPECT_DOUBLE_EQ(r["median_ms"].get<double>(), 0.25);
  EXPECT_EQ(r["samples"], 10);
  EXPECT_EQ(r["seed"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(r["name"], "123");
  EXPECT_EQ(r["G_req"], "4");
  EXPECT_TRUE(r["max_abs_err"].is_null()) << "no metrics: null, not \"\"";
  EXPECT_TRUE(r["pct_peak"].is_null());
  EXPECT_EQ(r["status"], "pass");
}

TEST(Results, TheMarkdownTableShowsSpeedupOverTheBaseline) {
  Record base = record("cpu-ref", Status::pass, "");
  base.timing = TimingStats{};
  base.timing->median_ms = 10;
  base.g_req = SplitRequest{};
  Record fast = record("cpu-flash", Status::pass, "");
  fast.timing = TimingStats{};
  fast.timing->median_ms = 2.5;
  fast.metrics = Metrics{};
  std::ostringstream os;
  print_tables(os, {base, fast}, "cpu-ref", Tables::detail);
  EXPECT_NE(os.str().find("| 4.00x |"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("2 records: 2 pass"), std::string::npos) << os.str();
}

TEST(Results, TheDetailTableShowsSamplesSpreadBatchAndTheNoiseNote) {
  Record r = record("cpu-flash", Status::pass, "");
  r.timing = TimingStats{};
  r.timing->median_ms = 0.0123;
  r.timing->samples = 10;
  r.timing->spread = 0.031;
  r.timing->batch = 5;
  r.timing->note = "noisy: spread 3.1% > 0.5% after 10 samples (cap)";
  r.tflops = 0.00123;
  std::ostringstream os;
  print_markdown(os, {r}, "cpu-ref");
  EXPECT_NE(os.str().find("pass; noisy: spread 3.1% > 0.5% after 10 samples (cap)"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("| 0.0123 | 10 (batch=5) | 3.1% | 0.00123 |"), std::string::npos) << os.str();
}
