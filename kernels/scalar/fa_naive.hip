// naive: the 3-pass GPU oracle. (1) QK^T into an fp32 score buffer [B][H][S][Sk] (causal-masked
// keys -inf); (2) a row softmax, one block per row, whose max and sum reductions run over the
// block's threads (a power-of-two tree) after each thread folds a strided slice of the row, so
// every Sk is covered, 3 included; writes P and the LSE; (3) O = P V. FP32 throughout.
// Any D <= 256, any Sk; memory B*H*S*Sk*4 bytes for the scores (an allocation failure is `oom`).
// Serving problems: rows and keys through AttnArgs' sequence view, masks by keys_of, scores through
// transform_score (softcap, ALiBi); scores past a sequence's lengths stay -inf. FP8 inputs are
// read a byte an element (scale_log2 holds q's and k's descales, O takes v's) and O is bf16.
#include <fmt/format.h>

#include <cmath>

#include "harness/path_registry.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {
namespace {

constexpr int kThreads = 256;  // power of two: the tree reduction below halves it

template <typename T>
__global__ void naive_scores(AttnArgs a, float* scores) {
  __shared__ float q[256];
  const int s = blockIdx.y, bh = blockIdx.z, b = bh / a.H, h = bh % a.H, hk = h / (a.H / a.Hk);
  const bool row_ok = s < seq_q(a, b);
  const int64_t qrow = q_at(a, b, row_ok ? s : 0, h);
  // Only rows that exist are read: a thd Q whose sequences are all empty has no storage at all.
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) q[d] = row_ok ? T::load(T::get(a.q, qrow + d)) : 0.f;
  __syncthreads();
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= a.Sk) return;
  const KeyRange kr = row_ok ? keys_of(a, b, s) : KeyRange{0, 0};
  float acc = -INFINITY;
  if (j >= kr.begin && j < kr.end) {
    const int64_t krow = k_at(a, b, j, hk);
    acc = 0.f;
    for (int d = 0; d < a.D; ++d) acc += q[d] * T::load(T::get(a.k, krow + d));
    acc *= a.scale_log2;
    if (transforms_scores(a)) acc = transform_score(a, acc, b, h, s, j);
    acc *= kLn2;  // natural-log units: this path uses expf/logf, not exp2
  }
  scores[(int64_t(bh) * a.S + s) * a.Sk + j] = acc;
}

__device__ float block_reduce(float v, float* red, bool is_max) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) {
      const float o = red[threadIdx.x + w];
      red[threadIdx.x] = is_max ? fmaxf(red[threadIdx.x], o) : red[threadIdx.x] + o;
    }
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();
  return r;
}

__global__ void __launch_bounds__(kThreads) naive_softmax(AttnArgs a, float* scores) {
  __shared__ float red[kThreads];
  const int64_t row = blockIdx.x;  // a block a row, in lse_row order: (b*H + h)*S + s
  float* x = scores + row * a.Sk;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < a.Sk; j += kThreads) m = fmaxf(m, x[j]);
  m = block_reduce(m, red, true);
  float l = 0.f;
  if (m != -INFINITY)
    for (int j = threadIdx.x; j < a.Sk; j += kThreads) l += expf(x[j] - m);
  l = block_reduce(l, red, false);
  const float inv = l > 0.f ? 1.f / l : 0.f;
  for (int j = threadIdx.x; j < a.Sk; j += kThreads) x[j] = m == -INFINITY ? 0.f : expf(x[j] - m) * inv;
  if (threadIdx.x == 0) a.lse[row] = l > 0.f ? m + logf(l) : -INFINITY;
}

template <typename T>
__global__ void naive_pv(AttnArgs a, const float* probs) {
  const int s = blockIdx.x, bh = blockIdx.y, b = bh / a.H, h = bh % a.H, hk = h / (a.H / a.Hk);
  if (s >= seq_q(a, b)) return;  // past this sequence's queries: no O row
  const float* p = probs + (int64_t(bh) * a.S + s) * a.Sk;
  const KeyRange kr = keys_of(a, b, s);
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    float acc = 0.f;
    for (int64_t j = kr.begin; j < kr.end; ++j) acc += p[j] * T::load(T::get(a.v, k_at(a, b, j, hk) + d));
    a.o[q_at(a, b, s, h) + d] = T::store(acc * a.v_descale);
  }
}

class NaiveExecution : public GpuExecution {
 public:
  NaiveExecution(const Problem& p, const HostInputs& in, const GateContext& ctx)
      : GpuExecution(p, in, ctx, 0), scores_(size_t(p.B * p.H * p.S) * size_t(p.Sk) * sizeof(float)) {}

 protected:
  void launch() override {
    with_any_dtype(p_.dtype, [&](auto t) {
      using T = decltype(t);
      const dim3 g1((args_.Sk + kThreads - 1) / kThreads, args_.S, args_.B * args_.H);
      naive_scores<T><<<g1, kThreads, 0, stream_>>>(args_, scores_.as<float>());
      FA_GPU_CHECK_LAUNCH("naive_scores");
      naive_softmax<<<unsigned(args_.B * args_.H * args_.S), kThreads, 0, stream_>>>(args_, scores_.as<float>());
      FA_GPU_CHECK_LAUNCH("naive_softmax");
      const dim3 g3(args_.S, args_.B * args_.H);
      naive_pv<T><<<g3, args_.D <= 128 ? 128 : 256, 0, stream_>>>(args_, scores_.as<float>());
      FA_GPU_CHECK_LAUNCH("naive_pv");
    });
  }

 private:
  DeviceBuffer scores_;
};

std::optional<std::string> naive_limits(const Problem& p, int, const GateContext&) {
  if (p.S > 65535) return std::string("S > 65535 exceeds the score grid");
  return std::nullopt;
}

Capabilities naive_caps() {
  Capabilities c = gpu_caps();
  c.dtypes = gpu_dtypes(Fp8Formats::all);
  c.serving = ServingSet::every();
  return c;
}

PathRow naive_row(const DeviceFacts&) {
  PathRow r{"naive", "gpu", "3-pass GPU oracle: QK^T to fp32 scores, softmax, PV",
            "any Sk; S <= 65535; FP8: P fp32, judged as bf16; scores (B*H*S*Sk*4 bytes) must fit",
            false, nullptr,
            [](const Problem& p, const HostInputs& in, int, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<NaiveExecution>(p, in, ctx);
            }};
  r.auto_rank = 20;  // scores go through memory: chosen only where no tiled kernel applies
  r.fp8_p = DType::bf16;  // P stays fp32: the finer of the two declarations
  r.declare(naive_caps(), naive_limits);
  return r;
}
FA_REGISTER_PATH(naive_row);

}  // namespace
}  // namespace fa::gpu
