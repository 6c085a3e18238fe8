// decode: S == 1 (one new query token per (batch, head)). One 128-thread block per (key chunk,
// kv head, batch) serves all H/Hk query heads of its kv group, so K and V are read once however
// large the GQA ratio (up to 16). Keys go in 64-key tiles through a two-stage shared-memory
// pipeline: while a tile is scored (two threads a key, conflict-free padded K rows), its softmax
// update runs per head and its PV product accumulates (each thread owns output dims for every
// head), the next tile's K and V are already on their way (copy16_async). Chunks are sized so the
// grid fills the GPU; with more than one chunk the blocks write fp32 partials and the split-K
// combine kernel folds them (flash-decoding).
// Measured on H100, (1,32,8,1,131072,128) bf16, against a 2950 GB/s device copy: one K load in
// flight a thread and 32-key V slices: 949 GB/s (32%); whole-row K loads into registers and
// whole-tile V staging, no pipeline: 1575 GB/s (53%), 121 registers, 4 blocks an SM; this
// pipeline with runtime D: 2066 GB/s (70%), 64 registers, 3 blocks an SM (shared memory).
#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "harness/path_registry.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {
namespace {

constexpr int kThreads = 128, kTile = kDecodeTile.block_n, kRMax = 16, kGroups = kThreads / 32;
constexpr int kPad = 16;  // K row padding (elements): rows 8 banks apart, so 16-byte reads of
                          // 4 keys x 2 halves by a quarter-warp hit 32 distinct banks

template <int DMAX>
struct DecodeSmem {  // dynamic shared memory layout, in bytes: 2 stages of (K, V), then q and p
  static constexpr int k_row = DMAX + kPad;
  static constexpr int k_tile = kTile * k_row * 2, v_tile = kTile * DMAX * 2;
  static constexpr int stage = k_tile + v_tile;
  static constexpr int bytes(int R) { return 2 * stage + R * DMAX * 4 + R * kTile * 4; }
};

template <typename T>
__device__ inline void unpack2(uint32_t w, float* x) {
  x[0] = T::load(uint16_t(w & 0xffffu));
  x[1] = T::load(uint16_t(w >> 16));
}

// K and V rows [t0, t0 + kTile) into one pipeline stage; rows past k1 are zero (their p is 0).
template <int DMAX, bool EXACT>
__device__ inline void fetch_tile(const uint16_t* kbase, const uint16_t* vbase, int64_t ss, int64_t t0, int64_t k1,
                                  int D, bool vec, uint16_t* ks, uint16_t* vs) {
  using L = DecodeSmem<DMAX>;
  if (vec) {
    const int per_row = EXACT ? DMAX / 8 : D / 8;
    for (int idx = threadIdx.x; idx < kTile * per_row; idx += kThreads) {
      const int jj = idx / per_row, c = (idx % per_row) * 8;
      const bool in = t0 + jj < k1;
      const int64_t src = (in ? t0 + jj : 0) * ss + c;
      copy16_async(ks + jj * L::k_row + c, kbase + src, in);
      copy16_async(vs + jj * DMAX + c, vbase + src, in);
    }
  } else {
    for (int idx = threadIdx.x; idx < kTile * D; idx += kThreads) {
      const int jj = idx / D, d = idx % D;
      const bool in = t0 + jj < k1;
      ks[jj * L::k_row + d] = in ? kbase[(t0 + jj) * ss + d] : uint16_t(0);
      vs[jj * DMAX + d] = in ? vbase[(t0 + jj) * ss + d] : uint16_t(0);
    }
  }
  copy_async_commit();
}

// EXACT: D == DMAX, so every trip count and index is a compile-time constant (the tile fetch's
// divisions become shifts).
template <typename T, int DMAX, bool EXACT>
__global__ void __launch_bounds__(kThreads) decode_fwd(AttnArgs a, int chunk_keys) {
  using L = DecodeSmem<DMAX>;
  constexpr int SLOTS = (DMAX + kThreads - 1) / kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  const int c = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const int R = a.H / a.Hk, D = EXACT ? DMAX : a.D;
  float* qs = reinterpret_cast<float*>(smem + 2 * L::stage);                 // [R][DMAX]
  float* ps = reinterpret_cast<float*>(smem + 2 * L::stage + R * DMAX * 4);  // [R][kTile]
  __shared__ float m_s[kRMax], l_s[kRMax], alpha_s[kRMax];
  const bool vec = EXACT || (D % 8) == 0;  // rows 16-byte aligned (strides are multiples of D)
  const int64_t k0 = int64_t(c) * chunk_keys;
  const int64_t k1 = k0 + chunk_keys < a.Sk ? k0 + chunk_keys : a.Sk;  // S == 1 sees every key
  const uint16_t* kbase = a.k + b * a.k_sb + hk * a.k_sh;
  const uint16_t* vbase = a.v + b * a.k_sb + hk * a.k_sh;
  auto stage_k = [&](int st) { return reinterpret_cast<uint16_t*>(smem + st * L::stage); };
  auto stage_v = [&](int st) { return reinterpret_cast<uint16_t*>(smem + st * L::stage + L::k_tile); };

  fetch_tile<DMAX, EXACT>(kbase, vbase, a.k_ss, k0, k1, D, vec, stage_k(0), stage_v(0));
  for (int idx = tid; idx < R * DMAX; idx += kThreads) {
    const int r = idx / DMAX, d = idx % DMAX;
    qs[r * DMAX + d] = d < D ? T::load(a.q[b * a.q_sb + (hk * R + r) * a.q_sh + d]) * a.scale_log2 : 0.f;
  }
  const int grp = tid / 32, lane = tid % 32;
  float m_run[kRMax / kGroups], l_run[kRMax / kGroups];
#pragma unroll
  for (int k = 0; k < kRMax / kGroups; ++k) m_run[k] = -INFINITY, l_run[k] = 0.f;
  float acc[kRMax][SLOTS];
#pragma unroll
  for (int r = 0; r < kRMax; ++r)
#pragma unroll
    for (int sl = 0; sl < SLOTS; ++sl) acc[r][sl] = 0.f;

  int st = 0;
  for (int64_t t0 = k0; t0 < k1; t0 += kTile, st ^= 1) {
    if (t0 + kTile < k1) {  // next tile in flight while this one computes
      fetch_tile<DMAX, EXACT>(kbase, vbase, a.k_ss, t0 + kTile, k1, D, vec, stage_k(st ^ 1), stage_v(st ^ 1));
      copy_async_wait<1>();
    } else {
      copy_async_wait<0>();
    }
    __syncthreads();
    const uint16_t* ks = stage_k(st);
    const uint16_t* vs = stage_v(st);

    // Scores: threads 2k and 2k+1 split key k's dims by alternate 8-element chunks.
    const int kk = tid / 2, half = tid % 2;
    float sc[kRMax];
#pragma unroll
    for (int r = 0; r < kRMax; ++r) sc[r] = 0.f;
    const uint16_t* krow = ks + kk * L::k_row;
    if (vec) {
#pragma unroll 4
      for (int d0 = half * 8; d0 < D; d0 += 16) {
        const uint4 raw = *reinterpret_cast<const uint4*>(krow + d0);
        float x[8];
        unpack2<T>(raw.x, x), unpack2<T>(raw.y, x + 2), unpack2<T>(raw.z, x + 4), unpack2<T>(raw.w, x + 6);
#pragma unroll
        for (int r = 0; r < kRMax; ++r) {
          if (r >= R) break;
          const float4 qa = *reinterpret_cast<const float4*>(qs + r * DMAX + d0);
          const float4 qb = *reinterpret_cast<const float4*>(qs + r * DMAX + d0 + 4);
          sc[r] += qa.x * x[0] + qa.y * x[1] + qa.z * x[2] + qa.w * x[3] + qb.x * x[4] + qb.y * x[5] +
                   qb.z * x[6] + qb.w * x[7];
        }
      }
    } else {
      for (int d = half; d < D; d += 2) {
        const float x = T::load(krow[d]);
#pragma unroll
        for (int r = 0; r < kRMax; ++r)
          if (r < R) sc[r] += qs[r * DMAX + d] * x;
      }
    }
#pragma unroll
    for (int r = 0; r < kRMax; ++r) {
      if (r >= R) break;
      const float full = sc[r] + shfl_xor(sc[r], 1, 2);
      if (half == 0) ps[r * kTile + kk] = t0 + kk < k1 ? full : -INFINITY;
    }
    __syncthreads();

    // Softmax update per head: 32-lane group g (a warp on NVIDIA, half a wave64 on CDNA) always
    // owns heads g, g + 4, ...; their running max and sum live in the group's registers (every
    // lane holds the same values), so no lane reads a value another lane of its group rewrites.
#pragma unroll
    for (int k = 0; k < kRMax / kGroups; ++k) {
      const int r = grp + kGroups * k;
      if (r >= R) continue;  // not break: a full unroll keeps m_run/l_run in registers
      float mx = -INFINITY;
      for (int i = lane; i < kTile; i += 32) mx = fmaxf(mx, ps[r * kTile + i]);
#pragma unroll
      for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, shfl_xor(mx, off, 32));
      const float m_new = fmaxf(m_run[k], mx);
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      float sum = 0.f;
      for (int i = lane; i < kTile; i += 32) {
        const float p = fast_exp2(ps[r * kTile + i] - m_use);
        ps[r * kTile + i] = p;
        sum += p;
      }
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sum += shfl_xor(sum, off, 32);
      const float al = fast_exp2(m_run[k] - m_use);
      l_run[k] = l_run[k] * al + sum;
      m_run[k] = m_new;
      if (lane == 0) alpha_s[r] = al;
    }
    __syncthreads();

#pragma unroll
    for (int sl = 0; sl < SLOTS; ++sl) {
      const int d = tid + sl * kThreads;
      if (d >= D) break;
#pragma unroll
      for (int r = 0; r < kRMax; ++r)
        if (r < R) acc[r][sl] *= alpha_s[r];
#pragma unroll 4
      for (int jj = 0; jj < kTile; jj += 4) {
        const float v0 = T::load(vs[(jj + 0) * DMAX + d]), v1 = T::load(vs[(jj + 1) * DMAX + d]);
        const float v2 = T::load(vs[(jj + 2) * DMAX + d]), v3 = T::load(vs[(jj + 3) * DMAX + d]);
#pragma unroll
        for (int r = 0; r < kRMax; ++r) {
          if (r >= R) break;
          const float4 p4 = *reinterpret_cast<const float4*>(ps + r * kTile + jj);
          acc[r][sl] += p4.x * v0 + p4.y * v1 + p4.z * v2 + p4.w * v3;
        }
      }
    }
    __syncthreads();  // the stage just read is the one the next iteration refills
  }
#pragma unroll
  for (int k = 0; k < kRMax / kGroups; ++k) {
    const int r = grp + kGroups * k;
    if (r < R && lane == 0) m_s[r] = m_run[k], l_s[r] = l_run[k];
  }
  __syncthreads();

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
      else a.lse[lse_row(a, b, h, 0)] = lse;  // S == 1
    }
  }
}

// Opts the kernel into its shared memory (above 48 KiB), once per instantiation and thread: the
// attribute is per device, and under --devices each worker thread keeps one device.
template <typename T, int DMAX>
void opt_in_smem() {
  static thread_local const bool attr_set = [] {
    FA_GPU_CHECK(set_max_dynamic_smem(decode_fwd<T, DMAX, true>, DecodeSmem<DMAX>::bytes(kRMax)));
    FA_GPU_CHECK(set_max_dynamic_smem(decode_fwd<T, DMAX, false>, DecodeSmem<DMAX>::bytes(kRMax)));
    return true;
  }();
  (void)attr_set;
}

// How many blocks fit on one SM for a group of R heads.
template <typename T, int DMAX>
int resident_blocks(int R) {
  opt_in_smem<T, DMAX>();
  int n = 0;
  FA_GPU_CHECK(max_active_blocks(&n, decode_fwd<T, DMAX, false>, kThreads, size_t(DecodeSmem<DMAX>::bytes(R))));
  return n;
}

template <typename F>
void with_decode_kernel(DType t, int D, F&& f) {
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    if (D <= 64) f(tr, std::integral_constant<int, 64>{});
    else if (D <= 128) f(tr, std::integral_constant<int, 128>{});
    else f(tr, std::integral_constant<int, 256>{});
    (void)sizeof(T);
  });
}

// S == 1 decode over `chunks` key chunks; chunks > 1 writes partials (a.G == chunks).
void launch_decode(const AttnArgs& a, DType t, int chunk_keys, int chunks, Stream st) {
  with_decode_kernel(t, a.D, [&](auto tr, auto dmax) {
    using T = decltype(tr);
    constexpr int DMAX = decltype(dmax)::value;
    const int R = a.H / a.Hk;
    opt_in_smem<T, DMAX>();
    const dim3 grid(chunks, a.Hk, a.B);
    const int smem = DecodeSmem<DMAX>::bytes(R);
    if (a.D == DMAX) decode_fwd<T, DMAX, true><<<grid, kThreads, smem, st>>>(a, chunk_keys);
    else decode_fwd<T, DMAX, false><<<grid, kThreads, smem, st>>>(a, chunk_keys);
    FA_GPU_CHECK_LAUNCH("decode_fwd");
  });
}

}  // namespace

DecodeChunks decode_chunks(const Problem& p, int units) {
  // One full wave: as many blocks as fit on the machine at once (occupancy of this kernel), each
  // a run of whole 64-key tiles. Two waves would leave the second mostly idle.
  int resident = 1;
  with_decode_kernel(p.dtype, int(p.D), [&](auto tr, auto dmax) {
    resident = resident_blocks<decltype(tr), decltype(dmax)::value>(int(p.group_size()));
  });
  const int64_t slots = int64_t(std::max(resident, 1)) * std::max(units, 1);
  const int64_t tiles = (p.Sk + kTile - 1) / kTile;
  const int64_t want = std::clamp<int64_t>(slots / (p.B * p.Hk), 1, tiles);
  const int keys = int((tiles + want - 1) / want * kTile);
  return {keys, int((p.Sk + keys - 1) / keys)};
}

DecodeExecution::DecodeExecution(const Problem& p, const HostInputs& in, const GateContext& ctx, DecodeChunks c)
    : GpuExecution(p, in, ctx, c.count), chunks_(c) {
  args_.G = c.count > 1 ? c.count : 0;
}

void DecodeExecution::launch() {
  before_decode();
  launch_decode(args_, p_.dtype, chunks_.keys, chunks_.count, stream_);
  if (chunks_.count > 1) launch_combine(args_, p_.dtype, stream_);
}

Capabilities decode_caps() { return gpu_caps(); }  // G = 0: it splits Sk over blocks itself

std::optional<std::string> decode_limits(const Problem& p, int, const GateContext&) {
  if (p.S != 1) return fmt::format("decode needs S == 1 (got {})", p.S);
  if (p.group_size() > kRMax) return fmt::format("GQA group H/Hk = {} exceeds {}", p.group_size(), kRMax);
  if (p.Hk > 65535 || p.B > 65535) return std::string("Hk or B exceeds the grid");
  return std::nullopt;
}

std::string decode_limits_doc() { return fmt::format("S == 1; H/Hk <= {}; any Sk; own key chunks", kRMax); }

namespace {

PathRow decode_row(const DeviceFacts&) {
  PathRow r{"decode", "gpu", "S == 1: a block per (batch, kv head, key chunk), split over Sk + combine",
            decode_limits_doc(), false, nullptr,
            [](const Problem& p, const HostInputs& in, int, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<DecodeExecution>(p, in, ctx);
            }};
  r.auto_rank = 50;  // for S == 1 it reads K/V once per GQA group, where tiled reads them per head
  r.tiles = kDecodeTile;
  r.own_split_rule = kDecodeSplitRule;
  r.declare(decode_caps(), decode_limits);
  return r;
}
FA_REGISTER_PATH(decode_row);

}  // namespace
}  // namespace fa::gpu
