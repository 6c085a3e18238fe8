// The fa-bench binary end to end: a sweep writes its CSV and exits 0; bad input exits 2 with a
// message naming file:line and the field, before measuring anything; an invalid row inside a good
// sweep is recorded while the other rows run; `list --names` prints one kind of path for scripts.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli_helpers.hpp"
#include "harness/build_info.hpp"
#include "helpers.hpp"

namespace {

using Result = fa::test::CliResult;

Result run(const std::string& args) { return fa::test::run_cli(args); }

int count_lines(const std::string& path) {
  std::ifstream f(path);
  int n = 0;
  for (std::string l; std::getline(f, l);) ++n;
  return n;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
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
  // Every line with its content: this machine's thread count, the build that made this binary,
  // and a gpu line that names the device and its arch or says why there is none.
  EXPECT_TRUE(std::regex_search(i.output, std::regex("(^|\n)host +\\S+\n"))) << i.output;
  EXPECT_TRUE(std::regex_search(i.output, std::regex("\ncpu +\\S.* \\([1-9][0-9]* threads\\)\n"))) << i.output;
  EXPECT_TRUE(std::regex_search(i.output, std::regex("\nmemory +\\S+"))) << i.output;
  EXPECT_NE(i.output.find(fmt::format("\nbuild       backend={} commit={} compiler=", FABENCH_BACKEND, fa::build_git_commit())),
            std::string::npos)
      << i.output;
  EXPECT_TRUE(std::regex_search(i.output, std::regex("\ngpu +(none: \\S.*|\\S.* \\(\\S+\\))\n"))) << i.output;
}

// --- outputs: checked writes, inputs protected, outputs checked before truncation, locks ---

TEST(Cli, AFailedWriteEndsTheRunWithAnErrorNamingTheFile) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full on this machine";
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n");
  const auto csv = fa::test::temp_file(".csv", "");
  for (const std::string& outs : {std::string("-o /dev/full"), "-o " + csv + " --json /dev/full"}) {
    const Result r = run("sweep " + sweep + " --paths cpu-flash --no-timing " + outs + kFast);
    EXPECT_NE(r.status, 0) << outs << "\n" << r.output;
    EXPECT_NE(r.output.find("'/dev/full'"), std::string::npos) << r.output;
  }
}

TEST(Cli, AnOutputThatIsAnInputIsRefusedWhateverItsName) {
  const std::string text = "B,H,S,D\n1,1,2,8\n";
  const auto sweep = fa::test::temp_file(".csv", text);
  const std::string alias = sweep + ".alias.csv";
  ASSERT_EQ(link(sweep.c_str(), alias.c_str()), 0);
  const auto csv = fa::test::temp_file(".csv", "");
  for (const std::string& outs : {"-o " + sweep, "-o " + alias, "-o " + csv + " --json " + alias}) {
    const Result r = run("sweep " + sweep + " --paths cpu-flash --no-timing " + outs + kFast);
    EXPECT_EQ(r.status, 2) << outs << "\n" << r.output;
    EXPECT_NE(r.output.find("is the input"), std::string::npos) << r.output;
    EXPECT_EQ(slurp(sweep), text) << outs;
  }
}

TEST(Cli, AnUnwritableJsonPathIsFoundBeforeTheCsvIsTruncated) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n");
  const auto csv = fa::test::temp_file(".csv", "earlier results\n");
  const Result r = run("sweep " + sweep + " --paths cpu-flash -o " + csv + " --json /nonexistent/dir/r.jsonl" + kFast);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/dir/r.jsonl"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(csv), "earlier results\n");
}

TEST(Cli, AnOutputLockedByAnotherRunIsRefusedNamingTheFile) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n");
  const auto csv = fa::test::temp_file(".csv", "another run's rows\n");
  const int fd = open(csv.c_str(), O_RDWR);
  ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  const Result r = run("sweep " + sweep + " --paths cpu-flash -o " + csv + kFast);
  close(fd);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("'" + csv + "' is locked"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(csv), "another run's rows\n");
}

// --- crashes become records or input errors ---

TEST(Cli, SizesThatOverflowAreInvalidRecordsNotACrash) {
  const auto csv = fa::test::temp_file(".csv", "");
  const Result r = run("run --B 1 --H 1 --S 4611686018427387904 --Sk 1 --D 64 --causal --paths cpu-flash -o " + csv + kFast);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("overflow"), std::string::npos) << r.output;
  EXPECT_EQ(count(slurp(csv), ",invalid,"), 1) << slurp(csv);
}

TEST(Cli, AFilterNestedTooDeeplyIsAnInputErrorNamingTheFlag) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n");
  const std::string expr = std::string(20000, '(') + "S>0" + std::string(20000, ')');
  const Result r = run("sweep " + sweep + " --paths cpu-flash --filter '" + expr + "'" + kFast);
  EXPECT_EQ(r.status, 2) << r.output.substr(0, 300);
  EXPECT_NE(r.output.find("field '--filter'"), std::string::npos) << r.output.substr(0, 300);
}

TEST(Cli, AProblemTooLargeForHostMemoryIsAnOomRecordAndTheSweepGoesOn) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,Sk,D,causal\n1,1,17592186044416,1,64,1\n1,1,4,4,8,0\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const Result r = run("sweep " + sweep + " --paths cpu-flash --no-timing -o " + csv + kFast);
  EXPECT_EQ(r.status, 0) << r.output;
  const std::string out = slurp(csv);
  EXPECT_EQ(count(out, ",oom,"), 1) << out;
  EXPECT_EQ(count(out, ",pass,"), 1) << out;
}

// --- resume ---

TEST(Cli, ResumeOfAHeaderOnlyFileKeepsOneHeaderAndResumesAgain) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n1,1,3,8\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string base = "sweep " + sweep + " --paths cpu-flash --no-timing -o " + csv + kFast;
  ASSERT_EQ(run(base + " --shard 3/4").status, 0);  // an empty shard: a header-only file
  const Result first = run(base + " --resume --filter 'S==2'");
  EXPECT_EQ(first.status, 0) << first.output;
  const Result second = run(base + " --resume");
  EXPECT_EQ(second.status, 0) << second.output;
  const std::string out = slurp(csv);
  EXPECT_EQ(count(out, "schema,run_id"), 1) << out;
  EXPECT_EQ(count_lines(csv), 3) << out;
}

TEST(Cli, ResumeRefusesAFileOfAnotherSchemaColumnsTimingOrDeviceAndLeavesItUntouched) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n1,1,3,8\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string base = "sweep " + sweep + " --paths cpu-flash -o " + csv + kFast;
  ASSERT_EQ(run(base + " --filter 'S==2'").status, 0);
  const std::string good = slurp(csv);
  const size_t nl = good.find('\n');
  const std::string header = good.substr(0, nl), row = good.substr(nl + 1);
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  struct Case {
    std::string text, expect, extra;
  };
  const Case cases[] = {
      {header + "\n0" + row.substr(row.find(',')), "schema", ""},                      // schema 0 rows
      {replace(header, "B,H,", "H,B,") + "\n" + row, "columns", ""},                        // reordered
      {header + ",extra\n" + replace(row, "\n", ",x\n"), "columns", ""},                    // extra column
      {good, "timing mode", " --timing hot"},                                              // cold file, hot run
      {header + "\n" + replace(row, ",cold,", ",hot,"), "timing mode", ""},                 // hot file, cold run
  };
  for (const auto& c : cases) {
    std::ofstream(csv) << c.text;
    const Result r = run(base + " --resume" + c.extra);
    EXPECT_EQ(r.status, 2) << c.expect << "\n" << r.output;
    EXPECT_NE(r.output.find("'" + csv + "'"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    EXPECT_EQ(slurp(csv), c.text) << "a refused file is left untouched";
  }
}

TEST(Cli, ResumeRefusesAFileFromAnotherDevice) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string base = "sweep " + sweep + " --paths cpu-flash --no-timing -o " + csv + kFast;
  ASSERT_EQ(run(base).status, 0);
  // The device cell of the one record, found by the header's column index (no cell before it is quoted here).
  std::string text = slurp(csv);
  const std::string header = text.substr(0, text.find('\n'));
  int column = 0;
  for (size_t at = 0; at < header.find(",device,"); at = header.find(',', at + 1)) ++column;
  size_t start = text.find('\n') + 1;
  for (int i = 0; i < column; ++i) start = text.find(',', start) + 1;
  text.replace(start, text.find(',', start) - start, "AMD Instinct MI300X");
  std::ofstream(csv) << text;
  const Result r = run(base + " --resume");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("device"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(csv), text);
}

TEST(Cli, ResumeTellsApartRowsThatDifferOnlyByName) {
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D\na,1,1,2,8\nb,1,1,2,8\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string base = "sweep " + sweep + " --paths cpu-flash --no-timing -o " + csv + kFast;
  ASSERT_EQ(run(base + " --filter 'name==a'").status, 0);
  ASSERT_EQ(run(base + " --resume").status, 0);
  EXPECT_EQ(count_lines(csv), 3) << slurp(csv);
}

TEST(Cli, ResumeDoesNotAppendInvalidRowsAgain) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,Hk,S,D\n1,2,2,4,16\n1,6,4,4,16\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string base = "sweep " + sweep + " --paths cpu-flash --no-timing -o " + csv + kFast;
  EXPECT_EQ(run(base).status, 2);
  EXPECT_EQ(run(base + " --resume").status, 2) << "the invalid row is still in the file";
  EXPECT_EQ(count_lines(csv), 3) << slurp(csv);
}

TEST(Cli, AResumedRunCountsFailuresAlreadyInTheFile) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,2,5,32\n1,2,6,32\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string base = "sweep " + sweep + " --paths cpu-flash --no-timing -o " + csv + kFast;
  ASSERT_EQ(run(base + " --filter 'S==5' --max-err 0 --min-cosine 1.0").status, 1) << slurp(csv);
  const Result r = run(base + " --resume");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(count(slurp(csv), ",pass,"), 1) << slurp(csv);
}

TEST(Cli, ResumeKeepsOneMetaLineInJsonLines) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n1,1,3,8\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const auto json = fa::test::temp_file(".jsonl", "");
  const std::string base = "sweep " + sweep + " --paths cpu-flash --no-timing -o " + csv + " --json " + json + kFast;
  ASSERT_EQ(run(base + " --filter 'S==2'").status, 0);
  ASSERT_EQ(run(base + " --resume").status, 0);
  const std::string out = slurp(json);
  EXPECT_EQ(count(out, "{\"meta\":"), 1) << out;
  EXPECT_EQ(count_lines(json), 3) << out;
}

// --- bounded expansion and malformed values ---

TEST(Cli, AnExpansionPastMaxRowsIsAnInputErrorAtTheEntrysLine) {
  // 10^6 rows from one grid line (YAML aliases), over the default cap of 100000.
  const auto yaml = fa::test::temp_file(
      ".yaml", "problems:\n  - B: 1\n    grid: {H: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], S: *a, Sk: *a, D: *a, seed: *a, Hk: *a}\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const Result r = run("sweep " + yaml + " --paths cpu-flash --filter 'S<0' -o " + csv + kFast);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(yaml + ":2:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--max-rows"), std::string::npos) << r.output;
  const auto small = fa::test::temp_file(".yaml", "problems:\n  - {B: 1, H: 1, D: 8, grid: {S: [1, 2, 3]}}\n");
  const Result capped = run("sweep " + small + " --paths cpu-flash --max-rows 2 -o " + csv + kFast);
  EXPECT_EQ(capped.status, 2) << capped.output;
  EXPECT_NE(capped.output.find(small + ":2:"), std::string::npos) << capped.output;
}

TEST(Cli, NanOrNegativeThresholdsAndBudgetsAreRejectedNamingTheFlag) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n");
  for (const std::string flag : {"--max-err nan", "--max-err -1", "--min-cosine nan", "--cpu-budget -5",
                                 "--cpu-budget nan", "--time-cap nan"}) {
    const auto csv = fa::test::temp_file(".csv", "");
    const Result r = run("sweep " + sweep + " --paths cpu-flash --no-timing --no-table -o " + csv + " " + flag);
    EXPECT_EQ(r.status, 2) << flag << "\n" << r.output;
    EXPECT_NE(r.output.find(flag.substr(0, flag.find(' '))), std::string::npos) << r.output;
    EXPECT_EQ(count_lines(csv), 0) << flag;
  }
}

TEST(Cli, ABadGOnTheCommandLineIsBlamedOnTheFlag) {
  const auto sweep = fa::test::temp_file(".csv", "B,H,S,D\n1,1,2,8\n");
  const Result r = run("sweep " + sweep + " --paths cpu-flash --G 3" + kFast);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("field '--G'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(sweep + ":2"), std::string::npos) << r.output;
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

