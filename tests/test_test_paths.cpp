// The test-only rows of cli/test_paths.cpp as a user runs them: `test-rtz-cpu-flash`, cpu-flash
// with round-toward-zero stores emulated, must fail validation on every problem where cpu-flash
// itself passes — mostly through the rounding-bias rule, which the max-error rule alone misses.
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
