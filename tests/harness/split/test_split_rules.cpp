// The G rules: fa2 and aiter pinned on hand-computed cases (the published rules' arithmetic worked
// through in the comments), the model's terms and pick on small cases, parameter files, the table
// of them compiled in, and the policy that --heuristic builds (which parameters, and from where).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/split/builtin_heuristics.hpp"
#include "harness/split/split_rules.hpp"
#include "harness/sweep/sweep.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

SplitInputs inputs(int64_t B, int64_t H, int64_t S, int64_t Sk, int units, TileShape t = {128, 64, 1}, bool causal = false) {
  SplitInputs in;
  in.problem.B = B, in.problem.H = in.problem.Hk = H, in.problem.S = S, in.problem.Sk = Sk, in.problem.D = 64;
  in.problem.causal = causal;
  in.units = units;
  in.tiles.fill(t);
  return in;
}

// Runs with the working directory set to a fresh folder and $FABENCH_HEURISTICS unset, so that no
// parameter file is found at run time (the test binary's ../.. holds no results/heuristics either).
struct NoRuntimeFiles {
  test::TempDir dir;
  std::filesystem::path was = std::filesystem::current_path();
  NoRuntimeFiles() {
    unsetenv("FABENCH_HEURISTICS");
    std::filesystem::current_path(dir.path);
  }
  ~NoRuntimeFiles() { std::filesystem::current_path(was); }
};

HeuristicFile some_params(const std::string& arch, double first_coef) {
  HeuristicFile h;
  h.arch = arch, h.path = "mma";
  h.params.coef = {first_coef, 0, 0, 0, 0};
  return h;
}

}  // namespace

TEST(SplitRules, SnapTakesTheLargestChoiceAtOrUnder) {
  EXPECT_EQ(snap_split(1.99), 0);
  EXPECT_EQ(snap_split(2), 2);
  EXPECT_EQ(snap_split(7.9), 4);
  EXPECT_EQ(snap_split(28.875), 16);
  EXPECT_EQ(split_index(8), 3u);
  EXPECT_THROW(split_index(3), std::invalid_argument);
}

// (1,16,16,128,65535,64), 128 x 64 tiles. W = 16 blocks, n = 1024 key tiles.
// 132 SMs: C = 264; w(s) = 16 s / 264 < 1 up to s = 16, so efficiency = w there; the best eligible
// efficiency is s = 49's 0.9899 (s = 33, 66, 99 reach whole waves but ceil(1024/s) = ceil(1024/(s-1))
// there), so s = 14 (224 / 264 = 0.848 >= 0.841) is the first to reach 0.85 x best: snapped to 8.
// 304 CUs: C = 608; s = 38 gives one whole wave (eligible: ceil(1024/38) = 27 != 28), best = 1;
// s >= 32.3 reaches 0.85; s = 33 is not eligible (32 = 32), s = 34 is: snapped to 16.
TEST(SplitRules, Fa2OnTheLongKeysDecodeLikeRow) {
  EXPECT_EQ(split_fa2(inputs(1, 16, 128, 65535, 132)), 8);
  EXPECT_EQ(split_fa2(inputs(1, 16, 128, 65535, 304)), 16);
}

// (8,16,16,8192,8192,64): W = 8 x 16 x 64 = 8192 >= 0.8 x C on both: no split.
TEST(SplitRules, Fa2LeavesAFullGridUnsplit) {
  EXPECT_EQ(split_fa2(inputs(8, 16, 8192, 8192, 132)), 0);
  EXPECT_EQ(split_fa2(inputs(8, 16, 8192, 8192, 304)), 0);
  // The 0.8 C threshold: 212 blocks on 132 SMs (C = 264, 0.8 C = 211.2) do not split; 211 do.
  EXPECT_EQ(split_fa2(inputs(1, 212, 128, 65536, 132)), 0);
  EXPECT_NE(split_fa2(inputs(1, 211, 128, 65536, 132)), 0);
}

// The tile counts: (1,1,128,256) has 4 key tiles of 64 (s <= 4, s = 4 the best at 4/264: picked, 4)
// but 2 of 128 (s <= 2: 2).
TEST(SplitRules, Fa2CountsKeyTilesWithThePathsTile) {
  EXPECT_EQ(split_fa2(inputs(1, 1, 128, 256, 132, {128, 64, 1})), 4);
  EXPECT_EQ(split_fa2(inputs(1, 1, 128, 256, 132, {128, 128, 1})), 2);
  // (1,32,32,1,32768): W = 32, C = 264, n = 512: whole waves at s = 33 are not eligible (ceil(512/33)
  // = ceil(512/32) = 16); the best eligible is s = 74 at 0.9966, so s = 7 (224 / 264 = 0.848 >= 0.847)
  // is the first to reach 0.85 x best: snapped to 4.
  EXPECT_EQ(split_fa2(inputs(1, 32, 1, 32768, 132)), 4);
}

// aiter on (1,16,16,128,65535,64): sqt = 1, skvt = 1024, nwg = 16 (< 24: kv_cap = snap(102.4) = 16).
// nwg < CUs: snap(3.5 x 132 / 16 = 28.9) = 16 and snap(3.5 x 304 / 16 = 66.5) = 16: G = 16 on both.
// (8,16,16,8192,8192,64): nwg = 8192 >= CUs and B >= 2: G = 0 on both.
TEST(SplitRules, AiterOnThePinnedRows) {
  EXPECT_EQ(split_aiter(inputs(1, 16, 128, 65535, 132)), 16);
  EXPECT_EQ(split_aiter(inputs(1, 16, 128, 65535, 304)), 16);
  EXPECT_EQ(split_aiter(inputs(8, 16, 8192, 8192, 132)), 0);
  EXPECT_EQ(split_aiter(inputs(8, 16, 8192, 8192, 304)), 0);
}

TEST(SplitRules, AiterBranchesOfTheFullGridWithOneBatch) {
  // (1,8,8,8192,131072): nwg = 512, over = 3.88 on 132; skvt = 2048 >= 38.8: g = 4 (H <= 8), cap 16.
  EXPECT_EQ(split_aiter(inputs(1, 8, 8192, 131072, 132)), 4);
  // (1,64,64,8192,131072): nwg = 4096, over = 31.0 >= 30 on 132: g = max(2, snap(2048 / 160)) = 8.
  EXPECT_EQ(split_aiter(inputs(1, 64, 8192, 131072, 132)), 8);
  // ... on 304: over = 13.5 < 30 and skvt >= 134.7: g = 2 (H > 8).
  EXPECT_EQ(split_aiter(inputs(1, 64, 8192, 131072, 304)), 2);
  // (1,16,16,8192,1024): over = 7.76, skvt = 16 < 77.6: G = 0.
  EXPECT_EQ(split_aiter(inputs(1, 16, 8192, 1024, 132)), 0);
  // kv_cap: (1,4,4,128,2048): nwg = 4, skvt = 32, cap snap(3.2) = 2 under snap(115.5) = 16.
  EXPECT_EQ(split_aiter(inputs(1, 4, 128, 2048, 132)), 2);
  // (1,1,1,128,256): skvt = 4: cap snap(0.4) = 0.
  EXPECT_EQ(split_aiter(inputs(1, 1, 128, 256, 132)), 0);
}

TEST(SplitRules, ModelTermsCountWavesTilesAndTheCombine) {
  // (1,16,16,128,65535,64) on 132 SMs, 128 x 64 tiles, 2 blocks an SM: 16 row blocks of 1024 tiles.
  SplitInputs in = inputs(1, 16, 128, 65535, 132, {128, 64, 2});
  const ModelTerms t0 = model_terms(in, 0);
  EXPECT_DOUBLE_EQ(t0.waves, 1);
  EXPECT_DOUBLE_EQ(t0.work, 1024 * 128 * 64 * 64 / 1e6);
  EXPECT_DOUBLE_EQ(t0.combine, 0);
  const ModelTerms t16 = model_terms(in, 16);  // 256 blocks of 64 tiles: one slot wave, two SM waves
  EXPECT_DOUBLE_EQ(t16.waves, 1);
  EXPECT_DOUBLE_EQ(t16.work, 64 * 128 * 64 * 64 / 1e6);
  EXPECT_DOUBLE_EQ(t16.work_sm, 2 * 64 * 128 * 64 * 64 / 1e6);
  EXPECT_DOUBLE_EQ(t16.combine, 1);
  EXPECT_DOUBLE_EQ(t16.combine_mb, 16 * 128 * (16 * 65 * 4 * 2 + 64 * 2) / 1e6);
  // Causal S = Sk = 256, 128 x 64: row block 0 sees 2 tiles, block 1 sees 4; G = 2 splits them
  // 1+1 and 2+2: the longest block has 2 tiles, the mean is 1.5.
  SplitInputs c = inputs(1, 1, 256, 256, 132, {128, 64, 1}, true);
  EXPECT_DOUBLE_EQ(model_terms(c, 0).work, 4 * 128 * 64 * 64 / 1e6);
  EXPECT_DOUBLE_EQ(model_terms(c, 2).work, 2 * 128 * 64 * 64 / 1e6);
}

TEST(SplitRules, ModelTermsCountOnlyTheKeysAWindowLetsABlockSeeAndEachSequencesOwnBlocks) {
  // A decode over 8192 keys with window 4096 (causal): the row sees keys 4096..8191, and its block
  // starts at the tile holding 4096: 64 tiles of 64 instead of 128.
  SplitInputs w = inputs(1, 8, 1, 8192, 132, {128, 64, 1}, true);
  const double full = model_terms(w, 0).work;
  w.problem.window_left = 4095, w.problem.window_right = 0;
  EXPECT_DOUBLE_EQ(model_terms(w, 0).work, 64 * 128 * 64 * 64 / 1e6);
  EXPECT_DOUBLE_EQ(full, 128 * 128 * 64 * 64 / 1e6);
  // Brute force over a window that is not tile aligned, non-causal, several row blocks: each block's
  // tiles are those holding a key one of its rows sees (the rows' ranges are contiguous).
  SplitInputs v = inputs(1, 2, 300, 1000, 4, {128, 64, 1});
  v.problem.window_left = 100, v.problem.window_right = 30;
  double tiles = 0;
  for (int64_t i = 0; i < 3; ++i) {
    int64_t lo = 1 << 30, hi = 0;
    for (int64_t r = i * 128; r < std::min<int64_t>(300, (i + 1) * 128); ++r) {
      const KeyRange k = row_keys(r, 300, 1000, false, 100, 30);
      if (k.end > k.begin) lo = std::min(lo, k.begin), hi = std::max(hi, k.end);
    }
    tiles += double((hi + 63) / 64 - lo / 64);
  }
  // 3 row blocks x 2 heads on 4 units: 2 slot waves; work = waves x mean tiles a block.
  EXPECT_DOUBLE_EQ(model_terms(v, 0).work, 2 * (tiles / 3) * 128 * 64 * 64 / 1e6);
  // Varlen: sequence 0 has 128 queries over 256 keys, sequence 1 none: one live row block of 4 tiles.
  SplitInputs q = inputs(2, 1, 128, 256, 132, {128, 64, 1});
  q.problem.layout = Layout::thd, q.problem.seqlens_q = "128|0", q.problem.seqlens_k = "256|0";
  const ModelTerms t = model_terms(q, 0);
  EXPECT_DOUBLE_EQ(t.waves, 1);
  EXPECT_DOUBLE_EQ(t.work, 4 * 128 * 64 * 64 / 1e6);
  q.problem.seqlens_k = "256|4096";  // a sequence with keys but no queries adds no work
  EXPECT_DOUBLE_EQ(model_terms(q, 0).work, 4 * 128 * 64 * 64 / 1e6);
}

TEST(SplitRules, ModelTermsCountOneBlockPerKvHeadWhereATilePacksTheGroupsHeads) {
  // A GQA decode (8,32 query heads,4 kv heads,S=1,Sk=8192) on 132 SMs, 16 x 32 tiles packing the
  // 8 heads of a group, 3 blocks an SM: one block per (batch, kv head) = 32 blocks of 256 tiles.
  SplitInputs in = inputs(8, 32, 1, 8192, 132, {16, 32, 3, 8});
  in.problem.Hk = 4;
  const ModelTerms t0 = model_terms(in, 0);
  EXPECT_DOUBLE_EQ(t0.waves, 1);
  EXPECT_DOUBLE_EQ(t0.work, 256 * 16 * 32 * 64 / 1e6);
  // G = 16: 512 blocks over 396 slots (2 waves) of 16 tiles; unpacked it would count 4096 blocks
  // (11 waves).
  EXPECT_DOUBLE_EQ(model_terms(in, 16).waves, 2);
  EXPECT_DOUBLE_EQ(model_terms(in, 16).work, 2 * 16 * 16 * 32 * 64 / 1e6);
  in.tiles.fill(TileShape{16, 32, 3, 1});
  EXPECT_DOUBLE_EQ(model_terms(in, 16).waves, 11);
  // S = 2, group 8: 16 packed rows: one block sees both queries' keys (causal: query 0 sees 8191
  // keys, query 1 8192), so 256 tiles. S = 3 needs two row blocks a kv head (no kernel packs that
  // today: the model's query-major order puts query 2 in rows 16..23), the second over 256 tiles too.
  SplitInputs s2 = inputs(1, 8, 2, 8192, 132, {16, 32, 1, 8}, true);
  s2.problem.Hk = 1;
  EXPECT_DOUBLE_EQ(model_terms(s2, 0).work, 256 * 16 * 32 * 64 / 1e6);
  s2.problem.S = 3;
  EXPECT_DOUBLE_EQ(model_terms(s2, 0).waves, 1);
  EXPECT_DOUBLE_EQ(model_terms(s2, 2).work, 128 * 16 * 32 * 64 / 1e6);
}

TEST(SplitRules, ModelPicksTheFastestPredictionAndTiesGoToTheSmallerG) {
  SplitInputs in = inputs(1, 16, 128, 65535, 132, {128, 64, 2});
  ModelParams m;
  m.coef = {0.001, 0, 0.002, 0.0005, 0.003};  // work, work_sm, waves, combine MB, combine launch
  std::array<double, kNumSplitChoices> t{};
  for (size_t i = 0; i < kNumSplitChoices; ++i) t[i] = model_time_ms(m, in, kSplitChoices[i]);
  const size_t fastest = size_t(std::min_element(t.begin(), t.end()) - t.begin());
  EXPECT_EQ(split_model(in, m), kSplitChoices[fastest]);
  EXPECT_EQ(kSplitChoices[fastest], 16);  // one slot wave at every G: fewer tiles a block wins
  // A margin wider than the gap between G=8 and G=16 hands the pick to 8.
  m.margin = t[3] / t[4] - 1 + 1e-9;
  EXPECT_EQ(split_model(in, m), 8);
}

TEST(SplitRules, ParameterFilesRoundTripAndBadOnesNameTheField) {
  const test::TempDir dir;
  HeuristicFile h;
  h.arch = "sm_90", h.path = "mma", h.device = "H100", h.units = 132, h.problems = 7;
  h.params.coef = {1e-3, 2e-4, 3e-3, 4e-4, 5e-3};
  h.params.margin = 0.02;
  const std::string f = dir.path + "/sm_90.json";
  save_heuristic_file(f, h);
  const HeuristicFile back = load_heuristic_file(f);
  EXPECT_EQ(back.arch, "sm_90");
  EXPECT_EQ(back.path, "mma");
  EXPECT_EQ(back.units, 132);
  for (size_t i = 0; i < h.params.coef.size(); ++i) EXPECT_DOUBLE_EQ(back.params.coef[i], h.params.coef[i]);
  EXPECT_DOUBLE_EQ(back.params.margin, 0.02);

  std::ofstream(dir.path + "/bad.json") << R"({"version": 1, "arch": "sm_90", "path": "mma", "params": {"work_ms": -1}})";
  try {
    load_heuristic_file(dir.path + "/bad.json");
    FAIL() << "a negative coefficient loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field, "params.work_ms");
  }
  std::ofstream(dir.path + "/v3.json") << R"({"version": 3})";
  try {
    load_heuristic_file(dir.path + "/v3.json");
    FAIL() << "a version-3 file loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field, "version");
  }
}

TEST(SplitRules, PolicyDefaultsToModelOnlyWhereAFileForTheArchExists) {
  const test::TempDir dir;
  HeuristicFile h;
  h.arch = "sm_test", h.path = "mma";
  h.params.coef = {1, 0, 0, 0, 0};
  save_heuristic_file(dir.path + "/sm_test.json", h);
  setenv("FABENCH_HEURISTICS", dir.path.c_str(), 1);
  EXPECT_EQ(make_split_policy("", "", "sm_test").kind, SplitRuleKind::model);
  EXPECT_EQ(make_split_policy("", "", "sm_none").kind, SplitRuleKind::fa2);
  EXPECT_EQ(make_split_policy("aiter", "", "sm_test").kind, SplitRuleKind::aiter);
  EXPECT_THROW(make_split_policy("model", "", "sm_none"), InputError);
  unsetenv("FABENCH_HEURISTICS");

  // Under `model`, CPU rows use fa2 (the parameters are fitted on GPU timings); decode rows their own.
  SplitPolicy p;
  p.kind = SplitRuleKind::model;
  PathRow cpu, gpu, decode;
  cpu.kind = "cpu", gpu.kind = "gpu", decode.kind = "gpu";
  decode.own_split_rule = "decode-occupancy";
  EXPECT_EQ(p.rule_for(cpu), "fa2");
  EXPECT_EQ(p.rule_for(gpu), "model");
  EXPECT_EQ(p.rule_for(decode), "decode-occupancy");
  EXPECT_EQ(p.choose(inputs(1, 16, 128, 65535, 132), decode), 0);
}

TEST(SplitRules, TheBuiltInTableHoldsEveryCommittedFileAndSm90ParsesAsTheFileDoes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(FABENCH_SOURCE_DIR) / "results" / "heuristics";
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    ++files;
    const std::string arch = e.path().stem().string();
    const auto json = builtin_heuristic_json(arch);
    ASSERT_TRUE(json) << arch << " is committed but not built in";
    const HeuristicFile built_in = parse_heuristic_json(*json, "built-in " + arch);
    const HeuristicFile file = load_heuristic_file(e.path().string());
    EXPECT_EQ(built_in.arch, arch);  // a file named for one arch and fitted on another never loads
    EXPECT_EQ(built_in.arch, file.arch);
    EXPECT_EQ(built_in.path, file.path);
    EXPECT_EQ(built_in.units, file.units);
    for (size_t i = 0; i < file.params.coef.size(); ++i) EXPECT_EQ(built_in.params.coef[i], file.params.coef[i]) << i;
    EXPECT_EQ(built_in.params.margin, file.params.margin);
  }
  EXPECT_EQ(builtin_heuristics().size(), files);
  ASSERT_TRUE(builtin_heuristic_json("sm_90"));
  EXPECT_FALSE(builtin_heuristic_json("sm_none"));
}

TEST(SplitRules, WithNoFileAtRunTimeTheBuiltInParametersRunAndSaySo) {
  const NoRuntimeFiles here;
  const SplitPolicy p = make_split_policy("", "", "sm_90");
  const HeuristicFile committed = load_heuristic_file(std::string(FABENCH_SOURCE_DIR) + "/results/heuristics/sm_90.json");
  EXPECT_EQ(p.kind, SplitRuleKind::model);
  EXPECT_EQ(p.params.coef, committed.params.coef);
  EXPECT_EQ(p.describe(), "model (built-in sm_90)");
  EXPECT_EQ(make_split_policy("model", "", "sm_90").describe(), "model (built-in sm_90)");
  // An arch without parameters falls back to fa2 and says why; an explicit rule says it was asked for.
  EXPECT_EQ(make_split_policy("", "", "sm_none").describe(), "fa2 (default: no fitted parameters for sm_none)");
  EXPECT_EQ(make_split_policy("", "", "").describe(), "fa2 (default: no GPU)");
  EXPECT_EQ(make_split_policy("aiter", "", "sm_90").describe(), "aiter (--heuristic)");
}

TEST(SplitRules, AFileFoundAtRunTimeOverridesTheBuiltInAndHeuristicFileOverridesBoth) {
  const NoRuntimeFiles here;
  const test::TempDir dir;
  save_heuristic_file(dir.path + "/sm_90.json", some_params("sm_90", 0.5));
  setenv("FABENCH_HEURISTICS", dir.path.c_str(), 1);
  SplitPolicy p = make_split_policy("", "", "sm_90");
  EXPECT_EQ(p.kind, SplitRuleKind::model);
  EXPECT_EQ(p.params.coef[0], 0.5);
  EXPECT_EQ(p.describe(), "model (file " + dir.path + "/sm_90.json)");
  unsetenv("FABENCH_HEURISTICS");

  // The working directory's results/heuristics/ is a run-time file too.
  std::filesystem::create_directories("results/heuristics");
  save_heuristic_file("results/heuristics/sm_90.json", some_params("sm_90", 0.25));
  EXPECT_EQ(make_split_policy("", "", "sm_90").describe(), "model (file results/heuristics/sm_90.json)");

  save_heuristic_file(dir.path + "/mine.json", some_params("sm_80", 2));  // fitted elsewhere: the user's call
  p = make_split_policy("", dir.path + "/mine.json", "sm_90");
  EXPECT_EQ(p.params.coef[0], 2);
  EXPECT_EQ(p.describe(), "model (file " + dir.path + "/mine.json)");
}

TEST(SplitRules, AnAmdArchWithFeatureFlagsFindsTheBareArchsParameters) {
  const NoRuntimeFiles here;
  const test::TempDir dir;
  save_heuristic_file(dir.path + "/gfx_test.json", some_params("gfx_test", 1));
  setenv("FABENCH_HEURISTICS", dir.path.c_str(), 1);
  EXPECT_EQ(make_split_policy("", "", "gfx_test:sramecc+:xnack-").describe(), "model (file " + dir.path + "/gfx_test.json)");
  unsetenv("FABENCH_HEURISTICS");
}

TEST(SplitRules, HeuristicFileIsRefusedWithARuleThatIgnoresItAndAsADirectory) {
  const test::TempDir dir;
  save_heuristic_file(dir.path + "/p.json", some_params("sm_90", 1));
  try {
    make_split_policy("fa2", dir.path + "/p.json", "sm_90");
    FAIL() << "--heuristic fa2 took a parameter file it never reads";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field, "--heuristic-file");
  }
  try {
    make_split_policy("", dir.path, "sm_90");
    FAIL() << "a directory loaded as a parameter file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_split_policy("model", dir.path + "/missing.json", "sm_90"), InputError);
}
