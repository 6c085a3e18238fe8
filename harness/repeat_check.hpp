// Determinism check (--repeat-check N): rerun a prepared execution N more times, poisoning its
// outputs before each run, and count the reruns whose O, LSE or kv cache differ from the first
// run's in any bit. A nondeterministic reduction, a race or a missed write (the poison survives)
// shows up as a differing rerun; the runner fails the record when the count is not 0.
#pragma once
#include "harness/path.hpp"

namespace fa {

bool bit_identical(const RunOutputs& a, const RunOutputs& b);

// Returns how many of the n reruns differ from `first`.
int count_differing_reruns(Execution& exec, const RunOutputs& first, int n);

}  // namespace fa
