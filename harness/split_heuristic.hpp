// The split-count heuristic behind G=auto: split the keys only when the problem's row blocks
// cannot fill the machine's parallel units, and never so far that a split holds under two key
// tiles. A fitted model replaces this rule in a later change; the interface stays.
#pragma once
#include "harness/problem.hpp"

namespace fa {

// Returns 0 (no split) or one of 2, 4, 8, 16. `units`: SMs/CUs (GPU) or threads (CPU).
int choose_splits(const Problem& p, int units, int block_m = 64, int block_n = 64);

}  // namespace fa
