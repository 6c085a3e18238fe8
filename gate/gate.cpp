// Gate verdict over a comparison plus the current file's own statuses.
#include "gate/gate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "gate/compare_print.hpp"

namespace fa {

bool GateReport::failed() const {
  return slow > 0 || !missing.empty() || !wrong.empty() || (strict && ambiguous > 0);
}

std::string GateReport::summary() const {
  return fmt::format("gate: {} {} slow, {} missing, {} wrong, {} ambiguous{} of {} records", failed() ? "FAIL" : "PASS",
                     slow, missing.size(), wrong.size(), ambiguous, strict ? " (strict)" : "", records);
}

std::string untimeable(const TimingStats& t) {
  const std::pair<const char*, double> values[] = {
      {"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms}, {"spread", t.spread}};
  for (const auto& [name, v] : values)
    if (!std::isfinite(v) || v < 0) return fmt::format("{} is {:g}: a timing must be a finite number >= 0", name, v);
  return "";
}

GateReport run_gate(const ResultsFile& baseline, const ResultsFile& current, const CompareRule& rule, bool strict) {
  GateReport g;
  g.cmp = compare_results(baseline, current, rule);
  g.strict = strict;
  g.slow = g.cmp.count(SpeedVerdict::slow);
  g.ambiguous = g.cmp.count(SpeedVerdict::ambiguous);
  g.missing = g.cmp.missing;
  for (const auto& c : g.cmp.changes)
    if (c.lost_coverage) g.missing.push_back(c.old_rec);
  std::set<std::string> seen, seen_base;  // a resumed file may hold a key twice; judge the last one
  for (auto it = current.records.rbegin(); it != current.records.rend(); ++it) {
    if (!seen.insert(match_key(it->record)).second) continue;
    const Status s = it->record.status;
    std::string why = it->record.timing ? untimeable(*it->record.timing) : "";
    // The last timed launch's output differed from the validated one's (state carried between
    // launches): wrong whatever the status says, as a file edited or written by another tool may say pass.
    if (why.empty() && it->record.timed_check == "differs")
      why = "timed_check is differs: the last timed launch's output is not the validated run's";
    if (s != Status::pass && s != Status::skip) g.wrong.insert(g.wrong.begin(), {&*it, why});
    else if (!why.empty()) g.wrong.insert(g.wrong.begin(), {&*it, why});
  }
  for (auto it = baseline.records.rbegin(); it != baseline.records.rend(); ++it)
    if (seen_base.insert(match_key(it->record)).second && it->record.timing)
      if (const std::string why = untimeable(*it->record.timing); !why.empty())
        g.wrong.push_back({&*it, "in the baseline: " + why});
  g.records = int(seen.size());
  return g;
}

void print_gate_report(std::ostream& os, const GateReport& g, const CompareRule& rule) {
  print_compare_markdown(os, g.cmp, rule);
  // Each failing record whose pair changed plugin builds says which: a regression names the build it came with.
  std::map<const ReadRecord*, std::string> plugin;
  for (const auto& c : g.cmp.changes)
    if (!c.plugin.empty()) plugin[c.old_rec] = plugin[c.new_rec] = "; " + c.plugin;
  auto with_plugin = [&](const ReadRecord* r) {
    const auto it = plugin.find(r);
    return it == plugin.end() ? std::string() : it->second;
  };
  auto list = [&](const char* title, const std::vector<GateReport::Wrong>& rs) {
    if (rs.empty()) return;
    os << fmt::format("\n{}:\n\n", title);
    for (const auto& [r, why] : rs) {
      const Record& x = r->record;
      const std::string what = !why.empty() ? why : x.reason.empty() ? "" : " " + x.reason;
      os << fmt::format("- {} {} {} G={}: {}{} ({}){}\n", x.problem.label(), dtype_name(x.problem.dtype), x.path,
                        x.g_req.str(), why.empty() ? status_name(x.status) : "", what, r->at.str(), with_plugin(r));
    }
  };
  list("Wrong (neither pass nor skip, a timing that is not a finite number >= 0, or a timed launch that differs)", g.wrong);
  std::vector<GateReport::Wrong> missing;
  for (const auto* r : g.missing) missing.push_back({r, ""});
  list("Missing or no longer run (as in the baseline)", missing);
  if (g.slow > 0) os << "\nSlow:\n\n";
  for (const auto& c : g.cmp.changes)
    if (c.verdict == SpeedVerdict::slow) {
      const Record& x = c.new_rec->record;
      const std::string cycles =
          c.cycles_ratio ? fmt::format(" and {:.3f}x in cycles, {}", *c.cycles_ratio, c.clocks) : std::string();
      os << fmt::format("- {} {} {} G={}: {:.3f}x the baseline{}, beyond its {:.1f}% margin ({}){}\n", x.problem.label(),
                        dtype_name(x.problem.dtype), x.path, x.g_req.str(), *c.ratio, cycles, 100 * c.margin,
                        c.new_rec->at.str(), c.plugin.empty() ? "" : "; " + c.plugin);
    }
  // Each with its reason, as a CI log is read from the bottom: a clock or a throttled record names itself.
  if (g.ambiguous > 0) os << fmt::format("\nAmbiguous ({}):\n\n", g.strict ? "failing: --strict" : "reported; they fail only with --strict");
  for (const auto& c : g.cmp.changes)
    if (c.verdict == SpeedVerdict::ambiguous) {
      const Record& x = c.new_rec->record;
      os << fmt::format("- {} {} {} G={}: {} ({})\n", x.problem.label(), dtype_name(x.problem.dtype), x.path, x.g_req.str(),
                        c.why, c.new_rec->at.str());
    }
  os << "\n" << g.summary() << "\n";
}

}  // namespace fa
