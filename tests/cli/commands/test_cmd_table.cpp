// `fa-bench table` end to end: a results file the binary wrote (a CPU sweep) and a handwritten
// one in the same schema from another tool (path torch-flash, as scripts/sdpa_baseline.py
// writes) print as one compact table, the peer's column beside fa-bench's, cell for cell.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli_helpers.hpp"
#include "helpers.hpp"

namespace {

const char* const kTorchHeader =
    "schema,name,B,H,Hk,S,Sk,D,causal,dtype,layout,kv_cache,scale,seed,path,ran_path,G_req,G_used,status,reason,"
    "median_ms,spread,samples,timing_mode,tflops,gbps\n";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

// The output line that starts with `prefix`, or "" when none does.
std::string line_starting(const std::string& text, const std::string& prefix) {
  for (const auto& l : lines_of(text))
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

class TableOfTwoFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto sweep = fa::test::temp_file(".csv", "name,B,H,Hk,S,Sk,D,causal,G\nt1,1,2,1,24,40,32,1,0\nt2,1,2,2,16,16,16,0,0|2\n");
    fa_ = new std::string(fa::test::temp_file(".csv", ""));
    const auto r = fa::test::run_cli("sweep " + sweep + " --paths cpu-flash --timing hot --time-cap 0.01 --no-table -o " + *fa_);
    ASSERT_EQ(r.status, 0) << r.output;
    // t1 as fa-bench wrote it (scale 0: 1/sqrt(D); seed 1), and a problem fa-bench did not run.
    torch_ = new std::string(fa::test::temp_file(".csv", std::string(kTorchHeader) +
        "3,t1,1,2,1,24,40,32,1,fp16,bshd,0,0,1,torch-flash,torch-flash,0,0,pass,timed only,0.01,0.001,10,cold,12.345,6\n"
        "3,t9,1,4,4,64,64,64,0,bf16,bshd,0,0,1,torch-flash,torch-flash,0,0,skip,flash refuses,,,,,,\n"));
  }
  static std::string *fa_, *torch_;
};
std::string* TableOfTwoFiles::fa_ = nullptr;
std::string* TableOfTwoFiles::torch_ = nullptr;

TEST_F(TableOfTwoFiles, PutsThePeersColumnBesideFaBenchsPaths) {
  const auto r = fa::test::run_cli("table " + *fa_ + " " + *torch_);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("| problem | unit | cpu-flash | cpu-flash G=2 | torch-flash |"), std::string::npos) << r.output;
  const std::string t1 = line_starting(r.output, "| t1 fp16 | TFLOP/s | ");
  ASSERT_FALSE(t1.empty()) << r.output;
  const std::string tail = " |  | 12.3 |";  // no G=2 record of t1; torch-flash's 12.345 to 3 digits
  ASSERT_GT(t1.size(), tail.size());
  EXPECT_EQ(t1.substr(t1.size() - tail.size()), tail) << t1;
  EXPECT_EQ(line_starting(r.output, "| t9 bf16 |"), "| t9 bf16 | TFLOP/s |  |  | skip |") << r.output;
  EXPECT_NE(line_starting(r.output, "| t2 fp16 | TFLOP/s | "), "") << r.output;
  EXPECT_NE(r.output.find("5 records from 2 files"), std::string::npos) << r.output;
}

TEST_F(TableOfTwoFiles, WritesTheSameGridAsCsv) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = fa::test::run_cli("table " + *fa_ + " " + *torch_ + " --csv " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream f(csv);
  std::stringstream text;
  text << f.rdbuf();
  const auto ls = lines_of(text.str());
  ASSERT_EQ(ls.size(), 4u) << text.str();
  EXPECT_EQ(ls[0], "problem,unit,cpu-flash,cpu-flash G=2,torch-flash");
  EXPECT_EQ(ls[1].rfind("t1 fp16,TFLOP/s,", 0), 0u) << ls[1];
  EXPECT_EQ(ls[1].substr(ls[1].size() - 6), ",,12.3") << ls[1];
  EXPECT_EQ(ls[3], "t9 bf16,TFLOP/s,,,skip");
}

TEST_F(TableOfTwoFiles, ALaterRecordOfTheSameKeyReplacesTheEarlierOne) {
  const auto newer = fa::test::temp_file(".csv", std::string(kTorchHeader) +
      "3,t1,1,2,1,24,40,32,1,fp16,bshd,0,0,1,torch-flash,torch-flash,0,0,pass,timed only,0.01,0.001,10,cold,20.01,6\n");
  const auto r = fa::test::run_cli("table " + *fa_ + " " + *torch_ + " " + newer);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string t1 = line_starting(r.output, "| t1 fp16 | TFLOP/s | ");
  EXPECT_EQ(t1.substr(t1.size() - 7), " 20.0 |") << t1;
  EXPECT_NE(r.output.find("5 records from 3 files"), std::string::npos) << r.output;
}

TEST(Table, AnUnreadableFileExitsTwoNamingIt) {
  const auto bad = fa::test::temp_file(".csv", std::string(kTorchHeader) +
      "3,t1,1,2,1,24,40,32,1,fp16,bshd,0,0,1,torch-flash,torch-flash,0,0,pass,,fast,0.001,10,cold,1,1\n");
  const auto r = fa::test::run_cli("table " + bad);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ":2: field 'median_ms'"), std::string::npos) << r.output;
  EXPECT_EQ(fa::test::run_cli("table /nonexistent/results.csv").status, 2);
}

}  // namespace
