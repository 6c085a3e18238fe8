// The three G rules, the model's terms, and its parameter files.
#include "harness/split/split_rules.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "harness/conventions.hpp"
#include "harness/input_error.hpp"
#include "harness/split/builtin_heuristics.hpp"

namespace fa {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// An AMD arch as the runtime reports it carries feature flags ("gfx942:sramecc+:xnack-"); its
// parameters are looked up under the full name, then the bare arch.
std::string base_arch(const std::string& arch) { return arch.substr(0, arch.find(':')); }
std::vector<std::string> arch_names(const std::string& arch) {
  if (base_arch(arch) == arch) return {arch};
  return {arch, base_arch(arch)};
}

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
  // Key tiles per row block and the longest split. A block's keys run from its first row's first
  // key (a window's left edge; rounded down to a tile) to its last row's end (causal, window), over
  // its own sequence's lengths (varlen); blocks past a sequence's queries exit at once and count
  // nothing. Dense problems: every sequence alike, so one is counted B times. A tile that packs
  // `heads` query heads holds rows (query, head) query-major: sq x heads rows, one kv head's blocks.
  const ServingShape& sh = p.serving();
  const int64_t seqs = p.varlen() ? p.B : 1, copies = p.varlen() ? 1 : p.B;
  const int64_t heads = std::max(t.heads, 1);
  double tiles = 0, live_blocks = 0;
  int64_t longest = 0;
  for (int64_t b = 0; b < seqs; ++b) {
    const int64_t sq = sh.q_len[size_t(b)], sk = sh.k_len[size_t(b)], rows = sq * heads;
    const int64_t row_blocks = ceil_div(rows, t.block_m);
    auto keys = [&](int64_t row) { return row_keys(row / heads, sq, sk, p.causal, p.window_left, p.window_right); };
    for (int64_t i = 0; i < row_blocks; ++i) {
      const KeyRange first = keys(i * t.block_m), last = keys(std::min(rows, (i + 1) * t.block_m) - 1);
      const int64_t begin = std::min(first.begin, last.begin) / t.block_n * t.block_n;
      const int64_t n = last.end > begin ? ceil_div(last.end - begin, t.block_n) : 0;
      tiles += double(copies) * double(n);
      longest = std::max(longest, ceil_div(n, s));
    }
    live_blocks += double(copies) * double(row_blocks);
  }
  const double blocks = double(ceil_div(p.H, heads)) * live_blocks * double(s);
  const double mean = live_blocks > 0 ? tiles / (live_blocks * double(s)) : 0.0;
  const double slot_waves = std::ceil(blocks / (double(std::max(in.units, 1)) * std::max(t.resident, 1)));
  const double sm_waves = std::ceil(blocks / double(std::max(in.units, 1)));
  const double tile_size = double(t.block_m) * t.block_n * double(p.D) / 1e6;
  ModelTerms m;
  m.work = std::max(slot_waves * mean, double(longest)) * tile_size;
  m.work_sm = std::max(sm_waves * mean, double(longest)) * tile_size;
  m.waves = slot_waves;
  if (s > 1) {
    const double rows = double(p.B * p.H * p.S);
    m.combine_mb = rows * (double(s) * double(p.D + 1) * 4 * 2 + double(p.D) * dtype_bytes(out_dtype(p.dtype))) / 1e6;
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
  const SourceLoc at{file, 0};
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw InputError(at, "file", "is a directory, not a heuristic parameter file");
  std::ifstream in(file);
  if (!in) throw InputError(at, "file", "cannot open the heuristic parameter file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(at, "file", "cannot read the heuristic parameter file");
  return parse_heuristic_json(text.str(), file);
}

HeuristicFile parse_heuristic_json(std::string_view text, const std::string& source) {
  const SourceLoc at{source, 0};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
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
    if (version != 1 && version != HeuristicFile::kVersion)
      throw InputError(at, "version", fmt::format("is {}; this fa-bench reads versions 1 and {}", version, HeuristicFile::kVersion));
    h.version = version;
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
    if (j.contains("dispatch")) {
      if (version < 2) throw InputError(at, "dispatch", "a version 1 file has no dispatch table: set version 2");
      h.dispatch = parse_dispatch_json(j.at("dispatch"), source);
      h.dispatch_from = j.value("dispatch_from", "");
    }
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
  if (h.dispatch) j["dispatch_from"] = h.dispatch_from;
  std::string text = j.dump(2);
  if (h.dispatch)  // last, one problem a line: the table is long, its rows read as rows
    text = text.substr(0, text.rfind("\n}")) + ",\n  \"dispatch\": " + dispatch_json_text(*h.dispatch, 2) + "\n}";
  std::ofstream out(file);
  out << text << '\n';
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
  for (const auto& d : dirs)
    for (const std::string& name : arch_names(arch)) {
      const fs::path f = d / (name + ".json");
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

std::string SplitPolicy::describe() const {
  const char* name = kind == SplitRuleKind::model ? "model" : kind == SplitRuleKind::aiter ? "aiter" : "fa2";
  return source.empty() ? name : fmt::format("{} ({})", name, source);
}

namespace {

std::string builtin_archs() {
  std::string names;
  for (const BuiltinHeuristic& b : builtin_heuristics()) names += (names.empty() ? "" : ", ") + std::string(b.arch);
  return names.empty() ? "none" : names;
}

}  // namespace

std::optional<FoundHeuristic> find_heuristic(const std::string& file, const std::string& arch) {
  if (!file.empty()) return FoundHeuristic{load_heuristic_file(file), "file " + file};  // fitted elsewhere is the user's call: no arch check
  if (const auto found = find_heuristic_file(arch)) {
    FoundHeuristic h{load_heuristic_file(*found), "file " + *found};
    if (base_arch(h.file.arch) != base_arch(arch))
      throw InputError(SourceLoc{*found, 0}, "arch", fmt::format("fitted for arch '{}', not this device's '{}'", h.file.arch, arch));
    return h;
  }
  for (const std::string& name : arch.empty() ? std::vector<std::string>{} : arch_names(arch)) {
    const auto json = builtin_heuristic_json(name);
    if (!json) continue;
    FoundHeuristic h{parse_heuristic_json(*json, "built-in " + name + ".json"), "built-in " + name};
    if (base_arch(h.file.arch) != base_arch(arch))
      throw InputError(SourceLoc{h.source + ".json", 0}, "arch", fmt::format("fitted for arch '{}', not '{}'", h.file.arch, arch));
    return h;
  }
  return std::nullopt;
}

DispatchChoice make_dispatch_choice(const std::string& file, const std::string& arch) {
  DispatchChoice c;
  if (file.empty() && arch.empty()) {
    c.source = "no GPU (CPU paths)";
    return c;
  }
  const std::optional<FoundHeuristic> h = find_heuristic(file, arch);
  if (!h) {
    c.source = fmt::format("no fitted table for {}", arch);
    return c;
  }
  if (!h->file.dispatch) {
    c.source = h->file.version < 2 ? fmt::format("{} is version {} (no dispatch table)", h->source, h->file.version)
                                   : fmt::format("{} has no dispatch table (fitted on one path's timings)", h->source);
    return c;
  }
  c.table = std::make_shared<const DispatchTable>(*h->file.dispatch);
  c.arch = h->file.arch;
  c.source = h->source;
  return c;
}

SplitPolicy make_split_policy(const std::string& rule, const std::string& file, const std::string& arch) {
  const SourceLoc cli = command_line();
  SplitPolicy p;
  std::optional<SplitRuleKind> asked;
  if (!rule.empty()) {
    asked = parse_split_rule(rule);
    if (!asked) throw InputError(cli, "--heuristic", fmt::format("'{}' is not one of fa2, aiter, model", rule));
    if (*asked != SplitRuleKind::model && !file.empty())
      throw InputError(cli, "--heuristic-file", fmt::format("holds the model's parameters; --heuristic {} does not read them", rule));
  }
  if (asked && *asked != SplitRuleKind::model) {
    p.kind = *asked;
    p.source = "--heuristic";
    return p;
  }
  // The model's parameters: --heuristic-file, else a file found at run time, else built in.
  if (const std::optional<FoundHeuristic> h = find_heuristic(file, arch)) {
    p.source = h->source;
    p.kind = SplitRuleKind::model;
    p.params = h->file.params;
    return p;
  }
  if (asked)
    throw InputError(cli, "--heuristic", fmt::format(
        "--heuristic model: no parameters for arch '{}' (looked for {}.json in $FABENCH_HEURISTICS and in "
        "results/heuristics/ here and beside the binary; built in: {}); fit them with `fa-bench fit` or "
        "pass --heuristic-file",
        arch.empty() ? "(no GPU)" : arch, arch.empty() ? "<arch>" : arch, builtin_archs()));
  p.source = arch.empty() ? "default: no GPU" : fmt::format("default: no fitted parameters for {}", arch);
  return p;
}

}  // namespace fa
