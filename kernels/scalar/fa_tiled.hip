// tiled: scalar FlashAttention-2 forward. One block per (64-row query tile, head, batch[, split]);
// TPR lanes share a query row, each holding D/TPR of its Q and of its accumulator in registers;
// K/V tiles of 32 keys stream through shared memory; online softmax (m, l, acc) in base 2; the
// score tile never leaves registers. Causal and window blocks visit only the key tiles their rows
// see. Serving problems (per-sequence lengths, thd, paged K/V, window, ALiBi, softcap) address rows
// and keys through AttnArgs' sequence view (kernels/device/device_common.hpp). FP8 inputs: a byte
// an element through the traits' get(), descales in scale_log2 and the epilogue, O in bf16.
// Specialised for D = 64, 80, 128 in 16-bit dtypes (4 lanes a row, 64-row tiles); D <= 256
// otherwise and for FP8 (8 lanes a row, 32-row tiles: at 64 rows the 512-thread block capped
// registers at 128 and spilled 404 B).
#include <fmt/format.h>

#include "kernels/runtime/gpu_execution.hpp"
#include "harness/path_registry.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {
namespace {

constexpr int kBN = kTiledTile.block_n, kRows = kTiledTile.block_m;

template <typename T, int DMAX, int TPR, int kBM, bool EXACT>
__global__ void __launch_bounds__(kBM * TPR) tiled_fwd(AttnArgs a) {
  constexpr int NPL = DMAX / TPR;  // dims per lane: d = i * TPR + lane
  __shared__ uint16_t ks[kBN][DMAX], vs[kBN][DMAX];
  const int tid = threadIdx.x, lane = tid % TPR;
  const int s = blockIdx.x * kBM + tid / TPR, h = blockIdx.y;
  const int G = a.G > 1 ? a.G : 1, b = blockIdx.z / G, g = blockIdx.z % G;
  const int hk = h / (a.H / a.Hk);
  const int sq = seq_q(a, b);
  const bool row_ok = s < sq;

  float q[NPL], acc[NPL];
  const int64_t qrow = q_at(a, b, row_ok ? s : 0, h);
#pragma unroll
  for (int i = 0; i < NPL; ++i) {
    const int d = i * TPR + lane;
    q[i] = (row_ok && (EXACT || d < a.D)) ? T::load(T::get(a.q, qrow + d)) * a.scale_log2 : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  // The block's keys: its first row's begin (a lower bound: rows' ranges only move right, and a
  // leading row that sees nothing begins at 0) to its last row's end, cut into this split's share.
  const int first_row = int(blockIdx.x) * kBM, last_row = min(first_row + kBM, sq) - 1;
  const KeyRange block_keys = last_row >= first_row ? KeyRange{keys_of(a, b, first_row).begin, keys_of(a, b, last_row).end}
                                                    : KeyRange{0, 0};  // past this sequence's queries
  const KeyRange kr = split_range_from(block_keys.begin, block_keys.end, g, G, kBN);
  const KeyRange mine = row_ok ? keys_of(a, b, s) : KeyRange{0, 0};
  const int64_t row_begin = mine.begin, row_end = mine.end < kr.end ? mine.end : kr.end;
  const bool transform = transforms_scores(a);

  for (int64_t kv0 = kr.begin; kv0 < kr.end; kv0 += kBN) {
    for (int idx = tid; idx < kBN * a.D; idx += kBM * TPR) {
      const int j = idx / a.D, d = idx % a.D;
      const bool in = kv0 + j < kr.end;
      const int64_t at = in ? k_at(a, b, kv0 + j, hk) + d : 0;
      ks[j][d] = in ? T::get(a.k, at) : uint16_t(0);  // FP8: the byte, widened to a 16-bit slot
      vs[j][d] = in ? T::get(a.v, at) : uint16_t(0);
    }
    __syncthreads();
    float sc[kBN];
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kBN; ++j) {
      float part = 0.f;
#pragma unroll
      for (int i = 0; i < NPL; ++i) {
        const int d = i * TPR + lane;
        if (EXACT || d < a.D) part += q[i] * T::load(ks[j][d]);
      }
#pragma unroll
      for (int off = TPR / 2; off > 0; off /= 2) part += shfl_xor(part, off, TPR);
      const bool seen = kv0 + j >= row_begin && kv0 + j < row_end;
      sc[j] = !seen ? -INFINITY : transform ? transform_score(a, part, b, h, s, kv0 + j) : part;
      tile_max = fmaxf(tile_max, sc[j]);
    }
    const float m_new = fmaxf(m, tile_max);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;  // a row masked so far keeps p = 0
    const float alpha = fast_exp2(m - m_use);
    l *= alpha;
#pragma unroll
    for (int i = 0; i < NPL; ++i) acc[i] *= alpha;
#pragma unroll
    for (int j = 0; j < kBN; ++j) {
      const float p = fast_exp2(sc[j] - m_use);
      l += p;
#pragma unroll
      for (int i = 0; i < NPL; ++i) {
        const int d = i * TPR + lane;
        if (EXACT || d < a.D) acc[i] += p * T::load(vs[j][d]);
      }
    }
    m = m_new;
    __syncthreads();
  }
  if (!row_ok) return;
  const float inv = l > 0.f ? a.v_descale / l : 0.f;  // v_descale: 1 but for FP8 inputs
  const float lse = l > 0.f ? (m + log2f(l)) * kLn2 : -INFINITY;
  if (G == 1) {
    uint16_t* orow = a.o + q_at(a, b, s, h);
#pragma unroll
    for (int i = 0; i < NPL; ++i) {
      const int d = i * TPR + lane;
      if (EXACT || d < a.D) orow[d] = T::store(acc[i] * inv);
    }
    if (lane == 0) a.lse[lse_row(a, b, h, s)] = lse;
  } else {
    const int64_t pr = partial_row(a, b, h, g, s);
#pragma unroll
    for (int i = 0; i < NPL; ++i) {
      const int d = i * TPR + lane;
      if (EXACT || d < a.D) a.o_part[pr * a.D + d] = acc[i] * inv;
    }
    if (lane == 0) a.lse_part[pr] = lse;
  }
}

template <typename T, int DMAX, int TPR, int kBM, bool EXACT>
void launch(const AttnArgs& a, Stream st) {
  const dim3 grid((a.S + kBM - 1) / kBM, a.H, a.B * (a.G > 1 ? a.G : 1));
  tiled_fwd<T, DMAX, TPR, kBM, EXACT><<<grid, kBM * TPR, 0, st>>>(a);
  FA_GPU_CHECK_LAUNCH("tiled_fwd");
}

class TiledExecution : public GpuExecution {
 public:
  TiledExecution(const Problem& p, const HostInputs& in, const GateContext& ctx) : GpuExecution(p, in, ctx, 0) {}

 protected:
  void launch() override { launch_tiled(args_, p_.dtype, stream_); }
};

}  // namespace

void launch_tiled(const AttnArgs& a, DType t, Stream st) {
  with_any_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    // FP8 inputs run the general instance alone: four FP8 formats x four D instances made this the
    // longest compile of the hip build (220 s of 331 with two formats, clang-15, gfx90a + gfx940),
    // and FP8 speed is mma's to chase, not the scalar path's.
    if constexpr (T::kFp8) {
      launch<T, 256, 8, kRows / 2, false>(a, st);
    } else {
      switch (a.D) {
        case 64: return launch<T, 64, 4, kRows, true>(a, st);
        case 80: return launch<T, 80, 4, kRows, true>(a, st);
        case 128: return launch<T, 128, 4, kRows, true>(a, st);
        default: return launch<T, 256, 8, kRows / 2, false>(a, st);
      }
    }
  });
}

namespace {

std::optional<std::string> tiled_limits(const Problem& p, int, const GateContext&) {
  if (p.H > 65535) return std::string("H > 65535 exceeds the grid");
  return std::nullopt;
}

// Splits run as splitk (tiled producers + combine).
Capabilities tiled_caps() {
  Capabilities c = gpu_caps();
  c.dtypes = gpu_dtypes(Fp8Formats::all);
  c.serving = ServingSet::every();
  return c;
}

PathRow tiled_row(const DeviceFacts&) {
  PathRow r{"tiled", "gpu", "scalar FlashAttention-2: Q in registers, K/V tiles in shared memory",
            "D 64/80/128 specialised (16-bit); H <= 65535; FP8: P fp32, judged as bf16", false,
            nullptr,
            [](const Problem& p, const HostInputs& in, int, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<TiledExecution>(p, in, ctx);
            }};
  r.auto_rank = 30;
  r.tiles = kTiledTile;
  r.fp8_p = DType::bf16;  // P stays fp32: the finer of the two declarations
  r.declare(tiled_caps(), tiled_limits);
  return r;
}
FA_REGISTER_PATH(tiled_row);

}  // namespace
}  // namespace fa::gpu
