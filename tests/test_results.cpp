// Printers: the CSV has the documented columns, escapes text and writes each row at once; JSON
// Lines starts with the run's metadata. Reading back for --resume: tests/test_resume.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness/results.hpp"
#include "harness/summary.hpp"
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
  EXPECT_EQ(r["Hk"], "2");
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
  print_markdown(os, {base, fast}, "cpu-ref");
  EXPECT_NE(os.str().find("| 4.00x |"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("2 records: 2 pass"), std::string::npos) << os.str();
}
