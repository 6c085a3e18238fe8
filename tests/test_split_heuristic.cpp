// G=auto: no split when row blocks fill the machine; the smallest filling split otherwise,
// bounded by two key tiles per split, with row blocks and key tiles of the path's tile shape.
#include <gtest/gtest.h>

#include "harness/split_heuristic.hpp"

using namespace fa;

constexpr TileShape kTile64{64, 64};

static Problem prob(int64_t B, int64_t H, int64_t S, int64_t Sk) {
  Problem p;
  p.B = B, p.H = p.Hk = H, p.S = S, p.Sk = Sk;
  return p;
}

TEST(SplitHeuristic, ManyRowBlocksNeedNoSplit) { EXPECT_EQ(choose_splits(prob(4, 16, 1500, 1500), 132, kTile64), 0); }

TEST(SplitHeuristic, DecodeAgainstALongCacheSplitsUntilTheMachineIsFull) {
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 65536), 132, kTile64), 16);  // 16 blocks: 16 splits reach 256 >= 132
  EXPECT_EQ(choose_splits(prob(1, 32, 1, 65536), 132, kTile64), 8);   // 32 * 8 = 256 >= 132
  EXPECT_EQ(choose_splits(prob(1, 64, 1, 65536), 132, kTile64), 4);
}

TEST(SplitHeuristic, ShortKeySetsAreNotCutBelowTwoTilesPerSplit) {
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 128), 132, kTile64), 0);  // 2 tiles: no split keeps two each
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 256), 132, kTile64), 2);  // 4 tiles: at most 2 splits
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 512), 132, kTile64), 4);
}

TEST(SplitHeuristic, ThePathsTileShapeSetsRowBlocksAndKeyTiles) {
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 128), 132, TileShape{64, 32}), 2);  // 4 tiles of 32 keys
  EXPECT_EQ(choose_splits(prob(1, 16, 128, 4096), 132, kTile64), 8);         // 32 row blocks
  EXPECT_EQ(choose_splits(prob(1, 16, 128, 4096), 132, TileShape{16, 64}), 2);  // 128 row blocks
}
