// Metric accumulation in fp64 over the checked rows; scans of the whole output for NaN/poison.
#include "harness/check/metrics.hpp"

#include <cmath>
#include <limits>

namespace fa {
namespace {

int64_t cache_mismatches(const Problem& p, const std::vector<float>& truth, const TypedBuffer& cache) {
  if (cache.size() != int64_t(truth.size())) return int64_t(truth.size());
  int64_t bad = 0;
  for (size_t i = 0; i < truth.size(); ++i) bad += cache.bits(int64_t(i)) != to_bits(p.dtype, truth[i]);
  return bad;
}

}  // namespace

double checked_diff(double a, double b) {
  if (std::isinf(a) && std::isinf(b) && (a < 0) == (b < 0)) return 0.0;  // -inf == -inf: masked row
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::infinity();
  return std::fabs(a - b);
}

Metrics measure(const Problem& p, const HostInputs& in, const Reference& ref, const RunOutputs& out) {
  Metrics m;
  m.rows_total = p.S;
  m.rows_checked = int64_t(ref.rows.size());
  const DType out_t = out_dtype(p.dtype);  // O's dtype: bf16 for FP8 inputs
  const uint32_t poison = poison_bits(out_t);
  for (int64_t i = 0; i < out.o.size(); ++i) {
    const uint32_t b = out.o.bits(i);
    if (b == poison) ++m.unwritten;
    else if (!std::isfinite(from_bits(out_t, b))) ++m.nan_inf;
  }
  const ServingShape& sh = p.serving();
  for (size_t i = 0; i < out.lse.size(); ++i) {
    const float x = out.lse[i];
    const int64_t row = int64_t(i), bi = row / (p.H * p.S);
    if (bi < p.B && row % p.S >= sh.q_len[size_t(bi)]) continue;  // past a sequence's queries: not a result
    uint32_t b;
    std::memcpy(&b, &x, 4);
    if (b == 0xffffffffu) ++m.unwritten;
    else if (std::isnan(x) || x == std::numeric_limits<float>::infinity()) ++m.nan_inf;  // -inf is legal
  }
  const Strides qs = q_strides(p);
  double sum_abs = 0, err2 = 0, ref2 = 0, out2 = 0, dot = 0;
  int64_t n = 0;
  const bool have_lp = !ref.o_lp.empty();
  BiasAccumulator bias(out_t);
  // FP8 inputs: an O of few keys is a few V values times v's descale, whose products have few
  // distinct mantissas (one key: 8 in e4m3, 4 in e5m2), so the store's rounding error is not the
  // uniform, mean-zero term the bias bound assumes (B1 H2 S9 Sk1 D16 e5m2: -0.103 ulp from the store
  // alone). Measured against the reference rounded to O's dtype, a correct store contributes 0.
  const bool against_rounded = is_fp8(p.dtype);
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (size_t r = 0; r < ref.rows.size(); ++r) {
        const int64_t s = ref.rows[r];
        if (s >= sh.q_len[size_t(b)]) continue;  // no such row in this sequence
        const size_t ri = ref.row_index(b, h, r);
        for (int64_t d = 0; d < p.D; ++d) {
          const double x = out.o.at(qs.at(b, s, h) + d), y = ref.o[ri * size_t(p.D) + size_t(d)];
          const double e = std::fabs(x - y);
          // NaN compares false with everything: count it as an infinite error, not as zero.
          m.max_abs = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(m.max_abs, e);
          sum_abs += e;
          err2 += (x - y) * (x - y);
          ref2 += y * y;
          out2 += x * x;
          dot += x * y;
          ++n;
          bias.add(x, against_rounded ? double(round_to(out_t, float(y))) : y);
          if (have_lp) m.lp_max_abs = std::max(m.lp_max_abs, std::fabs(double(ref.o_lp[ri * size_t(p.D) + size_t(d)]) - y));
        }
        bias.end_row();
        m.lse_max_err = std::max(m.lse_max_err, checked_diff(out.lse[size_t(lse_index(p, b, h, s))], ref.lse[ri]));
        if (have_lp) m.lp_lse_err = std::max(m.lp_lse_err, checked_diff(ref.lse_lp[ri], ref.lse[ri]));
      }
  m.bias = bias.finish();
  m.mean_abs = n ? sum_abs / double(n) : 0.0;
  m.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  // Cosine of two zero vectors (every row masked) is taken as 1; of one zero vector, 0.
  if (ref2 == 0 && out2 == 0) m.cosine = 1.0;
  else if (ref2 == 0 || out2 == 0) m.cosine = 0.0;
  else m.cosine = dot / std::sqrt(ref2 * out2);
  if (std::isnan(m.cosine)) m.cosine = 0.0;
  if (p.kv_cache) m.cache_mismatch = cache_mismatches(p, in.k, out.k_cache) + cache_mismatches(p, in.v, out.v_cache);
  return m;
}

}  // namespace fa
