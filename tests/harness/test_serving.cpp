// The serving fields of a problem (harness/serving.hpp, harness/problem.hpp): the standard ALiBi
// slopes against the published values, the packed offsets, the shuffled page pool, and the exact
// FLOP and byte counts against brute-force counts written from the mask's definition. Their
// validation and their columns in sweep and results files: test_serving_files.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "harness/problem.hpp"
#include "harness/serving.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

Problem base(int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D) { return fa::test::sized(B, H, Hk, S, Sk, D); }

std::string joined(const std::vector<int64_t>& v) {
  std::string t;
  for (int64_t x : v) t += (t.empty() ? "" : "|") + std::to_string(x);
  return t;
}

}  // namespace

// ---- ALiBi slopes -------------------------------------------------------------------------------

TEST(AlibiSlopes, EightHeadsGetTwoToTheMinusOneThroughMinusEight) {
  const auto s = standard_alibi_slopes(8);
  ASSERT_EQ(s.size(), 8u);
  const double want[] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625};
  for (size_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(s[i], want[i]) << i;
}

TEST(AlibiSlopes, SixHeadsTakeTheFourHeadSlopesThenEveryOtherEightHeadSlope) {
  // Press et al.: closest power of two 4 gives 2^-2, 2^-4, 2^-6, 2^-8; then 2^-1, 2^-3 from the 8-head list.
  const auto s = standard_alibi_slopes(6);
  const double want[] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  ASSERT_EQ(s.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(s[i], want[i]) << i;
}

TEST(AlibiSlopes, TwelveHeadsTakeTheEightHeadSlopesThenTheOddHalfPowers) {
  const auto s = standard_alibi_slopes(12);
  ASSERT_EQ(s.size(), 12u);
  for (size_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(s[i], std::pow(2.0, -double(i + 1))) << i;
  const double half[] = {-0.5, -1.5, -2.5, -3.5};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(s[8 + i], std::pow(2.0, half[i]), 1e-15) << 8 + i;
  EXPECT_NEAR(s[8], 0.7071067811865476, 1e-15);
}

TEST(AlibiSlopes, AProblemResolvesAlibiOneToTheStandardSlopesAndGivenSlopesAsWritten) {
  Problem p = base(1, 4, 2, 8, 8, 16);
  p.alibi = "1";
  EXPECT_EQ(p.serving().slopes, (std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625}));
  p.alibi = "0.5|0|3|1e-3";
  EXPECT_EQ(p.serving().slopes, (std::vector<double>{0.5, 0, 3, 0.001}));
  EXPECT_FALSE(validate(p));
  p.alibi = "0";
  EXPECT_TRUE(p.serving().slopes.empty());
  EXPECT_EQ(p.bias(0, 1, 3, 5), 0.0);
  // Bias of head h, row s, key j: -slope_h * |s + (Sk - S) - j|; here Sk - S = 2, row 3 sits at key 5.
  p.alibi = "0.5|2|0.25|1";
  p.Sk = 10;
  EXPECT_EQ(p.bias(0, 1, 3, 0), -10.0);
  EXPECT_EQ(p.bias(0, 1, 3, 5), 0.0);
  EXPECT_EQ(p.bias(0, 1, 3, 9), -8.0);  // past the position (not causal): the distance, not a sign
  EXPECT_EQ(p.bias(0, 2, 3, 4), -0.25);
}

// ---- lengths, packing, pages --------------------------------------------------------------------

TEST(ServingShape, ListsGivePerSequenceLengthsAndThdPacksThemWithoutGaps) {
  Problem p = base(3, 2, 1, 3, 4, 4);
  p.layout = Layout::thd, p.seqlens_q = "3|0|2", p.seqlens_k = "4|2|3";
  const ServingShape& sh = p.serving();
  EXPECT_EQ(sh.q_len, (std::vector<int64_t>{3, 0, 2}));
  EXPECT_EQ(sh.k_len, (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(sh.cu_q, (std::vector<int64_t>{0, 3, 3, 5}));
  EXPECT_EQ(sh.cu_k, (std::vector<int64_t>{0, 4, 6, 9}));
  EXPECT_EQ(p.q_elements(), 5 * 2 * 4);
  EXPECT_EQ(p.kv_elements(), 9 * 1 * 4);
  // Packed row r of Q holds (sequence, s) with cu_q[b] + s = r: [r][H][D].
  const Strides qs = q_strides(p);
  EXPECT_EQ(qs.at(2, 0, 0), 3 * 2 * 4);
  EXPECT_EQ(qs.at(2, 1, 1), (4 * 2 + 1) * 4);
  EXPECT_EQ(kv_strides(p).at(1, 1, 0), 5 * 4);
  // seqlens_q only: each sequence keeps the gap Sk - S between its keys and its queries.
  Problem q_only = base(3, 2, 1, 50, 80, 4);
  q_only.layout = Layout::thd, q_only.seqlens_q = "50|1|17";
  EXPECT_EQ(q_only.serving().k_len, (std::vector<int64_t>{80, 31, 47}));
  EXPECT_EQ(q_only.k_len(1), 31);
  // seqlens_k only: queries keep the padded S.
  Problem k_only = base(2, 2, 1, 5, 9, 4);
  k_only.seqlens_k = "9|0";
  EXPECT_EQ(k_only.q_len(1), 5);
  EXPECT_EQ(k_only.k_len(1), 0);
  EXPECT_EQ(k_only.q_elements(), 2 * 5 * 2 * 4);
}

TEST(ServingShape, UniformLengthsAreDrawnInRangeAndFollowTheSeed) {
  Problem p = base(64, 2, 1, 300, 300, 8);
  p.layout = Layout::thd, p.seqlens_q = "uniform:10:200", p.seqlens_k = "uniform:200:300";
  ASSERT_FALSE(validate(p));
  const std::vector<int64_t> first = p.serving().q_len;
  std::set<int64_t> distinct(first.begin(), first.end());
  EXPECT_GT(distinct.size(), 20u) << "64 draws from 191 values";
  for (int64_t b = 0; b < p.B; ++b) {
    EXPECT_GE(p.q_len(b), 10);
    EXPECT_LE(p.q_len(b), 200);
    EXPECT_GE(p.k_len(b), 200);
    EXPECT_LE(p.k_len(b), 300);
  }
  Problem again = p;
  again.name = "same inputs";
  EXPECT_EQ(Problem(again).serving().q_len, first);
  again.seed = 2;
  EXPECT_NE(again.serving().q_len, first) << "a new seed, new lengths";
}

// The pool page of each logical page of each sequence, read from the table.
static std::vector<int64_t> pool_pages_used(const Problem& p) {
  const ServingShape& sh = p.serving();
  std::vector<int64_t> used;
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t pages = (sh.k_len[size_t(b)] + p.page_size - 1) / p.page_size;
    for (int64_t j = 0; j < sh.pages_per_seq; ++j) {
      const int64_t e = sh.table[size_t(b * sh.pages_per_seq + j)];
      if (j < pages) used.push_back(e);
      else EXPECT_EQ(e, -1) << "b=" << b << " j=" << j << ": past the sequence's pages";
    }
  }
  return used;
}

TEST(PageTable, IsAShuffledPermutationOfThePoolThatTheSeedChanges) {
  // seqlens_k 5|0|9|16 in pages of 2: 3 + 0 + 5 + 8 = 16 pages, the longest sequence has 8.
  Problem p = base(4, 2, 1, 4, 16, 4);
  p.seqlens_k = "5|0|9|16", p.page_size = 2;
  int identity = 0;
  std::set<std::vector<int64_t>> tables;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    p.seed = seed;
    ASSERT_FALSE(validate(p));
    const ServingShape& sh = p.serving();
    ASSERT_EQ(sh.pages, 16);
    ASSERT_EQ(sh.pages_per_seq, 8);
    ASSERT_EQ(sh.table.size(), 4u * 8u);
    std::vector<int64_t> used = pool_pages_used(p);
    ASSERT_EQ(used.size(), 16u);
    tables.insert(used);
    bool in_order = true;
    for (size_t i = 0; i < used.size(); ++i) in_order = in_order && used[i] == int64_t(i);
    identity += in_order;
    std::sort(used.begin(), used.end());
    for (size_t i = 0; i < used.size(); ++i) EXPECT_EQ(used[i], int64_t(i)) << "seed " << seed << ": every pool page once";
  }
  EXPECT_EQ(identity, 0) << "no seed should leave the pages in order";
  EXPECT_GE(tables.size(), 7u) << "seeds should shuffle differently";
}

TEST(PageTable, TheAddressingPutsEveryKeyOfEverySequenceInItsOwnPoolSlot) {
  Problem p = base(3, 4, 2, 1, 37, 8);
  p.seqlens_k = "37|1|20", p.page_size = 8, p.seed = 11;
  const ServingShape& sh = p.serving();
  const int64_t pages = 5 + 1 + 3;
  ASSERT_EQ(p.kv_elements(), pages * 8 * 2 * 8);
  const Strides ks = kv_strides(p);
  std::vector<int> seen(size_t(p.kv_elements()), 0);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < sh.k_len[size_t(b)]; ++j)
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t at = ks.at(b, j, h);
        // Pool [page][slot][Hk][D]: key j is slot j % 8 of the page the table names for j / 8.
        EXPECT_EQ(at, ((sh.table[size_t(b * sh.pages_per_seq + j / 8)] * 8 + j % 8) * 2 + h) * 8);
        for (int64_t d = 0; d < 8; ++d) ++seen.at(size_t(at + d));
      }
  int64_t once = 0;
  for (int c : seen) {
    EXPECT_LE(c, 1);
    once += c;
  }
  EXPECT_EQ(once, (37 + 1 + 20) * 2 * 8);
}

// ---- FLOPs and bytes ----------------------------------------------------------------------------

namespace {

struct Seq {
  int64_t q, k;
};

// From the definition, pair by pair: row i sits at key position i + k - q and sees key j when
// pos - j <= left (left >= 0) and j - pos <= right (right >= 0; causal: right = 0).
struct Brute {
  double pairs = 0, keys_read = 0, q_rows = 0, pages = 0;
};
Brute brute_count(const std::vector<Seq>& seqs, bool causal, int64_t left, int64_t right, int64_t page) {
  Brute c;
  const int64_t r = causal ? 0 : right;
  for (const Seq& s : seqs) {
    std::vector<bool> read(size_t(std::max<int64_t>(s.k, 0)), false);
    for (int64_t i = 0; i < s.q; ++i)
      for (int64_t j = 0; j < s.k; ++j) {
        const int64_t pos = i + s.k - s.q;
        if ((left < 0 || pos - j <= left) && (r < 0 || j - pos <= r)) {
          ++c.pairs;
          read[size_t(j)] = true;
        }
      }
    c.keys_read += double(std::count(read.begin(), read.end(), true));
    c.q_rows += double(s.q);
    if (page > 0) c.pages += double((s.k + page - 1) / page);
  }
  return c;
}

// FLOPs 4 * H * D per visible pair; bytes: Q and O per existing row, K and V per key some row sees,
// LSE (fp32) per row and head, 4 bytes a page-table entry.
void expect_counts(const Problem& p, const std::vector<Seq>& seqs, const std::string& what) {
  const Brute c = brute_count(seqs, p.causal, p.window_left, p.window_right, p.page_size);
  const double e = dtype_bytes(p.dtype);
  EXPECT_EQ(p.unmasked_pairs(), c.pairs) << what;
  EXPECT_EQ(p.flops(), 4.0 * double(p.H * p.D) * c.pairs) << what;
  const double bytes = e * (2 * c.q_rows * double(p.H * p.D) + 2 * c.keys_read * double(p.Hk * p.D)) +
                       4.0 * c.q_rows * double(p.H) + 4.0 * c.pages;
  EXPECT_EQ(p.bytes(), bytes) << what;
}

struct Window {
  int64_t left, right;
};
const Window kWindows[] = {{-1, -1}, {0, 0}, {3, 0}, {2, 5}, {-1, 2}, {4, -1}, {0, -1}, {1, 1}, {40, 7}};

}  // namespace

TEST(Counts, HandWorkedCasesPinTheFormula) {
  // Causal window (3, 0), S = 4 over Sk = 20: rows sit at keys 16..19 and see 4 keys each; keys
  // 13..19 are read (left 3 is less than the gap Sk - S = 16). fp32, H = Hk = D = 1.
  Problem w = base(1, 1, 1, 4, 20, 1);
  w.dtype = DType::fp32, w.causal = true, w.window_left = 3;
  EXPECT_EQ(w.unmasked_pairs(), 16);
  EXPECT_EQ(w.flops(), 64);
  EXPECT_EQ(w.bytes(), 4.0 * (2 * 4 + 2 * 7) + 4.0 * 4);
  // Varlen 3|0|2 over 4|2|3, causal, fp16, H = 2, Hk = 1, D = 4: pairs 2+3+4 and 2+3; keys read 4+0+3.
  Problem v = base(3, 2, 1, 3, 4, 4);
  v.layout = Layout::thd, v.seqlens_q = "3|0|2", v.seqlens_k = "4|2|3", v.causal = true;
  EXPECT_EQ(v.unmasked_pairs(), 14);
  EXPECT_EQ(v.flops(), 4.0 * 2 * 4 * 14);
  EXPECT_EQ(v.bytes(), 2.0 * (2 * 5 * 2 * 4 + 2 * 7 * 1 * 4) + 4.0 * 5 * 2);
  v.page_size = 2;  // pages 2 + 1 + 2: the table's 5 entries, 4 bytes each
  EXPECT_EQ(v.bytes(), 2.0 * (2 * 5 * 2 * 4 + 2 * 7 * 1 * 4) + 4.0 * 5 * 2 + 4.0 * 5);
  // seqlens_k 5|2 with bshd padding, not causal: every sequence keeps S = 3 query rows.
  Problem k = base(2, 1, 1, 3, 5, 2);
  k.dtype = DType::fp32, k.seqlens_k = "5|2";
  EXPECT_EQ(k.unmasked_pairs(), 3 * 5 + 3 * 2);
  EXPECT_EQ(k.bytes(), 4.0 * (2 * 6 * 2 + 2 * 7 * 2) + 4.0 * 6);
  // Causal S = 10 over Sk = 4: rows 6..9 see 1..4 keys, rows 0..5 none (they still write O and LSE).
  Problem c = base(1, 1, 1, 10, 4, 1);
  c.dtype = DType::fp32, c.causal = true;
  EXPECT_EQ(c.unmasked_pairs(), 10);
  EXPECT_EQ(c.bytes(), 4.0 * (2 * 10 + 2 * 4) + 4.0 * 10);
}

TEST(Counts, DenseProblemsWithEveryWindowAndCausalAlignmentMatchABruteForceCount) {
  for (int64_t S : {1, 3, 7, 20, 70})
    for (int64_t Sk : {1, 5, 20, 130})
      for (bool causal : {false, true})
        for (const Window& w : kWindows) {
          if (causal && w.right > 0) continue;  // invalid: causal means right = 0
          for (int64_t page : {0, 16}) {
            Problem p = base(2, 4, 2, S, Sk, 16);
            p.causal = causal, p.window_left = w.left, p.window_right = w.right, p.page_size = page;
            p.dtype = page ? DType::bf16 : DType::fp16;
            ASSERT_FALSE(validate(p));
            expect_counts(p, {{S, Sk}, {S, Sk}},
                          fmt::format("S={} Sk={} causal={} window={},{} page={}", S, Sk, causal, w.left, w.right, page));
          }
        }
}

TEST(Counts, VarlenProblemsMatchABruteForceCountPerSequence) {
  std::mt19937_64 rng(20);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t B = uni(1, 5), S = uni(1, 90), Sk = uni(1, 150);
    const int kind = trial % 3;  // 0: seqlens_q and seqlens_k (thd); 1: seqlens_k only (bshd); 2: seqlens_q only (thd)
    std::vector<int64_t> q(size_t(B), S), k(size_t(B), Sk);
    for (int64_t b = 0; b < B; ++b) {
      if (kind != 1) q[size_t(b)] = uni(std::max<int64_t>(0, kind == 2 ? S - Sk : 0), S);
      k[size_t(b)] = kind == 2 ? q[size_t(b)] + Sk - S : uni(0, Sk);
    }
    q[0] = kind == 1 ? S : (trial % 2 ? 0 : q[0]);  // some zero-length query sequences
    if (kind == 2) k[0] = q[0] + Sk - S;
    if (k[0] < 0) q[0] = S - Sk, k[0] = 0;
    Problem p = base(B, 6, 2, S, Sk, 8);
    if (kind != 1) p.layout = Layout::thd, p.seqlens_q = joined(q);
    if (kind != 2) p.seqlens_k = joined(k);
    p.causal = uni(0, 1) == 1;
    const Window w = kWindows[uni(0, 8)];
    p.window_left = w.left, p.window_right = p.causal && w.right > 0 ? 0 : w.right;
    p.page_size = uni(0, 2) == 0 ? 0 : uni(1, 40);
    p.dtype = DType(uni(0, 2));
    ASSERT_FALSE(validate(p)) << validate(p)->field << ": " << validate(p)->reason;
    std::vector<Seq> seqs;
    for (int64_t b = 0; b < B; ++b) seqs.push_back({q[size_t(b)], k[size_t(b)]});
    expect_counts(p, seqs, fmt::format("trial {}: {} seqlens_q={} seqlens_k={} causal={} window={},{} page={}", trial,
                                       p.label(), p.seqlens_q, p.seqlens_k, p.causal, p.window_left, p.window_right,
                                       p.page_size));
  }
}

TEST(Counts, AWindowOfTheLargestSizeCountsAsUnbounded) {
  // A window side as large as int64 holds is wider than any key range: every pair an unbounded
  // window has, with no wrap-around in pos + right + 1 or pos - left (S > Sk puts pos below 0).
  const int64_t huge = std::numeric_limits<int64_t>::max();
  for (bool causal : {false, true})
    for (auto [S, Sk] : {std::pair<int64_t, int64_t>{7, 20}, {20, 7}}) {
      Problem p = base(2, 4, 2, S, Sk, 16);
      p.causal = causal, p.window_left = huge, p.window_right = causal ? 0 : huge;
      ASSERT_FALSE(validate(p));
      const std::string what = fmt::format("S={} Sk={} causal={}", S, Sk, causal);
      expect_counts(p, {{S, Sk}, {S, Sk}}, what);
      Problem unbounded = p;
      unbounded.window_left = unbounded.window_right = -1;
      EXPECT_EQ(p.unmasked_pairs(), unbounded.unmasked_pairs()) << what;
      for (int64_t i = 0; i < S; ++i) {
        const KeyRange a = p.row_keys(0, i), b = unbounded.row_keys(0, i);
        EXPECT_EQ(a.end - a.begin, b.end - b.begin) << what << " row " << i;
      }
    }
}

TEST(Counts, UniformLengthsAreCountedWithTheLengthsTheyDraw) {
  Problem p = base(16, 4, 1, 200, 300, 8);
  p.layout = Layout::thd, p.seqlens_q = "uniform:0:200", p.seqlens_k = "uniform:200:300", p.causal = true;
  p.window_left = 64, p.page_size = 32;
  std::vector<Seq> seqs;
  for (int64_t b = 0; b < p.B; ++b) seqs.push_back({p.q_len(b), p.k_len(b)});
  expect_counts(p, seqs, "uniform");
}
