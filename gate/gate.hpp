// The CI gate: a current results file against a committed baseline. It fails on any correctness
// failure in current (a record that is neither pass nor skip: fail, error, oom, invalid), any
// baseline record missing from current (absent, or passing in the baseline and skipped now), and
// any SLOW verdict; AMBIGUOUS verdicts (few samples, ms and cycles disagreeing where the clocks
// moved, a side throttled over the rule's share: gate/compare.hpp) are listed with their reasons and
// fail only when strict. A timed record on
// either side whose median, min, max or spread is not a finite number >= 0 is wrong too: no such
// timing can be judged, so it can never pass. A new plugin build alone fails nothing: the report
// names it beside each failing record whose pair changed builds.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "gate/compare.hpp"

namespace fa {

struct GateReport {
  Comparison cmp;
  struct Wrong {
    const ReadRecord* rec;
    std::string why;  // empty: the record's own status says it
  };
  std::vector<Wrong> wrong;                // current records that are neither pass nor skip, or untimeable
  std::vector<const ReadRecord*> missing;  // baseline records current lacks or now skips
  int slow = 0, ambiguous = 0, records = 0;
  bool strict = false;
  bool failed() const;
  // "gate: FAIL 2 slow, 1 missing, 0 wrong, 3 ambiguous of 120 records"
  std::string summary() const;
};

// Why a timing cannot be judged (a median, min, max or spread not finite or negative), or empty.
std::string untimeable(const TimingStats& t);

GateReport run_gate(const ResultsFile& baseline, const ResultsFile& current, const CompareRule& rule, bool strict);

// The comparison table, then what failed the gate and the ambiguous records, then the summary as the last line.
void print_gate_report(std::ostream& os, const GateReport& g, const CompareRule& rule);

}  // namespace fa
