// A FlashAttention-2 forward on the CPU with NVIDIA tensor-core accumulation emulated for PV, and
// the mutations the bias check must catch (round-toward-zero O stores, P rounded toward zero,
// O * (1 - 2^-9)). Slow (a few hundred ns a key and output column): meant for a few query rows.
// The emulated step, after Fasi et al. (PeerJ CS 7:e330): 16 exact products and C aligned to the
// largest exponent, each cut toward zero 3 bits below its ulp, summed exactly, normalised by truncation.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "harness/conventions.hpp"
#include "harness/inputs.hpp"
#include "harness/path.hpp"
#include "harness/problem.hpp"

namespace fa::test {

struct EmulatedKernel {
  bool tensor_core = true;     // PV in 16-key truncating steps; false: fp32 fmaf, round to nearest
  bool p_toward_zero = false;  // P rounded toward zero (not to nearest) before PV
  int G = 0;                   // key splits, combined with round to nearest in fp32
};

// The kernel's O in fp32, before its epilogue stores it, and its LSE.
struct Unstored {
  TypedBuffer o32;
  std::vector<float> lse;
};

// How the epilogue stores O: to nearest or toward zero, optionally scaled by 1 - 2^-9 first.
struct Store {
  bool toward_zero = false;
  bool scale_o = false;
};

namespace detail {

constexpr int kKeyTile = 64, kStep = 16, kAlignBits = 3;

inline float toward_zero_f32(double x) {
  float f = float(x);
  if (std::fabs(double(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
  return f;
}

inline float toward_zero_dtype(DType t, float x) {
  const float r = round_to(t, x);
  if (std::fabs(r) <= std::fabs(x)) return r;
  const uint32_t b = to_bits(t, r);
  return from_bits(t, b - 1);  // sign-magnitude: one step down in magnitude
}

// One m16n8k16 step for one output element: C + sum of n exact products, as the hardware adds them.
inline float tc_step(float c, const float* p, const float* const* v, int64_t d, int n) {
  double terms[kStep + 1];
  double big = std::fabs(double(c));
  terms[0] = c;
  for (int j = 0; j < n; ++j) {
    terms[j + 1] = double(p[j]) * double(v[j][d]);  // exact: 11 x 11 bits
    big = std::max(big, std::fabs(terms[j + 1]));
  }
  if (big == 0) return 0.0f;
  const int shift = 23 + kAlignBits - std::ilogb(big);  // the grid is 2^-shift
  const double up = std::ldexp(1.0, shift);  // powers of two: the scalings are exact
  double sum = 0;  // n + 1 multiples of the grid, each below 2^27 of it: exact in double
  for (int j = 0; j <= n; ++j) sum += std::trunc(terms[j] * up);
  return toward_zero_f32(sum / up);
}

}  // namespace detail

// Emulates the kernel for every query row of p (keep S * B * H small); LSE in natural log.
inline Unstored emulate_forward(const Problem& p, const HostInputs& in, const EmulatedKernel& k) {
  using namespace detail;
  Unstored out;
  out.o32 = TypedBuffer(DType::fp32, p.B * p.S * p.H * p.D);
  out.lse.assign(size_t(p.B * p.H * p.S), -std::numeric_limits<float>::infinity());
  const Strides qs = q_strides(p), ks = kv_strides(p);
  const float scale = float(p.softmax_scale());
  const int G = std::max(k.G, 1);
  const int64_t D = p.D;
  std::vector<float> s(kKeyTile), pr(kKeyTile), acc(static_cast<size_t>(D));
  std::vector<const float*> vrow(kKeyTile);
  std::vector<float> part_o(static_cast<size_t>(G * D)), part_m(static_cast<size_t>(G)), part_l(static_cast<size_t>(G));
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t row = 0; row < p.S; ++row) {
        const int64_t hk = h / p.group_size(), vis = visible_keys(row, p.S, p.Sk, p.causal);
        const float* q = in.q.data() + qs.at(b, row, h);
        const int64_t per = (vis + G - 1) / G;
        for (int g = 0; g < G; ++g) {
          float m = -INFINITY, l = 0;
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (int64_t j0 = g * per; j0 < std::min(vis, (g + 1) * per); j0 += kKeyTile) {
            const int n = int(std::min<int64_t>(kKeyTile, std::min(vis, (g + 1) * per) - j0));
            float tile_max = -INFINITY;
            for (int j = 0; j < n; ++j) {
              const float* kr = in.k.data() + ks.at(b, j0 + j, hk);
              float dot = 0;
              for (int64_t d = 0; d < D; ++d) dot = std::fmaf(q[d], kr[d], dot);
              s[size_t(j)] = dot * scale;
              tile_max = std::max(tile_max, s[size_t(j)]);
            }
            const float m_new = std::max(m, tile_max), alpha = std::exp(m - m_new);
            l *= alpha;
            for (auto& a : acc) a *= alpha;
            for (int j = 0; j < n; ++j) {
              const float e = std::exp(s[size_t(j)] - m_new);
              l += e;  // the row sum from the unrounded P, as FlashAttention-2 keeps it
              pr[size_t(j)] = k.p_toward_zero ? toward_zero_dtype(p.dtype, e) : round_to(p.dtype, e);
            }
            m = m_new;
            for (int j = 0; j < n; ++j) vrow[size_t(j)] = in.v.data() + ks.at(b, j0 + j, hk);
            for (int64_t d = 0; d < D; ++d) {
              float& a = acc[size_t(d)];
              if (k.tensor_core)
                for (int j = 0; j < n; j += kStep) a = tc_step(a, &pr[size_t(j)], &vrow[size_t(j)], d, std::min(kStep, n - j));
              else
                for (int j = 0; j < n; ++j) a = std::fmaf(pr[size_t(j)], vrow[size_t(j)][d], a);
            }
          }
          part_m[size_t(g)] = m, part_l[size_t(g)] = l;
          std::copy(acc.begin(), acc.end(), part_o.begin() + g * D);
        }
        // The combine: fp32, round to nearest, as combine kernels do.
        float M = -INFINITY, L = 0;
        for (int g = 0; g < G; ++g) M = std::max(M, part_m[size_t(g)]);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int g = 0; g < G && M != -INFINITY; ++g) {
          if (part_m[size_t(g)] == -INFINITY) continue;
          const float w = std::exp(part_m[size_t(g)] - M);
          L += w * part_l[size_t(g)];
          for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += w * part_o[size_t(g * D + d)];
        }
        for (int64_t d = 0; d < D; ++d) out.o32.set(qs.at(b, row, h) + d, L > 0 ? acc[size_t(d)] / L : 0.0f);
        if (L > 0) out.lse[size_t(lse_index(p, b, h, row))] = M + std::log(L);
      }
  return out;
}

inline RunOutputs stored(const Problem& p, const Unstored& u, const Store& st) {
  RunOutputs out;
  out.lse = u.lse;
  out.o = TypedBuffer(p.dtype, u.o32.size());
  for (int64_t i = 0; i < u.o32.size(); ++i) {
    float o = u.o32.at(i);
    if (st.scale_o) o *= 1.0f - 0x1p-9f;
    out.o.set_bits(i, to_bits(p.dtype, st.toward_zero ? detail::toward_zero_dtype(p.dtype, o) : round_to(p.dtype, o)));
  }
  return out;
}

}  // namespace fa::test
