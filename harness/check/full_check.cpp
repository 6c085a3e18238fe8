// The full-output rule and the check of the checker. The adaptive tolerance scales with the
// low-precision reference's gap, which only the sampled rows measure; every row is held to that
// same tol (the sample always holds the first and last rows and the tile boundaries, where the gap
// is largest on causal and short-sequence rows), widened by the GPU reference's own bound on that
// row, so a correct kernel that passes on the sample passes everywhere but for the reference's
// proven error, and a wrong element anywhere exceeds tol as it would on a sampled row.
#include "harness/check/full_check.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace fa {
namespace {

GpuReferenceFn& hook() {
  static GpuReferenceFn fn = nullptr;
  return fn;
}

// |a - b| with matching infinities as 0 (a masked row's -inf LSE) and NaN as infinite.
double diff(double a, double b) {
  if (std::isinf(a) && std::isinf(b) && (a < 0) == (b < 0)) return 0.0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::infinity();
  return std::fabs(a - b);
}

constexpr double kOracleRel = 1e-9;  // the fp64 oracle's own error, relative to |ref|, with room

}  // namespace

GpuReferenceFn gpu_reference_fn() { return hook(); }
bool set_gpu_reference(GpuReferenceFn fn) {
  hook() = fn;
  return true;
}

std::string gpu_reference_disagreement(const Problem& p, const GpuReference& g, const Reference& ref) {
  const ServingShape& sh = p.serving();
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (size_t r = 0; r < ref.rows.size(); ++r) {
        const int64_t s = ref.rows[r];
        if (s >= sh.q_len[size_t(b)]) continue;
        const size_t ri = ref.row_index(b, h, r), gi = size_t(lse_index(p, b, h, s));
        for (int64_t d = 0; d < p.D; ++d) {
          const double y = ref.o[ri * size_t(p.D) + size_t(d)], x = g.o[gi * size_t(p.D) + size_t(d)];
          const double bound = g.eps_o[gi] + kOracleRel * (std::fabs(y) + 1e-30);
          if (!(diff(x, y) <= bound))
            return fmt::format("the GPU reference disagrees with the CPU fp64 oracle at (b={}, h={}, s={}, d={}): "
                               "{:.9g} vs {:.9g}, |diff| {:.3g} > its bound {:.3g}",
                               b, h, s, d, x, y, diff(x, y), bound);
        }
        const double bound = g.eps_lse[gi] + kOracleRel * (std::isfinite(ref.lse[ri]) ? std::fabs(ref.lse[ri]) : 0.0);
        if (!(diff(g.lse[gi], ref.lse[ri]) <= bound))
          return fmt::format("the GPU reference disagrees with the CPU fp64 oracle on the LSE of (b={}, h={}, s={}): "
                             "{:.9g} vs {:.9g}, bound {:.3g}",
                             b, h, s, g.lse[gi], ref.lse[ri], bound);
      }
  return {};
}

std::string full_output_failure(const Problem& p, const GpuReference& g, const RunOutputs& out, double tol,
                                double lse_tol) {
  const ServingShape& sh = p.serving();
  const Strides qs = q_strides(p);
  int64_t bad_rows = 0, rows = 0, wb = 0, wh = 0, ws = 0;
  // The failing row named is the one whose error passes its bound by the largest ratio.
  double worst = 0, worst_bound = 0, worst_ratio = -1;
  bool worst_lse = false;
  auto note = [&](double err, double bound, int64_t b, int64_t h, int64_t s, bool lse) {
    const double ratio = std::isfinite(err) ? err / bound : std::numeric_limits<double>::infinity();
    if (ratio > worst_ratio) worst_ratio = ratio, worst = err, worst_bound = bound, wb = b, wh = h, ws = s, worst_lse = lse;
  };
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t s = 0; s < sh.q_len[size_t(b)]; ++s) {
        ++rows;
        const size_t gi = size_t(lse_index(p, b, h, s));
        const double bound = tol + g.eps_o[gi];
        double row_err = 0;
        for (int64_t d = 0; d < p.D; ++d) {
          const double e = diff(out.o.at(qs.at(b, s, h) + d), g.o[gi * size_t(p.D) + size_t(d)]);
          if (!(e <= row_err)) row_err = e;
        }
        const double lse_bound = lse_tol + g.eps_lse[gi];
        const double lse_err = diff(out.lse[size_t(lse_index(p, b, h, s))], g.lse[gi]);
        const bool o_bad = !(row_err <= bound), l_bad = !(lse_err <= lse_bound);
        if (!o_bad && !l_bad) continue;
        ++bad_rows;
        if (o_bad) note(row_err, bound, b, h, s, false);
        else note(lse_err, lse_bound, b, h, s, true);
      }
  if (bad_rows == 0) return {};
  return fmt::format("{} of {} rows fail against the GPU reference; worst (b={}, h={}, s={}): {} |err| {:.3g} > {:.3g}",
                     bad_rows, rows, wb, wh, ws, worst_lse ? "LSE" : "max", worst, worst_bound);
}

}  // namespace fa
