// `auto`'s dispatch table: the distance counts doublings and puts other classes far, the pick takes
// the fastest admitted path of the nearest problem that timed one, the section round-trips through a
// version 2 parameter file, a version 1 file still loads (rank order, and says so), and every bad
// field is an error naming the file and the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/input_error.hpp"
#include "harness/split/dispatch_table.hpp"
#include "harness/split/split_rules.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

DispatchKey key(int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D = 128) {
  DispatchKey k;
  k.B = B, k.H = H, k.Hk = Hk, k.S = S, k.Sk = Sk, k.D = D;
  return k;
}

DispatchEntry entry(const std::string& name, DispatchKey k, std::map<std::string, double> ms) {
  return DispatchEntry{name, k, std::move(ms)};
}

auto any_path = [](const std::string&) { return true; };

// A version 2 file holding `table`, written by save_heuristic_file.
HeuristicFile with_table(const std::string& arch, DispatchTable table) {
  HeuristicFile h;
  h.arch = arch, h.path = "mma";
  h.params.coef = {1e-3, 0, 0, 0, 0};
  h.dispatch = std::move(table);
  h.dispatch_from = "paths.csv";
  return h;
}

// The error a parameter file's text gives: its field, and that the message names the file.
std::string field_of(const std::string& text) {
  try {
    parse_heuristic_json(text, "sm_x.json");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sm_x.json"), std::string::npos) << e.what();
    return e.field;
  }
  ADD_FAILURE() << "loaded: " << text;
  return "";
}

std::string v2_with_problem(const std::string& problem) {
  return R"({"version": 2, "arch": "sm_x", "path": "mma", "params": {"work_ms": 0.001, "work_sm_ms": 0, "wave_ms": 0,
            "combine_ms_per_mb": 0, "combine_ms": 0, "margin": 0},
            "dispatch": {"model": "nearest-neighbour", "problems": [)" + problem + "]}}";
}

const char* kGoodProblem =
    R"({"name": "a", "B": 1, "H": 8, "Hk": 8, "S": 1, "Sk": 4096, "D": 128, "causal": false, "dtype": "fp16",
        "kv_cache": false, "serving": "", "G": 0, "ms": {"mma": 0.1, "mma-decode": 0.05}})";

}  // namespace

TEST(DispatchTable, DistanceCountsDoublingsAndPutsAnotherClassFarAway) {
  const DispatchKey a = key(1, 16, 16, 1, 4096);
  EXPECT_DOUBLE_EQ(dispatch_distance(a, a), 0);
  EXPECT_DOUBLE_EQ(dispatch_distance(a, key(1, 16, 16, 1, 8192)), 1);            // Sk doubled
  EXPECT_DOUBLE_EQ(dispatch_distance(a, key(2, 16, 16, 1, 4096)), 1);            // B*H doubled
  EXPECT_DOUBLE_EQ(dispatch_distance(a, key(1, 16, 4, 1, 4096)), 2);             // a GQA group of 4
  EXPECT_DOUBLE_EQ(dispatch_distance(a, key(1, 16, 16, 1, 16384, 64)), std::sqrt(5.0));  // Sk x4, D /2
  DispatchKey causal = a;
  causal.causal = true;
  DispatchKey fp8 = a;
  fp8.dtype = DType::fp8_e4m3;
  // One class mismatch weighs more than a factor of 16 in two continuous features at once.
  EXPECT_GT(dispatch_distance(a, causal), dispatch_distance(a, key(16, 16, 16, 1, 65536)));
  EXPECT_DOUBLE_EQ(dispatch_distance(a, causal), dispatch_distance(a, fp8));
  // S == 1 is a class of its own: a prefill of 2 queries is further than its one doubling.
  EXPECT_GT(dispatch_distance(a, key(1, 16, 16, 2, 4096)), 8);
}

TEST(DispatchTable, PickTakesTheFastestAdmittedPathOfTheNearestProblemThatTimedOne) {
  DispatchTable t;
  t.problems = {entry("short", key(1, 16, 16, 1, 512), {{"mma", 0.01}, {"mma-decode", 0.013}}),
                entry("long", key(1, 16, 16, 1, 16384), {{"mma", 0.2}, {"mma-decode", 0.1}}),
                entry("only-tiled", key(1, 16, 16, 1, 1024), {{"tiled", 0.5}})};
  const auto near_short = dispatch_pick(t, key(1, 16, 16, 1, 600), any_path);
  ASSERT_TRUE(near_short);
  EXPECT_EQ(near_short->path, "mma");
  EXPECT_EQ(near_short->neighbour, 0u);
  EXPECT_EQ(dispatch_pick(t, key(1, 16, 16, 1, 12000), any_path)->path, "mma-decode");
  // Where mma's gate says no, the nearest problem's fastest of the rest.
  EXPECT_EQ(dispatch_pick(t, key(1, 16, 16, 1, 600), [](const std::string& p) { return p != "mma"; })->path, "mma-decode");
  // The nearest problem timed no admitted path: the next one that did decides.
  EXPECT_EQ(dispatch_pick(t, key(1, 16, 16, 1, 1024), [](const std::string& p) { return p != "tiled"; })->path, "mma");
  // None timed an admitted path: no pick (auto falls back to rank order).
  EXPECT_FALSE(dispatch_pick(t, key(1, 16, 16, 1, 600), [](const std::string& p) { return p == "splitk"; }));
  // Left out, a problem is decided by its neighbours.
  EXPECT_EQ(dispatch_pick(t, key(1, 16, 16, 1, 512), [](const std::string& p) { return p != "tiled"; },
                          [](size_t i) { return i == 0; })->path, "mma-decode");
}

TEST(DispatchTable, ProblemsAtTheSameDistanceDecideTogetherByGeomean) {
  // Sk 2048 and 8192 are one doubling either side of 4096: mma wins one by 1%, mma-decode the
  // other by 30%; together, mma-decode.
  DispatchTable t;
  t.problems = {entry("2k", key(1, 16, 16, 1, 2048), {{"mma", 0.099}, {"mma-decode", 0.1}}),
                entry("8k", key(1, 16, 16, 1, 8192), {{"mma", 0.13}, {"mma-decode", 0.1}})};
  const auto pick = dispatch_pick(t, key(1, 16, 16, 1, 4096), any_path);
  ASSERT_TRUE(pick);
  EXPECT_EQ(pick->path, "mma-decode");
}

TEST(DispatchTable, AProblemTimedInItsOwnDtypeDecidesAloneItsTwinOnlyNearIt) {
  // The fp16 and bf16 rows of one shape, with different winners: each dtype gets its own.
  DispatchKey bf16 = key(1, 16, 16, 1, 4096);
  bf16.dtype = DType::bf16;
  DispatchTable t;
  t.problems = {entry("fp16", key(1, 16, 16, 1, 4096), {{"mma", 0.09}, {"mma-decode", 0.1}}),
                entry("bf16", bf16, {{"mma", 0.13}, {"mma-decode", 0.1}})};
  EXPECT_EQ(dispatch_pick(t, key(1, 16, 16, 1, 4096), any_path)->path, "mma");
  EXPECT_EQ(dispatch_pick(t, bf16, any_path)->path, "mma-decode");
  // The twin is nearer than the same dtype one doubling away, and far nearer than another class.
  EXPECT_DOUBLE_EQ(dispatch_distance(key(1, 16, 16, 1, 4096), bf16), 0.5);
}

TEST(DispatchTable, FnuzFp8IsAClassApartFromOcpFp8) {
  // An OCP FP8 row held out beside its FNUZ twin (which mma does not take: naive and tiled only)
  // and an OCP row of another shape that timed mma: the OCP neighbour decides.
  DispatchKey ocp = key(1, 32, 8, 8192, 8192), fnuz = ocp, other = key(1, 32, 8, 4096, 4096);
  ocp.dtype = other.dtype = DType::fp8_e4m3;
  fnuz.dtype = DType::fp8_e4m3fnuz;
  DispatchKey e5m2 = ocp;
  e5m2.dtype = DType::fp8_e5m2;
  EXPECT_DOUBLE_EQ(dispatch_distance(ocp, e5m2), 0.5);  // OCP to OCP: a dtype within the class
  EXPECT_DOUBLE_EQ(dispatch_distance(ocp, fnuz), 8);    // OCP to FNUZ: another class
  DispatchTable t;
  t.problems = {entry("fnuz twin", fnuz, {{"naive", 3.0}, {"tiled", 4.0}}), entry("ocp, Sk/2 S/2", other, {{"mma", 0.004}, {"naive", 0.8}})};
  EXPECT_EQ(dispatch_pick(t, ocp, any_path)->path, "mma");
  EXPECT_EQ(dispatch_pick(t, fnuz, any_path)->path, "naive");
}

TEST(DispatchTable, KeyReadsTheProblemsClassFields) {
  Problem p;
  p.B = 2, p.H = 32, p.Hk = 8, p.S = 1, p.Sk = 4096, p.D = 128;
  p.dtype = DType::fp8_e4m3;
  p.kv_cache = true;
  const DispatchKey k = dispatch_key(p, 4);
  EXPECT_EQ(k.dtype, DType::fp8_e4m3);
  EXPECT_TRUE(k.kv_cache);
  EXPECT_EQ(k.serving, "");
  EXPECT_EQ(k.G, 4);
  p.page_size = 16;
  EXPECT_EQ(dispatch_key(p, 0).serving, "page_size=16");
  Problem q = p;
  q.page_size = 64;
  EXPECT_GT(dispatch_distance(dispatch_key(p, 0), dispatch_key(q, 0)), 7.9) << "another page size is another class";
}

TEST(DispatchTable, SectionRoundTripsThroughAVersion2File) {
  const test::TempDir dir;
  DispatchTable t;
  DispatchKey k = key(4, 32, 8, 1, 8192);
  k.causal = true, k.G = 4;
  t.problems = {entry("decode-gqa-8k", k, {{"mma", 0.108}, {"mma-decode", 0.056}, {"decode", 0.07}}),
                entry("enc", key(1, 16, 16, 1500, 1500, 64), {{"mma", 0.028}, {"tiled", 1.17}})};
  save_heuristic_file(dir.path + "/sm_t.json", with_table("sm_t", t));
  const HeuristicFile back = load_heuristic_file(dir.path + "/sm_t.json");
  EXPECT_EQ(back.version, 2);
  ASSERT_TRUE(back.dispatch);
  EXPECT_EQ(back.dispatch_from, "paths.csv");
  ASSERT_EQ(back.dispatch->problems.size(), 2u);
  const DispatchEntry& e = back.dispatch->problems[0];
  EXPECT_EQ(e.name, "decode-gqa-8k");
  EXPECT_EQ(e.key.Hk, 8);
  EXPECT_TRUE(e.key.causal);
  EXPECT_EQ(e.key.G, 4);
  EXPECT_DOUBLE_EQ(e.ms.at("mma-decode"), 0.056);
  EXPECT_EQ(back.dispatch->problems[1].key.D, 64);
}

TEST(DispatchTable, Version1FilesStillLoadAndAutoSaysItKeepsTheRankOrder) {
  const test::TempDir dir;
  std::ofstream(dir.path + "/sm_old.json") << R"({"version": 1, "arch": "sm_old", "path": "mma", "params": {"work_ms": 0.001,
      "work_sm_ms": 0, "wave_ms": 0, "combine_ms_per_mb": 0, "combine_ms": 0, "margin": 0}})";
  const HeuristicFile h = load_heuristic_file(dir.path + "/sm_old.json");
  EXPECT_EQ(h.version, 1);
  EXPECT_FALSE(h.dispatch);
  setenv("FABENCH_HEURISTICS", dir.path.c_str(), 1);
  const DispatchChoice old = make_dispatch_choice("", "sm_old");
  EXPECT_FALSE(old.table);
  EXPECT_EQ(old.describe(), "rank order: file " + dir.path + "/sm_old.json is version 1 (no dispatch table)");
  EXPECT_EQ(make_split_policy("", "", "sm_old").kind, SplitRuleKind::model) << "G's parameters still apply";

  DispatchTable t;
  t.problems = {entry("a", key(1, 8, 8, 1, 4096), {{"mma", 0.1}, {"mma-decode", 0.05}})};
  save_heuristic_file(dir.path + "/sm_new.json", with_table("sm_new", t));
  const DispatchChoice fitted = make_dispatch_choice("", "sm_new");
  ASSERT_TRUE(fitted.table);
  EXPECT_EQ(fitted.describe(), "fitted sm_new, 1 problems (file " + dir.path + "/sm_new.json)");
  EXPECT_EQ(make_dispatch_choice("", "gfx942").describe(), "rank order: no fitted table for gfx942");
  unsetenv("FABENCH_HEURISTICS");
  EXPECT_EQ(make_dispatch_choice("", "").describe(), "rank order: no GPU (CPU paths)");
  // --heuristic-file is read whatever the device (fitted elsewhere is the user's call).
  EXPECT_TRUE(make_dispatch_choice(dir.path + "/sm_new.json", "").table);
}

TEST(DispatchTable, BadSectionsNameTheFileAndTheField) {
  EXPECT_NO_THROW(parse_heuristic_json(v2_with_problem(kGoodProblem), "sm_x.json")) << "the good problem loads";
  const std::string base = kGoodProblem;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return v2_with_problem(s);
  };
  EXPECT_EQ(field_of(with(R"("mma": 0.1)", R"("mma": -0.1)")), "dispatch.problems[0].ms.mma");
  EXPECT_EQ(field_of(with(R"("mma": 0.1)", R"("mma": "fast")")), "dispatch.problems[0].ms.mma");
  EXPECT_EQ(field_of(with(R"("dtype": "fp16")", R"("dtype": "fp12")")), "dispatch.problems[0].dtype");
  EXPECT_EQ(field_of(with(R"("G": 0)", R"("G": 3)")), "dispatch.problems[0].G");
  EXPECT_EQ(field_of(with(R"("Hk": 8)", R"("Hk": 3)")), "dispatch.problems[0].Hk");
  EXPECT_EQ(field_of(with(R"("Sk": 4096)", R"("Sk": 0)")), "dispatch.problems[0].Sk");
  EXPECT_EQ(field_of(with(R"("causal": false)", R"("causal": 0)")), "dispatch.problems[0].causal");
  EXPECT_EQ(field_of(with(R"("kv_cache": false, )", "")), "dispatch.problems[0].kv_cache");
  EXPECT_EQ(field_of(with(R"("ms": {"mma": 0.1, "mma-decode": 0.05})", R"("ms": {})")), "dispatch.problems[0].ms");
  EXPECT_EQ(field_of(v2_with_problem(base + ", 7")), "dispatch.problems[1]");
  std::string other_model = v2_with_problem(base);
  other_model.replace(other_model.find("nearest-neighbour"), 17, "linear");
  EXPECT_EQ(field_of(other_model), "dispatch.model");
  std::string empty = v2_with_problem("");
  EXPECT_EQ(field_of(empty), "dispatch.problems");
  // A version 1 file cannot carry a table; version 3 is not read.
  std::string v1 = v2_with_problem(base);
  v1.replace(v1.find("\"version\": 2"), 12, "\"version\": 1");
  EXPECT_EQ(field_of(v1), "dispatch");
  std::string v3 = v2_with_problem(base);
  v3.replace(v3.find("\"version\": 2"), 12, "\"version\": 3");
  EXPECT_EQ(field_of(v3), "version");
}
