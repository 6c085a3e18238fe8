// Problem conventions: exact causal pair counts, FLOPs and bytes, strides, validation, splits.
#include <gtest/gtest.h>

#include <limits>

#include "harness/conventions.hpp"
#include "harness/problem.hpp"

using namespace fa;

static Problem shape(int64_t S, int64_t Sk, bool causal) {
  Problem p;
  p.S = S, p.Sk = Sk, p.causal = causal, p.B = 2, p.H = 4, p.Hk = 2, p.D = 64;
  return p;
}

TEST(Problem, UnmaskedPairsMatchABruteForceCountForEveryCausalAlignment) {
  for (int64_t S : {1, 2, 3, 7, 64, 100})
    for (int64_t Sk : {1, 2, 3, 5, 64, 99, 130})
      for (bool causal : {false, true}) {
        const Problem p = shape(S, Sk, causal);
        double brute = 0;
        for (int64_t i = 0; i < S; ++i)
          for (int64_t j = 0; j < Sk; ++j) brute += !causal || j <= i + Sk - S;
        EXPECT_EQ(p.unmasked_pairs(), p.B * brute) << "S=" << S << " Sk=" << Sk << " causal=" << causal;
      }
}

TEST(Problem, FlopsAndBytesFollowTheDesignFormulas) {
  Problem p = shape(128, 256, false);
  EXPECT_DOUBLE_EQ(p.flops(), 4.0 * 2 * 4 * 64 * 128 * 256);
  // Q and O: B*S*H*D; K and V: B*Sk*Hk*D, 2 bytes each; LSE: B*H*S fp32.
  EXPECT_DOUBLE_EQ(p.bytes(), 2.0 * (2 * 2 * 128 * 4 * 64 + 2 * 2 * 256 * 2 * 64) + 4.0 * 2 * 4 * 128);
  p.dtype = DType::fp32;
  EXPECT_DOUBLE_EQ(p.bytes(), 4.0 * (2 * 2 * 128 * 4 * 64 + 2 * 2 * 256 * 2 * 64) + 4.0 * 2 * 4 * 128);
}

TEST(Problem, RowsAboveTheCausalDiagonalOfAShortKeySetSeeNoKey) {
  const Problem p = shape(10, 4, true);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(p.keys_visible(i), 0) << i;
  EXPECT_EQ(p.keys_visible(6), 1);
  EXPECT_EQ(p.keys_visible(9), 4);
  EXPECT_EQ(shape(3, 10, true).keys_visible(0), 8);  // bottom-right: row 0 sees Sk - S + 1 keys
}

TEST(Problem, StridesAddressEveryElementOnceInBothLayouts) {
  for (Layout l : {Layout::bshd, Layout::bhsd}) {
    const Strides st = strides_for(l, 5, 3, 4);
    std::vector<int> seen(2 * 5 * 3 * 4, 0);
    for (int b = 0; b < 2; ++b)
      for (int s = 0; s < 5; ++s)
        for (int h = 0; h < 3; ++h)
          for (int d = 0; d < 4; ++d) ++seen[size_t(st.at(b, s, h) + d)];
    for (int c : seen) EXPECT_EQ(c, 1);
  }
  EXPECT_EQ(strides_for(Layout::bshd, 5, 3, 4).seq, 12);
  EXPECT_EQ(strides_for(Layout::bhsd, 5, 3, 4).seq, 4);
}

TEST(Problem, ValidationNamesTheOffendingField) {
  Problem p = shape(4, 4, false);
  EXPECT_FALSE(validate(p));
  p.H = 6, p.Hk = 4;
  ASSERT_TRUE(validate(p));
  EXPECT_EQ(validate(p)->field, "Hk");
  p = shape(0, 4, false);
  EXPECT_EQ(validate(p)->field, "S");
  p = shape(4, 4, false);
  p.D = -1;
  EXPECT_EQ(validate(p)->field, "D");
  p = shape(4, 4, false);
  p.D = 300;
  EXPECT_EQ(validate(p)->field, "D");
}

TEST(Problem, SplitRequestsAcceptPowersOfTwoUpTo16AndAuto) {
  EXPECT_EQ(parse_split("0")->value, 0);
  EXPECT_EQ(parse_split("16")->value, 16);
  EXPECT_TRUE(parse_split("auto")->is_auto);
  EXPECT_FALSE(parse_split("3"));
  EXPECT_FALSE(parse_split("32"));
  EXPECT_FALSE(parse_split("-2"));
  EXPECT_FALSE(parse_split(""));
}

TEST(Conventions, SplitRangesTileTheLiveKeysExactlyWithoutEmptyLeadingSplits) {
  for (int64_t live : {0, 1, 3, 64, 65, 200, 1000})
    for (int G : {2, 4, 8, 16}) {
      int64_t next = 0;
      int nonempty = 0;
      for (int g = 0; g < G; ++g) {
        const KeyRange r = split_range(live, g, G, 64);
        if (r.begin >= r.end) continue;
        EXPECT_EQ(r.begin, next) << "live=" << live << " G=" << G << " g=" << g;
        EXPECT_EQ(r.begin % 64, 0);
        next = r.end;
        ++nonempty;
        EXPECT_EQ(nonempty, g + 1) << "an empty split precedes a non-empty one";
      }
      EXPECT_EQ(next, live);
      const int64_t tiles = (live + 63) / 64;
      if (tiles >= G) {
        EXPECT_EQ(nonempty, G) << "no split may be empty when there are enough tiles";
      }
    }
}

// GPU kernels split in AttnArgs' int (tile_range.hpp's dense_block_split: no 64-bit division calls
// in device code); every key count an int holds must split as the 64-bit form does.
TEST(Conventions, SplitRangesInIntMatchTheInt64FormUpToIntMax) {
  const int big = std::numeric_limits<int>::max() - 256;
  for (int live : {0, 1, 3, 64, 65, 200, 1000, 131072, 1 << 30, big})
    for (int block_n : {64, 80, 128, 176})
      for (int G : {1, 2, 3, 4, 8, 16})
        for (int g = 0; g < G; ++g) {
          const KeyRange wide = split_range(live, g, G, block_n), narrow = split_range_in<int>(live, g, G, block_n);
          EXPECT_EQ(narrow.begin, wide.begin) << "live=" << live << " n=" << block_n << " G=" << G << " g=" << g;
          EXPECT_EQ(narrow.end, wide.end) << "live=" << live << " n=" << block_n << " G=" << G << " g=" << g;
        }
}

TEST(Problem, SizesWhoseProductsOverflowInt64AreInvalidNotCrashes) {
  // Causal S = 2^62, Sk = 1: one unmasked pair, so the FLOP count is tiny, but Q has 2^68 elements.
  Problem p = shape(int64_t(1) << 62, 1, true);
  ASSERT_TRUE(validate(p));
  EXPECT_EQ(validate(p)->field, "S");
  EXPECT_NE(validate(p)->reason.find("overflow"), std::string::npos) << validate(p)->reason;
  p = shape(4, 4, false);
  p.B = int64_t(1) << 40, p.H = p.Hk = int64_t(1) << 20;  // B*H alone overflows after *S*D
  ASSERT_TRUE(validate(p));
  EXPECT_NE(validate(p)->reason.find("overflow"), std::string::npos) << validate(p)->reason;
  p = shape(int64_t(1) << 32, int64_t(1) << 32, false);  // S*Sk = 2^64 pairs
  p.D = 8;
  ASSERT_TRUE(validate(p));
  EXPECT_NE(validate(p)->reason.find("overflow"), std::string::npos) << validate(p)->reason;
  p = shape(int64_t(1) << 30, int64_t(1) << 30, false);  // sizes fit, FLOPs 4*64*2^60 do not
  ASSERT_TRUE(validate(p));
  EXPECT_NE(validate(p)->reason.find("overflow"), std::string::npos) << validate(p)->reason;
  EXPECT_FALSE(validate(shape(int64_t(1) << 20, int64_t(1) << 20, true)));  // large but representable
}
