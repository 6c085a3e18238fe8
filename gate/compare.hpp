// Compares two sets of results record by record, matched by (problem incl. name, path, G):
// the time ratio new/old with a verdict that accounts for both sides' noise, and accuracy
// changes. A slowdown counts only beyond max(threshold, k x combined spread), where the combined
// spread is sqrt(spread_old^2 + spread_new^2); a side with too few samples is ambiguous.
// Where both records carry clocks (schema 10) whose medians differ by more than clock_threshold,
// the cycles ratio is judged by the same margin too, and a pair whose two verdicts differ is
// ambiguous: a kernel's time follows the SM clock by between none of it (memory-bound) and all of
// it (compute-bound), so its true change lies between the ms and the cycles change, and only
// where both fall on the same side of the margin is the verdict certain. A record with more than
// max_throttled_share of its samples throttled is ambiguous unless allow_throttled.
// A pair whose plugin library or declared version differs says so (RecordChange::plugin) without
// changing its verdict: the timings are judged alone, and the report shows which new build a
// regression came with. A Comparison points into the two ResultsFiles, which must outlive it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/results/results_reader.hpp"

namespace fa {

struct CompareRule {
  double threshold = 0.05;  // relative change below which two timings are the same
  double k = 3;             // multiples of the combined relative spread that count as noise
  int min_samples = 5;      // fewer samples on either side: ambiguous
  double err_growth = 2;    // max |err| growing by more than this factor is flagged
  // Clock medians further apart than this are a real change of clock, judged in cycles too. NVIDIA
  // moves its SM clock in 15 MHz steps (0.76% of the H100's and H200's 1980 MHz), and each sample's
  // clock is the mean of the readings during it: 1% is over one step (at any clock above 1500 MHz)
  // and under two, so two records settled at one clock never count as apart, and a step's worth
  // moves a ratio by far less than the 5% threshold anyway. Not the records' own clock range: that is wide exactly when a record ran
  // throttled, where cycles matter most (max_throttled_share judges such a record).
  double clock_threshold = 0.01;
  // More throttled samples than this share, on either side: ambiguous. With a share f of the samples
  // throttled (slower), the median is the unthrottled samples' 0.5 / (1 - f) quantile: at 0.25 their
  // 67th percentile, 0.43 standard deviations above their median for normal noise, well inside the
  // margin of 3 x the spread; at 0.5 it is their slowest sample, and past that a throttled one.
  double max_throttled_share = 0.25;
  bool allow_throttled = false;  // judge records over max_throttled_share anyway
};

// untimed: neither side has a timing (both skipped, say); nothing to judge.
enum class SpeedVerdict { same, fast, slow, ambiguous, untimed };
const char* verdict_name(SpeedVerdict v);

struct RecordChange {
  const ReadRecord* old_rec = nullptr;
  const ReadRecord* new_rec = nullptr;
  std::optional<double> ratio;  // new median / old median, where both are timed
  double margin = 0;            // the relative change that separates noise from a change
  bool judged = false;          // both timings could be judged (margin is set), whatever the clocks then said
  SpeedVerdict verdict = SpeedVerdict::untimed;
  std::string why;              // for ambiguous: which side lacks samples or a timing, is throttled, or
                                // "+9.1% in ms (SLOW) but +0.4% in cycles (SAME): clock 1980 → 1815 MHz (new sw_power_cap on 20 of 20 samples)"
  std::optional<double> cycles_ratio;  // new cycles_median / old, where the clocks differed (judged in cycles too)
  std::string clocks;                  // with cycles_ratio: "clock 1980 → 1815 MHz (new sw_power_cap on 20 of 20 samples)"
  std::string accuracy;         // empty, or "pass → fail", "max err 3.1x", "pass → skip"
  bool became_wrong = false;    // old passed, new is fail/error/oom/invalid
  bool lost_coverage = false;   // old passed, new skips
  std::string plugin;           // empty, or the two plugin builds (plugin_change below)
};

struct Comparison {
  std::string old_path, new_path;
  std::vector<RecordChange> changes;       // in the new file's order
  std::vector<const ReadRecord*> missing;  // in old, absent from new
  std::vector<const ReadRecord*> added;    // in new, absent from old
  struct Geomean {
    std::string path;  // "all" or one kernel path
    double ratio;
    int n;
  };
  std::vector<Geomean> geomeans;  // over records timed on both sides: all first, then per path
  int count(SpeedVerdict v) const;
  int plugin_changes() const;  // matched pairs whose plugin build differs
};

// The identity records are matched by (the plugin build is not part of it: two builds of one
// plugin path are the pair that compare exists for).
std::string match_key(const Record& r);

// Empty when both records come from the same plugin file at the same declared version (or are both
// built in); else "plugin OLD → NEW", each side "FILE VERSION" or "built in", and the file named
// once where only the version changed: "plugin /b/libfa_example_cpu.so 1.0.0 → 1.1.0".
std::string plugin_change(const Record& old_rec, const Record& new_rec);

// Judges one timed pair in milliseconds alone; exposed for tests.
SpeedVerdict judge_speed(const TimingStats* old_t, const TimingStats* new_t, const CompareRule& rule,
                         double* margin = nullptr, std::string* why = nullptr);

// Judges one pair as compare and gate do: in ms, in cycles where the clocks differ, and the
// throttled share; sets c's verdict, margin, why, cycles_ratio and clocks.
void judge_timings(RecordChange& c, const TimingStats* old_t, const TimingStats* new_t, const CompareRule& rule);

// Later duplicates of a key in one file (a resumed sweep re-running error rows) replace earlier ones.
Comparison compare_results(const ResultsFile& old_file, const ResultsFile& new_file, const CompareRule& rule);

}  // namespace fa
