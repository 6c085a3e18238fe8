// G=auto rule: the smallest power-of-two split that fills `units`, capped by key tiles per split.
#include "harness/split_heuristic.hpp"

namespace fa {

int choose_splits(const Problem& p, int units, TileShape tiles) {
  const int64_t blocks = p.B * p.H * ((p.S + tiles.block_m - 1) / tiles.block_m);
  if (blocks >= units) return 0;
  const int64_t key_tiles = (p.Sk + tiles.block_n - 1) / tiles.block_n;
  int best = 0;
  for (int g : {2, 4, 8, 16}) {
    if (key_tiles < 2 * g) break;  // each split keeps at least two key tiles
    best = g;
    if (blocks * g >= units) break;
  }
  return best;
}

}  // namespace fa
