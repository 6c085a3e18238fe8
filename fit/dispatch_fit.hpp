// Fit data and evaluation for `auto`'s dispatch table (`fa-bench fit`). From results that timed
// several paths on the same problems (same problem, same requested G, status pass, timed): per
// problem each path's median and noise band; the table is those problems (harness/split/dispatch_table.hpp);
// its picks are scored in-sample and leave-one-out, against the best path of each row, beside the
// `auto` records the input holds (the dispatch that ran), and against every fixed path.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/results/results.hpp"
#include "harness/split/dispatch_table.hpp"

namespace fa {

// One problem at one requested G, timed (and passing) on two or more candidate paths.
struct DispatchRow {
  DispatchEntry entry;                   // the table's row: key and each path's median ms
  std::map<std::string, double> band;    // each path's noise half-width, ms (fit/split_fit.hpp: noise_band_ms)
  std::map<std::string, double> spread;  // each path's record's spread (stddev / mean of its samples)
  std::map<std::string, int> g_used;     // the split count each path's record ran
  std::string label;                     // "whisper-dec-self-448 G=0"
  std::optional<std::string> auto_ran;   // the path an `auto` record of this row ran
  double auto_ms = 0, auto_band = 0;     // that record's median and band
  double auto_spread = 0;
  int auto_g_used = 0;

  std::string best() const;  // the fastest path
};

struct DispatchData {
  std::vector<DispatchRow> rows;
  std::set<std::string> paths;       // every candidate path timed on some row
  std::vector<std::string> notes;    // problems left out, and why
};
// Groups the records by (problem, requested G). `auto` records are kept apart as the recorded
// dispatch; `exclude` names paths auto never runs (the oracle). A problem timed on fewer than two
// paths is left out (it says nothing about which is faster), with a note.
DispatchData collect_dispatch_data(const std::vector<Record>& records, const std::set<std::string>& exclude);

DispatchTable dispatch_table(const DispatchData& d);

// The pick on one row, and how far it is from the row's best.
struct DispatchOutcome {
  std::string pick;
  double ms = 0, band = 0;
  bool fallback = false;  // no neighbour timed an admitted path: rank order
  double regret = 0;      // t(pick) / t(best) - 1
  // t(pick) - t(best) within the two records' noise: their noise bands, or their spreads (the sum
  // of each median times its record's stddev / mean), whichever is wider.
  bool tie = false;
  // An `auto` record that ran a path at the G of that path's own record, and that record meets the
  // bar: auto launched the same kernel as a record within the bar, so what separates the auto
  // record from the best is two measurements of one launch, not the choice (it meets the bar
  // whatever its own regret). The best path's own kernel is the plain case.
  bool same_kernel = false;
};
// What a row's pick may not see of the table: nothing (in-sample), the row itself (leave-one-out),
// or every row of its shape in any dtype (leave-shape-out: the fp16 and bf16 twins of shipped
// sweeps would otherwise answer for each other).
enum class Holdout { none, row, shape };
// Picks on each row by `t` (the row's admitted paths: those it timed). Fallbacks take the admitted
// path `rank` ranks highest (this binary's auto ranks); where it ranks none (a CPU build knows no
// GPU ranks), the slowest, the worst rank order could do.
std::vector<DispatchOutcome> dispatch_picks(const DispatchData& d, const DispatchTable& t, Holdout holdout,
                                            const std::function<int(const std::string&)>& rank);
// The `auto` records' own outcomes (rows without one: nullopt).
std::vector<std::optional<DispatchOutcome>> recorded_auto(const DispatchData& d);

// Within the bar: regret <= 3%, a tie, or the kernel of a path record within the bar.
inline constexpr double kDispatchBar = 0.03;

// The markdown tables: a summary per pick set, how often each fixed path beats each pick set (beyond
// the noise bands), and (with `per_row`) every row; `only_behind`: only rows some pick set misses the bar on.
struct DispatchScoreSet {
  std::string name;
  std::vector<std::optional<DispatchOutcome>> outcomes;  // one per row; nullopt: no such pick on that row
};
std::string dispatch_summary(const DispatchData& d, const std::vector<DispatchScoreSet>& sets);
std::string dispatch_losses(const DispatchData& d, const std::vector<DispatchScoreSet>& sets);
std::string dispatch_rows(const DispatchData& d, const std::vector<DispatchScoreSet>& sets, bool only_behind);

}  // namespace fa
