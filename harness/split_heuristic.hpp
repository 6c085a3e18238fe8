// The split-count heuristic behind G=auto: split the keys only when the problem's row blocks
// cannot fill the machine's parallel units, and never so far that a split holds under two key
// tiles, counted with the path's own tile shape. A fitted model replaces this rule later.
#pragma once
#include "harness/path.hpp"
#include "harness/problem.hpp"

namespace fa {

// Returns 0 (no split) or one of 2, 4, 8, 16. `units`: SMs/CUs (GPU) or threads (CPU); `tiles`:
// the path's row block and key tile (PathRow::tiles).
int choose_splits(const Problem& p, int units, TileShape tiles);

}  // namespace fa
