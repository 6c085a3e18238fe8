// test-rowwise (test only, FABENCH_TEST_PATHS=1): one block a query row, keys in tiles of 128, one
// score a thread, an exact online softmax in fp32 (block-wide max and sum), each thread owning
// output dims tid and tid + 128. It exists to show that a GPU path is its kernel file and one line
// of CMakeLists.txt's gpu_paths list: this file registers its own row, and paths/builtin.cpp shows
// rows named test-* only with FABENCH_TEST_PATHS=1. Any D <= 256, any Sk, causal, GQA; G = 0.
// Run: FABENCH_TEST_PATHS=1 fa-bench sweep sweeps/edge.csv --paths test-rowwise
#include <fmt/format.h>

#include "harness/path_registry.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {
namespace {

constexpr int kThreads = 128;  // keys a tile, and half the largest D

// Max or sum over the block's threads (a power-of-two tree through shared memory).
__device__ float block_fold(float v, float* red, bool is_max) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) red[threadIdx.x] = is_max ? fmaxf(red[threadIdx.x], red[threadIdx.x + w])
                                                        : red[threadIdx.x] + red[threadIdx.x + w];
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();
  return r;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) rowwise_fwd(AttnArgs a) {
  __shared__ float q[2 * kThreads], p[kThreads], red[kThreads];
  const int s = blockIdx.x, h = blockIdx.y, b = blockIdx.z, hk = h / (a.H / a.Hk), tid = threadIdx.x;
  const uint16_t* qrow = a.q + b * a.q_sb + int64_t(s) * a.q_ss + h * a.q_sh;
  for (int d = tid; d < a.D; d += kThreads) q[d] = T::load(qrow[d]);
  __syncthreads();
  const int64_t vis = visible_keys(s, a.S, a.Sk, a.causal);
  const uint16_t* kg = a.k + b * a.k_sb + hk * a.k_sh;
  const uint16_t* vg = a.v + b * a.k_sb + hk * a.k_sh;
  float m = -INFINITY, l = 0.f, o[2] = {0.f, 0.f};
  for (int64_t t0 = 0; t0 < vis; t0 += kThreads) {
    const int64_t j = t0 + tid;
    float x = -INFINITY;  // this thread's score, log2 units
    if (j < vis) {
      x = 0.f;
      for (int d = 0; d < a.D; ++d) x += q[d] * T::load(kg[j * a.k_ss + d]);
      x *= a.scale_log2;
    }
    const float m_new = fmaxf(m, block_fold(x, red, true));  // finite: key t0 is visible
    const float alpha = exp2f(m - m_new);
    p[tid] = exp2f(x - m_new);
    l = l * alpha + block_fold(p[tid], red, false);  // the fold's barriers publish p
    const int n = vis - t0 < kThreads ? int(vis - t0) : kThreads;
    for (int i = 0; i < 2; ++i) {
      const int d = tid + i * kThreads;
      if (d >= a.D) break;
      float acc = o[i] * alpha;
      for (int jj = 0; jj < n; ++jj) acc += p[jj] * T::load(vg[(t0 + jj) * a.k_ss + d]);
      o[i] = acc;
    }
    m = m_new;
    __syncthreads();  // every thread is done with p before the next tile writes it
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;  // rows that see no key: O = 0, LSE = -inf
  uint16_t* orow = a.o + b * a.q_sb + int64_t(s) * a.q_ss + h * a.q_sh;
  for (int i = 0; i < 2; ++i) {
    const int d = tid + i * kThreads;
    if (d < a.D) orow[d] = T::store(o[i] * inv);
  }
  if (tid == 0) a.lse[lse_row(a, b, h, s)] = l > 0.f ? (m + log2f(l)) * kLn2 : -INFINITY;
}

class RowwiseExecution : public GpuExecution {
 public:
  RowwiseExecution(const Problem& p, const HostInputs& in, const GateContext& ctx) : GpuExecution(p, in, ctx, 0) {}

 protected:
  void launch() override {
    with_dtype(p_.dtype, [&](auto t) {
      using T = decltype(t);
      rowwise_fwd<T><<<dim3(args_.S, args_.H, args_.B), kThreads, 0, stream_>>>(args_);
      FA_GPU_CHECK_LAUNCH("rowwise_fwd");
    });
  }
};

std::optional<std::string> rowwise_limits(const Problem& p, int, const GateContext&) {
  if (p.H > 65535 || p.B > 65535) return std::string("H or B exceeds the grid");
  return std::nullopt;
}

PathRow rowwise_row(const DeviceFacts&) {
  PathRow r{"test-rowwise", "gpu", "test only: one block a query row, exact online softmax in fp32",
            "any Sk", false, nullptr,
            [](const Problem& p, const HostInputs& in, int, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<RowwiseExecution>(p, in, ctx);
            }};
  r.auto_rank = 0;  // never a candidate for auto
  r.declare(gpu_caps(), rowwise_limits);
  return r;
}
FA_REGISTER_PATH(rowwise_row);

}  // namespace
}  // namespace fa::gpu
