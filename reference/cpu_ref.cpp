// Blocked reference: per (batch, kv head) K and V are widened once; per (query head of the group,
// row block) one GEMM for the scores over the block's visible keys, the score transforms (softcap,
// ALiBi), a row softmax over each row's keys (causal, window), one GEMM for PV. Sequences of a
// varlen or paged problem are read through the problem's addressing (harness/problem.hpp).
#include "reference/cpu_ref.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/conventions.hpp"
#include "harness/fp8_accumulate.hpp"

namespace fa {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Rows per block: keeps the score block near 32 MiB of doubles whatever Sk is.
int64_t block_rows(int64_t Sk) { return std::clamp<int64_t>((int64_t(1) << 22) / std::max<int64_t>(Sk, 1), 8, 128); }

}  // namespace

Reference compute_reference(const Problem& p, const HostInputs& in, std::vector<int64_t> rows,
                            std::optional<LowPrecision> lp) {
  const bool low_precision = lp.has_value();
  Reference ref;
  ref.rows = std::move(rows);
  ref.H = p.H;
  const size_t R = ref.rows.size();
  ref.o.assign(size_t(p.B * p.H) * R * size_t(p.D), 0.0);
  ref.lse.assign(size_t(p.B * p.H) * R, kNegInf);
  if (low_precision) {
    ref.o_lp.assign(ref.o.size(), 0.f);
    ref.lse_lp.assign(ref.lse.size(), -std::numeric_limits<float>::infinity());
    ref.lp_p = lp->p;
    ref.lp_s_acc_bits = is_fp8(p.dtype) ? lp->s_acc_bits : 0;
  }
  for (const int64_t s : ref.rows)  // inputs made for the oracle's rows alone must hold these
    if (!in.has_q_row(s)) throw std::logic_error(fmt::format("compute_reference: query row {} was not drawn on the host", s));
  const DType out_t = out_dtype(p.dtype);
  const Strides qs = q_strides(p), ks = kv_strides(p);
  // FP8 inputs mean their stored values times the descales (1 otherwise): q.k takes q's and k's,
  // the output v's, as FP8 kernels apply them (FA3: into the softmax scale and the epilogue).
  const double scale = p.softmax_scale() * double(in.descale.q) * double(in.descale.k);
  const double v_descale = in.descale.v;
  const int64_t rb = block_rows(p.Sk);
  const int64_t nblocks = (int64_t(R) + rb - 1) / rb;
  const int64_t G = p.group_size();
  const ServingShape& sh = p.serving();  // resolved once, outside the parallel loops
  const bool alibi = p.has_alibi();

  RowMat<double> Kd(p.Sk, p.D), Vd(p.Sk, p.D);
  RowMat<float> Kf(p.Sk, p.D), Vf(p.Sk, p.D);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t sq = sh.q_len[size_t(b)], sk = sh.k_len[size_t(b)], off = sk - sq;
    // Row r's keys: bottom-right causal and the window, over this sequence's lengths.
    auto keys = [&](int64_t s) { return row_keys(s, sq, sk, p.causal, p.window_left, p.window_right); };
    // The score of (query head h, row s, key j) from its scaled dot product: softcap, then ALiBi.
    auto score = [&](double x, int64_t h, int64_t s, int64_t j) {
      return transformed_score(x, p.softcap, alibi ? &sh.slopes[size_t(h)] : nullptr, s, off, j);
    };
    for (int64_t hk = 0; hk < p.Hk; ++hk) {
#pragma omp parallel for schedule(static)
      for (int64_t j = 0; j < sk; ++j)
        for (int64_t d = 0; d < p.D; ++d) {
          const int64_t at = ks.at(b, j, hk) + d;
          Kf(j, d) = in.k[size_t(at)];
          Vf(j, d) = in.v[size_t(at)];
          Kd(j, d) = Kf(j, d);
          Vd(j, d) = Vf(j, d);
        }
#pragma omp parallel for schedule(dynamic)
      for (int64_t task = 0; task < G * nblocks; ++task) {
        const int64_t h = hk * G + task / nblocks;
        const size_t r0 = size_t(task % nblocks) * size_t(rb);
        const size_t nr = std::min<size_t>(size_t(rb), R - r0);
        // The block's keys [k0, k1): the union of its rows' ranges (rows past the sequence see none).
        int64_t k0 = sk, k1 = 0;
        for (size_t r = 0; r < nr; ++r) {
          if (ref.rows[r0 + r] >= sq) continue;
          const KeyRange kr = keys(ref.rows[r0 + r]);
          if (kr.end > kr.begin) k0 = std::min(k0, kr.begin), k1 = std::max(k1, kr.end);
        }
        if (k1 <= k0) continue;  // every row masked: O = 0, LSE = -inf as initialised
        const int64_t kv = k1 - k0;
        RowMat<double> Q(nr, p.D);
        for (size_t r = 0; r < nr; ++r)
          for (int64_t d = 0; d < p.D; ++d)
            Q(r, d) = ref.rows[r0 + r] < sq ? in.q[size_t(in.q_offset(qs, b, ref.rows[r0 + r], h) + d)] : 0.0;
        RowMat<double> Sc = (Q * scale) * Kd.middleRows(k0, kv).transpose();
        Eigen::VectorXd inv_l(nr);
        for (size_t r = 0; r < nr; ++r) {
          const int64_t s = ref.rows[r0 + r];
          const KeyRange kr = s < sq ? keys(s) : KeyRange{0, 0};
          inv_l[r] = 0;
          if (kr.end <= kr.begin) {
            Sc.row(r).setZero();
            continue;
          }
          const int64_t lo = kr.begin - k0, n = kr.end - kr.begin;
          for (int64_t j = lo; j < lo + n; ++j) Sc(r, j) = score(Sc(r, j), h, s, k0 + j);
          const double m = Sc.row(r).segment(lo, n).maxCoeff();
          Sc.row(r).segment(lo, n) = (Sc.row(r).segment(lo, n).array() - m).exp();
          Sc.row(r).head(lo).setZero();
          Sc.row(r).tail(kv - lo - n).setZero();
          const double l = Sc.row(r).segment(lo, n).sum();
          inv_l[r] = 1.0 / l;  // normalise the D outputs after PV rather than the kv scores before
          ref.lse[ref.row_index(b, h, r0 + r)] = m + std::log(l);
        }
        const RowMat<double> O = (inv_l * v_descale).asDiagonal() * (Sc * Vd.middleRows(k0, kv));
        for (size_t r = 0; r < nr; ++r)
          std::copy(O.row(r).data(), O.row(r).data() + p.D, ref.o.begin() + ref.row_index(b, h, r0 + r) * size_t(p.D));
        if (!low_precision) continue;

        // Low precision: fp32 scores (FP8 with lp_s_acc_bits: added as those tensor cores add them,
        // then scaled), unnormalised P rounded to lp_p, fp32 PV, O rounded.
        RowMat<float> Sf(nr, kv);
        if (ref.lp_s_acc_bits > 0) {
          const RowMat<float> Qf = Q.cast<float>();
          for (size_t r = 0; r < nr; ++r)
            for (int64_t j = 0; j < kv; ++j)
              Sf(r, j) = float(scale) *
                         float(fp8_truncated_dot(Qf.row(r).data(), Kf.row(k0 + j).data(), int(p.D), ref.lp_s_acc_bits));
        } else {
          Sf = (Q.cast<float>() * float(scale)) * Kf.middleRows(k0, kv).transpose();
        }
        Eigen::VectorXf l(nr);
        for (size_t r = 0; r < nr; ++r) {
          const int64_t s = ref.rows[r0 + r];
          const KeyRange kr = s < sq ? keys(s) : KeyRange{0, 0};
          if (kr.end <= kr.begin) {
            Sf.row(r).setZero();
            l[r] = 0;
            continue;
          }
          const int64_t lo = kr.begin - k0, n = kr.end - kr.begin;
          for (int64_t j = lo; j < lo + n; ++j) Sf(r, j) = float(score(double(Sf(r, j)), h, s, k0 + j));
          const float m = Sf.row(r).segment(lo, n).maxCoeff();
          Sf.row(r).segment(lo, n) = (Sf.row(r).segment(lo, n).array() - m).exp();
          Sf.row(r).head(lo).setZero();
          Sf.row(r).tail(kv - lo - n).setZero();
          l[r] = Sf.row(r).sum();
          ref.lse_lp[ref.row_index(b, h, r0 + r)] = m + std::log(l[r]);
          for (int64_t j = lo; j < lo + n; ++j) Sf(r, j) = round_to(ref.lp_p, Sf(r, j));
        }
        RowMat<float> Of = Sf * Vf.middleRows(k0, kv);
        for (size_t r = 0; r < nr; ++r) {
          if (l[r] == 0) continue;
          float* dst = ref.o_lp.data() + ref.row_index(b, h, r0 + r) * size_t(p.D);
          for (int64_t d = 0; d < p.D; ++d) dst[d] = round_to(out_t, Of(r, d) / l[r] * float(v_descale));
        }
      }
    }
  }
  return ref;
}

}  // namespace fa
