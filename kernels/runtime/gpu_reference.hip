// The GPU reference: O and LSE of EVERY query row, with a per-row error bound, for the full-output
// check (harness/check/full_check.hpp). One warp a query row, 16 rows a block sharing each K/V tile
// (32 keys, 16 past D = 128) in shared memory; online softmax over the keys, no score buffer. Inputs
// are read as fp32 (exact for every input dtype); scores, exp, the softmax sum and O accumulate in
// fp64; only ALiBi/softcap scores pass through fp32 (transform_score, the device helper the paths use).
// Every feature AttnArgs carries is taken (causal, GQA, layouts, varlen/paged/kv-cache views, windows,
// ALiBi, softcap, FP8 descales). Cost: 3 fp64 operations per (row, key, d) (score, its |q k| sum,
// PV): (8,16,16,8192,8192,64) is 1.7e12, about 0.1 s of an H100's fp64 rate.
//
// Bound, per row, u = 2^-53, f = 2^-24 (eps_o, eps_lse below): products of fp32 values are exact in
// fp64, so a score's absolute error (natural-log units) is at most
//   e_s = ln2 * [(D + 4) u A + (transformed ? 8 f T : 0)] + 4 u (1 + |m|)
// A = max over the row's keys of scale * sum_d |q_d k_d| (log2 units, >= |score|), T = max over its
// keys of |score| + |transformed score|; 8 f T covers rounding the score to fp32 and transform_score's
// few fp32 operations, each within an ulp or two of its input or result (tanhf: 2 ulp). With
// p_j = exp(s_j - m) in fp64, the fp64 sums of Sk terms and each rescale's exp(m - m') within
// 2 u (1 + |m|), each weight's relative error is within d = 1.01 e_s + (Sk + 4) u (2 + 2 |m|), and
// for O = sum p v / sum p
//   |O~ - O| <= 2 d / (1 - d) * sum p |v| / sum p <= 2.2 d Vmax,   eps_o = 2.2 d Vmax + f Vmax (fp32 store)
//   eps_lse = d + f (|lse| + 1),
// Vmax the largest |v| (descaled) among keys of non-zero weight. Both are rounded up by 1%.
//
// lse_acc (FP8 problems, acc_bits > 0): a second online softmax, of scores added as FP8 tensor cores
// that keep acc_bits add them (harness/fp8_accumulate.hpp's model, the CPU low-precision
// reference's too). Its LSE's gap to lse is a row's own LSE tolerance (full_check.hpp).
#include "kernels/runtime/gpu_reference.hpp"

#include <fmt/format.h>

#include <cmath>

#include "harness/check/full_check.hpp"
#include "harness/fp8_accumulate.hpp"
#include "kernels/runtime/gpu_execution.hpp"

namespace fa::gpu {
namespace {

constexpr int kWarps = 16;                // query rows a block, sharing each K/V tile
// A K or V tile: 32 keys of D <= 128, or 16 of D <= 256. Key jj's K row is rotated by jj (element d
// at (d + jj) % D), so the 32 lanes reading one d each from their own key hit 32 banks; with Q's
// 16 KB the block's shared memory is 48 KB, the static limit.
constexpr int kTileFloats = 32 * 128;
constexpr int kMaxChunks = 8;             // D / 32 accumulators a lane, D <= 256

__device__ inline double lane_shfl(double v, int src) {
#if FA_HIP
  return __shfl(v, src, 32);
#else
  return __shfl_sync(0xffffffffu, v, src, 32);
#endif
}
__device__ inline double lane_xor(double v, int mask) {
#if FA_HIP
  return __shfl_xor(v, mask, 32);
#else
  return __shfl_xor_sync(0xffffffffu, v, mask, 32);
#endif
}
__device__ inline double warp_max(double v) {
  for (int m = 16; m > 0; m /= 2) v = fmax(v, lane_xor(v, m));
  return v;
}
__device__ inline double warp_sum(double v) {
  for (int m = 16; m > 0; m /= 2) v += lane_xor(v, m);
  return v;
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) reference_rows(AttnArgs a, double scale, float* o, float* lse,
                                                              float* eps_o, float* eps_lse, int acc_bits,
                                                              float* lse_acc) {
  __shared__ float qs[kWarps][256];
  __shared__ float ks[kTileFloats];
  __shared__ float vs[kTileFloats];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, hk = h / (a.H / a.Hk);
  const int s = int(blockIdx.x) * kWarps + warp;
  const bool row_ok = s < seq_q(a, b);
  const int tk = a.D <= 128 ? 32 : 16, nk = seq_k(a, b);
  const KeyRange kr = row_ok ? keys_of(a, b, s) : KeyRange{0, 0};
  if (row_ok)
    for (int d = lane; d < a.D; d += 32) qs[warp][d] = T::load(T::get(a.q, q_at(a, b, s, h) + d));
  const double ln2 = 0.6931471805599453;
  double acc[kMaxChunks] = {};
  double m = -INFINITY, l = 0, amax = 0, tmax = 0, vmax = 0;
  double m2 = -INFINITY, l2 = 0;  // lse_acc's online softmax
  for (int64_t j0 = 0; j0 < a.Sk; j0 += tk) {
    const bool mine = row_ok && j0 < kr.end && j0 + tk > kr.begin;
    if (!__syncthreads_or(mine)) continue;  // no row of the block sees this tile
    for (int i = int(threadIdx.x); i < tk * a.D; i += int(blockDim.x)) {
      const int jj = i / a.D, d = i % a.D;
      const int64_t j = j0 + jj;
      float kx = 0.f, vx = 0.f;
      if (j < nk) {
        const int64_t r = k_at(a, b, j, hk);
        kx = T::load(T::get(a.k, r + d)), vx = T::load(T::get(a.v, r + d));
      }
      ks[jj * a.D + (d + jj) % a.D] = kx, vs[jj * a.D + d] = vx;
    }
    __syncthreads();
    if (mine) {
      const int64_t j = j0 + lane;
      double sc = -INFINITY, sc2 = -INFINITY;  // natural-log units; sc2: lse_acc's
      if (lane < tk && j >= kr.begin && j < kr.end) {
        double dot = 0, dabs = 0;
        const float* krow = ks + lane * a.D;
        for (int d = 0, c = lane % a.D; d < a.D; ++d) {
          const double x = double(qs[warp][d]) * double(krow[c]);
          dot += x, dabs += fabs(x);
          if (++c == a.D) c = 0;
        }
        double x2 = dot * scale;
        amax = fmax(amax, dabs * fabs(scale));
        if (transforms_scores(a)) {
          const double t = double(transform_score(a, float(x2), b, h, s, j));
          tmax = fmax(tmax, fabs(x2) + fabs(t));
          x2 = t;
        }
        sc = x2 * ln2;
        if (acc_bits > 0) {
          double y = fp8_truncated_dot(qs[warp], krow, a.D, acc_bits, lane % a.D) * scale;
          if (transforms_scores(a)) y = double(transform_score(a, float(y), b, h, s, j));
          sc2 = y * ln2;
        }
      }
      if (acc_bits > 0) {  // the same on every lane
        const double m2_new = fmax(m2, warp_max(sc2));
        if (m2_new != -INFINITY) {
          l2 = l2 * (m2 == -INFINITY ? 0.0 : exp(m2 - m2_new)) + warp_sum(sc2 == -INFINITY ? 0.0 : exp(sc2 - m2_new));
          m2 = m2_new;
        }
      }
      const double m_new = fmax(m, warp_max(sc));
      if (m_new != -INFINITY) {
        const double pj = sc == -INFINITY ? 0.0 : exp(sc - m_new);
        const double c = m == -INFINITY ? 0.0 : exp(m - m_new);
        l = l * c + warp_sum(pj);
        for (int i = 0; i < kMaxChunks; ++i) acc[i] *= c;
        for (int jj = 0; jj < tk; ++jj) {
          const double w = lane_shfl(pj, jj);
          if (w == 0.0) continue;  // the same on every lane: no divergence
          for (int i = 0; i < kMaxChunks; ++i) {
            const int d = lane + 32 * i;
            if (d >= a.D) break;
            const double v = double(vs[jj * a.D + d]);
            acc[i] += w * v, vmax = fmax(vmax, fabs(v));
          }
        }
        m = m_new;
      }
    }
    __syncthreads();
  }
  if (!row_ok) return;
  amax = warp_max(amax), tmax = warp_max(tmax), vmax = warp_max(vmax) * fabs(double(a.v_descale));
  const int64_t row = lse_row(a, b, h, s);
  const double inv = l > 0 ? double(a.v_descale) / l : 0.0;
  for (int i = 0; i < kMaxChunks; ++i) {
    const int d = lane + 32 * i;
    if (d < a.D) o[row * a.D + d] = float(acc[i] * inv);
  }
  if (lane != 0) return;
  constexpr double u = 0x1p-53, f = 0x1p-24;
  const double lse_v = l > 0 ? m + log(l) : -INFINITY;
  const double e_s = ln2 * ((a.D + 4) * u * amax + (transforms_scores(a) ? 8 * f * tmax : 0.0)) +
                     4 * u * (1 + (l > 0 ? fabs(m) : 0.0));
  const double dw = 1.01 * e_s + (double(a.Sk) + 4) * u * (2 + 2 * (l > 0 ? fabs(m) : 0.0));
  lse[row] = float(lse_v);
  if (acc_bits > 0) lse_acc[row] = float(l2 > 0 ? m2 + log(l2) : -INFINITY);
  eps_o[row] = float(1.01 * (2.2 * dw * vmax + f * vmax));
  eps_lse[row] = float(1.01 * (dw + f * (l > 0 ? fabs(lse_v) + 1 : 1)));
}

// The path-side machinery (uploads in the dtype, serving arrays, the kv-cache append) is the
// execution's; this one launches the reference instead of a path.
class ReferenceExecution : public GpuExecution {
 public:
  ReferenceExecution(const Problem& p, const HostInputs& in, const GateContext& ctx, int acc_bits)
      : GpuExecution(p, in, ctx, 0),
        acc_bits_(is_fp8(p.dtype) ? acc_bits : 0),
        // The oracle's scale in fp64 (reference/cpu_ref.cpp), log2 units: the paths' args_.scale_log2
        // is fp32, 6e-8 of a score off, which the bound does not cover (FP8's descales folded in).
        scale_log2_(p.softmax_scale() * double(in.descale.q) * double(in.descale.k) * 1.4426950408889634),
        rows_(size_t(p.B * p.H * p.S)),
        o32_(rows_ * size_t(p.D) * sizeof(float)),
        lse32_(rows_ * sizeof(float)),
        eps_o_(rows_ * sizeof(float)),
        eps_lse_(rows_ * sizeof(float)),
        lse_acc_(acc_bits_ > 0 ? rows_ * sizeof(float) : 0) {}

  GpuReference result() {
    GpuReference g;
    g.o.resize(rows_ * size_t(p_.D)), g.lse.resize(rows_), g.eps_o.resize(rows_), g.eps_lse.resize(rows_);
    FA_GPU_CHECK(copy_to_host(g.o.data(), o32_.as<void>(), o32_.bytes()));
    FA_GPU_CHECK(copy_to_host(g.lse.data(), lse32_.as<void>(), lse32_.bytes()));
    FA_GPU_CHECK(copy_to_host(g.eps_o.data(), eps_o_.as<void>(), eps_o_.bytes()));
    FA_GPU_CHECK(copy_to_host(g.eps_lse.data(), eps_lse_.as<void>(), eps_lse_.bytes()));
    if (acc_bits_ > 0) {
      g.lse_acc.resize(rows_);
      FA_GPU_CHECK(copy_to_host(g.lse_acc.data(), lse_acc_.as<void>(), lse_acc_.bytes()));
    }
    return g;
  }

 protected:
  void launch() override {
    append_kv();  // kv_cache problems attend to the cache after the append; nothing otherwise
    with_any_dtype(p_.dtype, [&](auto t) {
      using T = decltype(t);
      const dim3 grid(unsigned((p_.S + kWarps - 1) / kWarps), unsigned(p_.B * p_.H));
      reference_rows<T><<<grid, kWarps * 32, 0, stream_>>>(args_, scale_log2_, o32_.as<float>(),
                                                           lse32_.as<float>(), eps_o_.as<float>(), eps_lse_.as<float>(),
                                                           acc_bits_, lse_acc_.as<float>());
      FA_GPU_CHECK_LAUNCH("reference_rows");
    });
  }

 private:
  int acc_bits_;  // FP8 with a declared accumulation: lse_acc too
  double scale_log2_;
  size_t rows_;
  DeviceBuffer o32_, lse32_, eps_o_, eps_lse_, lse_acc_;
};

}  // namespace

GpuReferenceResult compute_gpu_reference(const Problem& p, const HostInputs& in, const GateContext& ctx,
                                         int s_acc_bits) {
  GpuReferenceResult r;
  if (p.D > 256) {
    r.not_taken = fmt::format("D = {} > 256", p.D);
    return r;
  }
  if (p.dtype == DType::fp32) {  // no built-in GPU path takes it; the loaders are the paths' (with_any_dtype)
    r.not_taken = "fp32 inputs (the GPU reference reads the 16-bit and FP8 dtypes)";
    return r;
  }
  if (p.B * p.H > 65535) {
    r.not_taken = "B * H > 65535 exceeds the grid's y";
    return r;
  }
  try {  // the reference's memory failing is no fault of the path under test: fall back
    ReferenceExecution e(p, in, ctx, s_acc_bits);
    e.run();
    r.ref = e.result();
  } catch (const OutOfMemory& e) {
    r.not_taken = fmt::format("no device memory for it ({})", e.what());
  }
  return r;
}

namespace {
[[maybe_unused]] const bool registered = set_gpu_reference(compute_gpu_reference);
}  // namespace

}  // namespace fa::gpu
