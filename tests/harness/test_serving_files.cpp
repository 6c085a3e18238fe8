// The serving fields in files (harness/problem.hpp's validation, harness/sweep, harness/results):
// validation that names the field (directly, and from a sweep row with its file and line), and
// results files with the six serving columns (schema 7) and without them (schema 6) read back with
// the defaults. The fields themselves: test_serving.cpp. Run: ctest -R "ServingValidation|ServingResults"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "harness/run/runner.hpp"
#include "harness/sweep/sweep.hpp"
#include "helpers.hpp"
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;
using fa::test::temp_file;

namespace {

Problem base(int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D) { return fa::test::sized(B, H, Hk, S, Sk, D); }

}  // namespace

// ---- validation ---------------------------------------------------------------------------------

namespace {

struct Bad {
  const char* what;
  std::function<void(Problem&)> set;
  const char* field;
  const char* says;  // a phrase the reason must hold
};

// B = 2, H = 4, Hk = 2, S = 8, Sk = 16: each case sets one bad serving input.
const std::vector<Bad>& bad_inputs() {
  static const std::vector<Bad> bad = {
      {"three query lengths for two sequences", [](Problem& p) { p.layout = Layout::thd, p.seqlens_q = "3|1|2"; },
       "seqlens_q", "3 lengths but B = 2"},
      {"one key length for two sequences", [](Problem& p) { p.seqlens_k = "3"; }, "seqlens_k", "1 lengths but B = 2"},
      {"a query length over S", [](Problem& p) { p.layout = Layout::thd, p.seqlens_q = "2|9"; }, "seqlens_q", "9"},
      {"a key length over Sk", [](Problem& p) { p.seqlens_k = "17|1"; }, "seqlens_k", "17"},
      {"uniform query lengths reaching past S", [](Problem& p) { p.layout = Layout::thd, p.seqlens_q = "uniform:1:9"; },
       "seqlens_q", "9"},
      {"a length that is no number", [](Problem& p) { p.seqlens_k = "3|x"; }, "seqlens_k", "'x'"},
      {"seqlens_q without layout thd", [](Problem& p) { p.seqlens_q = "3|1"; }, "layout", "thd"},
      {"seqlens_q that leave a sequence a negative key count",
       [](Problem& p) { p.layout = Layout::thd, p.Sk = 4, p.seqlens_q = "1|8"; }, "seqlens_k", "give seqlens_k"},
      {"a causal window with right > 0", [](Problem& p) { p.causal = true, p.window_left = 4, p.window_right = 1; },
       "window", "right"},
      {"a window left below -1", [](Problem& p) { p.window_left = -2; }, "window", "-1"},
      {"two slopes for four heads", [](Problem& p) { p.alibi = "0.5|0.25"; }, "alibi", "2 slopes but H = 4"},
      {"a negative slope", [](Problem& p) { p.alibi = "0.5|-1|0.25|0.125"; }, "alibi", "'-1'"},
      {"a negative softcap", [](Problem& p) { p.softcap = -1; }, "softcap", "positive"},
      {"a NaN softcap", [](Problem& p) { p.softcap = std::nan(""); }, "softcap", "positive"},
      {"a negative page size", [](Problem& p) { p.page_size = -16; }, "page_size", "-16"},
      {"a page so large the pool's size overflows int64", [](Problem& p) { p.page_size = int64_t(1) << 62; },
       "page_size", "overflow"},
      {"the largest page size with per-sequence keys",
       [](Problem& p) { p.page_size = std::numeric_limits<int64_t>::max(), p.seqlens_k = "16|3"; }, "page_size",
       "overflow"},
      {"kv_cache appending more tokens than a sequence has keys",
       [](Problem& p) { p.layout = Layout::thd, p.kv_cache = true, p.seqlens_q = "3|2", p.seqlens_k = "3|1"; },
       "kv_cache", "sequence 1"},
  };
  return bad;
}

}  // namespace

TEST(ServingValidation, EachBadServingInputNamesItsField) {
  for (const Bad& b : bad_inputs()) {
    Problem p = base(2, 4, 2, 8, 16, 16);
    ASSERT_FALSE(validate(p));
    b.set(p);
    const auto err = validate(p);
    ASSERT_TRUE(err) << b.what;
    EXPECT_EQ(err->field, b.field) << b.what << ": " << err->reason;
    EXPECT_NE(err->reason.find(b.says), std::string::npos) << b.what << ": " << err->reason;
  }
}

TEST(ServingValidation, WellFormedServingProblemsAreValid) {
  Problem p = base(3, 4, 2, 8, 16, 16);
  p.layout = Layout::thd, p.seqlens_q = "8|0|3", p.seqlens_k = "16|4|3", p.page_size = 16;
  p.causal = true, p.window_left = 4, p.window_right = 0, p.alibi = "1", p.softcap = 50;
  EXPECT_FALSE(validate(p));
  p.kv_cache = true;  // every sequence has at least as many keys as queries
  EXPECT_FALSE(validate(p));
  p.alibi = "0.5|0.25|0|2";
  EXPECT_FALSE(validate(p));
  Problem k_only = base(2, 4, 2, 8, 16, 16);
  k_only.seqlens_k = "0|16";  // bshd: only the queries need thd
  EXPECT_FALSE(validate(k_only));
}

TEST(ServingValidation, ABadServingCellInACsvSweepIsAnInvalidRowNamingFileLineAndField) {
  // One row a case of bad_inputs() (B = 2, H = 4, Hk = 2, S = 8, Sk = 16), as a user writes it.
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"2,4,2,8,16,16,0,thd,3|1|2,,0,,0,0,0", "seqlens_q"},
      {"2,4,2,8,16,16,0,bshd,,3,0,,0,0,0", "seqlens_k"},
      {"2,4,2,8,16,16,0,thd,2|9,,0,,0,0,0", "seqlens_q"},
      {"2,4,2,8,16,16,0,bshd,3|1,,0,,0,0,0", "layout"},
      {"2,4,2,8,16,16,1,bshd,,,0,\"4,1\",0,0,0", "window"},
      {"2,4,2,8,16,16,0,bshd,,,0,,0.5|0.25,0,0", "alibi"},
      {"2,4,2,8,16,16,0,bshd,,,0,,0,-1,0", "softcap"},
      {"2,4,2,8,16,16,0,bshd,,,-16,,0,0,0", "page_size"},
      {"2,4,2,8,16,16,0,thd,3|2,3|1,0,,0,0,1", "kv_cache"},
      {"2,4,2,8,16,16,1,thd,8|0,16|4,16,\"4,0\",1,50,0", ""},  // valid: every field at once
  };
  std::string text = "# serving fields, one bad cell a row\nB,H,Hk,S,Sk,D,causal,layout,seqlens_q,seqlens_k,page_size,window,alibi,softcap,kv_cache\n";
  for (const auto& r : rows) text += r.first + "\n";
  const auto f = temp_file(".csv", text);
  const Sweep s = load_csv_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const int line = int(i) + 3;
    EXPECT_EQ(s.rows[i].where.file, f);
    EXPECT_EQ(s.rows[i].where.line, line);
    if (rows[i].second.empty()) {
      EXPECT_FALSE(s.rows[i].invalid) << line << ": " << s.rows[i].invalid->field << " " << s.rows[i].invalid->reason;
      continue;
    }
    ASSERT_TRUE(s.rows[i].invalid) << "line " << line;
    EXPECT_EQ(s.rows[i].invalid->field, rows[i].second) << "line " << line << ": " << s.rows[i].invalid->reason;
  }
  const Problem& ok = s.rows.back().problem;
  EXPECT_EQ(ok.seqlens_q, "8|0");
  EXPECT_EQ(ok.seqlens_k, "16|4");
  EXPECT_EQ(ok.window_left, 4);
  EXPECT_EQ(ok.window_right, 0);
  EXPECT_EQ(ok.page_size, 16);
  EXPECT_EQ(ok.alibi, "1");
  EXPECT_EQ(ok.softcap, 50);
  EXPECT_EQ(ok.layout, Layout::thd);

  // The records the runner writes for them say file:line: field 'X' (the message a user reads).
  Sweep invalid = s;
  invalid.rows.pop_back();
  GateContext ctx;
  ctx.device.cpu_threads = 2;
  ctx.device.gpu_absent_why = "no GPU in this test";
  RunOptions o;
  o.paths = {"cpu-ref"};
  o.reference = compute_reference;
  const auto recs = run_sweep(invalid, o, builtin_registry(ctx.device), ctx, {});
  ASSERT_EQ(recs.size(), invalid.rows.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    EXPECT_EQ(recs[i].status, Status::invalid);
    const std::string want = fmt::format("{}:{}: field '{}'", f, i + 3, rows[i].second);
    EXPECT_NE(recs[i].reason.find(want), std::string::npos) << recs[i].reason << " (want " << want << ")";
  }
}

static void expect_sweep_error(const std::string& suffix, const std::string& text, const std::string& field, int line) {
  const auto f = temp_file(suffix, text);
  try {
    load_sweep(f, Overrides{});
    FAIL() << "no error for:\n" << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.field, field) << e.what();
    EXPECT_EQ(e.where.line, line) << e.what();
    EXPECT_NE(std::string(e.what()).find(fmt::format("{}:{}: field '{}'", f, line, field)), std::string::npos) << e.what();
  }
}

TEST(ServingValidation, AServingCellThatIsNoValueIsAnInputErrorAtItsLine) {
  const std::string head = "B,H,S,D,layout,seqlens_q,seqlens_k,window,alibi,softcap,page_size\n";
  const std::string ok = "3,2,3,16,thd,3|0|2,,,0,0,0\n";
  expect_sweep_error(".csv", head + ok + "3,2,3,16,thd,3|x|2,,,0,0,0\n", "seqlens_q", 3);
  expect_sweep_error(".csv", head + ok + ok + "3,2,3,16,thd,,uniform:9:1,,0,0,0\n", "seqlens_k", 4);
  expect_sweep_error(".csv", head + "3,2,3,16,bshd,,,4,0,0,0\n", "window", 2);
  expect_sweep_error(".csv", head + "3,2,3,16,bshd,,,,a|b,0,0\n", "alibi", 2);
  expect_sweep_error(".csv", head + "3,2,3,16,bshd,,,,0,big,0\n", "softcap", 2);
  expect_sweep_error(".csv", head + "3,2,3,16,bshd,,,,0,0,x\n", "page_size", 2);
  expect_sweep_error(".yaml", "problems:\n  - {B: 1, H: 2, S: 3, D: 16}\n  - {B: 1, H: 2, S: 3, D: 16,\n     window: 4}\n",
                     "window", 4);
  expect_sweep_error(".yaml", "problems:\n  - B: 2\n    H: 2\n    S: 3\n    D: 16\n    seqlens_k: [3, -1]\n", "seqlens_k", 6);
}

TEST(ServingValidation, YamlTakesServingListsAsCellsAndInvalidRowsKeepTheirLine) {
  const auto f = temp_file(".yaml", R"(problems:
  - {B: 3, H: 4, Hk: 2, S: 3, Sk: 4, D: 16, layout: thd, seqlens_q: [3, 0, 2], seqlens_k: [4, 2, 3],
     window: [2, 0], causal: 1, alibi: 1, softcap: 30, page_size: 2}
  - {B: 2, H: 4, S: 3, D: 16, layout: thd, seqlens_q: [3, 0, 2]}
  - {B: 1, H: 4, S: 3, D: 16, alibi: [0.5, 0.25]}
  - {B: 1, H: 4, S: 3, D: 16, causal: 1, window: [2, 2]}
)");
  const Sweep s = load_yaml_sweep(f, Overrides{});
  ASSERT_EQ(s.rows.size(), 4u);
  ASSERT_FALSE(s.rows[0].invalid) << s.rows[0].invalid->field << ": " << s.rows[0].invalid->reason;
  const Problem& p = s.rows[0].problem;
  EXPECT_EQ(p.seqlens_q, "3|0|2");
  EXPECT_EQ(p.seqlens_k, "4|2|3");
  EXPECT_EQ(p.window_left, 2);
  EXPECT_EQ(p.window_right, 0);
  EXPECT_EQ(p.alibi, "1");
  EXPECT_EQ(p.softcap, 30);
  EXPECT_EQ(p.page_size, 2);
  const std::pair<const char*, int> want[] = {{"seqlens_q", 4}, {"alibi", 5}, {"window", 6}};
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(s.rows[i + 1].invalid) << i + 1;
    EXPECT_EQ(s.rows[i + 1].invalid->field, want[i].first);
    EXPECT_EQ(s.rows[i + 1].where.line, want[i].second);
    EXPECT_EQ(s.rows[i + 1].where.file, f);
  }
}

// ---- results files ------------------------------------------------------------------------------

namespace {

// A CSV line's cells as written (quotes kept), so columns can be dropped and the line rebuilt.
std::vector<std::string> raw_cells(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

const char* const kServingColumns[] = {"seqlens_q", "seqlens_k", "page_size", "window", "alibi", "softcap"};

// `path` rewritten without the serving columns, as fa-bench wrote results before schema 7.
std::string without_serving_columns(const std::string& path) {
  std::ifstream in(path);
  std::string line, out;
  std::vector<bool> keep;
  bool header = true;
  while (std::getline(in, line)) {
    const auto cells = raw_cells(line);
    if (header) {
      for (const auto& c : cells)
        keep.push_back(std::find(std::begin(kServingColumns), std::end(kServingColumns), c) == std::end(kServingColumns));
      EXPECT_EQ(std::count(keep.begin(), keep.end(), false), 6) << "the header names all six serving columns";
      EXPECT_EQ(cells[0], "schema");
    }
    EXPECT_EQ(cells.size(), keep.size()) << line;
    std::string row;
    for (size_t i = 0; i < cells.size() && i < keep.size(); ++i)
      if (keep[i]) row += (row.empty() ? "" : ",") + (i == 0 && !header ? std::string("6") : cells[i]);
    out += row + "\n";
    header = false;
  }
  return temp_file(".csv", out);
}

Record a_record(const Problem& p) {
  Record r;
  r.problem = p;
  r.path = "cpu-flash";
  r.status = Status::pass;
  r.timing = TimingStats{};
  r.timing->median_ms = 1.5;
  return r;
}

}  // namespace

TEST(ServingResults, TheSixServingColumnsRoundTripThroughAResultsFile) {
  Problem p = base(3, 4, 2, 8, 16, 16);
  p.layout = Layout::thd, p.seqlens_q = "8|0|3", p.seqlens_k = "uniform:4:16", p.page_size = 16;
  p.causal = true, p.window_left = 4, p.window_right = 0, p.alibi = "0.5|0.25|0|2", p.softcap = 30.5;
  ASSERT_FALSE(validate(p));
  const ResultsFile back = test::written({a_record(p), a_record(base(1, 2, 2, 3, 3, 16))});
  ASSERT_EQ(back.records.size(), 2u);
  const Problem& q = back.records[0].record.problem;
  EXPECT_EQ(q.seqlens_q, p.seqlens_q);
  EXPECT_EQ(q.seqlens_k, p.seqlens_k);
  EXPECT_EQ(q.page_size, 16);
  EXPECT_EQ(q.window_left, 4);
  EXPECT_EQ(q.window_right, 0);
  EXPECT_EQ(q.alibi, p.alibi);
  EXPECT_EQ(q.softcap, 30.5);
  EXPECT_EQ(q.layout, Layout::thd);
  EXPECT_EQ(q.key(), p.key());
  EXPECT_EQ(back.records[1].record.problem.key(), base(1, 2, 2, 3, 3, 16).key());
}

TEST(ServingResults, AFileWithoutTheServingColumnsReadsWithTheDefaults) {
  Problem dense = base(2, 8, 2, 100, 200, 64);
  dense.causal = true;
  const auto now = test::temp_file(".csv", "");
  {
    CsvWriter w(OutputFile(now, {}), RunMeta{}, false);
    w.write(a_record(dense));
    Problem other = dense;
    other.S = 1, other.name = "decode";
    w.write(a_record(other));
  }
  const std::string old = without_serving_columns(now);
  std::ifstream check(old);
  std::string header;
  std::getline(check, header);
  for (const char* c : kServingColumns) EXPECT_EQ(header.find(c), std::string::npos) << header;
  const ResultsFile back = read_results_csv(old);
  ASSERT_EQ(back.records.size(), 2u);
  for (const auto& rr : back.records) {
    const Problem& q = rr.record.problem;
    EXPECT_TRUE(q.seqlens_q.empty());
    EXPECT_TRUE(q.seqlens_k.empty());
    EXPECT_EQ(q.page_size, 0);
    EXPECT_EQ(q.window_left, -1);
    EXPECT_EQ(q.window_right, -1);
    EXPECT_EQ(q.alibi, "0");
    EXPECT_EQ(q.softcap, 0);
    EXPECT_FALSE(q.varlen() || q.paged() || q.windowed() || q.has_alibi());
    EXPECT_EQ(rr.record.status, Status::pass);
  }
  // Same identity as the record written today: an old baseline still matches a new run's rows.
  EXPECT_EQ(back.records[0].record.problem.key(), dense.key());
  EXPECT_EQ(back.records[0].record.resume_key(), a_record(dense).resume_key());
  EXPECT_EQ(back.records[1].record.problem.S, 1);
  EXPECT_EQ(back.records[1].record.problem.name, "decode");
}
