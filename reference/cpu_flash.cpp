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
  else if (is_fp8(t)) m = m.unaryExpr([t](float x) { return round_to(t, x); });
}

}  // namespace

void cpu_flash_forward(const Problem& p, const float* q, const float* k, const float* v, int G, TypedBuffer& o,
                       std::vector<float>& lse, SplitPartials& partials, const Descales& ds, DType fp8_p) {
  const int Gs = G > 1 ? G : 1;
  const Strides qs = q_strides(p), ks = kv_strides(p);
  const float scale = float(p.softmax_scale() * double(ds.q) * double(ds.k));
  const DType p_t = lowprec_p_dtype(p, fp8_p);
  const int64_t tiles = (p.S + kCpuBlockM - 1) / kCpuBlockM;
  const int64_t tasks = p.B * p.H * tiles * Gs;
  const ServingShape& sh = p.serving();  // resolved once, outside the parallel region
  const bool transform = p.softcap > 0 || p.has_alibi();
  const float cap = float(p.softcap);
  if (Gs > 1) {
    partials.o.resize(size_t(p.B * p.H * Gs * p.S * p.D));
    partials.lse.resize(size_t(p.B * p.H * Gs * p.S));
  }
#pragma omp parallel
  {
    MatF Q(kCpuBlockM, p.D), Sc(kCpuBlockM, kCpuBlockN), acc(kCpuBlockM, p.D);
    MatF Kg(ks.table ? kCpuBlockN : 0, p.D), Vg(ks.table ? kCpuBlockN : 0, p.D);  // a paged tile, gathered
    Eigen::VectorXf m(kCpuBlockM), l(kCpuBlockM);
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tasks; ++t) {
      const int g = int(t % Gs);
      const int64_t tile = (t / Gs) % tiles, h = (t / (Gs * tiles)) % p.H, b = t / (Gs * tiles * p.H);
      const int64_t hk = h / p.group_size();
      const int64_t sq = sh.q_len[size_t(b)], sk = sh.k_len[size_t(b)], off = sk - sq;
      const int64_t q0 = tile * kCpuBlockM, nr = std::min<int64_t>(kCpuBlockM, sq - q0);
      if (nr <= 0) continue;  // past this sequence's queries
      auto keys = [&](int64_t s) { return row_keys(s, sq, sk, p.causal, p.window_left, p.window_right); };
      // The tile's live keys: the first row that sees a key's begin to the last row's end (both move
      // right with the row; only leading rows see none); tiles outside are skipped, never masked.
      int64_t r_first = 0;
      while (r_first < nr - 1 && keys(q0 + r_first).end <= keys(q0 + r_first).begin) ++r_first;
      const KeyRange kr = split_range_from(keys(q0 + r_first).begin, keys(q0 + nr - 1).end, g, Gs, kCpuBlockN);
      for (int64_t r = 0; r < nr; ++r)
        for (int64_t d = 0; d < p.D; ++d) Q(r, d) = q[qs.at(b, q0 + r, h) + d] * scale;
      m.setConstant(kNegInfF);
      l.setZero();
      acc.setZero();
      for (int64_t kv0 = kr.begin; kv0 < kr.end; kv0 += kCpuBlockN) {
        const int64_t nb = std::min<int64_t>(kCpuBlockN, kr.end - kv0);
        const float* kp = k + ks.at(b, kv0, hk);
        const float* vp = v + ks.at(b, kv0, hk);
        if (ks.table) {  // pages: rows are contiguous only within a page
          for (int64_t j = 0; j < nb; ++j)
            for (int64_t d = 0; d < p.D; ++d) {
              Kg(j, d) = k[ks.at(b, kv0 + j, hk) + d];
              Vg(j, d) = v[ks.at(b, kv0 + j, hk) + d];
            }
          kp = Kg.data(), vp = Vg.data();
        }
        const int64_t row_stride = ks.table ? p.D : ks.seq;
        const KvMap Kt(kp, nb, p.D, Eigen::OuterStride<>(row_stride));
        const KvMap Vt(vp, nb, p.D, Eigen::OuterStride<>(row_stride));
        auto S = Sc.topLeftCorner(nr, nb);
        S.noalias() = Q.topRows(nr) * Kt.transpose();
        for (int64_t r = 0; r < nr; ++r) {
          // Masked keys get P = 0 explicitly, never through exp(-inf): Eigen 3.4's generic SIMD
          // exp (SSE/AVX2, the portable build) clamps its argument at -88.7 and returns 2.9e-39
          // for -inf, where the AVX-512 one returns 0. A fully masked row then summed denormal
          // weights and returned the mean of V (bf16 keeps them; fp16 flushes them to 0).
          const KeyRange rk = keys(q0 + r);
          const int64_t a = std::clamp<int64_t>(rk.begin - kv0, 0, nb), e = std::clamp<int64_t>(rk.end - kv0, 0, nb);
          if (e <= a) {  // nothing visible in this tile: m, l and acc stay as they are
            S.row(r).setZero();
            continue;
          }
          if (transform) {
            const double* slope = sh.slopes.empty() ? nullptr : &sh.slopes[size_t(h)];
            for (int64_t j = a; j < e; ++j) S(r, j) = transformed_score(S(r, j), cap, slope, q0 + r, off, kv0 + j);
          }
          auto live = S.row(r).segment(a, e - a);
          const float m_new = std::max(m[r], live.maxCoeff());
          const float alpha = std::exp(m[r] - m_new);  // std::exp(-inf) == 0: first live tile
          live = (live.array() - m_new).exp();
          S.row(r).head(a).setZero();
          S.row(r).tail(nb - e).setZero();
          l[r] = l[r] * alpha + live.sum();
          acc.row(r) *= alpha;
          m[r] = m_new;
        }
        round_in_place(p_t, S);
        acc.topRows(nr).noalias() += S * Vt;
      }
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t s = q0 + r;
        const float inv = l[r] > 0 ? ds.v / l[r] : 0.f;  // v's descale in the epilogue
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
  const ServingShape& sh = p.serving();
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < p.B * p.H * p.S; ++row) {
    const int64_t s = row % p.S, h = (row / p.S) % p.H, b = row / (p.S * p.H);
    if (s >= sh.q_len[size_t(b)]) continue;  // past this sequence's queries
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
