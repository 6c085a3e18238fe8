// `fa-bench fit` end to end, and --heuristic on `sweep`: fit data, parameter file and held-out report
// from a results CSV whose times the model generated; the fitted file drives G=auto; records of an
// older schema (no rule inputs) are refused with the reason.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli_helpers.hpp"
#include "harness/split/split_rules.hpp"
#include "helpers.hpp"

using namespace fa;
using fa::test::run_cli;

namespace {

// Records of 16 problems x 5 G on a 132-unit device whose times come from `m`.
void write_model_results(const std::string& path, const ModelParams& m) {
  RunMeta meta;
  meta.arch = "sm_test";
  meta.device = "test device";
  CsvWriter w(OutputFile(path, {}), meta, false);
  int line = 0;
  for (int64_t H : {1, 4, 16, 64})
    for (int64_t Sk : {2048, 16384, 65536, 131072}) {
      Record r;
      r.problem.B = 1, r.problem.H = r.problem.Hk = H, r.problem.S = 128, r.problem.Sk = Sk, r.problem.D = 64;
      r.problem.dtype = DType::bf16;
      r.path = "mma";
      r.status = Status::pass;
      r.units = 132;
      r.tile = TileShape{128, 64, 2};
      SplitInputs in{r.problem, 132, {}};
      in.tiles.fill(r.tile);
      for (int G : kSplitChoices) {
        r.g_req = SplitRequest{false, G};
        r.g_used = G;
        r.timing = TimingStats{};
        r.timing->median_ms = model_time_ms(m, in, G);
        r.timing->samples = 20;
        r.timing->spread = 0.002;
        r.where = SourceLoc{"heuristic.yaml", ++line};
        w.write(r);
      }
    }
}

std::string slurp(const std::string& f) {
  std::ifstream in(f);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(CmdFit, WritesFitDataParametersAndAHeldOutReport) {
  const test::TempDir dir;
  ModelParams truth;
  truth.coef = {3e-4, 1e-4, 2e-3, 1e-3, 5e-3};
  write_model_results(dir.path + "/r.csv", truth);
  const auto res = run_cli(fmt::format("fit {0}/r.csv -o {0}/fit.csv --params {0}/sm_test.json --report {0}/rep.md", dir.path));
  ASSERT_EQ(res.status, 0) << res.output;
  const auto rows = test::read_csv(dir.path + "/fit.csv");
  ASSERT_EQ(rows.size(), 16u);
  for (const char* col : {"t_G0", "t_G16", "band_G4", "best_G", "tie_set", "fa2_G", "aiter_regret", "model_G", "model_lofo_regret"})
    EXPECT_TRUE(rows[0].count(col)) << col;
  const HeuristicFile h = load_heuristic_file(dir.path + "/sm_test.json");
  EXPECT_EQ(h.arch, "sm_test");
  EXPECT_EQ(h.path, "mma");
  EXPECT_EQ(h.problems, 16);
  EXPECT_NEAR(h.params.coef[0] + h.params.coef[1], 4e-4, 1e-9);
  const std::string rep = slurp(dir.path + "/rep.md");
  EXPECT_NE(rep.find("| model, 5-fold held out | 16 | 100.0% |"), std::string::npos) << rep;
  EXPECT_NE(rep.find("| fa2 | 16 |"), std::string::npos) << rep;
  EXPECT_NE(res.output.find("leave-one-family-out"), std::string::npos) << res.output;
}

TEST(CmdFit, PlotScriptDrawsTheSortedRegretOfEachRule) {
  const std::string py = test::python_with("matplotlib");
  if (py.empty()) GTEST_SKIP() << "python3 with matplotlib not found (scripts/setup.sh installs it)";
  const test::TempDir dir;
  ModelParams m;
  m.coef = {3e-4, 1e-4, 2e-3, 1e-3, 5e-3};
  write_model_results(dir.path + "/r.csv", m);
  ASSERT_EQ(run_cli(fmt::format("fit {0}/r.csv -o {0}/fit.csv --no-params", dir.path)).status, 0);
  const std::string cmd =
      fmt::format("{} {}/scripts/plot.py {}/fit.csv -o {}/plots 2>&1", py, FABENCH_SOURCE_DIR, dir.path, dir.path);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string png = slurp(dir.path + "/plots/regret.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

TEST(CmdFit, RefusesRecordsWithoutTheRuleInputs) {
  const test::TempDir dir;
  write_model_results(dir.path + "/r.csv", ModelParams{{1e-3, 0, 0, 0, 0}, 0});
  // Drop the tile columns' values as a schema-3 file would have them: empty.
  std::string text = slurp(dir.path + "/r.csv");
  std::string out;
  std::istringstream in(text);
  std::string header;
  std::getline(in, header);
  auto cols = test::csv_fields(header);
  const size_t tm = size_t(std::find(cols.begin(), cols.end(), "tile_m") - cols.begin());
  ASSERT_LT(tm, cols.size());
  out = header + "\n";
  for (std::string line; std::getline(in, line);) {
    auto f = test::csv_fields(line);
    f[tm] = "";
    std::string joined;
    for (size_t i = 0; i < f.size(); ++i) joined += (i ? "," : "") + csv_escape(f[i]);
    out += joined + "\n";
  }
  std::ofstream(dir.path + "/old.csv") << out;
  const auto res = run_cli(fmt::format("fit {0}/old.csv -o {0}/fit.csv --no-params", dir.path));
  EXPECT_EQ(res.status, 2) << res.output;
  EXPECT_NE(res.output.find("schema 4"), std::string::npos) << res.output;
}

TEST(CmdFit, HeuristicChoosesTheRuleThatRecordsName) {
  const test::TempDir dir;
  const std::string sweep = test::temp_file(".csv", "B,H,S,Sk,D,G\n1,2,1,4096,32,auto\n");
  for (const char* rule : {"fa2", "aiter"}) {
    const auto res = run_cli(fmt::format("sweep {} --paths cpu-flash --no-timing --heuristic {} -o {}/{}.csv", sweep, rule,
                                         dir.path, rule));
    ASSERT_EQ(res.status, 0) << res.output;
    const auto rows = test::read_csv(fmt::format("{}/{}.csv", dir.path, rule));
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].at("split_rule"), rule);
    EXPECT_EQ(rows[0].at("G_req"), "auto");
  }
  const auto res = run_cli(fmt::format("sweep {} --paths cpu-flash --heuristic model -o {}/m.csv", sweep, dir.path),
                           "FABENCH_HEURISTICS=" + dir.path);
  EXPECT_EQ(res.status, 2) << res.output;  // no parameter file for this (CPU) device
  EXPECT_NE(res.output.find("--heuristic"), std::string::npos) << res.output;
}

TEST(CmdFit, SweepLogsWhichGRuleRanAndWhereItsParametersCameFrom) {
  const test::TempDir dir;
  const std::string sweep = test::temp_file(".csv", "B,H,S,Sk,D,G\n1,2,1,4096,32,auto\n");
  HeuristicFile h;
  h.arch = "sm_test", h.path = "mma";
  h.params.coef = {1, 0, 0, 0, 0};
  save_heuristic_file(dir.path + "/p.json", h);
  auto res = run_cli(fmt::format("sweep {} --paths cpu-flash --no-timing --heuristic-file {}/p.json -o {}/f.csv", sweep,
                                 dir.path, dir.path));
  ASSERT_EQ(res.status, 0) << res.output;
  EXPECT_NE(res.output.find(fmt::format("G rule: model (file {}/p.json)", dir.path)), std::string::npos) << res.output;
  res = run_cli(fmt::format("sweep {} --paths cpu-flash --no-timing -o {}/d.csv", sweep, dir.path));
  ASSERT_EQ(res.status, 0) << res.output;
  // Without a GPU no arch has parameters; on a fitted GPU the built-in or a found file runs.
  EXPECT_TRUE(std::regex_search(res.output, std::regex(R"(G rule: (fa2 \(default: no GPU\)|fa2 \(default: no fitted )"
                                                       R"(parameters for \S+\)|model \((built-in|file) \S+\)))")))
      << res.output;
}

TEST(CmdFit, TheParameterFileIsNeverNamedByAnArchTextThatIsNotAPlainName) {
  const test::TempDir dir;
  write_model_results(dir.path + "/r.csv", ModelParams{});
  std::string text = slurp(dir.path + "/r.csv");
  for (size_t at; (at = text.find(",sm_test,")) != std::string::npos;) text.replace(at, 9, ",../../escaped,");
  std::ofstream(dir.path + "/evil.csv") << text;
  const auto r = run_cli("fit " + dir.path + "/evil.csv -o " + dir.path + "/fit.csv");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("field 'arch': '../../escaped' cannot name the parameter file"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists("results/escaped.json"));
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/fit.csv")) << "refused before anything was written";
}

TEST(CmdFit, ANaNMedianIsAnInputErrorNamingFileAndLine) {
  const test::TempDir dir;
  write_model_results(dir.path + "/r.csv", ModelParams{});
  const auto lines = [&] {
    std::vector<std::string> ls;
    std::ifstream in(dir.path + "/r.csv");
    for (std::string l; std::getline(in, l);) ls.push_back(l);
    return ls;
  }();
  const auto head = test::csv_fields(lines[0]);
  auto cells = test::csv_fields(lines[3]);
  cells[size_t(std::find(head.begin(), head.end(), "median_ms") - head.begin())] = "nan";
  std::string out = lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n";
  for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cells[i];
  out += "\n";
  std::ofstream(dir.path + "/nan.csv") << out;
  const auto r = run_cli(fmt::format("fit {0}/nan.csv --no-params -o {0}/fit.csv", dir.path));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(dir.path + "/nan.csv:4: field 'median_ms': median_ms is nan"), std::string::npos) << r.output;
}
