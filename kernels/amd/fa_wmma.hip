// wmma: FlashAttention-2 forward on AMD RDNA3 WMMA (gfx11, wave32): 4 waves, 16 query rows a wave
// (64 a block), 32 keys a step as two 16-key tiles; v_wmma_f32_16x16x16 for S^T = K Q^T and
// O^T += V^T P^T, online softmax with a lane owning one query row's half of the keys. P becomes
// the replicated B operand by one exchange across the half-waves (frag::wmma_16x16x16_b_from_c).
// Per-sequence lengths (dense or thd) and windows through the shared tile loop: tiles outside a
// wave's keys are skipped, only edge tiles masked. Problems with serving fields run the SERVE
// instance: paged K/V through the page table, softcap and ALiBi on every score (mma's conventions,
// harness/conventions.hpp); kv_cache appends first (mc::Execution). fp16/bf16; D % 16 == 0, D <= 256;
// G in 0, 2, 4, 8, 16. Compile- and ISA-checked here
// (scripts/isa-check.sh); untimed and unrun until an RDNA3 machine passes `ctest -L gpu`.
// fa-bench-isa: gfx1100: v_wmma
#include "harness/path_registry.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/amd/matrix_core.hpp"
#include "kernels/amd/matrix_core_host.hpp"

namespace fa::gpu {
namespace {

// 32-key steps (two WMMA key tiles) halve the block barriers of 16-key steps; not yet timed.
[[maybe_unused]] constexpr int kBM = 64, kBN = 32, kWaves = 4, kWave = 32, kRows = kBM / kWaves;
// LDS rows padded by 16 bytes: fragments are 32-byte row reads (two ds_read_b128), so rows stay
// 16-byte aligned and consecutive rows start 4 banks apart.
[[maybe_unused]] constexpr int kPad = 8, kVStride = kBN + kPad;

// What the index math below assumes of the layout, checked at compile time: an input operand's
// 16 slots are its k in order (one 32-byte load), a lane's accumulator column is its B column
// (one query row a lane), P's B slots come from the lane or its partner (lane ^ 16), and partners
// hold adjacent accumulator rows (one exchange pairs two columns of O).
constexpr bool layout_as_assumed() {
  for (int lane = 0; lane < kWave; ++lane) {
    for (int i = 0; i < 16; ++i) {
      if (frag::wmma_16x16x16_a(lane, i).col != i || frag::wmma_16x16x16_b(lane, i).row != i) return false;
      const int src = frag::wmma_16x16x16_b_from_c(lane, i).lane;
      if (src != lane && src != (lane ^ 16)) return false;
    }
    for (int v = 0; v < 8; ++v) {
      if (frag::wmma_16x16x16_c(lane, v).col != frag::wmma_16x16x16_b(lane, 0).col) return false;
      if ((frag::wmma_16x16x16_c(lane, v).row ^ 1) != frag::wmma_16x16x16_c(lane ^ 16, v).row) return false;
    }
  }
  return true;
}
static_assert(layout_as_assumed(), "wmma.hip's loads, exchanges and stores assume this fragment layout");

#if FA_HAS_WMMA_GFX11
typedef float f32x8 __attribute__((ext_vector_type(8)));
typedef _Float16 f16x16 __attribute__((ext_vector_type(16)));
typedef short i16x16 __attribute__((ext_vector_type(16)));
typedef uint32_t u32x8 __attribute__((ext_vector_type(8)));  // 16 16-bit elements, low half first

template <typename T>
__device__ inline void wmma(f32x8& acc, u32x8 a, u32x8 b) {
  if constexpr (std::is_same_v<T, F16>)
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(f16x16, a), __builtin_bit_cast(f16x16, b), acc);
  else
    acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(i16x16, a), __builtin_bit_cast(i16x16, b), acc);
}

__device__ inline u32x8 load32(const uint16_t* p) { return *reinterpret_cast<const u32x8*>(p); }
__device__ inline uint32_t shfl_xor_bits(uint32_t v, int mask) {
  return __float_as_uint(shfl_xor(__uint_as_float(v), mask, kWave));
}
#endif

// DMAX: the compiled head dim (64, 128, 256); D <= DMAX runs with the 16-dim blocks past D skipped.
// gfx1100 (clang-19, device libraries linked): 158 / 222 / 224 VGPRs for DMAX 64 / 128 / 256
// (fp16; bf16 15 fewer), no scratch; 154 / 218 / 220 before varlen and window (the window's
// lower bounds of a wave's keys and of a row's columns).
// SERVE: the instance for problems with serving fields (AttnArgs.serving set), as mma's: keys
// through the serving view (pages), softcap/ALiBi (mc::block_scores). The dense instance is the
// kernel as it was (158 / 222 / 224 VGPRs, fp16, as above); SERVE takes 6 more, no scratch.
template <typename T, int DMAX, bool SERVE>
__global__ void __launch_bounds__(kWaves * kWave) wmma_fwd(AttnArgs a) {
#if FA_HAS_WMMA_GFX11
  constexpr int KS = DMAX + kPad, DB = DMAX / 16, KT = kBN / 16;
  __shared__ uint16_t ks[kBN * KS], vt[DMAX * kVStride];
  const int tid = threadIdx.x, lane = tid % kWave, wave = tid / kWave;
  const tile::BlockCoords c = tile::block_coords(a, kBM);
  const tile::SeqShape sh = tile::seq_shape(a, c.b);
  const KeyRange kr = tile::block_keys(a, sh, c, kBM, kBN);
  const mc::WaveKeys wk = mc::wave_keys(sh, c.q0 + wave * kRows, kRows, kr);
  const auto key_rows = mc::block_key_rows<SERVE>(a, c);
  const mc::BlockScores bs = mc::block_scores<SERVE>(a, c);
  const int nd = a.D / 16;

  // Q^T as the B operand of S^T = K Q^T; both half-waves hold it (replication). In registers up
  // to D = 128; at 256, Q^T and O^T in registers spilled 272-340 B, so Q^T is re-read from the
  // cache per tile instead (a 16-row Q tile is 8 KB; LDS has no room beside K and V^T).
  constexpr bool kQInRegs = DMAX <= 128;
  // Rows past the sequence's queries are padding: nothing of theirs is stored.
  const frag::Coord qb = frag::wmma_16x16x16_b(lane, 0);
  const int row = c.q0 + wave * kRows + qb.col;
  const bool row_ok = row < sh.sq;
  const uint16_t* qp = a.q + q_at(a, c.b, row_ok ? row : 0, c.h);
  u32x8 q[kQInRegs ? DB : 1];
  if constexpr (kQInRegs) {
#pragma unroll
    for (int j = 0; j < DB; ++j) q[j] = (row_ok && j < nd) ? load32(qp + 16 * j) : u32x8{};
  }
  // Padding rows read the sequence's row 0: finite, never stored, and there whenever a tile is
  // computed (a block or wave past its sequence's queries visits no key).
  auto q_chunk = [&](int j) {
    if constexpr (kQInRegs) return q[j];
    else return load32(qp + 16 * j);
  };

  f32x8 o[DB];
#pragma unroll
  for (int db = 0; db < DB; ++db) o[db] = f32x8{};
  float m = -INFINITY, l = 0.f, neg_m = 0.f;  // l: this lane's half of the row's keys
  const frag::Coord ka = frag::wmma_16x16x16_a(lane, 0);

  for (int kv0 = int(kr.begin); kv0 < int(kr.end); kv0 += kBN) {  // keys fit an int (tile_range.hpp)
    __syncthreads();  // the previous tile's readers are done
    mc::load_kv_tile<kBN, KS, kVStride>(a, key_rows, kv0, kr.end, ks, vt, tid, kWaves * kWave);
    __syncthreads();
    if (tile::tile_skipped(wk.seen, kv0, kBN)) continue;  // wave-uniform: none of this wave's rows sees the tile

    f32x8 s[KT];
#pragma unroll
    for (int t = 0; t < KT; ++t) {
      s[t] = f32x8{};
#pragma unroll
      for (int j = 0; j < DB; ++j)
        if (j < nd) wmma<T>(s[t], load32(ks + (16 * t + ka.row) * KS + 16 * j), q_chunk(j));
    }
    if (SERVE && bs.mod.on) {  // softcap, ALiBi: on the scaled score, before the mask
#pragma unroll
      for (int t = 0; t < KT; ++t)
#pragma unroll
        for (int v = 0; v < 8; ++v)
          s[t][v] = bs.mod.apply(s[t][v] * a.scale_log2, row, kv0 + 16 * t + frag::wmma_16x16x16_c(lane, v).row);
    }
    if (tile::tile_masked(wk.unmasked, kv0, kBN)) {  // the causal diagonal, the window's edge, the range's last tile
      const tile::TileCols cols = tile::tile_cols(tile::row_keys_in(sh, row, kr), kv0, kBN);
#pragma unroll
      for (int t = 0; t < KT; ++t)
#pragma unroll
        for (int v = 0; v < 8; ++v) {
          const int k = 16 * t + frag::wmma_16x16x16_c(lane, v).row;
          if (k < cols.lo || k >= cols.hi) s[t][v] = -INFINITY;
        }
    }
    float tmax = -INFINITY;
#pragma unroll
    for (int t = 0; t < KT; ++t)
#pragma unroll
      for (int v = 0; v < 8; ++v) tmax = fmaxf(tmax, s[t][v]);
    tmax = fmaxf(tmax, shfl_xor(tmax, 16, kWave));  // the row's other keys: the other half-wave
    const float alpha = tile::softmax_rescale(m, tmax, bs.scale_log2, neg_m);
    float psum = 0.f;
#pragma unroll
    for (int t = 0; t < KT; ++t)
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        s[t][v] = fast_exp2(fmaf(s[t][v], bs.scale_log2, neg_m));
        psum += s[t][v];
      }
    l = l * alpha + psum;
#pragma unroll
    for (int db = 0; db < DB; ++db) o[db] *= alpha;

    // O^T += V^T P^T per key tile; P rounded to the dtype (the reference rounds at the same point),
    // packed two rows a word, and the partner's 8 rows fetched in 4 exchanges.
#pragma unroll
    for (int t = 0; t < KT; ++t) {
      uint32_t own[4], other[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        own[w] = T::store(s[t][2 * w]) | uint32_t(T::store(s[t][2 * w + 1])) << 16;
        other[w] = shfl_xor_bits(own[w], 16);
      }
      uint32_t pw[8] = {};
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const frag::Slot src = frag::wmma_16x16x16_b_from_c(lane, i);
        const uint32_t word = src.lane == lane ? own[src.slot / 2] : other[src.slot / 2];
        pw[i / 2] |= ((word >> (16 * (src.slot % 2))) & 0xffffu) << (16 * (i % 2));
      }
      const u32x8 p{pw[0], pw[1], pw[2], pw[3], pw[4], pw[5], pw[6], pw[7]};
#pragma unroll
      for (int db = 0; db < DB; ++db)
        if (db < nd) wmma<T>(o[db], load32(vt + (16 * db + ka.row) * kVStride + 16 * t), p);
    }
  }

  l += shfl_xor(l, 16, kWave);
  const tile::RowEnd re = tile::row_end(m, l, bs.scale_log2);
  const int64_t o_at = tile::o_row(a, c, row_ok ? row : 0);
  // A lane holds rows of one parity of O^T (dims); its partner the other. Each takes the
  // partner's values, then stores every other adjacent pair.
#pragma unroll
  for (int db = 0; db < DB; ++db)
#pragma unroll
    for (int v = 0; v < 8; ++v) {
      const float mine = o[db][v] * re.inv_l, theirs = shfl_xor(o[db][v], 16, kWave) * re.inv_l;
      const int r = frag::wmma_16x16x16_c(lane, v).row, r_other = frag::wmma_16x16x16_c(lane ^ 16, v).row;
      const int low = r < r_other ? r : r_other;
      if (row_ok && db < nd && (low / 2) % 2 == lane / 16)
        tile::store_pair<T>(a, c, row, o_at, 16 * db + low, r < r_other ? mine : theirs, r < r_other ? theirs : mine);
    }
  if (row_ok && lane < 16) tile::store_lse(a, c, row, re.lse);
#else
  (void)a;
  unsupported_arch();
#endif
}

template <typename T, int DMAX>
void launch(const AttnArgs& a, Stream st) {
  const dim3 grid((a.S + kBM - 1) / kBM, a.H, a.B * (a.G > 1 ? a.G : 1));
  if (a.serving) wmma_fwd<T, DMAX, true><<<grid, kWaves * kWave, 0, st>>>(a);
  else wmma_fwd<T, DMAX, false><<<grid, kWaves * kWave, 0, st>>>(a);
  FA_GPU_CHECK_LAUNCH("wmma_fwd");
}

void launch_wmma(const AttnArgs& a, DType t, Stream st) {
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    if (a.D <= 64) return launch<T, 64>(a, st);
    if (a.D <= 128) return launch<T, 128>(a, st);
    return launch<T, 256>(a, st);
  });
}

PathRow wmma_row(const DeviceFacts&) {
  PathRow r{"wmma", "gpu", "AMD RDNA3 WMMA 16x16x16 FlashAttention-2: wave32, 16 rows a wave, split-K",
            "kv_cache: the append runs first; B*G, H <= 65535", false, nullptr,
            [](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<mc::Execution>(p, in, G, ctx, launch_wmma);
            }};
  r.auto_rank = 45;  // the matrix-core path of its arch (compile-verified only: see the README)
  r.tiles = TileShape{64, 32};
  r.declare(mc::caps(DeviceNeed::wmma_gfx11, HeadDims::range(16, 256, 16)), mc::grid_limits);  // 16-wide k steps
  return r;
}
FA_REGISTER_PATH(wmma_row);

}  // namespace
}  // namespace fa::gpu
