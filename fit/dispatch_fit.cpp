// `fa-bench fit`'s dispatch data, table and scores.
#include "fit/dispatch_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "fit/split_fit.hpp"

namespace fa {
namespace {

struct Timed {
  double ms = 0, band = 0, spread = 0;
  int g_used = 0;
};

std::string pct(double x) { return fmt::format("{:.1f}%", 100 * x); }

DispatchOutcome outcome(const DispatchRow& r, const std::string& pick, double ms, double band, double spread) {
  DispatchOutcome o;
  o.pick = pick, o.ms = ms, o.band = band;
  const std::string best = r.best();
  const double tb = r.entry.ms.at(best);
  o.regret = ms / tb - 1;
  o.tie = ms - tb <= std::max(band + r.band.at(best), ms * spread + tb * r.spread.at(best));
  return o;
}

bool meets_bar(const DispatchOutcome& o) { return o.regret <= kDispatchBar || o.tie || o.same_kernel; }

std::string cell(const std::optional<DispatchOutcome>& o) {
  if (!o) return "-";
  const char* why = o->regret <= 0 ? "" : o->tie ? " (tie)" : o->same_kernel ? " (same kernel)" : "";
  return fmt::format("{}{} {}{}", o->pick, o->fallback ? " (rank order)" : "", pct(o->regret), why);
}

}  // namespace

std::string DispatchRow::best() const {
  return std::min_element(entry.ms.begin(), entry.ms.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
}

DispatchData collect_dispatch_data(const std::vector<Record>& records, const std::set<std::string>& exclude) {
  struct Group {
    const Record* first = nullptr;
    std::map<std::string, Timed> paths;
    std::optional<std::pair<std::string, Timed>> auto_run;
  };
  std::map<std::string, Group> groups;  // problem key + requested G, in key order
  std::vector<std::string> order;       // first-seen order, so the table reads as the sweeps did
  DispatchData d;
  for (const auto& r : records) {
    // A zero median (a record timed below the clock's resolution) would write a table its own
    // parser refuses (ms must be > 0): left out.
    if (r.status != Status::pass || !r.timing || !(r.timing->median_ms > 0) || exclude.count(r.path)) continue;
    const std::string key = r.problem.key() + "|G=" + r.g_req.str();
    Group& g = groups[key];
    if (!g.first) g.first = &r, order.push_back(key);
    const Timed t{r.timing->median_ms, noise_band_ms(*r.timing), r.timing->spread, r.g_used};
    if (r.path == "auto") {
      if (!g.auto_run && !r.ran_path.empty()) g.auto_run.emplace(r.ran_path, t);
      continue;
    }
    if (!g.paths.emplace(r.path, t).second)
      d.notes.push_back(fmt::format("{} G={} {}: a second timed record (the first is kept)", r.problem.label(), r.g_req.str(), r.path));
  }
  size_t single = 0;
  for (const auto& key : order) {
    const Group& g = groups.at(key);
    const Record& r = *g.first;
    if (g.paths.size() < 2) {
      ++single;
      continue;
    }
    DispatchRow row;
    row.label = fmt::format("{} G={}", r.problem.label(), r.g_req.str());
    row.entry.name = r.problem.label();
    for (const auto& [path, t] : g.paths) {
      row.entry.ms[path] = t.ms;
      row.band[path] = t.band;
      row.spread[path] = t.spread;
      row.g_used[path] = t.g_used;
      d.paths.insert(path);
    }
    // G=auto rows: each path ran at the G the rule chose for its tile; the key takes the fastest
    // path's, the G auto would run with had it picked that path, snapped to the split set: a path
    // that sizes its own split (decode's chunk count, 1 to hundreds) records that count instead.
    row.entry.key = dispatch_key(r.problem, r.g_req.is_auto ? snap_split(g.paths.at(row.best()).g_used) : r.g_req.value);
    if (g.auto_run) {
      const Timed& a = g.auto_run->second;
      row.auto_ran = g.auto_run->first, row.auto_ms = a.ms, row.auto_band = a.band, row.auto_spread = a.spread;
      row.auto_g_used = a.g_used;
    }
    d.rows.push_back(std::move(row));
  }
  if (single > 0)
    d.notes.push_back(fmt::format("{} problem(s) timed on fewer than two paths: not in the dispatch table", single));
  return d;
}

DispatchTable dispatch_table(const DispatchData& d) {
  DispatchTable t;
  for (const auto& r : d.rows) t.problems.push_back(r.entry);
  return t;
}

std::vector<DispatchOutcome> dispatch_picks(const DispatchData& d, const DispatchTable& t, Holdout holdout,
                                            const std::function<int(const std::string&)>& rank) {
  std::vector<DispatchOutcome> out;
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const DispatchRow& r = d.rows[i];
    auto admitted = [&](const std::string& p) { return r.entry.ms.count(p) > 0; };
    auto left_out = [&](size_t j) {
      return (holdout == Holdout::row && j == i) || (holdout == Holdout::shape && same_shape(t.problems[j].key, r.entry.key));
    };
    const auto pick = dispatch_pick(t, r.entry.key, admitted, left_out);
    std::string path;
    if (pick) {
      path = pick->path;
    } else {
      int top = 0;
      for (const auto& [p, ms] : r.entry.ms)
        if (rank(p) > top) top = rank(p), path = p;
      if (path.empty())
        path = std::max_element(r.entry.ms.begin(), r.entry.ms.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    }
    DispatchOutcome o = outcome(r, path, r.entry.ms.at(path), r.band.at(path), r.spread.at(path));
    o.fallback = !pick;
    out.push_back(o);
  }
  return out;
}

std::vector<std::optional<DispatchOutcome>> recorded_auto(const DispatchData& d) {
  std::vector<std::optional<DispatchOutcome>> out;
  for (const auto& r : d.rows) {
    if (!r.auto_ran) {
      out.push_back(std::nullopt);
      continue;
    }
    DispatchOutcome o = outcome(r, *r.auto_ran, r.auto_ms, r.auto_band, r.auto_spread);
    const auto own = r.entry.ms.find(*r.auto_ran);
    if (own != r.entry.ms.end() && r.auto_g_used == r.g_used.at(own->first)) {
      const DispatchOutcome choice = outcome(r, own->first, own->second, r.band.at(own->first), r.spread.at(own->first));
      o.same_kernel = choice.regret <= kDispatchBar || choice.tie;
    }
    out.push_back(o);
  }
  return out;
}

std::string dispatch_summary(const DispatchData& d, const std::vector<DispatchScoreSet>& sets) {
  std::string out =
      "| picks | rows | geomean regret | worst regret (row) | within 3% or noise | ties (regret > 0, within noise or the same kernel) | "
      "rank-order fallbacks |\n|---|---|---|---|---|---|---|\n";
  for (const auto& s : sets) {
    size_t n = 0, ok = 0, ties = 0, fallbacks = 0, worst = 0;
    double log_r = 0, worst_r = -1;
    for (size_t i = 0; i < s.outcomes.size(); ++i) {
      const auto& o = s.outcomes[i];
      if (!o) continue;
      ++n;
      log_r += std::log1p(std::max(o->regret, 0.0));
      ok += meets_bar(*o), ties += o->regret > 0 && (o->tie || o->same_kernel), fallbacks += o->fallback;
      if (o->regret > worst_r) worst_r = o->regret, worst = i;
    }
    if (n == 0) continue;
    out += fmt::format("| {} | {} | {} | {} ({}) | {}/{} | {} | {} |\n", s.name, n, pct(std::expm1(log_r / double(n))),
                       pct(worst_r), d.rows[worst].label, ok, n, ties, fallbacks);
  }
  return out;
}

std::string dispatch_losses(const DispatchData& d, const std::vector<DispatchScoreSet>& sets) {
  std::string out = "| fixed path | rows it ran |";
  std::string rule = "|---|---|";
  for (const auto& s : sets) out += fmt::format(" faster than {} |", s.name), rule += "---|";
  out += "\n" + rule + "\n";
  for (const auto& path : d.paths) {
    size_t ran = 0;
    std::vector<size_t> beats(sets.size(), 0), of(sets.size(), 0);
    for (size_t i = 0; i < d.rows.size(); ++i) {
      const DispatchRow& r = d.rows[i];
      const auto at = r.entry.ms.find(path);
      if (at == r.entry.ms.end()) continue;
      ++ran;
      for (size_t k = 0; k < sets.size(); ++k) {
        const auto& o = sets[k].outcomes[i];
        if (!o) continue;
        ++of[k];
        beats[k] += at->second < o->ms - (r.band.at(path) + o->band);  // beyond both noise bands
      }
    }
    out += fmt::format("| {} | {} |", path, ran);
    for (size_t k = 0; k < sets.size(); ++k)
      out += of[k] ? fmt::format(" {} ({}/{}) |", pct(double(beats[k]) / double(of[k])), beats[k], of[k]) : " - |";
    out += "\n";
  }
  return out;
}

std::string dispatch_rows(const DispatchData& d, const std::vector<DispatchScoreSet>& sets, bool only_behind) {
  std::string out = "| problem | best path | best ms |";
  std::string rule = "|---|---|---|";
  for (const auto& s : sets) out += fmt::format(" {} |", s.name), rule += "---|";
  out += "\n" + rule + "\n";
  size_t shown = 0;
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const DispatchRow& r = d.rows[i];
    const bool behind = std::any_of(sets.begin(), sets.end(), [&](const auto& s) { return s.outcomes[i] && !meets_bar(*s.outcomes[i]); });
    if (only_behind && !behind) continue;
    ++shown;
    const std::string best = r.best();
    out += fmt::format("| {} | {} | {:.4g} |", r.label, best, r.entry.ms.at(best));
    for (const auto& s : sets) out += fmt::format(" {} |", cell(s.outcomes[i]));
    out += "\n";
  }
  return shown ? out : std::string("(none)\n");
}

}  // namespace fa
