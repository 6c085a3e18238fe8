// decode: S == 1 (one new query token per (batch, head)). One 128-thread block per (key chunk,
// kv head, batch) serves all H/Hk query heads of its kv group, so K and V are read once however
// large the GQA ratio (up to 16). Per 128-key tile: each thread scores one key against every
// head of the group (16-byte K loads), the tile's softmax update runs per head, then V is staged
// through shared memory in 32-key slices and each thread accumulates its output dims for every
// head. Chunks are sized so the grid fills the GPU; with more than one chunk the blocks write
// fp32 partials and the split-K combine kernel folds them (flash-decoding).
#include <fmt/format.h>

#include "kernels/gpu_execution.hpp"
#include "kernels/gpu_paths.hpp"
#include "kernels/launchers.hpp"

namespace fa::gpu {
namespace {

constexpr int kThreads = 128, kTile = 128, kVSlice = 32, kRMax = 16;

template <typename T>
__device__ inline void unpack2(uint32_t w, float* x) {
  x[0] = T::load(uint16_t(w & 0xffffu));
  x[1] = T::load(uint16_t(w >> 16));
}

template <typename T>
__device__ inline void unpack8(const uint4& raw, float* x) {
  unpack2<T>(raw.x, x);
  unpack2<T>(raw.y, x + 2);
  unpack2<T>(raw.z, x + 4);
  unpack2<T>(raw.w, x + 6);
}

template <typename T, int DMAX>
__global__ void __launch_bounds__(kThreads) decode_fwd(AttnArgs a, int chunk_keys) {
  constexpr int SLOTS = (DMAX + kThreads - 1) / kThreads;
  __shared__ float qs[kRMax][DMAX];
  __shared__ float ps[kRMax][kTile];
  __shared__ uint16_t vs[kVSlice][DMAX];
  __shared__ float m_s[kRMax], l_s[kRMax], alpha_s[kRMax];
  const int c = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const int R = a.H / a.Hk, D = a.D;
  const bool vec = (D % 8) == 0;  // rows are then 16-byte aligned (strides are multiples of D)

  for (int idx = tid; idx < R * D; idx += kThreads) {
    const int r = idx / D, d = idx % D;
    qs[r][d] = T::load(a.q[b * a.q_sb + (hk * R + r) * a.q_sh + d]) * a.scale_log2;
  }
  if (tid < R) m_s[tid] = -INFINITY, l_s[tid] = 0.f;
  float acc[kRMax][SLOTS];
#pragma unroll
  for (int r = 0; r < kRMax; ++r)
#pragma unroll
    for (int sl = 0; sl < SLOTS; ++sl) acc[r][sl] = 0.f;
  const int64_t k0 = int64_t(c) * chunk_keys;
  const int64_t k1 = k0 + chunk_keys < a.Sk ? k0 + chunk_keys : a.Sk;  // S == 1 sees every key
  const uint16_t* kbase = a.k + b * a.k_sb + hk * a.k_sh;
  const uint16_t* vbase = a.v + b * a.k_sb + hk * a.k_sh;
  __syncthreads();

  for (int64_t t0 = k0; t0 < k1; t0 += kTile) {
    const int64_t j = t0 + tid;
    float sc[kRMax];
#pragma unroll
    for (int r = 0; r < kRMax; ++r) sc[r] = 0.f;
    if (j < k1) {
      const uint16_t* krow = kbase + j * a.k_ss;
      if (vec) {
        for (int d0 = 0; d0 < D; d0 += 8) {
          float x[8];
          unpack8<T>(*reinterpret_cast<const uint4*>(krow + d0), x);
#pragma unroll
          for (int r = 0; r < kRMax; ++r)
            if (r < R)
#pragma unroll
              for (int e = 0; e < 8; ++e) sc[r] += qs[r][d0 + e] * x[e];
        }
      } else {
        for (int d = 0; d < D; ++d) {
          const float x = T::load(krow[d]);
#pragma unroll
          for (int r = 0; r < kRMax; ++r)
            if (r < R) sc[r] += qs[r][d] * x;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRMax; ++r)
      if (r < R) ps[r][tid] = j < k1 ? sc[r] : -INFINITY;
    __syncthreads();

    // Softmax update per head: 32-lane groups (a warp on NVIDIA, half a wave64 on CDNA).
    const int grp = tid / 32, lane = tid % 32;
    for (int r = grp; r < R; r += kThreads / 32) {
      float mx = -INFINITY;
      for (int i = lane; i < kTile; i += 32) mx = fmaxf(mx, ps[r][i]);
#pragma unroll
      for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, shfl_xor(mx, off, 32));
      const float m_old = m_s[r], m_new = fmaxf(m_old, mx);
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      float sum = 0.f;
      for (int i = lane; i < kTile; i += 32) {
        const float p = fast_exp2(ps[r][i] - m_use);
        ps[r][i] = p;
        sum += p;
      }
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sum += shfl_xor(sum, off, 32);
      if (lane == 0) {
        const float al = fast_exp2(m_old - m_use);
        alpha_s[r] = al;
        l_s[r] = l_s[r] * al + sum;
        m_s[r] = m_new;
      }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRMax; ++r)
      if (r < R)
#pragma unroll
        for (int sl = 0; sl < SLOTS; ++sl) acc[r][sl] *= alpha_s[r];

    for (int sub = 0; sub < kTile && t0 + sub < k1; sub += kVSlice) {
      const int64_t v0 = t0 + sub;
      if (vec) {
        for (int idx = tid; idx < kVSlice * D / 8; idx += kThreads) {
          const int jj = idx / (D / 8), d0 = (idx % (D / 8)) * 8;
          const uint4 z = {0u, 0u, 0u, 0u};
          *reinterpret_cast<uint4*>(&vs[jj][d0]) =
              v0 + jj < k1 ? *reinterpret_cast<const uint4*>(vbase + (v0 + jj) * a.k_ss + d0) : z;
        }
      } else {
        for (int idx = tid; idx < kVSlice * D; idx += kThreads) {
          const int jj = idx / D, d = idx % D;
          vs[jj][d] = v0 + jj < k1 ? vbase[(v0 + jj) * a.k_ss + d] : uint16_t(0);
        }
      }
      __syncthreads();
#pragma unroll
      for (int sl = 0; sl < SLOTS; ++sl) {
        const int d = tid + sl * kThreads;
        if (d >= D) break;
        for (int jj = 0; jj < kVSlice; ++jj) {
          const float v = T::load(vs[jj][d]);
#pragma unroll
          for (int r = 0; r < kRMax; ++r)
            if (r < R) acc[r][sl] += ps[r][sub + jj] * v;
        }
      }
      __syncthreads();
    }
  }

#pragma unroll
  for (int r = 0; r < kRMax; ++r) {
    if (r >= R) break;
    const int h = hk * R + r;
    const float l = l_s[r];
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const float lse = l > 0.f ? (m_s[r] + log2f(l)) * kLn2 : -INFINITY;
#pragma unroll
    for (int sl = 0; sl < SLOTS; ++sl) {
      const int d = tid + sl * kThreads;
      if (d >= D) break;
      if (a.G > 1) a.o_part[partial_row(a, b, h, c, 0) * D + d] = acc[r][sl] * inv;
      else a.o[b * a.q_sb + h * a.q_sh + d] = T::store(acc[r][sl] * inv);
    }
    if (tid == 0) {
      if (a.G > 1) a.lse_part[partial_row(a, b, h, c, 0)] = lse;
      else a.lse[int64_t(b) * a.H + h] = lse;
    }
  }
}

class DecodeExecution : public GpuExecution {
 public:
  DecodeExecution(const Problem& p, const HostInputs& in, const GateContext& ctx, int chunk_keys, int chunks)
      : GpuExecution(p, in, ctx, chunks), chunk_keys_(chunk_keys), chunks_(chunks) {
    args_.G = chunks > 1 ? chunks : 0;
  }

 protected:
  void launch() override {
    launch_decode(args_, p_.dtype, chunk_keys_, chunks_, stream_);
    if (chunks_ > 1) launch_combine(args_, p_.dtype, stream_);
  }
  int chunk_keys_, chunks_;
};

}  // namespace

void decode_chunking(const Problem& p, int units, int* chunk_keys, int* chunks) {
  // Four blocks per SM/CU keep enough K/V loads in flight; a chunk holds whole 128-key tiles.
  const int64_t want = std::max<int64_t>(1, (4 * int64_t(std::max(units, 1)) + p.B * p.Hk - 1) / (p.B * p.Hk));
  const int64_t tiles = (p.Sk + kTile - 1) / kTile;
  const int64_t per = (tiles + std::min(want, tiles) - 1) / std::min(want, tiles);
  *chunk_keys = int(per * kTile);
  *chunks = int((p.Sk + *chunk_keys - 1) / *chunk_keys);
}

void launch_decode(const AttnArgs& a, DType t, int chunk_keys, int chunks, Stream st) {
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    const dim3 grid(chunks, a.Hk, a.B);
    if (a.D <= 64) decode_fwd<T, 64><<<grid, kThreads, 0, st>>>(a, chunk_keys);
    else if (a.D <= 128) decode_fwd<T, 128><<<grid, kThreads, 0, st>>>(a, chunk_keys);
    else decode_fwd<T, 256><<<grid, kThreads, 0, st>>>(a, chunk_keys);
    FA_GPU_CHECK_LAUNCH("decode_fwd");
  });
}

std::optional<std::string> decode_gate(const Problem& p, int G, const GateContext& ctx) {
  if (auto no = common_gpu_gate(p, ctx)) return no;
  if (p.S != 1) return fmt::format("decode needs S == 1 (got {})", p.S);
  if (G > 1) return std::string("decode splits Sk over blocks itself (G must be 0)");
  if (p.group_size() > kRMax) return fmt::format("GQA group H/Hk = {} exceeds {}", p.group_size(), kRMax);
  if (p.Hk > 65535 || p.B > 65535) return std::string("Hk or B exceeds the grid");
  return std::nullopt;
}

std::optional<std::string> decode_supports(const Problem& p, int G, const GateContext& ctx) {
  if (p.kv_cache) return std::string("kv_cache problems run on the kv-cache path");
  return decode_gate(p, G, ctx);
}

std::unique_ptr<Execution> decode_prepare(const Problem& p, const HostInputs& in, int, const GateContext& ctx) {
  int ck = 0, n = 0;
  decode_chunking(p, ctx.device.units, &ck, &n);
  return std::make_unique<DecodeExecution>(p, in, ctx, ck, n);
}

}  // namespace fa::gpu
