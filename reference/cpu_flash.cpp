// cpu-flash kernels: tiled online softmax over (batch, head, row block, split) tasks, then combine.
#include "reference/cpu_flash.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/conventions.hpp"

namespace fa {
namespace {

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using KvMap = Eigen::Map<const MatF, 0, Eigen::OuterStride<>>;
constexpr float kNegInfF = -std::numeric_limits<float>::infinity();

template <typename Block>
void round_in_place(DType t, Block&& m) {
  if (t == DType::fp16) m = m.template cast<Eigen::half>().template cast<float>();
  else if (t == DType::bf16) m = m.template cast<Eigen::bfloat16>().template cast<float>();
}

}  // namespace

void cpu_flash_forward(const Problem& p, const float* q, const float* k, const float* v, int G, TypedBuffer& o,
                       std::vector<float>& lse, SplitPartials& partials) {
  const int Gs = G > 1 ? G : 1;
  const Strides qs = q_strides(p), ks = kv_strides(p);
  const float scale = float(p.softmax_scale());
  const int64_t tiles = (p.S + kCpuBlockM - 1) / kCpuBlockM;
  const int64_t tasks = p.B * p.H * tiles * Gs;
  if (Gs > 1) {
    partials.o.resize(size_t(p.B * p.H * Gs * p.S * p.D));
    partials.lse.resize(size_t(p.B * p.H * Gs * p.S));
  }
#pragma omp parallel
  {
    MatF Q(kCpuBlockM, p.D), Sc(kCpuBlockM, kCpuBlockN), acc(kCpuBlockM, p.D);
    Eigen::VectorXf m(kCpuBlockM), l(kCpuBlockM);
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tasks; ++t) {
      const int g = int(t % Gs);
      const int64_t tile = (t / Gs) % tiles, h = (t / (Gs * tiles)) % p.H, b = t / (Gs * tiles * p.H);
      const int64_t hk = h / p.group_size();
      const int64_t q0 = tile * kCpuBlockM, nr = std::min<int64_t>(kCpuBlockM, p.S - q0);
      const int64_t live_end = visible_keys(q0 + nr - 1, p.S, p.Sk, p.causal);  // causal tile skip
      const KeyRange kr = split_range(live_end, g, Gs, kCpuBlockN);
      for (int64_t r = 0; r < nr; ++r)
        for (int64_t d = 0; d < p.D; ++d) Q(r, d) = q[qs.at(b, q0 + r, h) + d] * scale;
      m.setConstant(kNegInfF);
      l.setZero();
      acc.setZero();
      for (int64_t kv0 = kr.begin; kv0 < kr.end; kv0 += kCpuBlockN) {
        const int64_t nb = std::min<int64_t>(kCpuBlockN, kr.end - kv0);
        const KvMap Kt(k + ks.at(b, kv0, hk), nb, p.D, Eigen::OuterStride<>(ks.seq));
        const KvMap Vt(v + ks.at(b, kv0, hk), nb, p.D, Eigen::OuterStride<>(ks.seq));
        auto S = Sc.topLeftCorner(nr, nb);
        S.noalias() = Q.topRows(nr) * Kt.transpose();
        for (int64_t r = 0; r < nr; ++r) {
          // Masked keys get P = 0 explicitly, never through exp(-inf): Eigen 3.4's generic SIMD
          // exp (SSE/AVX2, the portable build) clamps its argument at -88.7 and returns 2.9e-39
          // for -inf, where the AVX-512 one returns 0. A fully masked row then summed denormal
          // weights and returned the mean of V (bf16 keeps them; fp16 flushes them to 0).
          const int64_t vis = std::clamp<int64_t>(visible_keys(q0 + r, p.S, p.Sk, p.causal) - kv0, 0, nb);
          auto live = S.row(r).head(vis);
          S.row(r).tail(nb - vis).setZero();
          if (vis == 0) continue;  // nothing visible in this tile: m, l and acc stay as they are
          const float m_new = std::max(m[r], live.maxCoeff());
          const float alpha = std::exp(m[r] - m_new);  // std::exp(-inf) == 0: first live tile
          live = (live.array() - m_new).exp();
          l[r] = l[r] * alpha + live.sum();
          acc.row(r) *= alpha;
          m[r] = m_new;
        }
        round_in_place(p.dtype, S);
        acc.topRows(nr).noalias() += S * Vt;
      }
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t s = q0 + r;
        const float inv = l[r] > 0 ? 1.f / l[r] : 0.f;
        const float row_lse = l[r] > 0 ? m[r] + std::log(l[r]) : kNegInfF;
        if (Gs == 1) {
          const int64_t base = qs.at(b, s, h);
          for (int64_t d = 0; d < p.D; ++d) o.set(base + d, acc(r, d) * inv);
          lse[size_t(lse_index(p, b, h, s))] = row_lse;
        } else {
          const size_t prow = size_t(((b * p.H + h) * Gs + g) * p.S + s);
          for (int64_t d = 0; d < p.D; ++d) partials.o[prow * size_t(p.D) + size_t(d)] = acc(r, d) * inv;
          partials.lse[prow] = row_lse;
        }
      }
    }
  }
  if (Gs > 1) combine_splits(p, Gs, partials, o, lse);
}

void combine_splits(const Problem& p, int G, const SplitPartials& partials, TypedBuffer& o, std::vector<float>& lse) {
  const Strides qs = q_strides(p);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < p.B * p.H * p.S; ++row) {
    const int64_t s = row % p.S, h = (row / p.S) % p.H, b = row / (p.S * p.H);
    const size_t first = size_t(((b * p.H + h) * G) * p.S + s);  // split g at first + g*S
    float mx = kNegInfF;
    for (int g = 0; g < G; ++g) mx = std::max(mx, partials.lse[first + size_t(g * p.S)]);
    const int64_t base = qs.at(b, s, h);
    if (mx == kNegInfF) {
      for (int64_t d = 0; d < p.D; ++d) o.set(base + d, 0.f);
      lse[size_t(lse_index(p, b, h, s))] = kNegInfF;
      continue;
    }
    float wsum = 0;
    std::vector<float> out(size_t(p.D), 0.f);
    for (int g = 0; g < G; ++g) {
      const size_t pr = first + size_t(g * p.S);
      const float lg = partials.lse[pr];
      if (lg == kNegInfF) continue;  // empty split: contributes nothing
      const float w = std::exp(lg - mx);
      wsum += w;
      for (int64_t d = 0; d < p.D; ++d) out[size_t(d)] += w * partials.o[pr * size_t(p.D) + size_t(d)];
    }
    for (int64_t d = 0; d < p.D; ++d) o.set(base + d, out[size_t(d)] / wsum);
    lse[size_t(lse_index(p, b, h, s))] = mx + std::log(wsum);
  }
}

}  // namespace fa
