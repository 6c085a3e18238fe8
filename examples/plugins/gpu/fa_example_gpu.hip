// example-gpu: an fa-bench plugin with its own HIP-dialect kernel, built by nvcc (as CUDA) or by
// ROCm's clang (as HIP) against the installed package. Scalar and simple on purpose: one block of
// 128 threads a query row walks the visible keys in chunks of 128 (a thread a key for the scores,
// a thread a head dimension for PV: D <= 256), with the online softmax; fp32 math, O rounded once.
//   cmake -S examples/plugins/gpu -B build/example-gpu -DCMAKE_PREFIX_PATH=<prefix> [-DCMAKE_CUDA_ARCHITECTURES=90a]
//   fa-bench sweep sweeps/edge.csv --plugin build/example-gpu/libfa_example_gpu.so --paths example-gpu,mma
#include <fa_bench/plugin.h>

#include <cmath>
#include <cstdio>

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define GPU(name) hip##name
using StreamT = hipStream_t;
#else
#include <cuda_runtime.h>
#define GPU(name) cuda##name
using StreamT = cudaStream_t;
#endif

namespace {

constexpr int kBlock = 128;  // keys a chunk, threads a block; each thread owns dims tid and tid + 128

__device__ float load(const void* p, int64_t i, int dtype) {
  const uint16_t b = static_cast<const uint16_t*>(p)[i];
  if (dtype == FA_DTYPE_BF16) return __uint_as_float(uint32_t(b) << 16);
  const uint32_t sign = uint32_t(b & 0x8000u) << 16, e = (b >> 10) & 0x1fu, m = b & 0x3ffu;  // fp16
  if (e == 0) return sign ? -float(m) * (1.0f / 16777216.0f) : float(m) * (1.0f / 16777216.0f);
  return __uint_as_float(e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13)));
}

__device__ void store(void* p, int64_t i, int dtype, float f) {  // round to nearest even
  const uint32_t x = __float_as_uint(f);
  uint16_t out;
  if (dtype == FA_DTYPE_BF16) {
    out = (x & 0x7fffffffu) > 0x7f800000u ? uint16_t((x >> 16) | 0x40u) : uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  } else {
    const uint32_t sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) out = uint16_t(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
    else if (absx >= 0x477ff000u) out = uint16_t(sign | 0x7c00u);
    else if (absx < 0x38800000u) out = uint16_t(sign | uint32_t(rintf(__uint_as_float(absx) * 16777216.0f)));
    else {
      uint32_t h = (((absx >> 23) - 112u) << 10) | ((absx & 0x7fffffu) >> 13);
      const uint32_t rem = absx & 0x1fffu;
      if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
      out = uint16_t(sign | h);
    }
  }
  static_cast<uint16_t*>(p)[i] = out;
}

__device__ int64_t at(const fa_strides& s, int64_t b, int64_t t, int64_t h) { return b * s.batch + t * s.seq + h * s.head; }

// kv_cache: the S new tokens into the cache at [kv_cache_offset, Sk).
__global__ void append_kernel(fa_problem p, const void* k_new, const void* v_new, void* k, void* v) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, n = p.B * p.S * p.Hk * p.D;
  if (i >= n) return;
  const int64_t x = i % p.D, h = (i / p.D) % p.Hk, j = (i / (p.D * p.Hk)) % p.S, b = i / (p.D * p.Hk * p.S);
  const int64_t from = at(p.kv_new, b, j, h) + x;
  store(k, at(p.k, b, p.kv_cache_offset + j, h) + x, p.dtype, load(k_new, from, p.dtype));
  store(v, at(p.v, b, p.kv_cache_offset + j, h) + x, p.dtype, load(v_new, from, p.dtype));
}

__global__ void __launch_bounds__(kBlock) attention_kernel(fa_problem p, const void* q, const void* k, const void* v,
                                                           void* o, float* lse) {
  __shared__ float q_s[256], p_s[kBlock];
  const int tid = threadIdx.x;
  const int64_t row = blockIdx.x, s = row % p.S, h = (row / p.S) % p.H, b = row / (p.S * p.H), kh = h / (p.H / p.Hk);
  for (int x = tid; x < p.D; x += kBlock) q_s[x] = load(q, at(p.q, b, s, h) + x, p.dtype);
  __syncthreads();
  const int64_t visible = p.causal ? s + (p.Sk - p.S) + 1 : p.Sk;  // bottom-right causal
  const int64_t n = visible < 0 ? 0 : visible > p.Sk ? p.Sk : visible;
  const int64_t o0 = at(p.o, b, s, h);
  float m = -INFINITY, l = 0.0f, acc0 = 0.0f, acc1 = 0.0f;
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t j = j0 + tid;
    float score = -INFINITY;
    if (j < n) {
      const int64_t k0 = at(p.k, b, j, kh);
      float dot = 0.0f;
      for (int x = 0; x < p.D; ++x) dot += q_s[x] * load(k, k0 + x, p.dtype);
      score = dot * float(p.scale);
    }
    p_s[tid] = score;
    __syncthreads();
    float chunk_max = -INFINITY;
    for (int t = 0; t < kBlock; ++t) chunk_max = fmaxf(chunk_max, p_s[t]);
    const float m_new = fmaxf(m, chunk_max), alpha = m == -INFINITY ? 0.0f : expf(m - m_new);
    __syncthreads();
    p_s[tid] = j < n ? expf(score - m_new) : 0.0f;
    __syncthreads();
    const int keys = int(n - j0 < kBlock ? n - j0 : kBlock);
    float sum = 0.0f, pv0 = 0.0f, pv1 = 0.0f;
    for (int t = 0; t < keys; ++t) {
      const int64_t v0 = at(p.v, b, j0 + t, kh);
      sum += p_s[t];
      if (tid < p.D) pv0 += p_s[t] * load(v, v0 + tid, p.dtype);
      if (tid + kBlock < p.D) pv1 += p_s[t] * load(v, v0 + tid + kBlock, p.dtype);
    }
    l = l * alpha + sum;
    acc0 = acc0 * alpha + pv0;
    acc1 = acc1 * alpha + pv1;
    m = m_new;
    __syncthreads();
  }
  const float inv = n > 0 ? 1.0f / l : 0.0f;  // a row that sees no key: O = 0, LSE = -inf
  if (tid < p.D) store(o, o0 + tid, p.dtype, acc0 * inv);
  if (tid + kBlock < p.D) store(o, o0 + tid + kBlock, p.dtype, acc1 * inv);
  if (tid == 0) lse[(b * p.H + h) * p.S + s] = n > 0 ? m + logf(l) : -INFINITY;
}

const char* example_supports(const fa_problem* p, const fa_device* d) {
  if (!d->gpu) return "needs a GPU";
  if (p->dtype == FA_DTYPE_FP32) return "fp16 and bf16 only";
  if (p->D > 2 * kBlock) return "D > 256: a block of 128 threads holds two head dimensions a thread";
  return nullptr;
}

int32_t example_run(void*, const fa_problem* p, const fa_buffers* buf, void* stream, char* message, uint32_t size) {
  const StreamT st = static_cast<StreamT>(stream);
  if (p->kv_cache) {
    const int64_t n = p->B * p->S * p->Hk * p->D;
    append_kernel<<<unsigned((n + 255) / 256), 256, 0, st>>>(*p, buf->k_new, buf->v_new, buf->k, buf->v);
  }
  attention_kernel<<<unsigned(p->B * p->H * p->S), kBlock, 0, st>>>(*p, buf->q, buf->k, buf->v, buf->o, buf->lse);
  const auto err = GPU(GetLastError)();
  if (err != GPU(Success)) {
    snprintf(message, size, "launch failed: %s", GPU(GetErrorString)(err));
    return FA_STATUS_ERROR;
  }
  return FA_STATUS_OK;
}

const fa_plugin_path example_paths[] = {{
    sizeof(fa_plugin_path), 0, "example-gpu", "example plugin: scalar HIP-dialect kernel, a block a query row",
    FA_PLUGIN_GPU, 0, example_supports, nullptr, nullptr, example_run,
}};

const fa_plugin example_plugin = {sizeof(fa_plugin), FA_PLUGIN_ABI_VERSION, "1.0.0", 1, 0, example_paths};

}  // namespace

extern "C" FA_PLUGIN_EXPORT const fa_plugin* fa_bench_plugin(uint32_t) { return &example_plugin; }
