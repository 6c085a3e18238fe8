// Record matching, the noise-aware speed verdict (in ms, and in cycles where the clocks moved),
// the throttled-share rule, accuracy changes, and geomean ratios.
#include "gate/compare.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

namespace fa {

const char* verdict_name(SpeedVerdict v) {
  switch (v) {
    case SpeedVerdict::same: return "SAME";
    case SpeedVerdict::fast: return "FAST";
    case SpeedVerdict::slow: return "SLOW";
    case SpeedVerdict::ambiguous: return "AMBIGUOUS";
    case SpeedVerdict::untimed: return "-";
  }
  return "?";
}

int Comparison::count(SpeedVerdict v) const {
  int n = 0;
  for (const auto& c : changes) n += c.verdict == v;
  return n;
}

int Comparison::plugin_changes() const {
  int n = 0;
  for (const auto& c : changes) n += !c.plugin.empty();
  return n;
}

std::string match_key(const Record& r) { return r.problem.key() + "|" + r.problem.name + "|" + r.path + "|" + r.g_req.str(); }

std::string plugin_change(const Record& o, const Record& n) {
  if (o.plugin_file == n.plugin_file && o.plugin_version == n.plugin_version) return "";
  auto version = [](const Record& r) { return r.plugin_version.empty() ? std::string("(no version)") : r.plugin_version; };
  auto side = [&](const Record& r) {
    return r.plugin_file.empty() ? std::string("built in") : fmt::format("{} {}", r.plugin_file, version(r));
  };
  if (o.plugin_file == n.plugin_file) return fmt::format("plugin {} {} → {}", o.plugin_file, version(o), version(n));
  return fmt::format("plugin {} → {}", side(o), side(n));
}

namespace {

// The verdict of a ratio against a margin. Symmetric in log space: 1.05x slower and 1.05x faster
// need the same evidence.
SpeedVerdict by_margin(double ratio, double m) {
  if (ratio > 1 + m) return SpeedVerdict::slow;
  if (ratio < 1 / (1 + m)) return SpeedVerdict::fast;
  return SpeedVerdict::same;
}

// "+9.1%", "-3.0%"; "+0.0%" for a change that rounds to none on either side of it.
std::string signed_change(double ratio) { return fmt::format("{:+.1f}%", std::round(1000 * (ratio - 1)) / 10 + 0.0); }

bool usable(const std::optional<ClockStats>& c) {
  return c && std::isfinite(c->mhz_median) && c->mhz_median > 0 && std::isfinite(c->cycles_median) && c->cycles_median > 0;
}

// "new: 18 of 20 samples throttled (sw_power_cap)" where the share is over the rule's, else empty.
std::string over_throttled(const TimingStats& t, const char* side, const CompareRule& rule) {
  if (!t.clocks || t.samples <= 0 || double(t.clocks->throttled_samples) <= rule.max_throttled_share * t.samples) return "";
  const std::string& why = t.clocks->throttle_reasons;
  return fmt::format("{}: {} of {} samples throttled{}", side, t.clocks->throttled_samples, t.samples,
                     why.empty() ? "" : " (" + why + ")");
}

// "clock 1980 → 1815 MHz (new sw_power_cap on 12 of 20 samples)": each side's throttle reasons where it has any.
std::string clock_change(const TimingStats& o, const TimingStats& n) {
  std::string reasons;
  for (const auto& [side, t] : {std::pair<const char*, const TimingStats*>{"old", &o}, {"new", &n}})
    if (t->clocks->throttled_samples > 0)
      reasons += fmt::format("{}{} {} on {} of {} samples", reasons.empty() ? "" : ", ", side, t->clocks->throttle_reasons,
                             t->clocks->throttled_samples, t->samples);
  return fmt::format("clock {:.0f} → {:.0f} MHz{}", o.clocks->mhz_median, n.clocks->mhz_median,
                     reasons.empty() ? "" : " (" + reasons + ")");
}

}  // namespace

SpeedVerdict judge_speed(const TimingStats* old_t, const TimingStats* new_t, const CompareRule& rule, double* margin,
                         std::string* why) {
  std::string reason;
  if (!old_t && !new_t) return SpeedVerdict::untimed;
  if (!old_t || !new_t) reason = fmt::format("{} has no timing", old_t ? "new" : "old");
  else if (old_t->samples < rule.min_samples) reason = fmt::format("old has {} samples < {}", old_t->samples, rule.min_samples);
  else if (new_t->samples < rule.min_samples) reason = fmt::format("new has {} samples < {}", new_t->samples, rule.min_samples);
  else if (!std::isfinite(old_t->median_ms) || !std::isfinite(new_t->median_ms) || !std::isfinite(old_t->spread) ||
           !std::isfinite(new_t->spread) || old_t->spread < 0 || new_t->spread < 0)
    reason = "a median or spread that is not a finite number >= 0";
  else if (!(old_t->median_ms > 0) || !(new_t->median_ms > 0)) reason = "a median of 0 ms or less";
  if (!reason.empty()) {
    if (why) *why = reason;
    return SpeedVerdict::ambiguous;
  }
  const double m = std::max(rule.threshold, rule.k * std::hypot(old_t->spread, new_t->spread));
  if (margin) *margin = m;
  return by_margin(new_t->median_ms / old_t->median_ms, m);
}

void judge_timings(RecordChange& c, const TimingStats* old_t, const TimingStats* new_t, const CompareRule& rule) {
  c.verdict = judge_speed(old_t, new_t, rule, &c.margin, &c.why);
  c.judged = c.verdict != SpeedVerdict::ambiguous && c.verdict != SpeedVerdict::untimed;
  if (!c.judged) return;
  // Where both sides' clocks are known and apart, the cycles ratio gets the ms ratio's margin: the
  // records keep no spread of their cycles, and a sample's cycles vary less than its ms where the
  // clock moved during the record (that is what they correct for).
  std::string disagree;
  if (usable(old_t->clocks) && usable(new_t->clocks) &&
      std::abs(new_t->clocks->mhz_median / old_t->clocks->mhz_median - 1) > rule.clock_threshold) {
    const double ms_ratio = new_t->median_ms / old_t->median_ms;
    c.cycles_ratio = new_t->clocks->cycles_median / old_t->clocks->cycles_median;
    c.clocks = clock_change(*old_t, *new_t);
    const SpeedVerdict in_cycles = by_margin(*c.cycles_ratio, c.margin);
    if (in_cycles != c.verdict)
      disagree = fmt::format("{} in ms ({}) but {} in cycles ({}): {}", signed_change(ms_ratio), verdict_name(c.verdict),
                             signed_change(*c.cycles_ratio), verdict_name(in_cycles), c.clocks);
  }
  std::string throttled;
  if (!rule.allow_throttled)
    for (const auto& [side, t] : {std::pair<const char*, const TimingStats*>{"old", old_t}, {"new", new_t}})
      if (const std::string s = over_throttled(*t, side, rule); !s.empty())
        throttled += (throttled.empty() ? "" : "; ") + s;
  if (!throttled.empty())
    throttled += fmt::format(", over the {:g}% allowed (--allow-throttled judges it)", 100 * rule.max_throttled_share);
  if (throttled.empty() && disagree.empty()) return;
  c.verdict = SpeedVerdict::ambiguous;
  c.why = throttled.empty() ? disagree : disagree.empty() ? throttled : throttled + "; " + disagree;
}

namespace {

bool is_wrong(Status s) { return s == Status::fail || s == Status::error || s == Status::oom || s == Status::invalid; }

void judge_accuracy(RecordChange& c, const CompareRule& rule) {
  const Record& o = c.old_rec->record;
  const Record& n = c.new_rec->record;
  std::string text;
  if (o.status != n.status) {
    text = fmt::format("{} → {}", status_name(o.status), status_name(n.status));
    c.became_wrong = o.status == Status::pass && is_wrong(n.status);
    c.lost_coverage = o.status == Status::pass && n.status == Status::skip;
  }
  if (o.metrics && n.metrics) {
    const double a = o.metrics->max_abs, b = n.metrics->max_abs;
    if (b > rule.err_growth * a && b > 0)
      text += (text.empty() ? "" : "; ") + (a > 0 ? fmt::format("max err {:.1f}x", b / a) : std::string("max err from 0"));
  }
  c.accuracy = text;
}

// Last record of each key wins.
std::map<std::string, const ReadRecord*> index_by_key(const ResultsFile& f) {
  std::map<std::string, const ReadRecord*> idx;
  for (const auto& r : f.records) idx[match_key(r.record)] = &r;
  return idx;
}

}  // namespace

Comparison compare_results(const ResultsFile& old_file, const ResultsFile& new_file, const CompareRule& rule) {
  Comparison cmp;
  cmp.old_path = old_file.path;
  cmp.new_path = new_file.path;
  const auto old_idx = index_by_key(old_file);
  const auto new_idx = index_by_key(new_file);
  std::map<std::string, std::pair<double, int>> log_sums;  // path -> (sum of log ratios, count)
  for (const auto& r : new_file.records) {
    const std::string key = match_key(r.record);
    if (new_idx.at(key) != &r) continue;  // superseded by a later line
    const auto it = old_idx.find(key);
    if (it == old_idx.end()) {
      cmp.added.push_back(&r);
      continue;
    }
    RecordChange c;
    c.old_rec = it->second;
    c.new_rec = &r;
    const auto& ot = c.old_rec->record.timing;
    const auto& nt = r.record.timing;
    judge_timings(c, ot ? &*ot : nullptr, nt ? &*nt : nullptr, rule);
    if (ot && nt && ot->median_ms > 0 && nt->median_ms > 0 && std::isfinite(ot->median_ms) && std::isfinite(nt->median_ms)) {
      c.ratio = nt->median_ms / ot->median_ms;
      for (const std::string& p : {std::string("all"), r.record.path}) {
        log_sums[p].first += std::log(*c.ratio);
        log_sums[p].second += 1;
      }
    }
    judge_accuracy(c, rule);
    c.plugin = plugin_change(c.old_rec->record, r.record);  // reported beside the verdict, never part of it
    cmp.changes.push_back(std::move(c));
  }
  for (const auto& r : old_file.records)
    if (old_idx.at(match_key(r.record)) == &r && !new_idx.count(match_key(r.record))) cmp.missing.push_back(&r);
  if (log_sums.count("all")) {
    auto geo = [&](const std::string& p) {
      const auto& [s, n] = log_sums.at(p);
      return Comparison::Geomean{p, std::exp(s / n), n};
    };
    cmp.geomeans.push_back(geo("all"));
    for (const auto& kv : log_sums)
      if (kv.first != "all") cmp.geomeans.push_back(geo(kv.first));
  }
  return cmp;
}

}  // namespace fa
