// The nearest-neighbour dispatch table: its key, distance, pick, and its JSON section.
#include "harness/split/dispatch_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "harness/input_error.hpp"
#include "harness/problem_fields.hpp"
#include "harness/split_set.hpp"

namespace fa {
namespace {

// The distance, decided:
// - The continuous features are log2 of B*H, S, Sk, D, H/Hk and max(G, 1): one unit is one doubling
//   in every dimension, a fixed scale that does not depend on what a sweep happened to cover. The
//   paths' costs move multiplicatively with each (blocks per wave ~ B*H*S, key tiles ~ Sk, tile
//   shape ~ D, the GQA group a decode block serves ~ H/Hk), and a path's advantage turns at ratios
//   (a grid filling the SMs, the keys outgrowing a tile), so equal ratios weigh equally. Scaling each
//   by its spread over the training set (z-scores) was rejected: a sweep that only has D 64 and 128
//   would make that one step outweigh three doublings of Sk, and one added problem would move every
//   weight.
// - The categorical features (causal, S == 1, the dtype's class, kv_cache, the serving fields and
//   their values: on the H200 the shipped serving rows named kvcache-paged share B, H, S, Sk and D
//   and differ in page size and lengths, and their fastest path differs, mma-decode or mma by 13-24%)
//   select different kernels or gate outcomes outright, so a mismatch costs kClassGap doublings: a
//   neighbour of another class is taken only when no problem of the query's class is within a
//   factor of 2^8 in every continuous feature at once.
//   The FP8 class is two: OCP (e4m3, e5m2) and FNUZ (MI300's e4m3fnuz, e5m2fnuz), because the
//   paths that take them differ (NVIDIA's mma and wgmma have no FNUZ): on the H200 the FNUZ twin of
//   an OCP FP8 row, a half doubling away as a dtype of the same class, timed only naive and tiled
//   and sent the OCP row, held out, to naive at 219x mma's time (session 27, fp8.yaml).
// - The dtype itself within its class (fp16 against bf16, e4m3 against e5m2) costs kDtypeGap, under
//   one doubling: the same kernels run both at nearly the same speed, so another shape's timing of
//   the same dtype does not outweigh this shape's timing of its twin; but where the problem itself
//   was timed in its own dtype, that timing decides alone (a shipped sweep's row gets its own fastest
//   path, not a compromise with its twin's).
// - Euclidean over those: two features a doubling off are further than one.
constexpr double kClassGap = 8, kDtypeGap = 0.5;

std::array<double, 6> continuous(const DispatchKey& k) {
  auto lg = [](double x) { return std::log2(std::max(x, 1.0)); };
  return {lg(double(k.B) * double(k.H)), lg(double(k.S)), lg(double(k.Sk)), lg(double(k.D)),
          lg(double(k.H) / double(std::max<int64_t>(k.Hk, 1))), lg(double(k.G))};
}

// The dtype's class: its width, and FNUZ apart from OCP within FP8.
int dtype_class(DType t) { return 2 * dtype_bytes(t) + int(is_fnuz(t)); }

std::array<int, 4> categorical(const DispatchKey& k) { return {k.causal, k.S == 1, dtype_class(k.dtype), k.kv_cache}; }

std::string serving_signature(const Problem& p) {
  const std::vector<std::string> set = p.serving_fields();
  std::string s;
  for (const ProblemField& f : problem_field_table())
    if (std::find(set.begin(), set.end(), f.name) != set.end()) s += (s.empty() ? "" : ";") + std::string(f.name) + "=" + f.cell(p);
  return s;
}

}  // namespace

DispatchKey dispatch_key(const Problem& p, int G) {
  DispatchKey k;
  k.B = p.B, k.H = p.H, k.Hk = p.Hk, k.S = p.S, k.Sk = p.Sk, k.D = p.D;
  k.causal = p.causal;
  k.dtype = p.dtype;
  k.kv_cache = p.kv_cache;
  k.serving = serving_signature(p);
  k.G = G;
  return k;
}

double dispatch_distance(const DispatchKey& a, const DispatchKey& b) {
  const auto ca = continuous(a), cb = continuous(b);
  double d2 = 0;
  for (size_t i = 0; i < ca.size(); ++i) d2 += (ca[i] - cb[i]) * (ca[i] - cb[i]);
  const auto ka = categorical(a), kb = categorical(b);
  for (size_t i = 0; i < ka.size(); ++i) d2 += ka[i] != kb[i] ? kClassGap * kClassGap : 0;
  if (a.serving != b.serving) d2 += kClassGap * kClassGap;
  if (a.dtype != b.dtype && dtype_class(a.dtype) == dtype_class(b.dtype)) d2 += kDtypeGap * kDtypeGap;
  return std::sqrt(d2);
}

bool same_shape(const DispatchKey& a, const DispatchKey& b) {
  return a.B == b.B && a.H == b.H && a.Hk == b.Hk && a.S == b.S && a.Sk == b.Sk && a.D == b.D && a.causal == b.causal &&
         a.kv_cache == b.kv_cache && a.serving == b.serving && a.G == b.G;
}

std::optional<DispatchPick> dispatch_pick(const DispatchTable& t, const DispatchKey& q,
                                          const std::function<bool(const std::string&)>& admitted,
                                          const std::function<bool(size_t)>& left_out) {
  std::vector<std::pair<double, size_t>> order;  // (distance, index) of problems timing an admitted path
  for (size_t i = 0; i < t.problems.size(); ++i) {
    if (left_out && left_out(i)) continue;
    const auto& ms = t.problems[i].ms;
    if (std::any_of(ms.begin(), ms.end(), [&](const auto& kv) { return admitted(kv.first); }))
      order.emplace_back(dispatch_distance(q, t.problems[i].key), i);
  }
  if (order.empty()) return std::nullopt;
  std::sort(order.begin(), order.end());
  std::vector<size_t> nearest;  // every problem at the nearest distance
  for (const auto& [d, i] : order)
    if (d <= order.front().first + 1e-9) nearest.push_back(i);
  const DispatchEntry& first = t.problems[nearest.front()];
  DispatchPick pick{"", nearest.front(), order.front().first};
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [path, _] : first.ms) {
    if (!admitted(path)) continue;
    double log_sum = 0;
    bool everywhere = true;
    for (size_t i : nearest) {
      const auto at = t.problems[i].ms.find(path);
      if (at == t.problems[i].ms.end()) {
        everywhere = false;
        break;
      }
      log_sum += std::log(at->second);
    }
    if (everywhere && log_sum < best) best = log_sum, pick.path = path;
  }
  if (pick.path.empty())  // no admitted path timed on every nearest problem: the first one decides
    for (const auto& [path, ms] : first.ms)
      if (admitted(path) && (pick.path.empty() || ms < first.ms.at(pick.path))) pick.path = path;
  return pick;
}

DispatchTable parse_dispatch_json(const nlohmann::json& j, const std::string& source) {
  const SourceLoc at{source, 0};
  DispatchTable t;
  if (!j.is_object()) throw InputError(at, "dispatch", "must be an object");
  if (!j.contains("model")) throw InputError(at, "dispatch.model", "missing");
  if (!j.at("model").is_string() || j.at("model").get<std::string>() != DispatchTable::kModel)
    throw InputError(at, "dispatch.model", fmt::format("must be \"{}\" (the one model this fa-bench reads)", DispatchTable::kModel));
  if (!j.contains("problems")) throw InputError(at, "dispatch.problems", "missing");
  const auto& ps = j.at("problems");
  if (!ps.is_array() || ps.empty()) throw InputError(at, "dispatch.problems", "must be a non-empty array");
  for (size_t n = 0; n < ps.size(); ++n) {
    const std::string where = fmt::format("dispatch.problems[{}]", n);
    const auto& p = ps[n];
    if (!p.is_object()) throw InputError(at, where, "must be an object");
    auto field = [&](const char* key) -> const nlohmann::json& {
      if (!p.contains(key)) throw InputError(at, where + "." + key, "missing");
      return p.at(key);
    };
    auto count = [&](const char* key) {
      const auto& v = field(key);
      if (!v.is_number_integer() || v.get<int64_t>() < 1) throw InputError(at, where + "." + key, "must be a whole number >= 1");
      return v.get<int64_t>();
    };
    auto flag = [&](const char* key) {
      const auto& v = field(key);
      if (!v.is_boolean()) throw InputError(at, where + "." + key, "must be true or false");
      return v.get<bool>();
    };
    DispatchEntry e;
    if (p.contains("name")) {
      if (!p.at("name").is_string()) throw InputError(at, where + ".name", "must be a string");
      e.name = p.at("name").get<std::string>();
    }
    DispatchKey& k = e.key;
    k.B = count("B"), k.H = count("H"), k.Hk = count("Hk"), k.S = count("S"), k.Sk = count("Sk"), k.D = count("D");
    if (k.H % k.Hk != 0) throw InputError(at, where + ".Hk", fmt::format("{} does not divide H = {}", k.Hk, k.H));
    k.causal = flag("causal"), k.kv_cache = flag("kv_cache");
    if (!field("serving").is_string()) throw InputError(at, where + ".serving", "must be a string (empty: no serving field)");
    k.serving = field("serving").get<std::string>();
    const auto& dt = field("dtype");
    const auto dtype = dt.is_string() ? parse_dtype(dt.get<std::string>()) : std::nullopt;
    if (!dtype) throw InputError(at, where + ".dtype", fmt::format("must be one of {}", kDtypeNames));
    k.dtype = *dtype;
    const auto& g = field("G");
    // Read as 64 bits first: get<int>() would wrap 4294967298 to 2.
    if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > 16 || !split_count_allowed(int(g.get<int64_t>())))
      throw InputError(at, where + ".G", "must be one of 0, 2, 4, 8, 16");
    k.G = int(g.get<int64_t>());
    const auto& ms = field("ms");
    if (!ms.is_object() || ms.empty()) throw InputError(at, where + ".ms", "must be a non-empty object: path -> median ms");
    for (const auto& [path, v] : ms.items()) {
      if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
        throw InputError(at, where + ".ms." + path, "must be a finite number > 0 (milliseconds)");
      e.ms[path] = v.get<double>();
    }
    t.problems.push_back(std::move(e));
  }
  return t;
}

std::string dispatch_json_text(const DispatchTable& t, int indent) {
  const std::string pad(size_t(indent), ' ');
  std::string out = fmt::format("{{\n{0}  \"model\": \"{1}\",\n{0}  \"problems\": [\n", pad, DispatchTable::kModel);
  for (size_t i = 0; i < t.problems.size(); ++i) {
    const DispatchEntry& e = t.problems[i];
    const DispatchKey& k = e.key;
    nlohmann::ordered_json ms;
    for (const auto& [path, v] : e.ms) ms[path] = v;
    const nlohmann::ordered_json row{{"name", e.name}, {"B", k.B}, {"H", k.H}, {"Hk", k.Hk}, {"S", k.S}, {"Sk", k.Sk},
                                     {"D", k.D}, {"causal", k.causal}, {"dtype", dtype_name(k.dtype)}, {"kv_cache", k.kv_cache},
                                     {"serving", k.serving}, {"G", k.G}, {"ms", ms}};
    out += fmt::format("{}    {}{}\n", pad, row.dump(), i + 1 < t.problems.size() ? "," : "");
  }
  return out + fmt::format("{0}  ]\n{0}}}", pad);
}

std::string DispatchChoice::describe() const {
  if (!table) return "rank order: " + source;
  return fmt::format("fitted {}, {} problems ({})", arch, table->problems.size(), source);
}

}  // namespace fa
