// G=auto: no split when row blocks fill the machine; the smallest filling split otherwise,
// bounded by two key tiles per split.
#include <gtest/gtest.h>

#include "harness/split_heuristic.hpp"

using namespace fa;

static Problem prob(int64_t B, int64_t H, int64_t S, int64_t Sk) {
  Problem p;
  p.B = B, p.H = p.Hk = H, p.S = S, p.Sk = Sk;
  return p;
}

TEST(SplitHeuristic, ManyRowBlocksNeedNoSplit) { EXPECT_EQ(choose_splits(prob(4, 16, 1500, 1500), 132), 0); }

TEST(SplitHeuristic, DecodeAgainstALongCacheSplitsUntilTheMachineIsFull) {
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 65536), 132), 16);  // 16 blocks: 16 splits reach 256 >= 132
  EXPECT_EQ(choose_splits(prob(1, 32, 1, 65536), 132), 8);   // 32 * 8 = 256 >= 132
  EXPECT_EQ(choose_splits(prob(1, 64, 1, 65536), 132), 4);
}

TEST(SplitHeuristic, ShortKeySetsAreNotCutBelowTwoTilesPerSplit) {
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 128), 132), 0);  // 2 tiles: no split keeps two each
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 256), 132), 2);  // 4 tiles: at most 2 splits
  EXPECT_EQ(choose_splits(prob(1, 16, 1, 512), 132), 4);
}
