// The tile loop's key ranges (kernels/device/tile_range.hpp) on the CPU against brute force: for
// sequences of many lengths (a varlen batch's sequences under one padded grid), causal or not, with
// and without windows, at the block, wave and tile shapes of mma, mfma and wmma and G in 0..16, the
// loop the kernels run (blocks, splits, waves, tiles: skipped, unmasked, masked) computes every
// (row, key) pair the README's definition makes visible exactly once and no other.
// Plain C++. Run: ctest -R TileRange
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "kernels/device/tile_range.hpp"

using namespace fa::gpu::tile;
using fa::KeyRange;

namespace {

// The README's definition, key by key: row i of a sequence (sq, sk) sits at key i + sk - sq; causal
// sees keys up to there, a window (left, right) from left before to right after; -1 unbounded.
bool visible(const SeqShape& q, int64_t i, int64_t j) {
  if (i < 0 || i >= q.sq || j < 0 || j >= q.sk) return false;
  const int64_t at = i + q.sk - q.sq;
  if (q.causal && j > at) return false;
  if (q.left >= 0 && j < at - q.left) return false;
  if (!q.causal && q.right >= 0 && j > at + q.right) return false;
  return true;
}

struct Tiling {
  int block_m, rows, block_n;  // rows: a wave's (a group of rows that skips tiles together)
};
// mfma (128 rows, waves of 32, 32-key tiles), wmma (64, 16, 32), mma's shapes (a warp group's
// rows skip nothing there; a wave of the whole block is the same loop), and a narrow-tile case.
const Tiling kTilings[] = {{128, 32, 32}, {64, 16, 32}, {128, 128, 64}, {64, 64, 128}, {64, 16, 16}};
const int kSplits[] = {0, 2, 4, 16};
const int64_t kGridRows = 140;  // the padded S of the batch: blocks past a sequence's own queries run too

std::vector<SeqShape> shapes() {
  std::vector<SeqShape> out;
  const std::pair<int64_t, int64_t> windows[] = {{-1, -1}, {0, -1}, {3, -1}, {17, 0}, {40, 2}, {0, 0}, {-1, 5}, {64, 1}};
  for (int64_t sq : {0, 1, 5, 33, 70, 129})
    for (int64_t sk : {0, 1, 7, 33, 100, 200})
      for (bool causal : {false, true})
        for (const auto& w : windows) out.push_back(SeqShape{sq, sk, causal, w.first, w.second});
  return out;
}

std::string describe(const SeqShape& q, const Tiling& t, int G) {
  return "sq=" + std::to_string(q.sq) + " sk=" + std::to_string(q.sk) + (q.causal ? " causal" : "") + " window=(" +
         std::to_string(q.left) + "," + std::to_string(q.right) + ") block " + std::to_string(t.block_m) + "x" +
         std::to_string(t.block_n) + " wave " + std::to_string(t.rows) + " G=" + std::to_string(G);
}

}  // namespace

TEST(TileRange, ARowSeesTheKeysOfTheReadmeDefinitionAndPaddingRowsSeeNone) {
  for (const SeqShape& q : shapes())
    for (int64_t i = 0; i < kGridRows; ++i) {
      const KeyRange r = keys_of_row(q, i);
      for (int64_t j = -1; j <= q.sk; ++j)
        ASSERT_EQ(j >= r.begin && j < r.end, visible(q, i, j)) << describe(q, kTilings[0], 0) << " row " << i << " key " << j;
    }
}

TEST(TileRange, ABlockVisitsExactlyTheUnionOfItsRowsKeysCutIntoWholeTileSplits) {
  for (const SeqShape& q : shapes())
    for (const Tiling& t : kTilings)
      for (int G : kSplits)
        for (int64_t q0 = 0; q0 < kGridRows; q0 += t.block_m) {
          int64_t lo = -1, hi = -1;  // the union, by brute force
          for (int64_t i = q0; i < q0 + t.block_m; ++i)
            for (int64_t j = 0; j < q.sk; ++j)
              if (visible(q, i, j)) lo = lo < 0 || j < lo ? j : lo, hi = j + 1 > hi ? j + 1 : hi;
          const std::string what = describe(q, t, G) + " q0=" + std::to_string(q0);
          int64_t next = lo;  // where the next split must begin
          bool ended = false;  // an empty split was seen: every later one is empty too
          for (int g = 0; g < (G > 1 ? G : 1); ++g) {
            const KeyRange kr = block_split(q, q0, t.block_m, g, G, t.block_n);
            if (kr.begin >= kr.end) {
              ended = true;
              continue;
            }
            ASSERT_FALSE(ended) << what << ": split " << g << " follows an empty split";
            ASSERT_EQ(kr.begin, next) << what << ": split " << g;
            if (g > 0) {
              EXPECT_EQ(kr.begin % t.block_n, 0) << what << ": split " << g << " starts off a tile";
            }
            if (kr.end != hi) {
              EXPECT_EQ(kr.end % t.block_n, 0) << what << ": split " << g << " ends off a tile";
            }
            next = kr.end;
          }
          EXPECT_EQ(next, lo < 0 ? -1 : hi) << what << (lo < 0 ? ": rows that see no key visit keys"
                                                             : ": the splits stop short of the union");
        }
}

// The kernels' loop, row by row: per block and split the range, per wave its keys and the keys all
// its rows see, per tile skip / no mask / mask by columns. Every pair a real row computes is counted;
// a tile is skipped exactly when none of the wave's rows sees a key of it.
TEST(TileRange, EveryVisibleKeyIsComputedOnceUnmaskedOrThroughTheMaskAndSkippedTilesHoldNone) {
  int64_t skipped = 0, unmasked = 0, masked = 0;
  for (const SeqShape& q : shapes())
    for (const Tiling& t : kTilings)
      for (int G : kSplits) {
        const std::string what = describe(q, t, G);
        std::vector<int> count(size_t(kGridRows * (q.sk + 1)), 0);  // [row][key]
        for (int64_t q0 = 0; q0 < kGridRows; q0 += t.block_m)
          for (int g = 0; g < (G > 1 ? G : 1); ++g) {
            const KeyRange kr = block_split(q, q0, t.block_m, g, G, t.block_n);
            // The block loads every tile of its range: each must hold a key one of its rows sees.
            for (int64_t kv0 = kr.begin; kv0 < kr.end; kv0 += t.block_n) {
              bool any = false;
              for (int64_t i = q0; i < q0 + t.block_m && !any; ++i)
                for (int64_t key = kv0; key < kv0 + t.block_n && key < kr.end && !any; ++key) any = visible(q, i, key);
              ASSERT_TRUE(any) << what << ": block " << q0 << " loads the tile at " << kv0 << " where none of its rows sees a key";
            }
            for (int64_t w0 = q0; w0 < q0 + t.block_m; w0 += t.rows) {
              const KeyRange seen = clip(rows_keys(q, w0, t.rows), kr);
              const KeyRange all = rows_unmasked(q, w0, t.rows, kr);
              for (int64_t kv0 = kr.begin; kv0 < kr.end; kv0 += t.block_n) {
                const bool skip = tile_skipped(seen, kv0, t.block_n), mask = tile_masked(all, kv0, t.block_n);
                skipped += skip, unmasked += !skip && !mask, masked += !skip && mask;
                bool any = false;  // a key of the tile one of the wave's rows sees: then it is not skipped
                for (int64_t i = w0; i < w0 + t.rows && !any; ++i)
                  for (int64_t key = kv0; key < kv0 + t.block_n && key < kr.end && !any; ++key) any = visible(q, i, key);
                ASSERT_EQ(skip, !any) << what << ": wave " << w0 << ", tile at " << kv0 << (skip ? " skipped" : " not skipped");
                for (int64_t i = w0; i < w0 + t.rows && i < q.sq; ++i) {
                  const TileCols c = tile_cols(row_keys_in(q, i, kr), kv0, t.block_n);
                  for (int j = 0; j < t.block_n; ++j) {
                    const int64_t key = kv0 + j;
                    const bool live = key < kr.end && visible(q, i, key);
                    if (skip) {
                      ASSERT_FALSE(live) << what << ": a skipped tile at " << kv0 << " holds key " << key << " of row " << i;
                      continue;
                    }
                    if (!mask) {
                      ASSERT_TRUE(live) << what << ": an unmasked tile at " << kv0 << " has key " << key
                                        << " that row " << i << " must not see";
                    }
                    const bool computed = mask ? j >= c.lo && j < c.hi : true;
                    ASSERT_EQ(computed, live) << what << ": row " << i << " key " << key << " in the masked tile at " << kv0;
                    if (computed) ++count[size_t(i * (q.sk + 1) + key)];
                  }
                }
              }
            }
          }
        for (int64_t i = 0; i < kGridRows; ++i)
          for (int64_t j = 0; j < q.sk; ++j)
            ASSERT_EQ(count[size_t(i * (q.sk + 1) + j)], visible(q, i, j) ? 1 : 0) << what << ": row " << i << " key " << j;
      }
  // The cases exist: without them the loop above could pass by never taking a branch.
  EXPECT_GT(skipped, 0);
  EXPECT_GT(unmasked, 0);
  EXPECT_GT(masked, 0);
}

TEST(TileRange, BlocksPastASequenceOrWhoseRowsSeeNoKeyVisitNoKeySoTheyWriteZeroAndMinusInfinity) {
  for (const SeqShape& q : shapes())
    for (const Tiling& t : kTilings)
      for (int G : kSplits)
        for (int64_t q0 = 0; q0 < kGridRows; q0 += t.block_m) {
          bool any = false;
          for (int64_t i = q0; i < q0 + t.block_m && !any; ++i) any = keys_of_row(q, i).end > keys_of_row(q, i).begin;
          if (any) continue;
          for (int g = 0; g < (G > 1 ? G : 1); ++g) {
            const KeyRange kr = block_split(q, q0, t.block_m, g, G, t.block_n);
            EXPECT_GE(kr.begin, kr.end) << describe(q, t, G) << " q0=" << q0 << " split " << g;
          }
        }
}

// The null-serving fast path (AttnArgs.serving == nullptr: mma, and mfma/wmma on dense problems)
// keeps the dense kernels' own expression; it must give the serving form's ranges.
TEST(TileRange, TheDenseFastPathGivesTheRangesOfTheServingFormWithoutAWindow) {
  for (int64_t S : {1, 5, 33, 129, 300})
    for (int64_t Sk : {1, 7, 100, 300, 1000})
      for (bool causal : {false, true})
        for (const Tiling& t : kTilings)
          for (int G : kSplits)
            for (int64_t q0 = 0; q0 < S; q0 += t.block_m)
              for (int g = 0; g < (G > 1 ? G : 1); ++g) {
                const KeyRange d = dense_block_split(S, Sk, causal, q0, t.block_m, g, G, t.block_n);
                const KeyRange s = block_split(SeqShape{S, Sk, causal, -1, -1}, q0, t.block_m, g, G, t.block_n);
                const bool d_empty = d.begin >= d.end, s_empty = s.begin >= s.end;
                ASSERT_EQ(d_empty, s_empty) << describe(SeqShape{S, Sk, causal, -1, -1}, t, G) << " q0=" << q0 << " g=" << g;
                if (!d_empty) {
                  EXPECT_EQ(d.begin, s.begin) << describe(SeqShape{S, Sk, causal, -1, -1}, t, G) << " q0=" << q0 << " g=" << g;
                  EXPECT_EQ(d.end, s.end) << describe(SeqShape{S, Sk, causal, -1, -1}, t, G) << " q0=" << q0 << " g=" << g;
                }
              }
}

// A hand-worked case: 4 queries over 10 keys (offset 6), causal with a 2-key left window, one
// 4-row block of 4-key tiles. Rows see 4..6, 5..7, 6..8, 7..9: the block visits keys 4..9 from
// key 4 (tiles 4..7 and 8..11); no key is seen by every row, so both tiles are masked; row 0's
// columns of the first tile are 0..2 (keys 4, 5, 6), row 3's of the second 0..1 (keys 8, 9).
TEST(TileRange, AHandWorkedWindowPinsTheRangesAndColumns) {
  const SeqShape q{4, 10, true, 2, -1};
  const KeyRange kr = block_split(q, 0, 4, 0, 0, 4);
  EXPECT_EQ(kr.begin, 4);
  EXPECT_EQ(kr.end, 10);
  const KeyRange all = rows_unmasked(q, 0, 4, kr);
  EXPECT_GE(all.begin, all.end);
  EXPECT_TRUE(tile_masked(all, 4, 4));
  EXPECT_TRUE(tile_masked(all, 8, 4));
  const TileCols c = tile_cols(row_keys_in(q, 0, kr), 4, 4);
  EXPECT_EQ(c.lo, 0);
  EXPECT_EQ(c.hi, 3);
  const TileCols c3 = tile_cols(row_keys_in(q, 3, kr), 8, 4);
  EXPECT_EQ(c3.lo, 0);
  EXPECT_EQ(c3.hi, 2);
  // Split in two: the first split from key 4 to the tile edge 8, the second from 8.
  const KeyRange s0 = block_split(q, 0, 4, 0, 2, 4), s1 = block_split(q, 0, 4, 1, 2, 4);
  EXPECT_EQ(s0.begin, 4);
  EXPECT_EQ(s0.end, 8);
  EXPECT_EQ(s1.begin, 8);
  EXPECT_EQ(s1.end, 10);
}

// FastDiv against the C++ division: every divisor up to 3000 with the numerators around its first
// multiples and a spread of large ones, and the divisors at powers of two (2^k - 1, 2^k, 2^k + 1) up
// to 2^31 - 1 with random numerators and the extremes (0, 2^31 - 1, the multiples' neighbours).
TEST(TileRange, FastDivGivesTheQuotientOfEveryNumeratorBelowTwoToThe31) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> any(0, INT32_MAX);
  auto check = [&](int d, int n) {
    const FastDiv f(d);
    ASSERT_EQ(f.div(n), n / d) << n << " / " << d << " (mul " << f.mul << ", shift " << f.shift << ")";
    ASSERT_EQ(f.divisor(), d);
  };
  for (int d = 1; d <= 3000; ++d) {
    for (int n = 0; n < 4 * d + 3; ++n) check(d, n);
    for (int i = 0; i < 40; ++i) check(d, any(rng));
    check(d, INT32_MAX);
    const int top = INT32_MAX / d * d;  // the largest multiple: its neighbours
    check(d, top);
    check(d, top - 1);
  }
  for (int k = 2; k <= 31; ++k)
    for (int64_t dd : {(int64_t(1) << k) - 1, int64_t(1) << k, (int64_t(1) << k) + 1}) {
      if (dd > INT32_MAX) continue;
      const int d = int(dd);
      for (int64_t n : {int64_t(0), int64_t(1), dd - 1, dd, dd + 1, int64_t(INT32_MAX), int64_t(INT32_MAX) - 1})
        if (n <= INT32_MAX) check(d, int(n));
      for (int i = 0; i < 2000; ++i) check(d, any(rng));
    }
}

// The causal blocks' LPT order (lpt_block) against the order written out as loops: section by
// section, q tile by q tile, head by head, the last section holding the heads left over; every
// (q tile, head) once.
TEST(TileRange, LptOrderWalksSectionsQTileMajorAndCoversEveryBlockOnce) {
  for (int nq : {1, 2, 7, 64})
    for (int hb : {1, 3, 16, 32, 33, 100})
      for (int heads : {1, 2, 4, 8, 16, 32, 64}) {
        const LptOrder o = lpt_order(nq, hb, heads);
        ASSERT_TRUE(o.on);
        const int w = heads < hb ? heads : hb;
        std::vector<std::pair<int, int>> want;
        for (int s0 = 0; s0 < hb; s0 += w)
          for (int qx = 0; qx < nq; ++qx)
            for (int h = s0; h < s0 + w && h < hb; ++h) want.emplace_back(qx, h);
        ASSERT_EQ(int(want.size()), nq * hb);
        std::vector<int> seen(size_t(nq) * hb, 0);
        for (int n = 0; n < nq * hb; ++n) {
          int qx = -1, h = -1;
          lpt_block(o, n, qx, h);
          ASSERT_EQ(qx, want[size_t(n)].first) << "block " << n << " of nq " << nq << " hb " << hb << " heads " << heads;
          ASSERT_EQ(h, want[size_t(n)].second) << "block " << n << " of nq " << nq << " hb " << hb << " heads " << heads;
          ++seen[size_t(h) * nq + qx];
        }
        for (int c : seen) ASSERT_EQ(c, 1);
      }
}

// A section is the largest power of two of kv heads whose K and V, doubled, fit in 32 MiB (FA3's rule
// rounds up; this one down), times the GQA group, at most every head; the order is off where the
// blocks reach 2^31.
TEST(TileRange, LptSectionIsThePowerOfTwoOfKvHeadsInThirtyTwoMiB) {
  // 8192 keys, D = 128, 2 bytes: K and V 4 MiB, doubled 8 MiB: 4 kv heads.
  EXPECT_EQ(lpt_section_heads(8192, 128, 2, 1, 32), 4);
  EXPECT_EQ(lpt_section_heads(8192, 128, 2, 4, 32), 16);  // Llama-3's group of 4
  EXPECT_EQ(lpt_section_heads(8192, 128, 1, 4, 32), 32);  // FP8: 8 kv heads, all 32 heads
  EXPECT_EQ(lpt_section_heads(8192, 128, 1, 1, 1000), 8);
  EXPECT_EQ(lpt_section_heads(4096, 256, 2, 1, 32), 4);
  EXPECT_EQ(lpt_section_heads(6000, 128, 2, 1, 64), 4);       // 5.9 MiB doubled: 5 fit, 4 taken
  EXPECT_EQ(lpt_section_heads(1 << 20, 256, 2, 1, 64), 1);    // one head past 32 MiB: one
  EXPECT_EQ(lpt_section_heads(1 << 20, 256, 2, 8, 64), 8);
  EXPECT_EQ(lpt_section_heads(512, 64, 2, 1, 6), 6);          // every head
  EXPECT_FALSE(lpt_order(int64_t(1) << 16, int64_t(1) << 15, 4).on);
  EXPECT_TRUE(lpt_order((int64_t(1) << 16) - 1, int64_t(1) << 15, 4).on);
}

// Why the order: blocks started in grid order, each on the first SM free (the hardware's block
// scheduler), with a causal block's cost its key tiles plus one for its prologue and epilogue. On
// 132 SMs the head-by-head grid finishes well past the even share; the LPT order within 2% of it.
TEST(TileRange, LptOrderBalancesCausalBlocksOnAGreedyScheduler) {
  auto makespan = [](const std::vector<int>& cost) {
    std::vector<int64_t> sm(132, 0);
    for (int c : cost) *std::min_element(sm.begin(), sm.end()) += c + 1;
    return double(*std::max_element(sm.begin(), sm.end()));
  };
  struct Row { int hb, S, BM, BN, D, eb, group; };
  for (const Row r : {Row{32, 8192, 128, 176, 128, 2, 1}, Row{32, 8192, 128, 224, 128, 1, 4}, Row{32, 4096, 128, 80, 256, 2, 1},
                      Row{128, 2048, 128, 128, 96, 2, 1}}) {
    const int nq = r.S / r.BM;
    auto tiles = [&](int qx) { return ((nq - 1 - qx) * r.BM + r.BM + r.BN - 1) / r.BN; };  // q_tile_row0's reversal
    std::vector<int> grid, lpt;
    int64_t total = 0;
    for (int h = 0; h < r.hb; ++h)
      for (int qx = 0; qx < nq; ++qx) grid.push_back(tiles(qx)), total += tiles(qx) + 1;
    const LptOrder o = lpt_order(nq, r.hb, lpt_section_heads(r.S, r.D, r.eb, r.group, r.hb));
    for (int n = 0; n < nq * r.hb; ++n) {
      int qx, h;
      lpt_block(o, n, qx, h);
      lpt.push_back(tiles(qx));
    }
    const double even = double(total) / 132;
    EXPECT_GT(makespan(grid), 1.04 * even) << "hb " << r.hb << " S " << r.S;
    EXPECT_LT(makespan(lpt), 1.02 * even) << "hb " << r.hb << " S " << r.S;
  }
}
