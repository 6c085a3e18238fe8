// The split-count (G) rules behind G=auto, side by side: `fa2` (FlashAttention-2's wave-efficiency
// rule), `aiter` (the published two-regime rule of ROCm's aiter) and `model` (fa-bench's cost model,
// its parameters fitted per device arch by `fa-bench fit` into results/heuristics/ and compiled in).
// Every rule maps (problem, SM/CU count, the path's tile and occupancy at each G) to G in
// {0, 2, 4, 8, 16}. Paths that size their own key split (decode chunks) name their own rule
// (PathRow::own_split_rule) instead.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/path.hpp"
#include "harness/problem.hpp"
#include "harness/split/dispatch_table.hpp"
#include "harness/split_set.hpp"

namespace fa {

// Position of G in kSplitChoices; throws std::invalid_argument for any other G.
size_t split_index(int G);

// What a rule sees of one problem on one device.
struct SplitInputs {
  Problem problem;
  int units = 0;                                 // SMs / CUs (CPU paths: threads)
  std::array<TileShape, kNumSplitChoices> tiles;  // the path's tile at kSplitChoices[i]
};
SplitInputs split_inputs(const Problem& p, const PathRow& row, const DeviceFacts& device, int units);

// Largest of {2, 4, 8, 16} at or under x; 0 when x < 2.
int snap_split(double x);

// FlashAttention-2 (flash_api.cpp num_splits_heuristic): W = blocks without a split, C = 2 x SMs;
// W >= 0.8 C: no split; else among eligible s <= min(128, C, key tiles) the smallest whose wave
// efficiency is >= 0.85 x the best, snapped. Tiles: the path's at G = 0.
int split_fa2(const SplitInputs& in);
// aiter's two-regime rule on its own 128-query x 64-key tiles (see split_rules.cpp).
int split_aiter(const SplitInputs& in);

// The model's terms for one G (its time is their dot product with the parameters); blocks and key
// tiles are counted per sequence over the keys each block sees (varlen lengths, causal, window):
//   work     = max(slot waves x mean key tiles a block, the longest block's tiles) x bm*bn*D / 1e6
//              where slot waves = ceil(blocks / (units x resident)),
//   work_sm  = the same with SM waves, ceil(blocks / units) (co-resident blocks share an SM),
//   waves    = slot waves (a block's fixed cost: prologue, epilogue),
//   combine_mb = MB of fp32 partials written and read back plus O written (G > 1),
//   combine  = 1 when G > 1 (the combine launch).
struct ModelTerms {
  double work = 0, work_sm = 0, waves = 0, combine_mb = 0, combine = 0;
  static constexpr int kCount = 5;
  std::array<double, kCount> as_array() const { return {work, work_sm, waves, combine_mb, combine}; }
};
ModelTerms model_terms(const SplitInputs& in, int G);

struct ModelParams {
  // Milliseconds per unit of each ModelTerms term, in its order; fitted non-negative.
  std::array<double, ModelTerms::kCount> coef{};
  // The pick is the smallest G predicted within this fraction of the fastest (ties go to the
  // smaller G).
  double margin = 0;
};
inline constexpr std::array<const char*, ModelTerms::kCount> kModelCoefNames{"work_ms", "work_sm_ms", "wave_ms",
                                                                         "combine_ms_per_mb", "combine_ms"};
double model_time_ms(const ModelParams& m, const SplitInputs& in, int G);
int split_model(const SplitInputs& in, const ModelParams& m);

// A parameter file: results/heuristics/<arch>.json (`fa-bench fit` writes it; the committed ones are
// also compiled in, harness/split/builtin_heuristics.hpp). Version 2 adds `auto`'s dispatch table
// (harness/split/dispatch_table.hpp), optional; version 1 files are still read (no table: `auto`
// keeps the rank order).
struct HeuristicFile {
  static constexpr int kVersion = 2;
  int version = kVersion;          // as read (1 or 2); files are written at kVersion
  std::string arch, path, device;  // fitted for this arch, on this path's timings, on this device
  int units = 0;
  ModelParams params;
  std::string fitted_from;  // the results files, and when
  int problems = 0;
  std::optional<DispatchTable> dispatch;
  std::string dispatch_from;  // the results files the table was fitted on
};
HeuristicFile load_heuristic_file(const std::string& file);  // InputError naming file and field
// The same from a file's text; `source` names it in errors.
HeuristicFile parse_heuristic_json(std::string_view text, const std::string& source);
void save_heuristic_file(const std::string& file, const HeuristicFile& h);
// A parameter file for `arch` found at run time: $FABENCH_HEURISTICS/<arch>.json, then
// results/heuristics/ under the working directory and beside the binary (.., ../..). nullopt if none.
std::optional<std::string> find_heuristic_file(const std::string& arch);

enum class SplitRuleKind { fa2, aiter, model };
std::optional<SplitRuleKind> parse_split_rule(const std::string& s);

// What G=auto does for a run: a rule and, for `model`, its parameters. `model` applies to GPU paths
// (the parameters are fitted on GPU timings); CPU paths under `model` use `fa2`.
struct SplitPolicy {
  SplitRuleKind kind = SplitRuleKind::fa2;
  ModelParams params;
  // Where the rule came from: "built-in sm_90", "file results/heuristics/sm_90.json", "--heuristic",
  // or why the default fell back to fa2.
  std::string source;
  std::string describe() const;  // "model (built-in sm_90)": the rule and its source, for the log
  std::string rule_for(const PathRow& row) const;  // the rule's name as records carry it
  int choose(const SplitInputs& in, const PathRow& row) const;
};
// --heuristic (empty: model where parameters for the arch exist, else fa2) and --heuristic-file.
// The model's parameters come from, in order: --heuristic-file, a file found at run time
// (find_heuristic_file), the built-in table. Throws InputError when `model` is asked for and none
// has parameters for the arch, and when --heuristic-file comes with a rule that does not read it.
SplitPolicy make_split_policy(const std::string& rule, const std::string& file, const std::string& arch);

// The parameter file a run reads, found as make_split_policy finds it (--heuristic-file, at run
// time, built in), and where from ("file X", "built-in sm_90"); nullopt where there is none.
struct FoundHeuristic {
  HeuristicFile file;
  std::string source;
};
std::optional<FoundHeuristic> find_heuristic(const std::string& file, const std::string& arch);
// `auto`'s dispatch table from that file; rank order, saying why, where there is no file or the
// file has no table (version 1, or fitted on timings of one path). `arch` empty: no GPU.
DispatchChoice make_dispatch_choice(const std::string& file, const std::string& arch);

}  // namespace fa
