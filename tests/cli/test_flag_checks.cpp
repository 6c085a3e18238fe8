// Every numeric and text flag of every subcommand is checked at parse time: nonsense (negative
// counts, NaN, a wrapped -1, an empty shard) exits 2 naming the flag before anything runs; and the
// other inputs that used to be accepted or named vaguely are input errors naming file, line or flag.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_helpers.hpp"
#include "helpers.hpp"

using fa::test::run_cli;

namespace {

std::string results_file() {
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const auto csv = fa::test::temp_file(".csv", "");
  EXPECT_EQ(run_cli("sweep " + sweep + " --paths cpu-flash --no-timing --no-table -o " + csv).status, 0);
  return csv;
}

// Exit 2 with `needle` in the output, and nothing written to `csv` (when given).
void expect_refused(const std::string& args, const std::string& needle, const std::string& csv = "") {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  if (!csv.empty()) EXPECT_TRUE(fa::test::read_csv(csv).empty()) << "nothing ran: " << args;
}

}  // namespace

TEST(FlagChecks, EveryNumericFlagRejectsNegativeNonFiniteAndWrappedValuesNamingTheFlag) {
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string run = "sweep " + sweep + " --paths cpu-flash --no-table -o " + csv + " ";
  const std::pair<const char*, const char*> sweep_flags[] = {
      {"--max-rows", "-1"},     {"--row-timeout", "nan"}, {"--row-timeout", "-1"}, {"--warmup", "-1"},
      {"--min-samples", "-5"},  {"--max-samples", "0"},   {"--seed", "-1"},        {"--shard", "''"},
      {"--shard", "3/2"},       {"--check-rows", "-1"},   {"--repeat-check", "-2"}, {"--cpu-budget", "nan"},
      {"--time-cap", "inf"},    {"--spread", "-0.1"},     {"--max-err", "nan"},    {"--min-cosine", "2"},
      {"--devices", "''"},      {"--paths", "''"},        {"--G", "''"},           {"--dtype", "''"},
      {"--json", "''"},         {"--markdown", "''"},     {"--baseline", "''"},    {"--save-tensors", "''"},
  };
  for (const auto& [flag, value] : sweep_flags) expect_refused(run + flag + " " + value, flag, csv);
  expect_refused(run + "--max-samples 1 --min-samples 10", "--min-samples", csv);

  const std::string a = results_file();
  for (const char* cmd : {"compare ", "gate --baseline "})
    for (const auto& [flag, value] : {std::pair<const char*, const char*>{"--threshold", "nan"}, {"--threshold", "-1"},
                                      {"--k", "inf"}, {"--max-err-growth", "nan"}, {"--min-samples-compare", "-1"},
                                      {"--clock-threshold", "nan"}, {"--clock-threshold", "2"}, {"--max-throttled-share", "-0.1"},
                                      {"--max-throttled-share", "1.5"}})
      expect_refused(std::string(cmd) + a + " " + a + " " + flag + " " + value, flag);
  expect_refused("merge " + a + " -o " + a + ".m --seed -1", "--seed");
  expect_refused("merge " + a + " -o " + a + ".m --shards 0", "--shards");
  expect_refused("fit " + a + " --seed -1", "--seed");
  expect_refused("fit " + a + " --folds 1", "--folds");
}

TEST(FlagChecks, FilesNamedByFlagsMustBeWhatTheFlagNeeds) {
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string run = "sweep " + sweep + " --paths cpu-flash --no-table -o " + csv + " ";
  expect_refused(run + "--heuristic fa2 --heuristic-file /nonexistent.json", "--heuristic-file", csv);
  expect_refused(run + "--heuristic-file /tmp", "--heuristic-file", csv);
  expect_refused(run + "--load-tensors /nonexistent", "--load-tensors", csv);
  expect_refused(run + "--baseline no-such-path", "--baseline", csv);
  expect_refused("swep " + sweep, "unknown subcommand 'swep'");
}

TEST(FlagChecks, SweepFilesWithoutProblemsAndUnknownPathsAreNamedWithFileAndLine) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto header_only = fa::test::temp_file(".csv", "name,B,H,S,D\n");
  expect_refused("sweep " + header_only + " -o " + csv, header_only + ": field 'problems'", csv);
  const auto empty_yaml = fa::test::temp_file(".yaml", "problems: []\n");
  expect_refused("sweep " + empty_yaml + " -o " + csv, empty_yaml + ": field 'problems'", csv);
  const auto bad_path = fa::test::temp_file(".yaml", "paths: [cpu-flash, nope]\nproblems:\n  - {B: 1, H: 2, S: 4, D: 16}\n");
  expect_refused("sweep " + bad_path + " -o " + csv, bad_path + ":1: field 'paths': unknown path 'nope'", csv);
}

TEST(FlagChecks, ResultsFilesWithOutOfRangeNumbersAreInputErrorsNamingTheCell) {
  const std::string a = results_file();
  std::ifstream in(a);
  std::string header, line;
  std::getline(in, header);
  std::getline(in, line);
  const auto cells = fa::test::csv_fields(header);
  const size_t b_col = size_t(std::find(cells.begin(), cells.end(), "B") - cells.begin());
  auto fields = fa::test::csv_fields(line);
  fields[b_col] = "12345678901234567890123";
  std::string joined;
  for (const auto& f : fields) joined += (joined.empty() ? "" : ",") + (f.find(',') == std::string::npos ? f : "\"" + f + "\"");
  const auto huge = fa::test::temp_file(".csv", header + "\n" + joined + "\n");
  expect_refused("table " + huge, huge + ":2: field 'B': '12345678901234567890123' is out of range");
}

// A flag given twice, bare or with a value its check refuses is named as it was typed: CLI11 names
// an option by its long name, and `-o a -o b` read "--csv: At Most 1 required but received 2", a
// flag the user never wrote.
TEST(FlagChecks, AFlagGivenTwiceBareOrRefusedIsNamedAsTyped) {
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const auto csv = fa::test::temp_file(".csv", ""), other = fa::test::temp_file(".csv", "");
  const std::string run = "sweep " + sweep + " --paths cpu-flash --no-timing --no-table ";
  const std::pair<std::string, std::string> cases[] = {
      {run + "-o " + csv + " -o " + other, "-o: given 2 times; it takes 1 value"},
      {run + "--csv " + csv + " --csv=" + other, "--csv: given 2 times; it takes 1 value"},
      {run + "-o " + csv + " --csv " + other, "-o and --csv: given 2 times (one flag, two names)"},
      {"merge " + csv + " -o " + csv + ".m -o " + other, "-o: given 2 times"},
      {run + "-o", "-o: 1 required"},
      {run + "-o ''", "-o: an empty value is not allowed"},
      {"check " + csv + " -o ''", "-o: an empty value is not allowed"}};
  for (const auto& [args, named] : cases) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(named), std::string::npos) << args << "\n" << r.output;
    if (args.find("--csv") == std::string::npos) {
      EXPECT_EQ(r.output.find("--csv"), std::string::npos) << "a name the user did not type: " << r.output;
    }
  }
  EXPECT_TRUE(fa::test::read_csv(csv).empty() && fa::test::read_csv(other).empty()) << "nothing ran";
}
