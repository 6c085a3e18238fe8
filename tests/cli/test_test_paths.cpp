// The test-only rows of cli/test_paths.cpp as a user runs them: `test-rtz-cpu-flash`, cpu-flash
// with round-toward-zero stores emulated, must fail validation on every problem where cpu-flash
// itself passes — mostly through the rounding-bias rule, which the max-error rule alone misses.
// `--plant-slowdown` is refused outside FABENCH_TEST_PATHS=1 and marks every record it slows.
// `test-carry-state`, right on its first launch only, fails once timed unless --no-check-timed.
#include <gtest/gtest.h>

#include "cli_helpers.hpp"
#include "helpers.hpp"

using namespace fa;

TEST(TestPaths, RoundTowardZeroStoresFailWhereTheCorrectPathPasses) {
  // Whisper-shaped rows, large enough (>= 64 rows) for the bias bound to bite; fp16 and bf16.
  const auto sweep = test::temp_file(".csv",
                                     "name,B,H,S,Sk,D,causal,dtype\n"
                                     "enc,1,4,256,256,64,0,fp16|bf16\n"
                                     "gqa,1,4,200,300,32,1,fp16|bf16\n");
  const auto csv = test::temp_file(".csv", "");
  const auto r = test::run_cli("sweep " + sweep + " --paths cpu-flash,test-rtz-cpu-flash --no-timing --no-table -o " + csv,
                               "FABENCH_TEST_PATHS=1");
  EXPECT_EQ(r.status, 1) << r.output;
  int correct = 0, mutated = 0, by_bias = 0;
  for (const auto& row : test::read_csv(csv)) {
    if (row.at("path") == "cpu-flash") {
      EXPECT_EQ(row.at("status"), "pass") << row.at("name") << ": " << row.at("reason");
      ++correct;
    } else {
      EXPECT_EQ(row.at("status"), "fail") << row.at("name") << " " << row.at("dtype");
      by_bias += row.at("reason").find("rounding bias") != std::string::npos;
      ++mutated;
    }
  }
  EXPECT_EQ(correct, 4);
  EXPECT_EQ(mutated, 4);
  EXPECT_GE(by_bias, 1) << "at least one failure only the bias rule catches";
}

TEST(TestPaths, APlantedSlowdownIsRefusedWithoutTheTestSwitchAndReachesIsolatedChildren) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\nsmall,1,2,16,16\n");
  const auto csv = test::temp_file(".csv", "");
  const std::string cmd = "sweep " + sweep + " --paths cpu-flash --no-table --plant-slowdown 0.1 -o " + csv;
  const auto off = test::run_cli(cmd);
  EXPECT_EQ(off.status, 2) << off.output;
  EXPECT_NE(off.output.find("--plant-slowdown"), std::string::npos) << off.output;
  EXPECT_NE(off.output.find("set FABENCH_TEST_PATHS=1"), std::string::npos) << off.output;
  EXPECT_TRUE(test::read_csv(csv).empty()) << "refused before anything ran";
  const auto isolated = test::run_cli(cmd + " --isolate --timing hot --time-cap 0.01", "FABENCH_TEST_PATHS=1");
  EXPECT_EQ(isolated.status, 0) << isolated.output;
  const auto rows = test::read_csv(csv);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].at("timing_note").find("planted slowdown"), std::string::npos)
      << "the child timed with the delay and its note came back: " << rows[0].at("timing_note");
}

TEST(TestPaths, APlantedSlowdownKeepsPathNamesAndSaysSoInEveryTimedRecord) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D,G\nsmall,1,2,16,16,0|2\n");
  const auto csv = test::temp_file(".csv", "");
  const auto r = test::run_cli("sweep " + sweep + " --paths cpu-flash,cpu-ref --timing hot --time-cap 0.01 "
                               "--plant-slowdown 0.1 --table both -o " + csv, "FABENCH_TEST_PATHS=1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("slower on purpose"), std::string::npos) << "a warning for whoever reads the log\n" << r.output;
  EXPECT_NE(r.output.find("pass; planted slowdown +10%"), std::string::npos) << "the table's status column\n" << r.output;
  const auto rows = test::read_csv(csv);
  ASSERT_EQ(rows.size(), 4u) << "cpu-ref at G=2 is a skip, untimed";
  for (const auto& row : rows) {
    if (row.at("status") == "skip") continue;
    EXPECT_TRUE(row.at("path") == "cpu-flash" || row.at("path") == "cpu-ref") << row.at("path");
    EXPECT_EQ(row.at("timing_note").rfind("planted slowdown +10% (test only: +", 0), 0u) << row.at("timing_note");
    EXPECT_NE(row.at("timing_note").find("as a host wait"), std::string::npos) << "CPU paths wait on the host";
  }
}

TEST(TestPaths, APathRightOnlyOnItsFirstLaunchFailsOnceTimedUnlessTheCheckIsOff) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,Sk,D,G\nsmall,1,2,16,40,16,0|2\n");
  const auto csv = test::temp_file(".csv", "");
  const std::string cmd = "sweep " + sweep + " --paths cpu-flash,test-carry-state --timing hot --time-cap 0.01 "
                          "--no-table -o " + csv;
  const auto on = test::run_cli(cmd, "FABENCH_TEST_PATHS=1");
  EXPECT_EQ(on.status, 1) << on.output;
  auto rows = test::read_csv(csv);
  ASSERT_EQ(rows.size(), 4u) << on.output;
  for (const auto& row : rows) {
    if (row.at("path") == "cpu-flash") {
      EXPECT_EQ(row.at("status"), "pass") << row.at("reason");
      EXPECT_EQ(row.at("timed_check"), "same");
    } else {
      EXPECT_EQ(row.at("status"), "fail");
      EXPECT_EQ(row.at("reason").rfind("timed launches differ from the validated run: ", 0), 0u) << row.at("reason");
      EXPECT_NE(row.at("reason").find("O elements"), std::string::npos) << row.at("reason");
      EXPECT_EQ(row.at("timed_check"), "differs");
      EXPECT_NE(row.at("median_ms"), "") << "the timing is still recorded";
    }
  }
  const auto off = test::run_cli(cmd + " --no-check-timed", "FABENCH_TEST_PATHS=1");
  EXPECT_EQ(off.status, 0) << off.output;
  rows = test::read_csv(csv);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "pass") << row.at("path") << ": " << row.at("reason");
    EXPECT_EQ(row.at("timed_check"), "") << "not checked";
    EXPECT_NE(row.at("median_ms"), "");
  }
  const auto untimed = test::run_cli("sweep " + sweep + " --paths test-carry-state --no-timing --no-table -o " + csv,
                                     "FABENCH_TEST_PATHS=1");
  EXPECT_EQ(untimed.status, 0) << "its first launch is right\n" << untimed.output;
}

// run_record checksums the host inputs and the serving arrays around the validated launch (issue
// 44): a built-in path writing its host Q, or swapping two page-table entries, fails its record
// naming what it wrote, with and without --isolate; the same rows on cpu-flash pass.
TEST(TestPaths, ABuiltInPathWritingItsHostQOrPageTableFailsNamingIt) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,Sk,D,page_size\nwrite-q,1,2,8,24,16,0\nwrite-pages,1,2,8,24,16,4\n");
  for (const std::string isolate : {"", " --isolate"}) {
    const auto csv = test::temp_file(".csv", "");
    const auto r = test::run_cli("sweep " + sweep + " --paths cpu-flash,test-write-input --no-timing --no-table -o " + csv +
                                     isolate,
                                 "FABENCH_TEST_PATHS=1");
    EXPECT_EQ(r.status, 1) << isolate << r.output;
    const auto rows = test::read_csv(csv);
    ASSERT_EQ(rows.size(), 4u) << r.output;
    for (const auto& row : rows) {
      if (row.at("path") == "cpu-flash") {
        EXPECT_EQ(row.at("status"), "pass") << row.at("reason");
        continue;
      }
      const std::string named = row.at("name") == "write-q" ? "the path wrote its inputs (Q, element 0)"
                                                            : "the path wrote its inputs (the page table, element 0";
      EXPECT_EQ(row.at("status"), "fail") << row.at("name") << isolate;
      EXPECT_NE(row.at("reason").find(named), std::string::npos) << row.at("name") << isolate << ": " << row.at("reason");
    }
  }
}
