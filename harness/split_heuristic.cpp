// G=auto rule: the smallest power-of-two split that fills `units`, capped by key tiles per split.
#include "harness/split_heuristic.hpp"

namespace fa {

int choose_splits(const Problem& p, int units, int block_m, int block_n) {
  const int64_t blocks = p.B * p.H * ((p.S + block_m - 1) / block_m);
  if (blocks >= units) return 0;
  const int64_t key_tiles = (p.Sk + block_n - 1) / block_n;
  int best = 0;
  for (int g : {2, 4, 8, 16}) {
    if (key_tiles < 2 * g) break;  // each split keeps at least two key tiles
    best = g;
    if (blocks * g >= units) break;
  }
  return best;
}

}  // namespace fa
