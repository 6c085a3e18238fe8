// Printers over comparisons: a markdown table per (old, new) pair with geomean rows, the plugin
// builds that differ between the pairs (with the verdicts that came with each), the missing records
// and a one-line count; CSV (one row per matched or missing record) and JSON.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "gate/compare.hpp"

namespace fa {

void print_compare_markdown(std::ostream& os, const Comparison& cmp, const CompareRule& rule);
// "12 same, 1 slow, 0 fast, 2 ambiguous, 0 untimed; 1 missing, 0 added; 1 accuracy change", and
// "; 3 from another plugin build" where matched pairs' plugin builds differ
std::string compare_counts(const Comparison& cmp);

// The whole CSV or JSON text; the caller writes it under the output policy (harness/results/output_file.hpp).
std::string compare_csv(const std::vector<Comparison>& cmps);
std::string compare_json(const std::vector<Comparison>& cmps, const CompareRule& rule);

}  // namespace fa
