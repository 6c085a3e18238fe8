// `fa-bench fit`'s data, fitter and scores.
#include "fit/split_fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

namespace fa {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double t_at(const FitProblem& p, int G) { return p.t[split_index(G)]; }

// Summed log regret of the model's picks under `m` (the margin's objective).
double log_regret(const std::vector<FitProblem>& ps, const ModelParams& m) {
  double s = 0;
  for (const auto& p : ps) s += std::log1p(p.regret(split_model(p.in, m)));
  return s;
}

}  // namespace

size_t FitProblem::best() const { return size_t(std::min_element(t.begin(), t.end()) - t.begin()); }

std::vector<int> FitProblem::tie_set() const {
  const size_t b = best();
  std::vector<int> out;
  for (size_t i = 0; i < kNumSplitChoices; ++i)
    if (t[i] - t[b] <= band[i] + band[b]) out.push_back(kSplitChoices[i]);
  return out;
}

double FitProblem::regret(int G) const { return t_at(*this, G) / t[best()] - 1; }

double noise_band_ms(const TimingStats& t) {
  const double se = t.samples > 0 ? 2 * t.spread / std::sqrt(double(t.samples)) : 1.0;
  return t.median_ms * std::max(se, 0.005);
}

FitData collect_fit_data(const std::vector<Record>& records, const std::string& path) {
  struct Group {
    Problem p;
    int units = 0;
    std::array<const Record*, kNumSplitChoices> at{};
  };
  std::map<std::string, std::map<std::string, Group>> by_path;  // path -> problem key -> G records
  std::map<std::string, std::vector<std::string>> notes;
  for (const auto& r : records) {
    if (r.g_req.is_auto || !split_count_allowed(r.g_req.value)) continue;
    Group& g = by_path[r.path][r.problem.key()];
    g.p = r.problem;
    const size_t i = split_index(r.g_req.value);
    if (r.status != Status::pass || !r.timing) continue;
    if (g.at[i]) {
      notes[r.path].push_back(fmt::format("{} G={}: a second timed record (the first is kept)", r.problem.label(), r.g_req.value));
      continue;
    }
    g.at[i] = &r;
  }
  auto complete = [](const Group& g) { return std::all_of(g.at.begin(), g.at.end(), [](const Record* r) { return r; }); };
  std::string chosen = path;
  if (chosen.empty()) {
    size_t most = 0;
    for (const auto& [name, groups] : by_path) {
      const size_t n = size_t(std::count_if(groups.begin(), groups.end(), [&](auto& kv) { return complete(kv.second); }));
      if (n > most) most = n, chosen = name;
    }
    if (chosen.empty())
      throw std::runtime_error("no path has a problem timed (and passing) at every G of 0, 2, 4, 8, 16: sweep with --G 0,2,4,8,16");
  }
  const auto it = by_path.find(chosen);
  if (it == by_path.end()) throw std::runtime_error(fmt::format("no records of path '{}'", chosen));
  FitData out;
  out.path = chosen;
  out.dropped = notes[chosen];
  for (const auto& [key, g] : it->second) {
    if (!complete(g)) {
      std::string missing;
      for (size_t i = 0; i < kNumSplitChoices; ++i)
        if (!g.at[i]) missing += (missing.empty() ? "" : ",") + std::to_string(kSplitChoices[i]);
      out.dropped.push_back(fmt::format("{}: no passing timed record at G={}", g.p.label(), missing));
      continue;
    }
    FitProblem fp;
    fp.in.problem = g.p;
    fp.in.units = g.at[0]->units;
    for (size_t i = 0; i < kNumSplitChoices; ++i) {
      const Record& r = *g.at[i];
      if (r.units <= 0 || r.tile.block_m <= 0 || r.tile.block_n <= 0 || r.tile.resident <= 0)
        throw std::runtime_error(fmt::format(
            "{} G={} ({}:{}): no units/tile_m/tile_n/resident: fit needs records of schema 4 or later", g.p.label(),
            kSplitChoices[i], r.where.file, r.where.line));
      fp.in.tiles[i] = r.tile;
      fp.t[i] = r.timing->median_ms;
      fp.band[i] = noise_band_ms(*r.timing);
    }
    fp.family = fmt::format("B={} H={} D={}", g.p.B, g.p.H, g.p.D);
    fp.label = fmt::format("{} ({},{},{},{},{},{},{})", g.p.label(), g.p.B, g.p.H, g.p.Hk, g.p.S, g.p.Sk, g.p.D,
                           g.p.causal ? 1 : 0);
    out.problems.push_back(fp);
  }
  return out;
}

ModelParams fit_model(const std::vector<FitProblem>& train) {
  constexpr int kTerms = ModelTerms::kCount;
  const Eigen::Index rows = Eigen::Index(train.size() * kNumSplitChoices);
  Eigen::MatrixXd A(rows, kTerms);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(rows);  // t / t
  Eigen::Index row = 0;
  for (const auto& p : train)
    for (size_t i = 0; i < kNumSplitChoices; ++i, ++row) {
      const auto terms = model_terms(p.in, kSplitChoices[i]).as_array();
      for (int c = 0; c < kTerms; ++c) A(row, c) = terms[size_t(c)] / p.t[i];
    }
  // Exact NNLS for a handful of terms: least squares on every subset of columns, the best one
  // whose coefficients are all >= 0.
  ModelParams best;
  double best_res = std::numeric_limits<double>::infinity();
  for (unsigned mask = 1; mask < (1u << kTerms); ++mask) {
    std::vector<int> cols;
    for (int c = 0; c < kTerms; ++c)
      if (mask & (1u << c)) cols.push_back(c);
    Eigen::MatrixXd As(rows, Eigen::Index(cols.size()));
    for (size_t k = 0; k < cols.size(); ++k) As.col(Eigen::Index(k)) = A.col(cols[k]);
    if (As.colwise().norm().minCoeff() == 0) continue;  // a term these problems never exercise
    const Eigen::VectorXd x = As.colPivHouseholderQr().solve(b);
    if (!x.allFinite() || (x.array() < 0).any()) continue;
    const double res = (As * x - b).squaredNorm();
    if (res < best_res * (1 - 1e-12)) {
      best_res = res;
      best.coef = {};
      for (size_t k = 0; k < cols.size(); ++k) best.coef[size_t(cols[k])] = x(Eigen::Index(k));
    }
  }
  if (!std::isfinite(best_res)) throw std::runtime_error("fit: no non-negative solution (no usable timings)");
  double best_obj = std::numeric_limits<double>::infinity();
  for (double m : kMargins) {  // ties go to the larger margin (the smaller G)
    ModelParams cand = best;
    cand.margin = m;
    const double obj = log_regret(train, cand);
    if (obj <= best_obj + 1e-12) best_obj = obj, best.margin = m;
  }
  return best;
}

std::vector<int> kfold_picks(const std::vector<FitProblem>& ps, int k, uint64_t seed) {
  if (k < 2) throw std::invalid_argument("k-fold needs k >= 2");
  std::vector<size_t> order(ps.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return splitmix64(seed ^ a) < splitmix64(seed ^ b); });
  std::vector<int> fold(ps.size());
  for (size_t i = 0; i < order.size(); ++i) fold[order[i]] = int(i % size_t(k));
  std::vector<int> picks(ps.size(), 0);
  for (int f = 0; f < k; ++f) {
    std::vector<FitProblem> train;
    for (size_t i = 0; i < ps.size(); ++i)
      if (fold[i] != f) train.push_back(ps[i]);
    if (train.empty()) continue;
    const ModelParams m = fit_model(train);
    for (size_t i = 0; i < ps.size(); ++i)
      if (fold[i] == f) picks[i] = split_model(ps[i].in, m);
  }
  return picks;
}

std::vector<int> lofo_picks(const std::vector<FitProblem>& ps) {
  std::set<std::string> families;
  for (const auto& p : ps) families.insert(p.family);
  std::vector<int> picks(ps.size(), 0);
  for (const auto& fam : families) {
    std::vector<FitProblem> train;
    for (const auto& p : ps)
      if (p.family != fam) train.push_back(p);
    if (train.empty()) throw std::runtime_error("leave-one-family-out needs at least two (B, H, D) families");
    const ModelParams m = fit_model(train);
    for (size_t i = 0; i < ps.size(); ++i)
      if (ps[i].family == fam) picks[i] = split_model(ps[i].in, m);
  }
  return picks;
}

RuleScore score_picks(const std::string& rule, const std::vector<FitProblem>& ps, const std::vector<int>& picks) {
  if (picks.size() != ps.size()) throw std::invalid_argument("score_picks: one pick per problem");
  RuleScore s;
  s.rule = rule;
  s.n = ps.size();
  if (ps.empty()) return s;
  std::vector<double> regrets;
  double log_r = 0, log_speed = 0, gained = 0, possible = 0;
  size_t w1 = 0, w5 = 0, w10 = 0, harm = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    const FitProblem& p = ps[i];
    const double r = p.regret(picks[i]);
    const double t0 = p.t[0], tp = t_at(p, picks[i]), tb = p.t[p.best()];
    regrets.push_back(r);
    w1 += r <= 0.01, w5 += r <= 0.05, w10 += r <= 0.10;
    harm += tp > 1.02 * t0;
    log_r += std::log1p(r);
    log_speed += std::log(t0 / tp);
    gained += t0 - tp;
    possible += t0 - tb;
  }
  const double n = double(ps.size());
  std::sort(regrets.begin(), regrets.end());
  s.within1 = double(w1) / n, s.within5 = double(w5) / n, s.within10 = double(w10) / n;
  s.geomean_regret = std::expm1(log_r / n);
  s.p90_regret = regrets[std::min(regrets.size() - 1, size_t(std::ceil(0.9 * n)) - 1)];
  s.max_regret = regrets.back();
  s.harm = double(harm) / n;
  s.speedup_vs_0 = std::exp(log_speed / n);
  s.oracle_capture = possible > 0 ? gained / possible : std::numeric_limits<double>::quiet_NaN();
  return s;
}

std::string score_table(const std::vector<RuleScore>& scores) {
  std::string out =
      "| rule | problems | within 1% | within 5% | within 10% | geomean regret | p90 regret | max regret | harm rate | "
      "speedup vs G=0 | oracle capture |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  auto pct = [](double x) { return fmt::format("{:.1f}%", 100 * x); };
  for (const auto& s : scores)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3f}x | {} |\n", s.rule, s.n, pct(s.within1),
                       pct(s.within5), pct(s.within10), pct(s.geomean_regret), pct(s.p90_regret), pct(s.max_regret),
                       pct(s.harm), s.speedup_vs_0, std::isnan(s.oracle_capture) ? "n/a" : pct(s.oracle_capture));
  return out;
}

}  // namespace fa
