// Flags shared by `compare` and `gate`: the noise rule behind SLOW/FAST/AMBIGUOUS, the clock and
// throttling rules (gate/compare.hpp says why their defaults) and the accuracy-change factor, each
// with its default printed by --help.
#pragma once
#include <CLI/CLI.hpp>

#include "cli/flag_checks.hpp"
#include "gate/compare.hpp"

namespace fa::cli {

inline void add_compare_rule_options(CLI::App& cmd, CompareRule& rule) {
  cmd.add_option("--threshold", rule.threshold, "Relative change that is never noise (0.05 = 5%)")
      ->check(finite_in(0, 1e6))
      ->capture_default_str();
  cmd.add_option("--k", rule.k, "Multiples of the combined relative spread treated as noise (0: spreads ignored)")
      ->check(finite_in(0, 1e6))
      ->capture_default_str();
  cmd.add_option("--min-samples-compare", rule.min_samples, "Fewer samples on either side: AMBIGUOUS")
      ->check(whole_in(0, 1000000000))
      ->capture_default_str();
  cmd.add_option("--clock-threshold", rule.clock_threshold,
                 "Clock medians further apart than this (0.01 = 1%) are judged in cycles too; AMBIGUOUS where ms and "
                 "cycles disagree")
      ->check(finite_in(0, 1))
      ->capture_default_str();
  cmd.add_option("--max-throttled-share", rule.max_throttled_share,
                 "A side with more of its samples throttled than this share (0.25 = 25%) is AMBIGUOUS")
      ->check(finite_in(0, 1))
      ->capture_default_str();
  cmd.add_flag("--allow-throttled", rule.allow_throttled, "Judge records over --max-throttled-share anyway");
  cmd.add_option("--max-err-growth", rule.err_growth, "Flag max |err| growing by more than this factor")
      ->check(finite_in(1, 1e300))
      ->capture_default_str();
}

}  // namespace fa::cli
