// The three G rules, the model's terms, and its parameter files.
#include "harness/split_rules.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "harness/conventions.hpp"
#include "harness/sweep.hpp"

namespace fa {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

size_t split_index(int G) {
  for (size_t i = 0; i < kNumSplitChoices; ++i)
    if (kSplitChoices[i] == G) return i;
  throw std::invalid_argument(fmt::format("G={} is not one of 0, 2, 4, 8, 16", G));
}

SplitInputs split_inputs(const Problem& p, const PathRow& row, const DeviceFacts& device, int units) {
  SplitInputs in{p, units, {}};
  for (size_t i = 0; i < kNumSplitChoices; ++i) in.tiles[i] = row.tile_for(p, kSplitChoices[i], device);
  return in;
}

int snap_split(double x) {
  int g = 0;
  for (int c : {2, 4, 8, 16})
    if (c <= x) g = c;
  return g;
}

int split_fa2(const SplitInputs& in) {
  const Problem& p = in.problem;
  const TileShape t = in.tiles[0];
  const int64_t W = p.B * p.H * ceil_div(p.S, t.block_m);
  const int64_t C = 2 * int64_t(in.units);
  if (C <= 0 || double(W) >= 0.8 * double(C)) return 0;
  const int64_t n = ceil_div(p.Sk, t.block_n);
  const int64_t max_s = std::min<int64_t>({128, C, n});
  auto eligible = [n](int64_t s) { return s == 1 || ceil_div(n, s) != ceil_div(n, s - 1); };
  auto efficiency = [&](int64_t s) {
    const double w = double(W) * double(s) / double(C);
    return w / std::ceil(w);
  };
  double best = 0;
  for (int64_t s = 1; s <= max_s; ++s)
    if (eligible(s)) best = std::max(best, efficiency(s));
  for (int64_t s = 1; s <= max_s; ++s)
    if (eligible(s) && efficiency(s) >= 0.85 * best) return snap_split(double(s));
  return 0;
}

// aiter's rule: tiles of 128 queries x 64 keys; sqt, skvt the query and key tile counts, nwg the
// workgroups without a split. A grid under the CU count splits to fill 3.5 waves, capped so that a
// split keeps 10 key tiles (28 once nwg >= 24); a full grid splits only for B = 1, and then only
// when the keys are long against the grid's oversubscription.
int split_aiter(const SplitInputs& in) {
  const Problem& p = in.problem;
  const double cus = in.units;
  const int64_t sqt = ceil_div(p.S, 128), skvt = ceil_div(p.Sk, 64);
  const int64_t nwg = p.B * p.H * sqt;
  const int kv_cap = snap_split(double(skvt) / (nwg < 24 ? 10.0 : 28.0));
  if (double(nwg) < cus) return std::min(snap_split(3.5 * cus / double(nwg)), kv_cap);
  if (p.B >= 2) return 0;
  const double over = double(nwg) / cus;
  if (double(skvt) < 10 * over && over < 30) return 0;
  int g = p.H <= 8 ? 4 : 2;
  if (over >= 30) g = std::max(g, snap_split(double(skvt) / 160.0));
  return std::min(g, kv_cap);
}

ModelTerms model_terms(const SplitInputs& in, int G) {
  const Problem& p = in.problem;
  const TileShape t = in.tiles[split_index(G)];
  const int64_t s = std::max(G, 1);
  const int64_t row_blocks = ceil_div(p.S, t.block_m);
  // Key tiles per row block (causal: up to its last row's visible keys) and the longest split.
  double tiles = 0;
  int64_t longest = 0;
  for (int64_t i = 0; i < row_blocks; ++i) {
    const int64_t last = std::min(p.S, (i + 1) * t.block_m) - 1;
    const int64_t n = ceil_div(visible_keys(last, p.S, p.Sk, p.causal), t.block_n);
    tiles += double(n);
    longest = std::max(longest, ceil_div(n, s));
  }
  const double blocks = double(p.B * p.H * row_blocks * s);
  const double mean = tiles / double(row_blocks * s);
  const double slot_waves = std::ceil(blocks / (double(std::max(in.units, 1)) * std::max(t.resident, 1)));
  const double sm_waves = std::ceil(blocks / double(std::max(in.units, 1)));
  const double tile_size = double(t.block_m) * t.block_n * double(p.D) / 1e6;
  ModelTerms m;
  m.work = std::max(slot_waves * mean, double(longest)) * tile_size;
  m.work_sm = std::max(sm_waves * mean, double(longest)) * tile_size;
  m.waves = slot_waves;
  if (s > 1) {
    const double rows = double(p.B * p.H * p.S);
    m.combine_mb = rows * (double(s) * double(p.D + 1) * 4 * 2 + double(p.D) * dtype_bytes(p.dtype)) / 1e6;
    m.combine = 1;
  }
  return m;
}

double model_time_ms(const ModelParams& m, const SplitInputs& in, int G) {
  const auto terms = model_terms(in, G).as_array();
  double t = 0;
  for (size_t i = 0; i < terms.size(); ++i) t += m.coef[i] * terms[i];
  return t;
}

int split_model(const SplitInputs& in, const ModelParams& m) {
  std::array<double, kNumSplitChoices> t{};
  for (size_t i = 0; i < kNumSplitChoices; ++i) t[i] = model_time_ms(m, in, kSplitChoices[i]);
  const double best = *std::min_element(t.begin(), t.end());
  for (size_t i = 0; i < kNumSplitChoices; ++i)  // the smallest G within the margin of the fastest
    if (t[i] <= best * (1 + m.margin)) return kSplitChoices[i];
  return 0;
}

HeuristicFile load_heuristic_file(const std::string& file) {
  std::ifstream in(file);
  const SourceLoc at{file, 0};
  if (!in) throw InputError(at, "file", "cannot open the heuristic parameter file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(at, "json", fmt::format("not JSON: {}", e.what()));
  }
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw InputError(at, key, "missing");
    return j.at(key);
  };
  HeuristicFile h;
  try {
    const int version = need("version").get<int>();
    if (version != HeuristicFile::kVersion)
      throw InputError(at, "version", fmt::format("is {}; this fa-bench reads version {}", version, HeuristicFile::kVersion));
    h.arch = need("arch").get<std::string>();
    h.path = need("path").get<std::string>();
    h.device = j.value("device", "");
    h.units = j.value("units", 0);
    h.fitted_from = j.value("fitted_from", "");
    h.problems = j.value("problems", 0);
    const auto& params = need("params");
    for (size_t i = 0; i < kModelCoefNames.size(); ++i) {
      if (!params.contains(kModelCoefNames[i])) throw InputError(at, std::string("params.") + kModelCoefNames[i], "missing");
      h.params.coef[i] = params.at(kModelCoefNames[i]).get<double>();
      if (!(h.params.coef[i] >= 0) || !std::isfinite(h.params.coef[i]))
        throw InputError(at, std::string("params.") + kModelCoefNames[i], "must be a finite number >= 0");
    }
    if (!params.contains("margin")) throw InputError(at, "params.margin", "missing");
    h.params.margin = params.at("margin").get<double>();
    if (!(h.params.margin >= 0 && h.params.margin < 1)) throw InputError(at, "params.margin", "must be in [0, 1)");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(at, "json", fmt::format("wrong type: {}", e.what()));
  }
  return h;
}

void save_heuristic_file(const std::string& file, const HeuristicFile& h) {
  nlohmann::ordered_json params;
  for (size_t i = 0; i < kModelCoefNames.size(); ++i) params[kModelCoefNames[i]] = h.params.coef[i];
  params["margin"] = h.params.margin;
  nlohmann::ordered_json j{{"version", HeuristicFile::kVersion}, {"arch", h.arch}, {"path", h.path},
                           {"device", h.device}, {"units", h.units}, {"problems", h.problems},
                           {"fitted_from", h.fitted_from}, {"params", params}};
  std::ofstream out(file);
  out << j.dump(2) << '\n';
  out.close();
  if (!out) throw std::runtime_error(fmt::format("{}: cannot write the heuristic parameter file", file));
}

std::optional<std::string> find_heuristic_file(const std::string& arch) {
  namespace fs = std::filesystem;
  if (arch.empty()) return std::nullopt;
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("FABENCH_HEURISTICS"); env && *env) dirs.emplace_back(env);
  dirs.emplace_back(fs::path("results") / "heuristics");
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path().parent_path() / "results" / "heuristics");
    dirs.push_back(exe.parent_path().parent_path().parent_path() / "results" / "heuristics");
  }
#ifdef FABENCH_SOURCE_TREE
  dirs.push_back(fs::path(FABENCH_SOURCE_TREE) / "results" / "heuristics");
#endif
  for (const auto& d : dirs) {
    const fs::path f = d / (arch + ".json");
    if (fs::is_regular_file(f, ec)) return f.string();
  }
  return std::nullopt;
}

std::optional<SplitRuleKind> parse_split_rule(const std::string& s) {
  if (s == "fa2") return SplitRuleKind::fa2;
  if (s == "aiter") return SplitRuleKind::aiter;
  if (s == "model") return SplitRuleKind::model;
  return std::nullopt;
}

std::string SplitPolicy::rule_for(const PathRow& row) const {
  if (!row.own_split_rule.empty()) return row.own_split_rule;
  switch (kind) {
    case SplitRuleKind::aiter: return "aiter";
    case SplitRuleKind::model: return row.kind == "gpu" ? "model" : "fa2";
    default: return "fa2";
  }
}

int SplitPolicy::choose(const SplitInputs& in, const PathRow& row) const {
  if (!row.own_split_rule.empty()) return 0;
  switch (kind) {
    case SplitRuleKind::aiter: return split_aiter(in);
    case SplitRuleKind::model: return row.kind == "gpu" ? split_model(in, params) : split_fa2(in);
    default: return split_fa2(in);
  }
}

SplitPolicy make_split_policy(const std::string& rule, const std::string& file, const std::string& arch) {
  SplitPolicy p;
  std::optional<std::string> found = file.empty() ? find_heuristic_file(arch) : std::optional<std::string>(file);
  if (rule.empty()) {
    p.kind = found ? SplitRuleKind::model : SplitRuleKind::fa2;
  } else {
    const auto k = parse_split_rule(rule);
    if (!k) throw InputError(SourceLoc{"command line", 0}, "--heuristic", fmt::format("'{}' is not one of fa2, aiter, model", rule));
    p.kind = *k;
  }
  if (p.kind != SplitRuleKind::model) return p;
  if (!found)
    throw InputError(SourceLoc{"command line", 0}, "--heuristic", fmt::format(
        "--heuristic model: no parameter file for arch '{}' (looked for {}.json in $FABENCH_HEURISTICS, "
        "results/heuristics/ here, beside the binary and in the source tree); fit one with `fa-bench fit` "
        "or pass --heuristic-file",
        arch, arch));
  const HeuristicFile h = load_heuristic_file(*found);
  if (!file.empty() || h.arch == arch) {
    p.params = h.params;
    p.params_file = *found;
    return p;
  }
  throw InputError(SourceLoc{*found, 0}, "arch", fmt::format("fitted for arch '{}', not this device's '{}'", h.arch, arch));
}

}  // namespace fa
