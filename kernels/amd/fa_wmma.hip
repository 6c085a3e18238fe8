// wmma: FlashAttention-2 forward on AMD RDNA WMMA (gfx11 and gfx12, wave32): 4 waves, 16 query rows a
// wave (64 a block), 32 keys a step as two 16-key tiles; v_wmma_f32_16x16x16 for S^T = K Q^T and
// O^T += V^T P^T, online softmax with a lane owning one query row's half of the keys. On gfx11 the
// inputs are replicated across the half-waves, so P becomes the B operand by one exchange across
// them (frag::wmma_16x16x16_b_from_c); on gfx12 each half-wave holds its own 8 k, P stays in its lane
// (frag::wmma12_16x16x16_b_from_c), and gfx12 adds the OCP FP8 inputs (v_wmma_f32_16x16x16_fp8_fp8
// and bf8 forms; P rounded to e4m3 for PV, O in bf16, as mma's FP8 contract).
// Per-sequence lengths (dense or thd) and windows through the shared tile loop: tiles outside a
// wave's keys are skipped, only edge tiles masked. Problems with serving fields run the SERVE
// instance: paged K/V through the page table, softcap and ALiBi on every score (mma's conventions,
// harness/conventions.hpp); kv_cache appends first (mc::Execution). D % 16 == 0, D <= 256; G in 0, 2,
// 4, 8, 16. Compile- and ISA-checked here (scripts/isa-check.sh) and run in an AMD ISA emulator;
// untimed until an RDNA machine passes `ctest -L gpu`.
// fa-bench-isa: gfx1100: v_wmma_f32_16x16x16_f16 v_wmma_f32_16x16x16_bf16
// fa-bench-isa: gfx1201: v_wmma_f32_16x16x16_f16 v_wmma_f32_16x16x16_bf16 v_wmma_f32_16x16x16_fp8_fp8
// fa-bench-isa: gfx1201: v_wmma_f32_16x16x16_bf8_bf8 v_wmma_f32_16x16x16_bf8_fp8
#include "harness/path_registry.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/amd/matrix_core.hpp"
#include "kernels/amd/matrix_core_host.hpp"

namespace fa::gpu {
namespace {

// 32-key steps (two WMMA key tiles) halve the block barriers of 16-key steps; not yet timed.
[[maybe_unused]] constexpr int kBM = 64, kBN = 32, kWaves = 4, kWave = 32, kRows = kBM / kWaves;
// LDS rows padded by 16 bytes: fragments are row reads of 16 or 32 bytes, so rows stay 16-byte
// aligned and consecutive rows start 4 banks apart.
[[maybe_unused]] constexpr int kPadBytes = 16;

// What the index math below assumes of the layouts, checked at compile time.
// gfx11: an input operand's 16 slots are its k in order (one 32-byte load), a lane's accumulator
// column is its B column (one query row a lane), P's B slots come from the lane or its partner
// (lane ^ 16), and partners hold adjacent accumulator rows (one exchange pairs two columns of O).
// gfx12: A and B pair the same k with each (lane half, slot), for 16-bit and 8-bit inputs alike, so
// any order of k the two share is the same product: the kernel gives half h the contiguous k
// 8 h .. 8 h + 7 of each 16 (one 16- or 8-byte load). A lane's accumulator column is its B column,
// its rows 8 h + v are consecutive, and P's B slot v is its own accumulator slot v, so V^T is read
// at those 8 consecutive keys.
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
    for (int e = 0; e < 8; ++e) {
      if (frag::wmma12_16x16x16_a(lane, e).col != frag::wmma12_16x16x16_b(lane, e).row) return false;
      if (frag::wmma12_16x16x16_a8(lane, e).col != frag::wmma12_16x16x16_b8(lane, e).row) return false;
      if (frag::wmma12_16x16x16_c(lane, e).col != frag::wmma12_16x16x16_b(lane, 0).col) return false;
      const frag::Slot src = frag::wmma12_16x16x16_b_from_c(lane, e);
      if (src.lane != lane || frag::wmma12_16x16x16_c(lane, src.slot).row != 8 * (lane / 16) + e) return false;
    }
  }
  return true;
}
static_assert(layout_as_assumed(), "wmma.hip's loads, exchanges and stores assume these fragment layouts");

// The arch's instruction and its operand: gfx11, 16 16-bit elements (replicated); gfx12, 8 elements
// of 16 or 8 bits. kRun: the k a lane holds of each 16; run0: the first of them.
#if FA_HAS_WMMA_GFX11 || FA_HAS_WMMA_GFX12
typedef float f32x8 __attribute__((ext_vector_type(8)));
constexpr bool kGfx12 = FA_HAS_WMMA_GFX12;
constexpr int kRun = kGfx12 ? 8 : 16;
__device__ inline int run0(int lane) { return kGfx12 ? 8 * (lane / 16) : 0; }
__device__ inline int c_row(int lane, int v) {
  return kGfx12 ? frag::wmma12_16x16x16_c(lane, v).row : frag::wmma_16x16x16_c(lane, v).row;
}
template <typename T>
using Operand = uint32_t __attribute__((ext_vector_type(kRun * sizeof(mc::Elem<T>) / 4)));

// D += A B; for FP8 T, A in T's format and B in T's (QK: K and Q) or in e4m3, P's (PV: V and P).
template <typename T, bool kBIsP = false>
__device__ inline void wmma(f32x8& acc, Operand<T> a, Operand<T> b) {
#if FA_HAS_WMMA_GFX11
  typedef _Float16 f16x16 __attribute__((ext_vector_type(16)));
  typedef short i16x16 __attribute__((ext_vector_type(16)));
  if constexpr (std::is_same_v<T, F16>)
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(f16x16, a), __builtin_bit_cast(f16x16, b), acc);
  else if constexpr (std::is_same_v<T, BF16>)
    acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(i16x16, a), __builtin_bit_cast(i16x16, b), acc);
#else
  typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));
  typedef short i16x8 __attribute__((ext_vector_type(8)));
  typedef int i32x2 __attribute__((ext_vector_type(2)));
  if constexpr (std::is_same_v<T, F16>) {
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(__builtin_bit_cast(f16x8, a), __builtin_bit_cast(f16x8, b), acc);
  } else if constexpr (std::is_same_v<T, BF16>) {
    acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(__builtin_bit_cast(i16x8, a), __builtin_bit_cast(i16x8, b), acc);
  } else {
    const i32x2 ia = __builtin_bit_cast(i32x2, a), ib = __builtin_bit_cast(i32x2, b);
    if constexpr (std::is_same_v<T, E4M3>) acc = __builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12(ia, ib, acc);
    else if constexpr (kBIsP) acc = __builtin_amdgcn_wmma_f32_16x16x16_bf8_fp8_w32_gfx12(ia, ib, acc);
    else acc = __builtin_amdgcn_wmma_f32_16x16x16_bf8_bf8_w32_gfx12(ia, ib, acc);
  }
#endif
}

template <typename T>
__device__ inline Operand<T> load_run(const mc::Elem<T>* p) { return *reinterpret_cast<const Operand<T>*>(p); }
__device__ inline uint32_t shfl_xor_bits(uint32_t v, int mask) {
  return __float_as_uint(shfl_xor(__uint_as_float(v), mask, kWave));
}

// P^T of key tile s (this lane's 8 accumulator slots) as the PV product's B operand. gfx11: P rounded
// to the dtype, packed two rows a word, and the partner's 8 rows fetched in 4 exchanges. gfx12: the
// lane's own 8 slots, rounded to the dtype or, for FP8, to e4m3.
template <typename T>
__device__ inline Operand<T> p_operand(const f32x8& s, int lane) {
  Operand<T> p{};
  if constexpr (kGfx12) {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      constexpr int kBits = 8 * sizeof(mc::Elem<T>), kPerWord = 32 / kBits;
      p[e / kPerWord] |= mc::p_elem<T>(s[frag::wmma12_16x16x16_b_from_c(lane, e).slot]) << (kBits * (e % kPerWord));
    }
  } else {
    uint32_t own[4], other[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      own[w] = mc::p_elem<T>(s[2 * w]) | mc::p_elem<T>(s[2 * w + 1]) << 16;
      other[w] = shfl_xor_bits(own[w], 16);
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const frag::Slot src = frag::wmma_16x16x16_b_from_c(lane, i);
      const uint32_t word = src.lane == lane ? own[src.slot / 2] : other[src.slot / 2];
      p[i / 2] |= ((word >> (16 * (src.slot % 2))) & 0xffffu) << (16 * (i % 2));
    }
  }
  return p;
}
#endif

// DMAX: the compiled head dim (64, 128, 256); D <= DMAX runs with the 16-dim blocks past D skipped.
// gfx1100 (clang-19, device libraries linked): 158 / 222 / 224 VGPRs for DMAX 64 / 128 / 256
// (fp16; bf16 15 fewer), no scratch; 154 / 218 / 220 before varlen and window (the window's
// lower bounds of a wave's keys and of a row's columns).
// SERVE: the instance for problems with serving fields (AttnArgs.serving set), as mma's: keys
// through the serving view (pages), softcap/ALiBi (mc::block_scores). The dense instance is the
// kernel as it was (158 / 222 / 224 VGPRs, fp16, as above); SERVE takes 6 more, no scratch.
// gfx1201 (2026-11-28, same build): fp16 131 / 179 / 213, bf16 118 / 166 / 199, FP8 108 / 148 /
// 198, SERVE 5 more, no scratch (no replicated operands: half the Q^T registers of gfx11).
template <typename T, int DMAX, bool SERVE>
__device__ inline void wmma_body(const AttnArgs& a) {
#if FA_HAS_WMMA_GFX11 || FA_HAS_WMMA_GFX12
  using E = mc::Elem<T>;
  constexpr int KS = DMAX + kPadBytes / int(sizeof(E)), VS = kBN + kPadBytes / int(sizeof(E));
  constexpr int DB = DMAX / 16, KT = kBN / 16;
  __shared__ E ks[kBN * KS], vt[DMAX * VS];
  const int tid = threadIdx.x, lane = tid % kWave, wave = tid / kWave;
  const tile::BlockCoords c = tile::block_coords(a, kBM);
  const tile::SeqShape sh = tile::seq_shape(a, c.b);
  const KeyRange kr = tile::block_keys(a, sh, c, kBM, kBN);
  const mc::WaveKeys wk = mc::wave_keys(sh, c.q0 + wave * kRows, kRows, kr);
  const auto key_rows = mc::block_key_rows<SERVE>(a, c);
  const mc::BlockScores bs = mc::block_scores<SERVE>(a, c);
  const int nd = a.D / 16, r0 = run0(lane);

  // Q^T as the B operand of S^T = K Q^T (gfx11: both half-waves hold it). In registers up to
  // D = 128; at 256, Q^T and O^T in registers spilled 272-340 B on gfx11, so Q^T is re-read from
  // the cache per tile instead (a 16-row Q tile is 8 KB; LDS has no room beside K and V^T).
  constexpr bool kQInRegs = DMAX <= 128;
  // Rows past the sequence's queries are padding: nothing of theirs is stored.
  const int row = c.q0 + wave * kRows + frag::wmma_16x16x16_b(lane, 0).col;  // gfx12's B column alike
  const bool row_ok = row < sh.sq;
  const E* qp = reinterpret_cast<const E*>(a.q) + q_at(a, c.b, row_ok ? row : 0, c.h) + r0;
  Operand<T> q[kQInRegs ? DB : 1];
  if constexpr (kQInRegs) {
#pragma unroll
    for (int j = 0; j < DB; ++j) q[j] = (row_ok && j < nd) ? load_run<T>(qp + 16 * j) : Operand<T>{};
  }
  // Padding rows read the sequence's row 0: finite, never stored, and there whenever a tile is
  // computed (a block or wave past its sequence's queries visits no key).
  auto q_chunk = [&](int j) {
    if constexpr (kQInRegs) return q[j];
    else return load_run<T>(qp + 16 * j);
  };

  f32x8 o[DB];
#pragma unroll
  for (int db = 0; db < DB; ++db) o[db] = f32x8{};
  float m = -INFINITY, l = 0.f, neg_m = 0.f;  // l: this lane's half of the row's keys
  const int arow = frag::wmma_16x16x16_a(lane, 0).row;  // gfx12's A row alike: lane % 16

  for (int kv0 = int(kr.begin); kv0 < int(kr.end); kv0 += kBN) {  // keys fit an int (tile_range.hpp)
    __syncthreads();  // the previous tile's readers are done
    mc::load_kv_tile<kBN, KS, VS>(a, key_rows, kv0, kr.end, ks, vt, tid, kWaves * kWave);
    __syncthreads();
    if (tile::tile_skipped(wk.seen, kv0, kBN)) continue;  // wave-uniform: none of this wave's rows sees the tile

    f32x8 s[KT];
#pragma unroll
    for (int t = 0; t < KT; ++t) {
      s[t] = f32x8{};
#pragma unroll
      for (int j = 0; j < DB; ++j)
        if (j < nd) wmma<T>(s[t], load_run<T>(ks + (16 * t + arow) * KS + 16 * j + r0), q_chunk(j));
    }
    if (SERVE && bs.mod.on) {  // softcap, ALiBi: on the scaled score, before the mask
#pragma unroll
      for (int t = 0; t < KT; ++t)
#pragma unroll
        for (int v = 0; v < 8; ++v) s[t][v] = bs.mod.apply(s[t][v] * a.scale_log2, row, kv0 + 16 * t + c_row(lane, v));
    }
    if (tile::tile_masked(wk.unmasked, kv0, kBN)) {  // the causal diagonal, the window's edge, the range's last tile
      const tile::TileCols cols = tile::tile_cols(tile::row_keys_in(sh, row, kr), kv0, kBN);
#pragma unroll
      for (int t = 0; t < KT; ++t)
#pragma unroll
        for (int v = 0; v < 8; ++v) {
          const int k = 16 * t + c_row(lane, v);
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

    // O^T += V^T P^T per key tile; P rounded where the reference rounds it (mc::p_elem). V^T's A
    // operand is read at P's keys: all 16 (gfx11), or the 8 of this lane's accumulator (gfx12).
#pragma unroll
    for (int t = 0; t < KT; ++t) {
      const Operand<T> p = p_operand<T>(s[t], lane);
      const int key0 = 16 * t + (kGfx12 ? c_row(lane, frag::wmma12_16x16x16_b_from_c(lane, 0).slot) : 0);
#pragma unroll
      for (int db = 0; db < DB; ++db)
        if (db < nd) wmma<T, true>(o[db], load_run<T>(vt + (16 * db + arow) * VS + key0), p);
    }
  }

  l += shfl_xor(l, 16, kWave);
  const tile::RowEnd re = tile::row_end(m, l, bs.scale_log2);
  const float inv = T::kFp8 ? re.inv_l * a.v_descale : re.inv_l;  // v's descale (q's and k's are in scale_log2)
  const int64_t o_at = tile::o_row(a, c, row_ok ? row : 0);
  if constexpr (kGfx12) {  // a lane holds 8 consecutive dims of its row: 4 pairs
#pragma unroll
    for (int db = 0; db < DB; ++db)
#pragma unroll
      for (int v = 0; v < 8; v += 2)
        if (row_ok && db < nd)
          tile::store_pair<T>(a, c, row, o_at, 16 * db + c_row(lane, v), o[db][v] * inv, o[db][v + 1] * inv);
  } else {
    // A lane holds rows of one parity of O^T (dims); its partner the other. Each takes the
    // partner's values, then stores every other adjacent pair.
#pragma unroll
    for (int db = 0; db < DB; ++db)
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        const float mine = o[db][v] * inv, theirs = shfl_xor(o[db][v], 16, kWave) * inv;
        const int r = c_row(lane, v), r_other = c_row(lane ^ 16, v);
        const int low = r < r_other ? r : r_other;
        if (row_ok && db < nd && (low / 2) % 2 == lane / 16)
          tile::store_pair<T>(a, c, row, o_at, 16 * db + low, r < r_other ? mine : theirs, r < r_other ? theirs : mine);
      }
  }
  if (row_ok && lane < 16) tile::store_lse(a, c, row, re.lse);
#else
  (void)a;
#endif
}

// FP8 instances exist for the archs whose WMMA multiplies OCP FP8 (gfx12); elsewhere they trap.
template <typename T, int DMAX, bool SERVE>
__global__ void __launch_bounds__(kWaves * kWave) wmma_fwd(AttnArgs a) {
  if constexpr (T::kFp8 && !FA_HAS_WMMA_GFX12) {
    (void)a;
    unsupported_arch();
  } else if constexpr (FA_HAS_WMMA_GFX11 || FA_HAS_WMMA_GFX12) {
    wmma_body<T, DMAX, SERVE>(a);
  } else {
    (void)a;
    unsupported_arch();
  }
}

template <typename T, int DMAX>
void launch(const AttnArgs& a, Stream st) {
  const dim3 grid((a.S + kBM - 1) / kBM, a.H, a.B * (a.G > 1 ? a.G : 1));
  if (a.serving) wmma_fwd<T, DMAX, true><<<grid, kWaves * kWave, 0, st>>>(a);
  else wmma_fwd<T, DMAX, false><<<grid, kWaves * kWave, 0, st>>>(a);
  FA_GPU_CHECK_LAUNCH("wmma_fwd");
}

void launch_wmma(const AttnArgs& a, DType t, Stream st) {
  with_ocp_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    if (a.D <= 64) return launch<T, 64>(a, st);
    if (a.D <= 128) return launch<T, 128>(a, st);
    return launch<T, 256>(a, st);
  });
}

PathRow wmma_row(const DeviceFacts&) {
  PathRow r{"wmma", "gpu", "AMD RDNA3/RDNA4 WMMA 16x16x16 FlashAttention-2: wave32, 16 rows a wave, split-K",
            "kv_cache: the append runs first; B*G, H <= 65535", false, nullptr,
            [](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<mc::Execution>(p, in, G, ctx, launch_wmma);
            }};
  r.auto_rank = 45;  // the matrix-core path of its arch (compile-verified only: see the README)
  r.tiles = TileShape{64, 32};
  r.fp8_p = DType::fp8_e4m3;  // gfx12: P to e4m3 (mc::p_elem)
  r.declare(mc::caps(DeviceNeed::wmma, HeadDims::range(16, 256, 16), Fp8Formats::ocp), mc::grid_limits);  // 16-wide k steps
  return r;
}
FA_REGISTER_PATH(wmma_row);

}  // namespace
}  // namespace fa::gpu
