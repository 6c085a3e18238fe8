// Inputs: deterministic per seed, identical values in both layouts, exactly representable in the
// dtype, and standard normal in distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "harness/inputs.hpp"
#include "harness/rng.hpp"

using namespace fa;

static Problem prob(Layout l, DType t, uint64_t seed) {
  Problem p;
  p.B = 2, p.H = 4, p.Hk = 2, p.S = 33, p.Sk = 47, p.D = 24, p.layout = l, p.dtype = t, p.seed = seed;
  return p;
}

TEST(Inputs, TheSameSeedGivesTheSameTensorsAndAnotherSeedDoesNot) {
  const auto a = make_inputs(prob(Layout::bshd, DType::fp16, 5));
  const auto b = make_inputs(prob(Layout::bshd, DType::fp16, 5));
  const auto c = make_inputs(prob(Layout::bshd, DType::fp16, 6));
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.v, b.v);
  EXPECT_NE(a.q, c.q);
  EXPECT_NE(a.q, a.k) << "Q and K must come from different streams";
}

TEST(Inputs, BothLayoutsHoldTheSameValueAtTheSameLogicalIndex) {
  const Problem p1 = prob(Layout::bshd, DType::bf16, 3), p2 = prob(Layout::bhsd, DType::bf16, 3);
  const auto a = make_inputs(p1), b = make_inputs(p2);
  const Strides s1 = q_strides(p1), s2 = q_strides(p2), k1 = kv_strides(p1), k2 = kv_strides(p2);
  for (int64_t bb = 0; bb < p1.B; ++bb)
    for (int64_t s = 0; s < p1.S; ++s)
      for (int64_t h = 0; h < p1.H; ++h)
        for (int64_t d = 0; d < p1.D; ++d) ASSERT_EQ(a.q[size_t(s1.at(bb, s, h) + d)], b.q[size_t(s2.at(bb, s, h) + d)]);
  for (int64_t bb = 0; bb < p1.B; ++bb)
    for (int64_t s = 0; s < p1.Sk; ++s)
      for (int64_t h = 0; h < p1.Hk; ++h)
        for (int64_t d = 0; d < p1.D; ++d) ASSERT_EQ(a.v[size_t(k1.at(bb, s, h) + d)], b.v[size_t(k2.at(bb, s, h) + d)]);
}

TEST(Inputs, ValuesAreExactlyRepresentableInTheDtype) {
  for (DType t : {DType::fp16, DType::bf16}) {
    const auto in = make_inputs(prob(Layout::bshd, t, 11));
    for (float x : in.k) ASSERT_EQ(round_to(t, x), x);
  }
  // fp16 keeps 11 significant bits, so most normals are not exact in bf16 (8 bits).
  const auto in = make_inputs(prob(Layout::bshd, DType::fp16, 11));
  int differ = 0;
  for (float x : in.q) differ += round_to(DType::bf16, x) != x;
  EXPECT_GT(differ, int(in.q.size()) / 2);
}

TEST(Inputs, ValuesLookStandardNormal) {
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = normal_at(42, 1, uint64_t(i));
    sum += x;
    sum2 += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum2 / n, 1.0, 0.02);
}

TEST(Inputs, PhiloxMatchesThePublishedKnownAnswer) {
  // Random123 known-answer test for philox4x32_10, counter = key = 0.
  const auto r = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(r[0], 0x6627e8d5u);
  EXPECT_EQ(r[1], 0xe169c58du);
  EXPECT_EQ(r[2], 0xbc57ac4cu);
  EXPECT_EQ(r[3], 0x9b00dbd8u);
}

TEST(Inputs, RoundingIsToNearestEven) {
  // 1 + 2^-11 is halfway between fp16 1 and 1 + 2^-10: ties go to the even mantissa (1).
  EXPECT_EQ(round_to(DType::fp16, 1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(round_to(DType::fp16, 1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(round_to(DType::bf16, 1.0f + std::ldexp(1.0f, -8)), 1.0f);
  EXPECT_EQ(to_bits(DType::bf16, 1.0f), 0x3f80u);
  EXPECT_EQ(to_bits(DType::fp16, 1.0f), 0x3c00u);
}

TEST(Inputs, Fp8InputsAreTheSameNormalsQuantisedPerTensorWithTheirDescales) {
  for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    const Problem p8 = prob(Layout::bshd, t, 9), p32 = prob(Layout::bshd, DType::fp32, 9);
    const HostInputs a = make_inputs(p8), x = make_inputs(p32);
    const std::pair<const std::vector<float>*, float> tensors[] = {{&a.q, a.descale.q}, {&a.k, a.descale.k}, {&a.v, a.descale.v}};
    const std::vector<float>* raw[] = {&x.q, &x.k, &x.v};
    for (int i = 0; i < 3; ++i) {
      const auto& [v, descale] = tensors[i];
      float amax = 0, amax8 = 0;
      for (float r : *raw[i]) amax = std::max(amax, std::fabs(r));
      EXPECT_FLOAT_EQ(descale, amax / float(dtype_max(t))) << dtype_name(t) << " tensor " << i;
      for (size_t e = 0; e < v->size(); ++e) {
        ASSERT_EQ(round_to(t, (*v)[e]), (*v)[e]) << "stored values lie on the FP8 grid";
        amax8 = std::max(amax8, std::fabs((*v)[e]));
        // Dequantised, each is its normal within half a step of the grid (relative 2^-(m+1)), or
        // within half the smallest subnormal step near zero.
        const double want = (*raw[i])[e], got = double((*v)[e]) * descale;
        const double rel = std::ldexp(1.0, -dtype_mantissa_bits(t) - 1);
        const double floor = std::ldexp(1.0, dtype_min_normal_exp(t) - dtype_mantissa_bits(t) - 1) * descale;
        ASSERT_LE(std::fabs(got - want), rel * std::fabs(want) * 1.0001 + floor) << dtype_name(t) << " element " << e;
      }
      EXPECT_EQ(amax8, float(dtype_max(t))) << "the largest |x| lands on the format's largest value";
    }
  }
  const HostInputs h = make_inputs(prob(Layout::bshd, DType::fp16, 9));
  EXPECT_EQ(h.descale.q, 1.f);
  EXPECT_EQ(h.descale.v, 1.f);
}

// kv_cache's appended slots, counted by hand: the last q_len(b) keys of each sequence, in order.
TEST(Inputs, AppendedSlotsAreTheLastQueriesKeysOfEverySequenceInEveryLayout) {
  Problem p;
  p.B = 2, p.H = 4, p.Hk = 2, p.S = 2, p.Sk = 5, p.D = 4, p.kv_cache = true;
  // bshd [B][Sk][Hk][D]: sequence b's key j at b * 40 + j * 8; keys 3 and 4 are new.
  AppendedSlots a = appended_slots(p);
  EXPECT_EQ(a.row, (std::vector<int64_t>{24, 32, 64, 72}));
  EXPECT_EQ(a.head, 4);
  // bhsd [B][Hk][Sk][D]: key j of head 0 at b * 40 + j * 4; the heads 20 apart.
  p.layout = Layout::bhsd;
  a = appended_slots(p);
  EXPECT_EQ(a.row, (std::vector<int64_t>{12, 16, 52, 56}));
  EXPECT_EQ(a.head, 20);
  // thd, keys 5|3 and queries 2|1: packed key rows 0-4 and 5-7 of 8 elements; new are 3, 4 and 7.
  p.layout = Layout::thd, p.seqlens_q = "2|1", p.seqlens_k = "5|3";
  a = appended_slots(p);
  EXPECT_EQ(a.row, (std::vector<int64_t>{24, 32, 56}));
  // Pages of 2 keys: key j of sequence b is slot j % 2 of pool page table[b][j / 2].
  p.page_size = 2;
  const auto& t = p.serving().table;
  const int64_t row = p.serving().pages_per_seq;
  a = appended_slots(p);
  EXPECT_EQ(a.row, (std::vector<int64_t>{(t[1] * 2 + 1) * 8, (t[2] * 2 + 0) * 8, (t[row + 1] * 2 + 0) * 8}));
  // Without kv_cache nothing is appended.
  p.kv_cache = false;
  EXPECT_TRUE(appended_slots(p).row.empty());
}

TEST(Inputs, AppendedTokensGatherCompactlyTokenByTokenThenHead) {
  Problem p;
  p.B = 1, p.H = 2, p.Hk = 2, p.S = 1, p.Sk = 3, p.D = 2, p.kv_cache = true, p.layout = Layout::bhsd;
  std::vector<float> kv(size_t(p.kv_elements()));
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = float(i);
  // bhsd [1][2][3][2]: the new key (j = 2) of head 0 at 4, of head 1 at 10.
  EXPECT_EQ(appended_slots(p).gather(kv), (std::vector<float>{4, 5, 10, 11}));
}

// Only the query rows the CPU oracle checks, drawn for a row whose paths draw on the device: each
// such row holds, for every b and h, the values the whole draw puts there (both layouts, an odd
// H*D so runs start inside a pair), K and V whole; FP8 and layouts the device does not draw refuse.
TEST(Inputs, SomeQueryRowsHoldTheWholeDrawsValuesThere) {
  for (Layout l : {Layout::bshd, Layout::bhsd}) {
    Problem p = prob(l, DType::bf16, 9);
    p.D = 23;  // H * D = 92, and S * H * D odd per batch when combined with the row offsets below
    const std::vector<int64_t> rows{0, 1, 7, 31, 32};
    const HostInputs whole = make_inputs(p), some = make_inputs(p, rows);
    ASSERT_EQ(some.q.size(), size_t(p.B) * rows.size() * size_t(p.H * p.D));
    EXPECT_EQ(some.k, whole.k);
    EXPECT_EQ(some.v, whole.v);
    const Strides qs = q_strides(p);
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t s : rows)
        for (int64_t h = 0; h < p.H; ++h)
          for (int64_t d = 0; d < p.D; ++d)
            ASSERT_EQ(some.q[size_t(some.q_offset(qs, b, s, h) + d)], whole.q[size_t(qs.at(b, s, h) + d)])
                << layout_name(l) << " b " << b << " s " << s << " h " << h << " d " << d;
    EXPECT_TRUE(some.has_q_row(31));
    EXPECT_FALSE(some.has_q_row(30));
    EXPECT_TRUE(whole.has_q_row(30));
    EXPECT_THROW(some.require_every_q_row("a CPU path"), std::logic_error);
    EXPECT_NO_THROW(whole.require_every_q_row("a CPU path"));
  }
  Problem fp8 = prob(Layout::bshd, DType::fp8_e4m3, 9);
  EXPECT_THROW(make_inputs(fp8, {0, 1}), std::logic_error);  // its descale is the whole tensor's amax
  Problem thd = prob(Layout::thd, DType::fp16, 9);
  thd.seqlens_q = "33|20", thd.seqlens_k = "47|30";
  EXPECT_THROW(make_inputs(thd, {0, 1}), std::logic_error);
  EXPECT_THROW(make_inputs(prob(Layout::bshd, DType::fp16, 9), {5, 2}), std::logic_error);  // not ascending
}
