// YAML sweep loading: explicit rows, grid (cartesian), zip (lists advancing together), defaults,
// paths and thresholds; malformed files name file:line and the field.
#include <gtest/gtest.h>

#include <set>

#include "harness/sweep/sweep.hpp"
#include "helpers.hpp"

using namespace fa;
using fa::test::temp_file;

TEST(SweepYaml, ExpandsRowsGridsAndZipsWithFileDefaults) {
  const auto f = temp_file(".yaml", R"(
defaults: {dtype: [fp16, bf16], G: [0, 4], causal: 1}
paths: [cpu-flash, cpu-ref]
thresholds: {max_err: 0.02, cosine: 0.99}
problems:
  - {name: one, B: 1, H: 2, S: 10, D: 64}
  - grid: {B: [1, 2], S: [16, 32, 64]}
    H: 4
    D: 32
  - zip: {S: [1, 1, 2048], Sk: [4096, 8192, 2048]}
    grid: {D: [64, 128]}
    B: 1
    H: 8
    causal: 0
)");
  const Sweep s = load_yaml_sweep(f, Overrides{});
  // 1 row + 2*3 grid + 2 grid x 3 zip, each for 2 dtypes.
  ASSERT_EQ(s.rows.size(), size_t(2 * (1 + 6 + 6)));
  EXPECT_EQ(s.paths, (std::vector<std::string>{"cpu-flash", "cpu-ref"}));
  EXPECT_DOUBLE_EQ(*s.thresholds.max_err, 0.02);
  EXPECT_DOUBLE_EQ(*s.thresholds.cosine, 0.99);
  EXPECT_EQ(s.rows[0].problem.name, "one");
  EXPECT_TRUE(s.rows[0].problem.causal);
  EXPECT_EQ(s.rows[0].splits.size(), 2u);
  std::set<std::pair<int64_t, int64_t>> grid;
  for (size_t i = 2; i < 14; ++i) grid.insert({s.rows[i].problem.B, s.rows[i].problem.S});
  EXPECT_EQ(grid.size(), 6u);
  std::set<std::tuple<int64_t, int64_t, int64_t>> zipped;
  for (size_t i = 14; i < s.rows.size(); ++i) {
    const Problem& p = s.rows[i].problem;
    EXPECT_FALSE(p.causal);
    zipped.insert({p.S, p.Sk, p.D});
  }
  const std::set<std::tuple<int64_t, int64_t, int64_t>> want = {
      {1, 4096, 64}, {1, 8192, 64}, {2048, 2048, 64}, {1, 4096, 128}, {1, 8192, 128}, {2048, 2048, 128}};
  EXPECT_EQ(zipped, want);
}

static void expect_yaml_error(const std::string& text, const std::string& field, int line) {
  const auto f = temp_file(".yaml", text);
  try {
    load_yaml_sweep(f, Overrides{});
    FAIL() << "no error for:\n" << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.field, field) << e.what();
    EXPECT_EQ(e.where.line, line) << e.what();
    EXPECT_NE(std::string(e.what()).find(f + ":"), std::string::npos) << e.what();
  }
}

TEST(SweepYaml, ZipListsOfDifferentLengthsAreAnErrorAtTheirLine) {
  expect_yaml_error("problems:\n  - B: 1\n    H: 2\n    D: 64\n    zip:\n      S: [1, 2]\n      Sk: [3]\n", "zip.Sk", 7);
}
TEST(SweepYaml, AGridThatIsNotAMapIsAnError) {
  expect_yaml_error("problems:\n  - {B: 1, H: 2, S: 3, D: 64}\n  - grid: [1, 2]\n", "grid", 3);
}
TEST(SweepYaml, ANonNumberInAGridNamesTheField) {
  expect_yaml_error("problems:\n  - grid: {S: [1, two]}\n    B: 1\n    H: 2\n    D: 64\n", "S", 2);
}
TEST(SweepYaml, SyntaxErrorsCarryTheirLine) { expect_yaml_error("problems:\n  - {B: 1, H: [2\n", "yaml", 3); }
TEST(SweepYaml, UnknownTopLevelKeysAreRejected) { expect_yaml_error("problem:\n  - {B: 1}\n", "problem", 1); }
TEST(SweepYaml, AMissingRequiredFieldIsNamed) { expect_yaml_error("problems:\n  - {B: 1, H: 2, D: 64}\n", "S", 2); }
TEST(SweepYaml, ADuplicateKeyIsAnErrorAtItsSecondLine) {
  expect_yaml_error("problems:\n  - B: 1\n    H: 2\n    S: 3\n    D: 64\n    S: 5\n", "S", 6);
  expect_yaml_error("problems:\n  - {B: 1, H: 2, S: 3, D: 64}\nproblems:\n  - {B: 2, H: 2, S: 3, D: 64}\n", "problems", 3);
}
TEST(SweepYaml, AnEmptyListIsAnErrorNotTheDefault) {
  expect_yaml_error("problems:\n  - {B: 1, H: 2, S: 3, D: 64, G: []}\n", "G", 2);
  expect_yaml_error("defaults:\n  dtype: []\nproblems:\n  - {B: 1, H: 2, S: 3, D: 64}\n", "dtype", 2);
}
TEST(SweepYaml, TheFnuzDtypesLoadAndAMisspeltOneNamesItsLineAndField) {
  const auto f = temp_file(".yaml", "defaults: {dtype: [fp8_e4m3fnuz, fp8_e5m2fnuz]}\nproblems:\n  - {B: 1, H: 2, S: 3, D: 64}\n");
  const Sweep s = load_yaml_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].problem.dtype, DType::fp8_e4m3fnuz);
  EXPECT_EQ(s.rows[1].problem.dtype, DType::fp8_e5m2fnuz);
  expect_yaml_error("problems:\n  - {B: 1, H: 2, S: 3, D: 64}\n  - {B: 1, H: 2, S: 3, D: 64, dtype: fp8_e5m2fnz}\n",
                    "dtype", 3);
}
TEST(SweepYaml, ASecondYamlDocumentIsAnError) {
  expect_yaml_error("problems:\n  - {B: 1, H: 2, S: 3, D: 64}\n---\nproblems:\n  - {B: 9, H: 2, S: 3, D: 64}\n", "file", 4);
}
TEST(SweepYaml, AStrayFlowEndIsAnErrorNotAHang) {
  // Found by fuzz/fuzz_sweep_yaml: yaml-cpp's LoadAll never returned on these 11 bytes.
  expect_yaml_error(", causal: ]", "file", 1);
}
TEST(SweepYaml, NanOrNegativeThresholdsAreErrors) {
  expect_yaml_error("thresholds: {max_err: .nan}\nproblems:\n  - {B: 1, H: 2, S: 3, D: 64}\n", "thresholds.max_err", 1);
  expect_yaml_error("thresholds:\n  max_err: -0.5\nproblems:\n  - {B: 1, H: 2, S: 3, D: 64}\n", "thresholds.max_err", 2);
  expect_yaml_error("thresholds:\n  cosine: .nan\nproblems:\n  - {B: 1, H: 2, S: 3, D: 64}\n", "thresholds.cosine", 2);
}
