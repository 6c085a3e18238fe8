// The problem's field table drives every consumer: for each row, a sweep CSV column and a YAML key
// set it, the results writer emits it and the reader reads the same value back, --filter knows its
// column, JSON Lines type it by its kind, `run` has its flag, the problem key and --resume hold
// it (the name aside), and an --isolate child gets it exactly. Adds no field; a new row is checked
// by all of these at once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "cli_helpers.hpp"
#include "harness/problem_fields.hpp"
#include "harness/results/json_cell.hpp"
#include "harness/results/results_reader.hpp"
#include "harness/results/resume.hpp"
#include "harness/run/isolate.hpp"
#include "harness/sweep/filter.hpp"
#include "harness/sweep/sweep.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

// A row giving the required fields plus `f` at its example value; one problem out (dtype: one).
Problem loaded(const ProblemField& f, const std::string& ext) {
  std::map<std::string, std::string> cells = {{"B", "1"}, {"H", "4"}, {"S", "8"}, {"D", "16"}};
  cells[f.name] = f.example;
  std::string text;
  if (ext == ".csv") {
    std::string head, row;
    for (const auto& [k, v] : cells) {  // a cell with a comma (window) is quoted, as CSV has it
      const std::string cell = v.find(',') == std::string::npos ? v : "\"" + v + "\"";
      head += (head.empty() ? "" : ",") + k, row += (row.empty() ? "" : ",") + cell;
    }
    text = head + "\n" + row + "\n";
  } else {
    std::string items;
    for (const auto& [k, v] : cells) items += (items.empty() ? "" : ", ") + k + ": \"" + v + "\"";
    text = "problems:\n  - {" + items + "}\n";
  }
  const Sweep s = load_sweep(test::temp_file(ext, text), Overrides{});
  EXPECT_EQ(s.rows.size(), 1u) << f.name << " in\n" << text;
  return s.rows.at(0).problem;
}

}  // namespace

TEST(ProblemFields, TheTableHoldsEachFieldOnceWithAnExampleThatDiffersFromTheDefault) {
  ASSERT_EQ(problem_field_table().size(), kNumProblemFields);
  std::set<std::string> names;
  for (const auto& f : problem_field_table()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name << " twice";
    EXPECT_EQ(find_problem_field(f.name), &f);
    EXPECT_NE(f.cell(Problem{}), f.example) << f.name << ": the example must be a value other than the default";
  }
}

TEST(ProblemFields, EverySweepFileColumnAndYamlKeySetsItsField) {
  for (const auto& f : problem_field_table())
    for (const char* ext : {".csv", ".yaml"}) {
      EXPECT_NE(std::find(sweep_fields().begin(), sweep_fields().end(), f.name), sweep_fields().end()) << f.name;
      EXPECT_EQ(f.cell(loaded(f, ext)), f.example) << f.name << " from a " << ext << " file";
    }
}

TEST(ProblemFields, TheResultsWriterEmitsEveryFieldAndTheReaderReadsItBack) {
  const auto columns = CsvWriter::columns();
  for (const auto& f : problem_field_table()) {
    EXPECT_NE(std::find(columns.begin(), columns.end(), f.name), columns.end()) << f.name;
    Record r;
    r.problem = loaded(f, ".csv");
    r.path = "cpu-ref";
    // One field's example alone may make a problem validate refuses (seqlens_q outside thd): the
    // record is the invalid one a sweep writes for it, which the strict reader reads as written.
    r.status = Status::invalid;
    r.reason = "not run";
    const ResultsFile back = test::written({r});
    ASSERT_EQ(back.records.size(), 1u);
    EXPECT_EQ(f.cell(back.records[0].record.problem), f.example) << f.name;
  }
}

TEST(ProblemFields, TheFilterKnowsEveryFieldAsAColumn) {
  for (const auto& f : problem_field_table()) {
    const Problem p = loaded(f, ".csv");
    if (f.kind == FieldKind::text) continue;  // a name with a space is no filter word; `name` is a column all the same
    const std::string expr = std::string(f.name) + "==" + (f.number ? fmt::format("{:.17g}", f.number(p)) : f.example);
    EXPECT_TRUE(Filter(expr)(p)) << expr;
    EXPECT_FALSE(Filter(expr)(Problem{})) << expr << " on the default problem";
  }
  EXPECT_NO_THROW(Filter("name==x"));
}

TEST(ProblemFields, JsonLinesTypeEachFieldByItsKind) {
  for (const auto& f : problem_field_table()) {
    const auto j = json_cell(f.name, f.example);
    switch (f.kind) {
      case FieldKind::flag: EXPECT_TRUE(j.is_boolean()) << f.name; break;
      case FieldKind::word:
      case FieldKind::text: EXPECT_TRUE(j.is_string()) << f.name; break;
      default: EXPECT_TRUE(j.is_number()) << f.name; break;
    }
  }
}

TEST(ProblemFields, RunHasAFlagForEveryFieldThatNamesOne) {
  const auto help = test::run_cli("run --help");
  for (const auto& f : problem_field_table())
    if (f.flag) EXPECT_NE(help.output.find(std::string(f.flag) + " "), std::string::npos) << f.flag << "\n" << help.output;
  // The fields without one come from the common flags.
  EXPECT_NE(help.output.find("--dtype"), std::string::npos);
  EXPECT_NE(help.output.find("--seed"), std::string::npos);
}

TEST(ProblemFields, TheProblemKeyHoldsEveryFieldButTheNameAndResumeReadsItBack) {
  for (const auto& f : problem_field_table()) {
    const Problem p = loaded(f, ".csv");
    Problem back_to_default = p;
    ASSERT_FALSE(f.set(back_to_default, f.cell(Problem{}))) << f.name;
    EXPECT_EQ(p.key() != back_to_default.key(), f.in_key) << f.name;

    Record r;
    r.problem = p;
    r.path = "cpu-ref";
    r.status = Status::skip;
    r.reason = "not run";
    const auto path = test::temp_file(".csv", "");
    {
      CsvWriter w(OutputFile(path, {}), RunMeta{}, false);
      w.write(r);
    }
    EXPECT_EQ(read_resume(path, RunMeta{}).done.count(r.resume_key()), 1u) << f.name;
  }
}

TEST(ProblemFields, AnIsolatedChildGetsEveryFieldExactly) {
  for (const auto& f : problem_field_table()) {
    Record r;
    r.problem = loaded(f, ".csv");
    r.path = "cpu-flash";
    const Problem back = decode_job(encode_job(r, 0, RunOptions{}, GateContext{})).record.problem;
    EXPECT_EQ(f.cell(back), f.example) << f.name;
  }
  Record r;
  r.path = "cpu-flash";
  r.problem.scale = 0.08838834764831845;  // more digits than the results cell keeps
  EXPECT_EQ(decode_job(encode_job(r, 0, RunOptions{}, GateContext{})).record.problem.scale, r.problem.scale);
}
