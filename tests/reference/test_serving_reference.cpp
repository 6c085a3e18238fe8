// The serving fields in the oracle (cpu-ref) and in cpu-flash at G = 0 and every split count,
// against expectations this file computes itself: hand-worked cases for each field (a window that
// empties a row, ALiBi on GQA, softcap on large scores, a shuffled page pool, varlen with an empty
// sequence) and a brute force written from the definitions over problems that combine the fields.
// Inputs are placed by hand; the code's addressing is used only to put values where a path reads them.
// Last, both CPU paths through the harness's own route (poison, run, measure, judge) on serving problems.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "harness/check/metrics.hpp"
#include "harness/check/row_sample.hpp"
#include "harness/check/tolerance.hpp"
#include "helpers.hpp"
#include "reference/cpu_flash.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kLn2 = std::log(2.0), kLn3 = std::log(3.0);

std::vector<int64_t> every_row(const Problem& p) {
  std::vector<int64_t> rows(size_t(p.S));
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

// A problem of fp32 inputs with scale 1 (scores are the dot products as written).
Problem tiny(int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D) {
  Problem p;
  p.H = H, p.Hk = Hk, p.S = S, p.Sk = Sk, p.D = D, p.scale = 1.0, p.dtype = DType::fp32;
  return p;
}

// Logical tensors [b][s][h][d] over the padded extents (S for Q, Sk for K and V).
struct Logical {
  int64_t B, S, Sk, H, Hk, D;
  std::vector<float> q, k, v;
  Logical(int64_t B_, int64_t S_, int64_t Sk_, int64_t H_, int64_t Hk_, int64_t D_)
      : B(B_), S(S_), Sk(Sk_), H(H_), Hk(Hk_), D(D_), q(size_t(B * S * H * D)), k(size_t(B * Sk * Hk * D)),
        v(size_t(B * Sk * Hk * D)) {}
  float& Q(int64_t b, int64_t s, int64_t h, int64_t d) { return q[size_t(((b * S + s) * H + h) * D + d)]; }
  float& K(int64_t b, int64_t j, int64_t h, int64_t d) { return k[size_t(((b * Sk + j) * Hk + h) * D + d)]; }
  float& V(int64_t b, int64_t j, int64_t h, int64_t d) { return v[size_t(((b * Sk + j) * Hk + h) * D + d)]; }
  float Q(int64_t b, int64_t s, int64_t h, int64_t d) const { return q[size_t(((b * S + s) * H + h) * D + d)]; }
  float K(int64_t b, int64_t j, int64_t h, int64_t d) const { return k[size_t(((b * Sk + j) * Hk + h) * D + d)]; }
  float V(int64_t b, int64_t j, int64_t h, int64_t d) const { return v[size_t(((b * Sk + j) * Hk + h) * D + d)]; }
};

Logical random_logical(const Problem& p, uint64_t seed) {
  Logical L(p.B, p.S, p.Sk, p.H, p.Hk, p.D);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  for (auto* t : {&L.q, &L.k, &L.v})
    for (float& x : *t) x = n(rng);
  return L;
}

// What the test knows of a problem without asking the code: each sequence's lengths, the mask, the
// score transforms and the slopes.
struct Spec {
  std::vector<int64_t> q_len, k_len;
  bool causal = false;
  int64_t left = -1, right = -1;
  double scale = 1, cap = 0;
  std::vector<double> slopes;  // empty: no ALiBi
};

// The logical values placed in the problem's storage (rows past a sequence's length have none).
HostInputs place(const Problem& p, const Logical& L, const Spec& sp) {
  HostInputs in;
  in.q.assign(size_t(p.q_elements()), 0.f);
  in.k.assign(size_t(p.kv_elements()), 0.f);
  in.v.assign(size_t(p.kv_elements()), 0.f);
  const Strides qs = q_strides(p), ks = kv_strides(p);
  for (int64_t b = 0; b < L.B; ++b) {
    for (int64_t s = 0; s < sp.q_len[size_t(b)]; ++s)
      for (int64_t h = 0; h < L.H; ++h)
        for (int64_t d = 0; d < L.D; ++d) in.q.at(size_t(qs.at(b, s, h) + d)) = L.Q(b, s, h, d);
    for (int64_t j = 0; j < sp.k_len[size_t(b)]; ++j)
      for (int64_t h = 0; h < L.Hk; ++h)
        for (int64_t d = 0; d < L.D; ++d) {
          in.k.at(size_t(ks.at(b, j, h) + d)) = L.K(b, j, h, d);
          in.v.at(size_t(ks.at(b, j, h) + d)) = L.V(b, j, h, d);
        }
  }
  return in;
}

struct Expect {
  int64_t H = 0, S = 0, D = 0;
  std::vector<double> o, lse;  // [b][h][s][d], [b][h][s]
  double O(int64_t b, int64_t h, int64_t s, int64_t d) const { return o[size_t(((b * H + h) * S + s) * D + d)]; }
  double LSE(int64_t b, int64_t h, int64_t s) const { return lse[size_t((b * H + h) * S + s)]; }
};

// Straight from the definitions: row i of a sequence with sq queries and sk keys sits at key
// position i + sk - sq; it sees key j when pos - j <= left (left >= 0) and j - pos <= right
// (right >= 0; causal is right = 0); score = softcap(scale * q.k) - slope_h * |pos - j|.
Expect brute(const Logical& L, const Spec& sp) {
  Expect e;
  e.H = L.H, e.S = L.S, e.D = L.D;
  e.o.assign(size_t(L.B * L.H * L.S * L.D), 0.0);
  e.lse.assign(size_t(L.B * L.H * L.S), -kInf);
  const int64_t right = sp.causal ? 0 : sp.right;
  for (int64_t b = 0; b < L.B; ++b) {
    const int64_t sq = sp.q_len[size_t(b)], sk = sp.k_len[size_t(b)];
    for (int64_t h = 0; h < L.H; ++h) {
      const int64_t hk = h / (L.H / L.Hk);
      for (int64_t i = 0; i < sq; ++i) {
        const int64_t pos = i + sk - sq;
        std::vector<std::pair<int64_t, double>> seen;
        for (int64_t j = 0; j < sk; ++j) {
          if (sp.left >= 0 && pos - j > sp.left) continue;
          if (right >= 0 && j - pos > right) continue;
          double dot = 0;
          for (int64_t d = 0; d < L.D; ++d) dot += double(L.Q(b, i, h, d)) * double(L.K(b, j, hk, d));
          double s = sp.scale * dot;
          if (sp.cap > 0) s = sp.cap * std::tanh(s / sp.cap);
          if (!sp.slopes.empty()) s -= sp.slopes[size_t(h)] * double(std::llabs(pos - j));
          seen.push_back({j, s});
        }
        if (seen.empty()) continue;
        double m = -kInf, l = 0;
        for (const auto& js : seen) m = std::max(m, js.second);
        for (auto& js : seen) l += (js.second = std::exp(js.second - m));
        e.lse[size_t((b * L.H + h) * L.S + i)] = m + std::log(l);
        for (int64_t d = 0; d < L.D; ++d) {
          double acc = 0;
          for (const auto& [j, w] : seen) acc += w * double(L.V(b, j, hk, d));
          e.o[size_t(((b * L.H + h) * L.S + i) * L.D + d)] = acc / l;
        }
      }
    }
  }
  return e;
}

struct FlashOut {
  TypedBuffer o;
  std::vector<float> lse;
};

FlashOut run_flash(const Problem& p, const HostInputs& in, int G) {
  FlashOut out{TypedBuffer(p.dtype, p.q_elements()), std::vector<float>(size_t(p.B * p.H * p.S), std::nanf(""))};
  out.o.poison();
  SplitPartials partials;
  cpu_flash_forward(p, in.q.data(), in.k.data(), in.v.data(), G, out.o, out.lse, partials);
  return out;
}

void expect_lse(double got, double want, double tol, const std::string& at) {
  if (std::isinf(want)) EXPECT_TRUE(std::isinf(got) && got < 0) << at << " LSE " << got << ", want -inf";
  else EXPECT_NEAR(got, want, tol) << at << " LSE";
}

// The oracle (and its low-precision pass, fp32 here) against `want` over every existing row.
void check_oracle(const Problem& p, const HostInputs& in, const Spec& sp, const Expect& want, double tol,
                  const std::string& what) {
  const Reference ref = compute_reference(p, in, every_row(p), true);
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t s = 0; s < sp.q_len[size_t(b)]; ++s) {
        const std::string at = fmt::format("{} oracle b={} h={} s={}", what, b, h, s);
        const size_t ri = ref.row_index(b, h, size_t(s));
        expect_lse(ref.lse[ri], want.LSE(b, h, s), tol, at);
        expect_lse(ref.lse_lp[ri], want.LSE(b, h, s), 5e-5, at + " (low precision)");
        for (int64_t d = 0; d < p.D; ++d) {
          ASSERT_NEAR(ref.o[ri * size_t(p.D) + size_t(d)], want.O(b, h, s, d), tol) << at << " d=" << d;
          ASSERT_NEAR(ref.o_lp[ri * size_t(p.D) + size_t(d)], want.O(b, h, s, d), 3e-5) << at << " d=" << d << " (lp)";
        }
      }
}

// cpu-flash at G against `want`: every element of O written, every existing row right.
void check_flash(const Problem& p, const HostInputs& in, const Spec& sp, const Expect& want, int G,
                 const std::string& what) {
  const FlashOut out = run_flash(p, in, G);
  const uint32_t poison = poison_bits(p.dtype);
  int64_t unwritten = 0;
  for (int64_t i = 0; i < out.o.size(); ++i) unwritten += out.o.bits(i) == poison;
  EXPECT_EQ(unwritten, 0) << what << " G=" << G;
  const Strides qs = q_strides(p);
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t s = 0; s < sp.q_len[size_t(b)]; ++s) {
        const std::string at = fmt::format("{} cpu-flash G={} b={} h={} s={}", what, G, b, h, s);
        expect_lse(out.lse[size_t(lse_index(p, b, h, s))], want.LSE(b, h, s), 5e-5, at);
        for (int64_t d = 0; d < p.D; ++d)
          ASSERT_NEAR(out.o.at(qs.at(b, s, h) + d), want.O(b, h, s, d), 3e-5) << at << " d=" << d;
      }
}

void check_all(const Problem& p, const HostInputs& in, const Spec& sp, const Expect& want, const std::string& what,
               double oracle_tol = 1e-12) {
  ASSERT_FALSE(validate(p)) << what << ": " << validate(p)->field << ": " << validate(p)->reason;
  check_oracle(p, in, sp, want, oracle_tol, what);
  for (int G : {0, 2, 4, 8, 16}) check_flash(p, in, sp, want, G, what);
}

std::string slope_text(const std::vector<double>& s) {
  std::string t;
  for (double x : s) t += (t.empty() ? "" : "|") + fmt::format("{:.17g}", x);
  return t;
}

}  // namespace

TEST(ServingOracle, AWindowThatEmptiesARowGivesZeroAndMinusInfinityThereAndTheWindowElsewhere) {
  // S = 5 queries over Sk = 3 keys, window (1, 1), not causal: row i sits at key position i - 2 and
  // sees keys [pos - 1, pos + 1]. Row 0 (pos -2) sees none, though without the window it sees all 3.
  // q = 0, so every visible key weighs the same: O is the mean of the visible V, LSE = log(count).
  Problem p = tiny(1, 1, 5, 3, 1);
  p.window_left = 1, p.window_right = 1;
  Logical L(1, 5, 3, 1, 1, 1);
  const float v[] = {1, 2, 4}, k[] = {1, -2, 3};
  for (int64_t j = 0; j < 3; ++j) L.V(0, j, 0, 0) = v[j], L.K(0, j, 0, 0) = k[j];
  Spec sp{{5}, {3}, false, 1, 1, 1.0, 0, {}};
  Expect want;
  want.H = 1, want.S = 5, want.D = 1;
  want.o = {0, 1, 1.5, 7.0 / 3, 3};
  want.lse = {-kInf, 0, std::log(2.0), std::log(3.0), std::log(2.0)};
  check_all(p, place(p, L, sp), sp, want, "window 1,1");
  const Reference ref = compute_reference(p, place(p, L, sp), every_row(p), false);
  EXPECT_EQ(ref.o[0], 0.0);
  for (int64_t s = 1; s < 5; ++s) EXPECT_TRUE(std::isfinite(ref.lse[ref.row_index(0, 0, size_t(s))])) << s;
}

TEST(ServingOracle, AlibiGivesTheQueryHeadsOfOneKvGroupTheirOwnSlopes) {
  // H = 4 over Hk = 2: heads 0, 1 read kv head 0 (V = 1, 2, 4), heads 2, 3 kv head 1 (V = 3, 6, 9).
  // Slopes ln 2, ln 3, 0, ln 2 and q = 0: a key at distance t from the row's position weighs 2^-t
  // (3^-t, 1). S = 2, Sk = 3: row 1 sits at key 2 (distances 2, 1, 0), row 0 at key 1 (1, 0, 1,
  // FlashAttention's |i - j| to the right of the position too when not causal).
  for (bool causal : {false, true}) {
    Problem p = tiny(4, 2, 2, 3, 1);
    p.causal = causal;
    p.alibi = slope_text({kLn2, kLn3, 0, kLn2});
    Logical L(1, 2, 3, 4, 2, 1);
    for (int64_t j = 0; j < 3; ++j) {
      L.V(0, j, 0, 0) = float(1 << j);   // 1, 2, 4
      L.V(0, j, 1, 0) = float(3 * (j + 1));  // 3, 6, 9
      L.K(0, j, 0, 0) = L.K(0, j, 1, 0) = float(j + 5);  // q = 0: K does not matter
    }
    Spec sp{{2}, {3}, causal, -1, -1, 1.0, 0, {kLn2, kLn3, 0, kLn2}};
    Expect want;
    want.H = 4, want.S = 2, want.D = 1;
    want.o.resize(8), want.lse.resize(8);
    auto set = [&](int64_t h, int64_t s, double o, double lse) { want.o[size_t(h * 2 + s)] = o, want.lse[size_t(h * 2 + s)] = lse; };
    // Row 1 sees every key in both cases: weights 1/4, 1/2, 1 (ln 2); 1/9, 1/3, 1 (ln 3); equal (0).
    set(0, 1, (1 + 2 * 2 + 4 * 4) / 7.0, std::log(7.0 / 4));
    set(1, 1, (1 + 3 * 2 + 9 * 4) / 13.0, std::log(13.0 / 9));
    set(2, 1, (3 + 6 + 9) / 3.0, std::log(3.0));
    set(3, 1, (3 + 2 * 6 + 4 * 9) / 7.0, std::log(7.0 / 4));
    if (!causal) {  // row 0: weights 1/2, 1, 1/2 (ln 2); 1/3, 1, 1/3 (ln 3)
      set(0, 0, (1 + 2 * 2 + 4) / 4.0, std::log(2.0));
      set(1, 0, (1 + 3 * 2 + 4) / 5.0, std::log(5.0 / 3));
      set(2, 0, (3 + 6 + 9) / 3.0, std::log(3.0));
      set(3, 0, (3 + 2 * 6 + 9) / 4.0, std::log(2.0));
    } else {  // row 0 sees keys 0, 1: weights 1/2, 1 (ln 2); 1/3, 1 (ln 3)
      set(0, 0, (1 + 2 * 2) / 3.0, std::log(1.5));
      set(1, 0, (1 + 3 * 2) / 4.0, std::log(4.0 / 3));
      set(2, 0, (3 + 6) / 2.0, std::log(2.0));
      set(3, 0, (3 + 2 * 6) / 3.0, std::log(1.5));
    }
    check_all(p, place(p, L, sp), sp, want, causal ? "alibi causal" : "alibi", 1e-13);
  }
}

TEST(ServingOracle, SoftcapBendsLargeScoresThroughTanhBeforeTheAlibiBias) {
  // One query, two keys (D = 1, V = 0, 1): O is the second key's weight. Each case's scores and
  // expected weight are written out from the definition softmax(c * tanh(scale * q.k / c) + bias).
  struct Case {
    const char* what;
    double scale, k0, k1, cap, slope;  // q = 1; ALiBi distances 1 (key 0) and 0 (key 1)
  };
  const Case cases[] = {
      {"1000 and 990 capped at 50: both near 50, weights near 1/2 (raw: e^-10)", 1.0, 1000, 990, 50, 0},
      {"60 and 40 capped at 50: 41.68 and 33.20", 1.0, 60, 40, 50, 0},
      {"the cap is on the scaled score: 50 and 49.5 become 38.08 and 37.86", 0.05, 1000, 990, 50, 0},
      {"ALiBi after the cap: capped 50 - ln 2 against 50, weights 1/3, 2/3", 1.0, 1000, 990, 50, kLn2},
  };
  for (const Case& c : cases) {
    Problem p = tiny(1, 1, 1, 2, 1);
    p.scale = c.scale, p.softcap = c.cap;
    if (c.slope > 0) p.alibi = slope_text({c.slope});
    Logical L(1, 1, 2, 1, 1, 1);
    L.Q(0, 0, 0, 0) = 1;
    L.K(0, 0, 0, 0) = float(c.k0), L.K(0, 1, 0, 0) = float(c.k1);
    L.V(0, 0, 0, 0) = 0, L.V(0, 1, 0, 0) = 1;
    const double s0 = c.cap * std::tanh(c.scale * c.k0 / c.cap) - c.slope, s1 = c.cap * std::tanh(c.scale * c.k1 / c.cap);
    Spec sp{{1}, {2}, false, -1, -1, c.scale, c.cap, {}};
    if (c.slope > 0) sp.slopes = {c.slope};
    Expect want;
    want.H = 1, want.S = 1, want.D = 1;
    want.o = {1.0 / (1.0 + std::exp(s0 - s1))};
    want.lse = {std::max(s0, s1) + std::log(std::exp(s0 - std::max(s0, s1)) + std::exp(s1 - std::max(s0, s1)))};
    check_all(p, place(p, L, sp), sp, want, c.what);
  }
  // The first case by hand, so the expectation above cannot drift with it: weights 1/2, LSE 50 + ln 2.
  Problem p = tiny(1, 1, 1, 2, 1);
  p.softcap = 50;
  Logical L(1, 1, 2, 1, 1, 1);
  L.Q(0, 0, 0, 0) = 1, L.K(0, 0, 0, 0) = 1000, L.K(0, 1, 0, 0) = 990, L.V(0, 1, 0, 0) = 1;
  const Reference ref = compute_reference(p, place(p, L, Spec{{1}, {2}}), {0}, false);
  EXPECT_NEAR(ref.o[0], 0.5, 1e-12);
  EXPECT_NEAR(ref.lse[0], 50 + kLn2, 1e-12);
  // And the ALiBi case: weights 1/3, 2/3 within the cap's 1e-15 bend.
  p.alibi = slope_text({kLn2});
  const Reference biased = compute_reference(p, place(p, L, Spec{{1}, {2}}), {0}, false);
  EXPECT_NEAR(biased.o[0], 2.0 / 3, 1e-12);
}

TEST(ServingOracle, APagedProblemGivesBitForBitTheResultOfTheSameProblemUnpaged) {
  // make_inputs defines K and V by logical index, so the paged pool holds the unpaged tensor's
  // values at shuffled addresses; the oracle must not see the difference.
  Problem dense;
  dense.B = 3, dense.H = 4, dense.Hk = 2, dense.S = 40, dense.Sk = 150, dense.D = 16, dense.seed = 5;
  dense.layout = Layout::thd, dense.seqlens_q = "40|7|0", dense.seqlens_k = "150|33|90";
  dense.causal = true, dense.window_left = 50, dense.alibi = "1", dense.softcap = 20;
  const HostInputs din = make_inputs(dense);
  const Reference want = compute_reference(dense, din, every_row(dense), true);
  const FlashOut flash_dense = run_flash(dense, din, 0);
  for (int64_t page : {1, 16, 64, 256}) {
    Problem paged = dense;
    paged.page_size = page;
    ASSERT_FALSE(validate(paged));
    const HostInputs pin = make_inputs(paged);
    if (page < 150) {
      EXPECT_NE(pin.k, din.k) << "page " << page << ": the pool should not be the dense tensor";
    }
    const Reference got = compute_reference(paged, pin, every_row(paged), true);
    ASSERT_EQ(got.o.size(), want.o.size());
    for (size_t i = 0; i < want.o.size(); ++i) {
      ASSERT_EQ(got.o[i], want.o[i]) << "page " << page << " element " << i;
      ASSERT_EQ(got.o_lp[i], want.o_lp[i]) << "page " << page << " element " << i;
    }
    for (size_t i = 0; i < want.lse.size(); ++i) ASSERT_EQ(got.lse[i], want.lse[i]) << "page " << page << " row " << i;
    for (int G : {0, 4}) {
      const FlashOut f = run_flash(paged, pin, G);
      const FlashOut& base = G == 0 ? flash_dense : run_flash(dense, din, G);
      ASSERT_EQ(f.o.size(), base.o.size());
      for (int64_t i = 0; i < f.o.size(); ++i) ASSERT_NEAR(f.o.at(i), base.o.at(i), 1e-6) << "page " << page << " G=" << G;
    }
  }
}

TEST(ServingOracle, VarlenWithAZeroLengthSequencePacksTheOthersAndMatchesEachAsItsOwnDenseProblem) {
  // seqlens_q 3|0|2 over seqlens_k 4|2|3, causal, thd: packed Q rows are 0-2 (sequence 0) and 3-4
  // (sequence 2); packed K rows 0-3, 4-5, 6-8. Sequence 1 has keys but no query: it adds nothing.
  const int64_t H = 2, Hk = 1, D = 4;
  Problem p = tiny(H, Hk, 3, 4, D);
  p.B = 3, p.layout = Layout::thd, p.seqlens_q = "3|0|2", p.seqlens_k = "4|2|3", p.causal = true, p.scale = 0;
  ASSERT_FALSE(validate(p));
  ASSERT_EQ(p.q_elements(), 5 * H * D);
  ASSERT_EQ(p.kv_elements(), 9 * Hk * D);
  const int64_t q_len[] = {3, 0, 2}, k_len[] = {4, 2, 3}, cu_q[] = {0, 3, 3}, cu_k[] = {0, 4, 6};
  const Logical L = random_logical(p, 42);
  HostInputs in{std::vector<float>(5 * H * D), std::vector<float>(9 * Hk * D), std::vector<float>(9 * Hk * D)};
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t s = 0; s < q_len[b]; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) in.q[size_t(((cu_q[b] + s) * H + h) * D + d)] = L.Q(b, s, h, d);
    for (int64_t j = 0; j < k_len[b]; ++j)
      for (int64_t d = 0; d < D; ++d) {
        in.k[size_t((cu_k[b] + j) * D + d)] = L.K(b, j, 0, d);
        in.v[size_t((cu_k[b] + j) * D + d)] = L.V(b, j, 0, d);
      }
  }
  const Reference packed = compute_reference(p, in, every_row(p), false);
  std::vector<FlashOut> flash;
  for (int G : {0, 2}) flash.push_back(run_flash(p, in, G));
  for (const FlashOut& f : flash)
    for (int64_t i = 0; i < f.o.size(); ++i) EXPECT_NE(f.o.bits(i), poison_bits(p.dtype)) << "packed element " << i;
  for (int64_t b : {0, 2}) {
    Problem one = tiny(H, Hk, q_len[b], k_len[b], D);
    one.causal = true, one.scale = 0;
    HostInputs din{std::vector<float>(size_t(q_len[b] * H * D)), std::vector<float>(size_t(k_len[b] * D)),
                   std::vector<float>(size_t(k_len[b] * D))};
    for (int64_t s = 0; s < q_len[b]; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) din.q[size_t((s * H + h) * D + d)] = L.Q(b, s, h, d);
    for (int64_t j = 0; j < k_len[b]; ++j)
      for (int64_t d = 0; d < D; ++d) din.k[size_t(j * D + d)] = L.K(b, j, 0, d), din.v[size_t(j * D + d)] = L.V(b, j, 0, d);
    const Reference alone = compute_reference(one, din, every_row(one), false);
    const FlashOut flash_alone = run_flash(one, din, 0);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < q_len[b]; ++s) {
        const std::string at = fmt::format("sequence {} h={} s={}", b, h, s);
        const size_t a = alone.row_index(0, h, size_t(s)), r = packed.row_index(b, h, size_t(s));
        EXPECT_NEAR(packed.lse[r], alone.lse[a], 1e-12) << at;
        for (const FlashOut& f : flash)
          EXPECT_NEAR(f.lse[size_t((b * H + h) * 3 + s)], flash_alone.lse[size_t(h * q_len[b] + s)], 2e-6) << at;
        for (int64_t d = 0; d < D; ++d) {
          EXPECT_NEAR(packed.o[r * size_t(D) + size_t(d)], alone.o[a * size_t(D) + size_t(d)], 1e-12) << at;
          const int64_t packed_at = ((cu_q[b] + s) * H + h) * D + d, dense_at = (s * H + h) * D + d;
          for (const FlashOut& f : flash) EXPECT_NEAR(f.o.at(packed_at), flash_alone.o.at(dense_at), 2e-6) << at << " d=" << d;
        }
      }
  }
  // The empty sequence's rows are no result: the oracle leaves them at O = 0, LSE = -inf.
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 0; s < 3; ++s) EXPECT_EQ(packed.lse[packed.row_index(1, h, size_t(s))], -kInf);
}

TEST(ServingOracle, MatchesABruteForceFromTheDefinitionsOnProblemsThatCombineTheFields) {
  struct Row {
    const char* what;
    Problem p;
    Spec sp;
  };
  std::vector<Row> rows;
  auto add = [&](const char* what, int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D, Spec sp,
                 auto&& tweak) {
    Problem p;
    p.B = B, p.H = H, p.Hk = Hk, p.S = S, p.Sk = Sk, p.D = D, p.dtype = DType::fp32, p.seed = uint64_t(rows.size() + 3);
    p.causal = sp.causal, p.window_left = sp.left, p.window_right = sp.right, p.softcap = sp.cap;
    if (!sp.slopes.empty()) p.alibi = slope_text(sp.slopes);
    sp.scale = 1.0 / std::sqrt(double(D));
    tweak(p, sp);
    rows.push_back({what, p, sp});
  };
  const auto pow2 = [](double e) { return std::exp2(e); };
  add("thd varlen, an empty query and an empty key sequence, window, standard ALiBi, softcap, pages of 16", 3, 4, 2,
      70, 150, 8, Spec{{70, 0, 33}, {150, 20, 0}, true, 40, -1, 1, 5, {pow2(-2), pow2(-4), pow2(-6), pow2(-8)}},
      [](Problem& p, Spec&) {
        p.layout = Layout::thd, p.seqlens_q = "70|0|33", p.seqlens_k = "150|20|0", p.page_size = 16, p.alibi = "1";
      });
  add("seqlens_k only, bshd padding, a two-sided window, given slopes", 2, 6, 3, 100, 90, 8,
      Spec{{100, 100}, {90, 13}, false, 7, 3, 1, 0, {0.5, 0.25, 0.125, 0, 1, 2}},
      [](Problem& p, Spec&) { p.seqlens_k = "90|13"; });
  add("causal S > Sk, bhsd, a left window, standard slopes for 2 heads", 1, 2, 1, 130, 100, 8,
      Spec{{130}, {100}, true, 30, -1, 1, 0, {pow2(-4), pow2(-8)}},
      [](Problem& p, Spec&) { p.layout = Layout::bhsd, p.alibi = "1"; });
  add("MQA, a right-only window, softcap, a given scale, pages of 64", 2, 8, 1, 65, 200, 8,
      Spec{{65, 65}, {200, 200}, false, -1, 5, 1, 30, {}},
      [](Problem& p, Spec& sp) { p.page_size = 64, p.scale = 0.3, sp.scale = 0.3; });
  add("window 0,0: the diagonal only", 1, 2, 2, 64, 64, 8, Spec{{64}, {64}, false, 0, 0, 1, 0, {}},
      [](Problem&, Spec&) {});
  add("causal window left 0 over a gap: one key a row", 1, 2, 2, 20, 300, 8, Spec{{20}, {300}, true, 0, 0, 1, 0, {}},
      [](Problem&, Spec&) {});
  add("seqlens_q only (keys follow: q + Sk - S), thd, causal, paged by 1", 3, 2, 1, 50, 80, 8,
      Spec{{50, 1, 17}, {80, 31, 47}, true, -1, -1, 1, 0, {}},
      [](Problem& p, Spec&) { p.layout = Layout::thd, p.seqlens_q = "50|1|17", p.page_size = 1; });
  add("a window wider than the keys, softcap with ALiBi, non-power-of-two heads", 1, 6, 2, 33, 47, 8,
      Spec{{33}, {47}, false, 500, 500, 1, 2, {pow2(-2), pow2(-4), pow2(-6), pow2(-8), pow2(-1), pow2(-3)}},
      [](Problem& p, Spec&) { p.alibi = "1"; });
  const int64_t huge = std::numeric_limits<int64_t>::max();
  add("a window of int64's largest width over S > Sk: unbounded, no wrap-around", 2, 2, 1, 40, 25, 8,
      Spec{{40, 40}, {25, 25}, false, huge, huge, 1, 0, {}}, [](Problem&, Spec&) {});
  for (const Row& r : rows) {
    const Logical L = random_logical(r.p, r.p.seed * 7919);
    check_all(r.p, place(r.p, L, r.sp), r.sp, brute(L, r.sp), r.what, 1e-11);
  }
}

TEST(ServingPaths, CpuFlashAndCpuRefPassTheAdaptiveRuleOnServingProblemsInEveryDtypeAndG) {
  // The harness's own route (prepare, poison, run, read back, measure, judge) on make_inputs'
  // values, kv_cache appends into pages among them: every element written, the cache right.
  std::vector<Problem> ps;
  auto add = [&](auto&& set) {
    Problem p;
    p.B = 3, p.H = 4, p.Hk = 2, p.S = 70, p.Sk = 200, p.D = 32, p.seed = uint64_t(ps.size() + 1);
    set(p);
    ps.push_back(p);
  };
  add([](Problem& p) { p.layout = Layout::thd, p.seqlens_q = "70|0|9", p.seqlens_k = "200|5|9", p.causal = true; });
  add([](Problem& p) { p.seqlens_k = "uniform:0:200", p.page_size = 16, p.window_left = 50, p.window_right = 20; });
  add([](Problem& p) { p.layout = Layout::thd, p.seqlens_q = "1|1|1", p.seqlens_k = "200|130|64", p.page_size = 16,
                       p.kv_cache = true, p.causal = true; });
  add([](Problem& p) { p.layout = Layout::thd, p.seqlens_q = "uniform:1:70", p.seqlens_k = "200|150|100",
                       p.page_size = 64, p.kv_cache = true, p.causal = true, p.window_left = 90, p.alibi = "1",
                       p.softcap = 30; });
  add([](Problem& p) { p.layout = Layout::bhsd, p.S = 230, p.causal = true, p.window_left = 10, p.alibi = "1"; });
  for (DType t : {DType::fp16, DType::bf16, DType::fp32})
    for (Problem p : ps) {
      p.dtype = t;
      ASSERT_FALSE(validate(p)) << p.label() << ": " << validate(p)->field << ": " << validate(p)->reason;
      const HostInputs in = make_inputs(p);
      const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
      for (const char* path : {"cpu-flash", "cpu-ref"})
        for (int G : {0, 2, 16}) {
          // cpu-ref is timed, never validated, and appends no cache: its kv_cache records keep none.
          if (std::string(path) == "cpu-ref" && (G || p.kv_cache)) continue;
          GateContext ctx;
          ASSERT_FALSE(test::cpu_row(path).supports(p, G, ctx)) << path << " " << p.label();
          auto exec = test::cpu_row(path).prepare(p, in, G, ctx);
          exec->poison();
          exec->run();
          const Metrics m = measure(p, in, ref, exec->read_back());
          const Verdict v = judge(m, p.dtype, Thresholds{});
          const std::string at = fmt::format("{} {} {} G={}", path, p.label(), dtype_name(t), G);
          EXPECT_TRUE(v.pass) << at << ": " << v.reason << " (max err " << m.max_abs << ", tol " << v.tol << ")";
          EXPECT_EQ(m.unwritten, 0) << at;
          EXPECT_EQ(m.nan_inf, 0) << at;
          EXPECT_EQ(m.cache_mismatch, 0) << at;
        }
    }
}
