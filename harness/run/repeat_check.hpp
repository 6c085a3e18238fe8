// Outputs that must equal the validated first run's. --repeat-check N reruns a prepared execution
// N more times, poisoning its outputs before each, and counts the reruns whose O, LSE or kv cache
// differ in any bit. The timed-launch check compares the last timed launch's outputs with the
// first run's: bit for bit for a deterministic path, else through the pass rule. State carried
// between launches (a counter or workspace not reset, a cache written in place) shows up in both.
#pragma once
#include <functional>
#include <string>

#include "harness/path.hpp"

namespace fa {

bool bit_identical(const RunOutputs& a, const RunOutputs& b);

// Returns how many of the n reruns differ from `first`.
int count_differing_reruns(Execution& exec, const RunOutputs& first, int n);

// Which elements differ in bits, in words: "4096 of 4096 O elements (max |diff| 0.0312), 64 of 64
// LSE values"; parts with no difference are left out. Empty when bit_identical.
std::string describe_difference(const RunOutputs& first, const RunOutputs& other);

// The results' timed_check column: same (bit for bit), rule (bits differ, a nondeterministic
// path's output passes the rule), differs (the record fails with `reason`).
struct TimedCheck {
  std::string outcome;
  std::string reason;  // empty unless differs: "timed launches differ from the validated run: ..."
};

// `rule_failure` applies the pass rule to an output: empty when it passes, else why not.
TimedCheck check_timed_outputs(const RunOutputs& first, const RunOutputs& timed, bool deterministic,
                               const std::function<std::string(const RunOutputs&)>& rule_failure);

}  // namespace fa
