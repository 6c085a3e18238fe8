// Markdown, CSV and JSON printers for compare and gate; every format carries the same fields,
// the plugin file and version of both sides and their clocks among them.
#include "gate/compare_print.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>

namespace fa {
namespace {

std::string problem_text(const Problem& p) { return fmt::format("{} {}", p.label(), dtype_name(p.dtype)); }

std::string ms(const Record& r) { return r.timing ? fmt::format("{:.4g}", r.timing->median_ms) : ""; }

// "1.886 ±4.4% (214)", then " at 1815 MHz, 12 throttled" where the record has clocks.
std::string ms_with_noise(const Record& r) {
  if (!r.timing) return status_name(r.status);
  std::string s = fmt::format("{} ±{:.1f}% ({})", ms(r), 100 * r.timing->spread, r.timing->samples);
  if (const auto& c = r.timing->clocks) {
    s += fmt::format(" at {:.0f} MHz", c->mhz_median);
    if (c->throttled_samples > 0) s += fmt::format(", {} throttled", c->throttled_samples);
  }
  return s;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// A markdown table cell: a `|` (throttle reasons join with it) would end the cell.
std::string md_cell(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

// "1.091", and " (1.004 in cycles)" where the clocks differed.
std::string ratio_text(const RecordChange& c) {
  if (!c.ratio) return "";
  return fmt::format("{:.3f}{}", *c.ratio, c.cycles_ratio ? fmt::format(" ({:.3f} in cycles)", *c.cycles_ratio) : "");
}

int accuracy_changes(const Comparison& cmp) {
  int n = 0;
  for (const auto& c : cmp.changes) n += !c.accuracy.empty();
  return n;
}

// One flat row of fields shared by the CSV and the JSON.
std::vector<std::pair<std::string, std::string>> change_fields(const Comparison& cmp, const RecordChange* c,
                                                               const ReadRecord* missing) {
  const Record& any = c ? c->new_rec->record : missing->record;
  const Problem& p = any.problem;
  auto num = [](double x) { return fmt::format("{:.6g}", x); };
  auto t = [&](const ReadRecord* r, auto get) {
    return r && r->record.timing ? get(*r->record.timing) : std::string();
  };
  auto err = [&](const ReadRecord* r) { return r && r->record.metrics ? num(r->record.metrics->max_abs) : ""; };
  auto clk = [&](const ReadRecord* r, auto get) {
    return r && r->record.timing && r->record.timing->clocks ? get(*r->record.timing->clocks) : std::string();
  };
  const ReadRecord* o = c ? c->old_rec : missing;
  const ReadRecord* n = c ? c->new_rec : nullptr;
  std::vector<std::pair<std::string, std::string>> f = {{"old_file", cmp.old_path}, {"new_file", cmp.new_path}};
  for (auto& kv : problem_fields(p)) f.push_back(std::move(kv));
  f.insert(f.end(), {
          {"path", any.path},
          {"G_req", any.g_req.str()},
          {"old_plugin", o ? o->record.plugin_file : ""},
          {"old_plugin_version", o ? o->record.plugin_version : ""},
          {"new_plugin", n ? n->record.plugin_file : ""},
          {"new_plugin_version", n ? n->record.plugin_version : ""},
          {"old_status", o ? status_name(o->record.status) : ""},
          {"new_status", n ? status_name(n->record.status) : "missing"},
          {"old_median_ms", t(o, [&](const TimingStats& x) { return num(x.median_ms); })},
          {"new_median_ms", t(n, [&](const TimingStats& x) { return num(x.median_ms); })},
          {"old_spread", t(o, [&](const TimingStats& x) { return num(x.spread); })},
          {"new_spread", t(n, [&](const TimingStats& x) { return num(x.spread); })},
          {"old_samples", t(o, [](const TimingStats& x) { return std::to_string(x.samples); })},
          {"new_samples", t(n, [](const TimingStats& x) { return std::to_string(x.samples); })},
          {"old_clock_mhz_median", clk(o, [&](const ClockStats& x) { return num(x.mhz_median); })},
          {"new_clock_mhz_median", clk(n, [&](const ClockStats& x) { return num(x.mhz_median); })},
          {"old_throttled_samples", clk(o, [](const ClockStats& x) { return std::to_string(x.throttled_samples); })},
          {"new_throttled_samples", clk(n, [](const ClockStats& x) { return std::to_string(x.throttled_samples); })},
          {"old_throttle_reasons", clk(o, [](const ClockStats& x) { return x.throttle_reasons; })},
          {"new_throttle_reasons", clk(n, [](const ClockStats& x) { return x.throttle_reasons; })},
          {"ratio", c && c->ratio ? num(*c->ratio) : ""},
          {"cycles_ratio", c && c->cycles_ratio ? num(*c->cycles_ratio) : ""},
          {"margin", c && c->judged ? num(c->margin) : ""},
          {"verdict", c ? verdict_name(c->verdict) : "MISSING"},
          {"why", c ? c->why : ""},
          {"old_max_abs_err", err(o)},
          {"new_max_abs_err", err(n)},
          {"accuracy", c ? c->accuracy : ""}});
  return f;
}

template <class F>
void for_each_row(const Comparison& cmp, F f) {
  for (const auto& c : cmp.changes) f(change_fields(cmp, &c, nullptr));
  for (const auto* m : cmp.missing) f(change_fields(cmp, nullptr, m));
}

// One line per (path, plugin change) among the matched pairs, with the verdicts and accuracy
// changes that came with it: "- example-cpu: plugin /b/libx.so 1.0.0 → 1.1.0; 3 records: 2 same, 1 slow".
void print_plugin_changes(std::ostream& os, const Comparison& cmp) {
  if (cmp.plugin_changes() == 0) return;
  struct Group {
    std::string path, change;
    std::map<SpeedVerdict, int> verdicts;
    int records = 0, accuracy = 0;
  };
  std::vector<Group> groups;  // in the order the new file first shows each
  for (const auto& c : cmp.changes) {
    if (c.plugin.empty()) continue;
    const std::string& path = c.new_rec->record.path;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.path == path && g.change == c.plugin; });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{path, c.plugin, {}, 0, 0});
    it->verdicts[c.verdict] += 1;
    it->records += 1;
    it->accuracy += !c.accuracy.empty();
  }
  os << "\nPlugin builds that differ (reported beside the verdicts, which judge the timings alone):\n\n";
  for (const auto& g : groups) {
    std::string counts;
    for (const auto& [v, n] : g.verdicts)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, v == SpeedVerdict::untimed ? "untimed" : lower(verdict_name(v)));
    if (g.accuracy) counts += fmt::format(", {} accuracy change{}", g.accuracy, g.accuracy == 1 ? "" : "s");
    os << fmt::format("- {}: {}; {} record{}: {}\n", g.path, g.change, g.records, g.records == 1 ? "" : "s", counts);
  }
}

}  // namespace

std::string compare_counts(const Comparison& cmp) {
  std::string text =
      fmt::format("{} same, {} slow, {} fast, {} ambiguous, {} untimed; {} missing, {} added; {} accuracy change{}",
                  cmp.count(SpeedVerdict::same), cmp.count(SpeedVerdict::slow), cmp.count(SpeedVerdict::fast),
                  cmp.count(SpeedVerdict::ambiguous), cmp.count(SpeedVerdict::untimed), cmp.missing.size(),
                  cmp.added.size(), accuracy_changes(cmp), accuracy_changes(cmp) == 1 ? "" : "s");
  if (const int n = cmp.plugin_changes(); n > 0) text += fmt::format("; {} from another plugin build", n);
  return text;
}

void print_compare_markdown(std::ostream& os, const Comparison& cmp, const CompareRule& rule) {
  os << fmt::format("\n## {} vs {}\n\n", cmp.new_path, cmp.old_path);
  os << fmt::format("SLOW/FAST beyond max({:.0f}%, {} x combined spread); AMBIGUOUS under {} samples or untimed; "
                    "where the clock medians differ by more than {:g}%, judged in cycles too and AMBIGUOUS where the two "
                    "verdicts differ; {}.\n\n",
                    100 * rule.threshold, rule.k, rule.min_samples, 100 * rule.clock_threshold,
                    rule.allow_throttled ? std::string("throttled records judged (--allow-throttled)")
                                         : fmt::format("AMBIGUOUS with more than {:g}% of a side's samples throttled",
                                                       100 * rule.max_throttled_share));
  os << "| problem | path | G | old ms ±spread (n) | new ms ±spread (n) | new/old | margin | verdict | accuracy |\n";
  os << "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : cmp.changes) {
    const Record& o = c.old_rec->record;
    const Record& n = c.new_rec->record;
    std::string verdict = verdict_name(c.verdict);
    if (!c.why.empty()) verdict += ": " + md_cell(c.why);
    os << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", problem_text(n.problem), n.path,
                      n.g_req.str(), ms_with_noise(o), ms_with_noise(n), ratio_text(c),
                      c.judged ? fmt::format("{:.1f}%", 100 * c.margin) : "", verdict, c.accuracy);
  }
  for (const auto& g : cmp.geomeans)
    os << fmt::format("| **geomean** ({} records) | {} | | | | {:.3f} | | | |\n", g.n, g.path, g.ratio);
  print_plugin_changes(os, cmp);
  if (!cmp.missing.empty()) {
    os << fmt::format("\nMissing from {}:\n\n", cmp.new_path);
    for (const auto* m : cmp.missing)
      os << fmt::format("- {} {} G={} ({}, {})\n", problem_text(m->record.problem), m->record.path,
                        m->record.g_req.str(), status_name(m->record.status), m->at.str());
  }
  os << "\n" << compare_counts(cmp) << "\n";
}

std::string compare_csv(const std::vector<Comparison>& cmps) {
  std::string f;
  bool header = false;
  for (const auto& cmp : cmps)
    for_each_row(cmp, [&](const auto& fields) {
      std::string line;
      if (!header) {
        for (const auto& kv : fields) line += (line.empty() ? "" : ",") + kv.first;
        f += line + '\n';
        line.clear();
        header = true;
      }
      for (const auto& kv : fields) line += (line.empty() ? "" : ",") + csv_escape(kv.second);
      f += line + '\n';
    });
  return f;
}

std::string compare_json(const std::vector<Comparison>& cmps, const CompareRule& rule) {
  nlohmann::json doc = {{"rule",
                         {{"threshold", rule.threshold},
                          {"k", rule.k},
                          {"min_samples", rule.min_samples},
                          {"err_growth", rule.err_growth},
                          {"clock_threshold", rule.clock_threshold},
                          {"max_throttled_share", rule.max_throttled_share},
                          {"allow_throttled", rule.allow_throttled}}},
                        {"comparisons", nlohmann::json::array()}};
  for (const auto& cmp : cmps) {
    nlohmann::json j = {{"old", escape_text(cmp.old_path)}, {"new", escape_text(cmp.new_path)}, {"summary", compare_counts(cmp)},
                        {"records", nlohmann::json::array()}, {"geomean", nlohmann::json::array()}};
    for_each_row(cmp, [&](const auto& fields) {
      nlohmann::json r;
      for (const auto& [k, v] : fields) r[k] = escape_text(v);  // valid UTF-8 whatever the names hold
      j["records"].push_back(r);
    });
    for (const auto& g : cmp.geomeans) j["geomean"].push_back({{"path", g.path}, {"ratio", g.ratio}, {"records", g.n}});
    doc["comparisons"].push_back(j);
  }
  return doc.dump(2) + '\n';
}

}  // namespace fa
