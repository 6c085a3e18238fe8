// The fa-bench binary end to end: a sweep writes its CSV and exits 0; bad input exits 2 with a
// message naming file:line and the field, before measuring anything; an invalid row inside a good
// sweep is recorded while the other rows run; `list --names` prints one kind of path for scripts.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "helpers.hpp"

namespace {

struct Result {
  int status;
  std::string output;
};

Result run(const std::string& args) {
  const std::string cmd = std::string(FABENCH_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), int(buf.size()), p)) out += buf.data();
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

int count_lines(const std::string& path) {
  std::ifstream f(path);
  int n = 0;
  for (std::string l; std::getline(f, l);) ++n;
  return n;
}

const char* kFast = " --time-cap 0.01 --min-samples 2 --no-table";

}  // namespace

TEST(Cli, ASweepOnTheCpuWritesEveryRecordAndExitsZero) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,Sk,D,causal,G,dtype\n1,2,5,9,32,1,0|2,fp16|bf16\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const Result r = run("sweep " + sweep + " --paths cpu-flash,cpu-ref -o " + csv + kFast);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count_lines(csv), 1 + 2 * 2 * 2) << r.output;  // header + 2 dtypes x 2 paths x 2 G
  EXPECT_NE(r.output.find("8 records: 6 pass 2 skip"), std::string::npos) << r.output;
}

TEST(Cli, BadInputExitsTwoNamingFileLineAndField) {
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"B,H,S\n1,2,3\n", ":1: field 'D'"},
      {"B,H,S,D\n1,2,3,64\n1,2,x,64\n", ":3: field 'S'"},
      {"B,H,S,D,dtype\n1,2,3,64,fp8\n", ":2: field 'dtype'"},
  };
  for (const auto& c : cases) {
    const auto sweep = fa::test::temp_file(".csv", c.text);
    const auto csv = fa::test::temp_file(".csv", "");
    const Result r = run("sweep " + sweep + " -o " + csv + kFast);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find(sweep + c.expect), std::string::npos) << r.output;
    EXPECT_EQ(count_lines(csv), 0) << "nothing may run before the input is known good";
  }
  const auto yaml = fa::test::temp_file(".yaml", "problems:\n  - grid: {S: [1, 2]}\n    zip: {Sk: 3}\n    B: 1\n    H: 1\n    D: 8\n");
  const Result y = run("sweep " + yaml + kFast);
  EXPECT_EQ(y.status, 2) << y.output;
  EXPECT_NE(y.output.find(yaml + ":3: field 'zip.Sk'"), std::string::npos) << y.output;
  const auto ok = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n");
  const Result p = run("sweep " + ok + " --paths nosuch" + kFast);
  EXPECT_EQ(p.status, 2) << p.output;
  EXPECT_NE(p.output.find("unknown path 'nosuch'"), std::string::npos) << p.output;
}

TEST(Cli, AnInvalidRowIsRecordedAndTheRestOfTheSweepIsKept) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,Hk,S,D\n1,2,2,4,16\n1,6,4,4,16\n1,2,1,4,16\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const Result r = run("sweep " + sweep + " --paths cpu-flash -o " + csv + kFast);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(sweep + ":3: field 'Hk'"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(csv), 4) << "header, two passes and the invalid record";
  EXPECT_NE(r.output.find("3 records: 2 pass 1 invalid"), std::string::npos) << r.output;
}

TEST(Cli, RunListAndInfoWork) {
  const auto csv = fa::test::temp_file(".csv", "");
  const Result r = run("run --B 1 --H 4 --Hk 2 --S 1 --Sk 100 --D 64 --kv-cache --paths cpu-flash -o " + csv + kFast);
  EXPECT_EQ(r.status, 0) << r.output;
  const Result l = run("list");
  EXPECT_EQ(l.status, 0);
  for (const char* name : {"cpu-ref", "cpu-flash", "naive", "tiled", "decode", "kv-cache", "splitk", "auto"})
    EXPECT_NE(l.output.find(std::string("| ") + name + " |"), std::string::npos) << name << "\n" << l.output;
  const Result i = run("info");
  EXPECT_EQ(i.status, 0);
  EXPECT_NE(i.output.find("cpu "), std::string::npos) << i.output;
}

TEST(Cli, ListNamesPrintsThePathsOfOneKindOneALine) {
  std::string gpu = FABENCH_GPU_PATHS;  // CMakeLists.txt's GPU path list, in its order
  for (char& c : gpu)
    if (c == ',') c = '\n';
  gpu += "\n";
  const Result g = run("list --names gpu");
  EXPECT_EQ(g.status, 0);
  EXPECT_TRUE(g.output == gpu || g.output == gpu + "auto\n") << g.output;  // auto is gpu where one answers
  const Result c = run("list --names cpu");
  EXPECT_EQ(c.status, 0);
  EXPECT_EQ(c.output.rfind("cpu-ref\ncpu-flash\n", 0), 0u) << c.output;
}
