// CSV sweep loading: any column order, defaults, comments, lists, and errors that name file:line
// and the field.
#include <gtest/gtest.h>

#include "harness/sweep/sweep.hpp"
#include "helpers.hpp"

using namespace fa;
using fa::test::temp_file;

TEST(SweepCsv, ReadsColumnsInAnyOrderWithDefaultsCommentsAndBlankLines) {
  const auto f = temp_file(".csv",
                           "# a comment\n"
                           "D,S,H,B,name\n"
                           "\n"
                           "64,1500,16,1,enc\n"
                           "# another\n"
                           "128,3,8,2,dec\n");
  const Sweep s = load_csv_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), 2u);
  const Problem& p = s.rows[0].problem;
  EXPECT_EQ(p.name, "enc");
  EXPECT_EQ(p.B, 1);
  EXPECT_EQ(p.H, 16);
  EXPECT_EQ(p.Hk, 16);  // defaults to H
  EXPECT_EQ(p.S, 1500);
  EXPECT_EQ(p.Sk, 1500);  // defaults to S
  EXPECT_EQ(p.D, 64);
  EXPECT_FALSE(p.causal);
  EXPECT_EQ(p.dtype, DType::fp16);
  ASSERT_EQ(s.rows[0].splits.size(), 1u);
  EXPECT_EQ(s.rows[0].splits[0].value, 0);
  EXPECT_EQ(s.rows[1].problem.D, 128);
  EXPECT_EQ(s.rows[1].where.line, 6);
}

TEST(SweepCsv, ListCellsGiveOneRowPerDtypeEachCarryingEveryG) {
  const auto f = temp_file(".csv", "B,H,S,D,G,dtype\n1,2,3,64,0|2|auto,fp16|bf16\n");
  const Sweep s = load_csv_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].problem.dtype, DType::fp16);
  EXPECT_EQ(s.rows[1].problem.dtype, DType::bf16);
  ASSERT_EQ(s.rows[1].splits.size(), 3u);
  EXPECT_EQ(s.rows[1].splits[1].value, 2);
  EXPECT_TRUE(s.rows[1].splits[2].is_auto);
}

TEST(SweepCsv, CommandLineOverridesReplaceTheFilesGAndDtype) {
  const auto f = temp_file(".csv", "B,H,S,D,G,dtype\n1,2,3,64,0,fp16\n");
  Overrides o;
  o.G = "4|8";
  o.dtype = "bf16";
  o.seed = 99;
  const Sweep s = load_csv_sweep(f, o);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].problem.dtype, DType::bf16);
  EXPECT_EQ(s.rows[0].splits.size(), 2u);
  EXPECT_EQ(s.rows[0].problem.seed, 99u);
}

static void expect_input_error(const std::string& text, const std::string& field, int line) {
  const auto f = temp_file(".csv", text);
  try {
    load_csv_sweep(f, Overrides{});
    FAIL() << "no error for: " << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.field, field) << e.what();
    EXPECT_EQ(e.where.line, line) << e.what();
    EXPECT_NE(std::string(e.what()).find(f + ":" + std::to_string(line)), std::string::npos) << e.what();
  }
}

TEST(SweepCsv, AMissingRequiredColumnNamesTheColumnAndHeaderLine) { expect_input_error("# c\nB,H,S\n1,2,3\n", "D", 2); }
TEST(SweepCsv, ANonNumberNamesItsLineAndField) { expect_input_error("B,H,S,D\n1,2,3,64\n1,x,3,64\n", "H", 3); }
TEST(SweepCsv, AnUnknownDtypeNamesItsLineAndField) { expect_input_error("B,H,S,D,dtype\n1,2,3,64,fp8\n", "dtype", 2); }
TEST(SweepCsv, TheFnuzDtypesLoadAndAMisspeltOneNamesItsLineAndField) {
  const auto f = temp_file(".csv", "B,H,S,D,dtype\n1,2,3,64,fp8_e4m3fnuz|fp8_e5m2fnuz|float8_e4m3fnuz\n");
  const Sweep s = load_csv_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), 2u) << "torch's name is the same dtype: one row";
  EXPECT_EQ(s.rows[0].problem.dtype, DType::fp8_e4m3fnuz);
  EXPECT_EQ(s.rows[1].problem.dtype, DType::fp8_e5m2fnuz);
  expect_input_error("B,H,S,D,dtype\n1,2,3,64,fp16\n1,2,3,64,fp8_e4m3fnz\n", "dtype", 3);
}
TEST(SweepCsv, AnUnknownColumnIsRejectedByName) { expect_input_error("B,H,S,D,caual\n1,2,3,64,1\n", "caual", 1); }
TEST(SweepCsv, ABadSplitCountNamesG) { expect_input_error("B,H,S,D,G\n1,2,3,64,3\n", "G", 2); }

TEST(SweepCsv, SemanticallyInvalidRowsBecomeInvalidRowsAndTheRestLoad) {
  const auto f = temp_file(".csv", "B,H,Hk,S,D\n1,6,4,3,64\n1,2,2,0,64\n-1,2,2,3,64\n1,2,1,3,64\n");
  const Sweep s = load_csv_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), 4u);
  ASSERT_TRUE(s.rows[0].invalid);
  EXPECT_EQ(s.rows[0].invalid->field, "Hk");
  ASSERT_TRUE(s.rows[1].invalid);
  EXPECT_EQ(s.rows[1].invalid->field, "S");
  ASSERT_TRUE(s.rows[2].invalid);
  EXPECT_EQ(s.rows[2].invalid->field, "B");
  EXPECT_FALSE(s.rows[3].invalid);
}

TEST(SweepCsv, TheShippedSweepFilesLoadWithoutInvalidRows) {
  for (const char* name : {"whisper.csv", "llm-d64.csv", "flydsl.csv", "edge.csv"}) {
    const Sweep s = load_sweep(test::source_dir() + "/sweeps/" + name, Overrides{});
    EXPECT_GT(s.rows.size(), 0u) << name;
    for (const auto& r : s.rows) EXPECT_FALSE(r.invalid) << name << ":" << r.where.line;
  }
}

TEST(SweepCsv, AUtf8ByteOrderMarkIsStrippedBeforeTheHeader) {
  const auto f = temp_file(".csv", "\xEF\xBB\xBF" "B,H,S,D\n1,2,3,64\n");
  const Sweep s = load_csv_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].problem.B, 1);
}

TEST(SweepCsv, IndentedCommentLinesAreCommentsBeforeAndAfterTheHeader) {
  const auto f = temp_file(".csv", "  # shapes, from the paper\nB,H,S,D\n\t# a, b\n1,2,3,64\n");
  const Sweep s = load_csv_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].problem.S, 3);
  EXPECT_EQ(s.rows[0].where.line, 4);
}

TEST(SweepCsv, ABadCommandLineGIsBlamedOnTheFlagNotASweepLine) {
  const auto f = temp_file(".csv", "B,H,S,D\n1,2,3,64\n");
  for (const auto& [field, ovr] : {std::pair<std::string, Overrides>{"--G", Overrides{std::string("3"), {}, 1}},
                                   {"--dtype", Overrides{{}, std::string("fp8"), 1}}}) {
    try {
      load_csv_sweep(f, ovr);
      FAIL() << "no error for " << field;
    } catch (const InputError& e) {
      EXPECT_EQ(e.field, field) << e.what();
      EXPECT_EQ(e.where.file, "command line") << e.what();
      EXPECT_EQ(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
}
