// mfma: FlashAttention-2 forward on AMD CDNA MFMA (gfx90a, gfx94x), after FlyDSL #133 / aiter #3581:
// 4 waves of 64, 128 query rows a block (32 a wave), 32 keys a step, v_mfma_f32_32x32x8 for
// S^T = K Q^T and O^T += V^T P^T, so a lane owns one query row's scores and P is the next
// product's B operand in place (frag::mfma_32x32x8_b_from_c). K and V^T tiles in separate LDS.
// Per-sequence lengths (dense or thd) and windows through the shared tile loop: tiles outside a
// wave's keys are skipped, only edge tiles masked. Problems with serving fields run the SERVE
// instance: paged K/V through the page table, softcap and ALiBi on every score (mma's conventions,
// harness/conventions.hpp); kv_cache appends first (mc::Execution). fp16/bf16, and on gfx94x the FNUZ
// FP8 inputs through v_mfma_f32_32x32x16_fp8/bf8 (P rounded to e4m3fnuz for PV, O in bf16, as mma's
// FP8 contract); D % 32 == 0, 64 <= D <= 256; G in 0, 2, 4, 8, 16. Compile- and ISA-checked here
// (scripts/isa-check.sh) and run in an AMD ISA emulator; untimed until a CDNA machine passes `ctest -L gpu`.
// fa-bench-isa: gfx942: v_mfma_f32_32x32x8 v_mfma_f32_32x32x16_fp8_fp8
// fa-bench-isa: gfx942: v_mfma_f32_32x32x16_bf8_bf8 v_mfma_f32_32x32x16_bf8_fp8
#include "harness/path_registry.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/amd/matrix_core.hpp"
#include "kernels/amd/matrix_core_host.hpp"

namespace fa::gpu {
namespace {

[[maybe_unused]] constexpr int kBM = 128, kBN = 32, kWaves = 4, kWave = 64, kRows = kBM / kWaves;
// LDS row pads, 8 bytes: the K fragment reads 8 bytes per lane at a key stride of D elements + 8
// bytes (an odd dword pair per row, so 16 consecutive keys cover all 32 banks); V^T rows of 36
// elements (8-byte reads of 16-bit keys, 4-byte reads of FP8 keys: both stay aligned).
[[maybe_unused]] constexpr int kPadBytes = 8, kVStride = kBN + 4;

// What the index math below assumes of the layout, checked at compile time: an operand's 4 slots
// are 4 consecutive k (one 8-byte load), a lane's accumulator column is its B column (one query
// row a lane), accumulator slots pair up as adjacent rows (one store of two columns of O), and
// P's B slots are the lane's own accumulator slots.
constexpr bool layout_as_assumed() {
  for (int lane = 0; lane < kWave; ++lane) {
    for (int i = 0; i < 4; ++i) {
      if (frag::mfma_32x32x8_a(lane, i).col != frag::mfma_32x32x8_a(lane, 0).col + i) return false;
      if (frag::mfma_32x32x8_b(lane, i).row != frag::mfma_32x32x8_b(lane, 0).row + i) return false;
      for (int kb = 0; kb < kBN / 8; ++kb)
        if (frag::mfma_32x32x8_b_from_c(lane, kb, i).lane != lane) return false;
    }
    for (int i = 0; i < 16; ++i)
      if (frag::mfma_32x32x8_c(lane, i).col != frag::mfma_32x32x8_b(lane, 0).col) return false;
    for (int i = 0; i < 16; i += 2)
      if (frag::mfma_32x32x8_c(lane, i + 1).row != frag::mfma_32x32x8_c(lane, i).row + 1) return false;
    // The 8-bit form: 8 consecutive k a lane, the same column as the 16-bit B (Q^T loads alike),
    // P's B slots from the lane's own accumulator, whose rows (keys) run in two groups of 4.
    for (int i = 0; i < 8; ++i) {
      if (frag::mfma_32x32x16_a8(lane, i).col != frag::mfma_32x32x16_a8(lane, 0).col + i) return false;
      if (frag::mfma_32x32x16_b8(lane, i).row != frag::mfma_32x32x16_b8(lane, 0).row + i) return false;
      if (frag::mfma_32x32x16_b8(lane, i).col != frag::mfma_32x32x8_b(lane, 0).col) return false;
      for (int kb = 0; kb < kBN / 16; ++kb) {
        const frag::Slot src = frag::mfma_32x32x16_b8_from_c(lane, kb, i);
        if (src.lane != lane || frag::mfma_32x32x8_c(lane, src.slot).row !=
                                    frag::mfma_32x32x8_c(lane, src.slot - i % 4).row + i % 4)
          return false;
      }
    }
  }
  return true;
}
static_assert(layout_as_assumed(), "mfma.hip's loads, stores and P reuse assume this fragment layout");

#if FA_HAS_MFMA_GFX9
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef uint32_t u32x2 __attribute__((ext_vector_type(2)));  // 4 16-bit elements, low half first

// D += A B for 16-bit T (32x32x8); for FP8 T (32x32x16) with A in T's format and B in T's (QK:
// K and Q) or in e4m3fnuz, the format of P (PV: V and P). FNUZ's e4m3 is the ISA's "fp8", e5m2 "bf8".
template <typename T, bool kBIsP = false>
__device__ inline void mfma(f32x16& acc, u32x2 a, u32x2 b) {
  if constexpr (std::is_same_v<T, F16>) {
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), acc, 0, 0, 0);
  } else if constexpr (std::is_same_v<T, BF16>) {
    acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(__builtin_bit_cast(i16x4, a), __builtin_bit_cast(i16x4, b), acc, 0, 0, 0);
  } else {
#if FA_HAS_MFMA_FP8_FNUZ
    const long la = __builtin_bit_cast(long, a), lb = __builtin_bit_cast(long, b);
    if constexpr (std::is_same_v<T, E4M3Fnuz>) acc = __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(la, lb, acc, 0, 0, 0);
    else if constexpr (kBIsP) acc = __builtin_amdgcn_mfma_f32_32x32x16_bf8_fp8(la, lb, acc, 0, 0, 0);
    else acc = __builtin_amdgcn_mfma_f32_32x32x16_bf8_bf8(la, lb, acc, 0, 0, 0);
#endif
  }
}

template <typename E>
__device__ inline u32x2 load8(const E* p) { return *reinterpret_cast<const u32x2*>(p); }
template <typename E>
__device__ inline uint32_t load4(const E* p) { return *reinterpret_cast<const uint32_t*>(p); }
#endif

// DMAX: the compiled head dim (64, 128, 256); D <= DMAX runs with the 32-dim blocks past D skipped.
// gfx942 (clang-19, device libraries linked): 152 / 232 / 397 VGPRs (arch + AGPR; bf16 alike)
// for DMAX 64 / 128 / 256, no scratch; 152 / 232 / 393 before varlen and window (64-bit tile
// tests cost 8 more; a select between a length in the serving view and AttnArgs.S put both in
// scratch: tile::seq_shape branches instead). Under clang-15 the O^T vectors spilled 192-640 B while
// the epilogue left its unrolled loop with `break`; a guarded body keeps them in registers.
// SERVE: the instance for problems with serving fields (AttnArgs.serving set), as mma's: keys
// through the serving view (pages), softcap/ALiBi (mc::block_scores). The dense instance is the
// kernel as it was (152 / 232 / 397 VGPRs, gfx942 clang-19 as above); SERVE takes 160 / 240 / 402,
// no scratch.
template <typename T, int DMAX, bool SERVE>
__device__ inline void mfma_body(const AttnArgs& a) {
#if FA_HAS_MFMA_GFX9
  // The instruction's k: 8 16-bit or 16 FP8 elements, 8 bytes of A and of B a lane either way.
  using E = mc::Elem<T>;
  constexpr int KI = T::kFp8 ? 16 : 8, KS = DMAX + kPadBytes / int(sizeof(E)), DB = DMAX / 32;
  __shared__ E ks[kBN * KS], vt[DMAX * kVStride];
  const int tid = threadIdx.x, lane = tid % kWave, wave = tid / kWave;
  const tile::BlockCoords c = tile::block_coords(a, kBM);
  const tile::SeqShape sh = tile::seq_shape(a, c.b);
  const KeyRange kr = tile::block_keys(a, sh, c, kBM, kBN);
  const mc::WaveKeys wk = mc::wave_keys(sh, c.q0 + wave * kRows, kRows, kr);
  const auto key_rows = mc::block_key_rows<SERVE>(a, c);
  const mc::BlockScores bs = mc::block_scores<SERVE>(a, c);
  const int nd = a.D / 32, nk = a.D / KI;

  // Q^T as the B operand of S^T = K Q^T, kept in registers: chunk j holds dims KI j + (b.row ..),
  // 4 of them (16-bit) or 8 (FP8). Rows past the sequence's queries are padding: zeros in, nothing stored.
  const frag::Coord qb = T::kFp8 ? frag::mfma_32x32x16_b8(lane, 0) : frag::mfma_32x32x8_b(lane, 0);
  const int row = c.q0 + wave * kRows + qb.col;  // the query row of this lane's Q^T, S^T and O^T columns
  const bool row_ok = row < sh.sq;
  const E* qp = reinterpret_cast<const E*>(a.q) + q_at(a, c.b, row_ok ? row : 0, c.h) + qb.row;
  u32x2 q[DMAX / KI];
#pragma unroll
  for (int j = 0; j < DMAX / KI; ++j) q[j] = (row_ok && j < nk) ? load8(qp + KI * j) : u32x2{0u, 0u};

  f32x16 o[DB];
#pragma unroll
  for (int db = 0; db < DB; ++db) o[db] = f32x16{};
  float m = -INFINITY, l = 0.f, neg_m = 0.f;  // l: this lane's half of the row's keys
  const frag::Coord ka = T::kFp8 ? frag::mfma_32x32x16_a8(lane, 0) : frag::mfma_32x32x8_a(lane, 0);

  for (int kv0 = int(kr.begin); kv0 < int(kr.end); kv0 += kBN) {  // keys fit an int (tile_range.hpp)
    __syncthreads();  // the previous tile's readers are done
    mc::load_kv_tile<kBN, KS, kVStride>(a, key_rows, kv0, kr.end, ks, vt, tid, kWaves * kWave);
    __syncthreads();
    if (tile::tile_skipped(wk.seen, kv0, kBN)) continue;  // wave-uniform: none of this wave's rows sees the tile

    f32x16 s{};
#pragma unroll
    for (int j = 0; j < DMAX / KI; ++j)
      if (j < nk) mfma<T>(s, load8(ks + ka.row * KS + KI * j + ka.col), q[j]);

    if (SERVE && bs.mod.on) {  // softcap, ALiBi: on the scaled score, before the mask
#pragma unroll
      for (int i = 0; i < 16; ++i)
        s[i] = bs.mod.apply(s[i] * a.scale_log2, row, kv0 + frag::mfma_32x32x8_c(lane, i).row);
    }
    if (tile::tile_masked(wk.unmasked, kv0, kBN)) {  // the causal diagonal, the window's edge, the range's last tile
      const tile::TileCols cols = tile::tile_cols(tile::row_keys_in(sh, row, kr), kv0, kBN);
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const int k = frag::mfma_32x32x8_c(lane, i).row;
        if (k < cols.lo || k >= cols.hi) s[i] = -INFINITY;
      }
    }
    float tmax = s[0];
#pragma unroll
    for (int i = 1; i < 16; ++i) tmax = fmaxf(tmax, s[i]);
    tmax = fmaxf(tmax, shfl_xor(tmax, 32, kWave));  // the row's other 16 keys: the other half-wave
    const float alpha = tile::softmax_rescale(m, tmax, bs.scale_log2, neg_m);
    float psum = 0.f;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      s[i] = fast_exp2(fmaf(s[i], bs.scale_log2, neg_m));
      psum += s[i];
    }
    l = l * alpha + psum;
#pragma unroll
    for (int db = 0; db < DB; ++db) o[db] *= alpha;

    // O^T += V^T P^T; P rounded to the dtype, or to e4m3fnuz for FP8 (the reference rounds at the
    // same point).
    if constexpr (!T::kFp8) {  // 4 blocks of 8 keys; B slot i is accumulator slot 4 kb + i, key 8 kb + b.row + i
#pragma unroll
      for (int kb = 0; kb < kBN / 8; ++kb) {
        uint32_t pb[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) pb[i] = mc::p_elem<T>(s[frag::mfma_32x32x8_b_from_c(lane, kb, i).slot]);
        const u32x2 p{pb[0] | pb[1] << 16, pb[2] | pb[3] << 16};
#pragma unroll
        for (int db = 0; db < DB; ++db)
          if (db < nd) mfma<T>(o[db], load8(vt + (32 * db + ka.row) * kVStride + 8 * kb + ka.col), p);
      }
    } else {  // 2 blocks of 16 keys; B slot i is accumulator slot 8 kb + i, whose keys V^T is read at
#pragma unroll
      for (int kb = 0; kb < kBN / 16; ++kb) {
        uint32_t pw[2] = {0u, 0u};
#pragma unroll
        for (int i = 0; i < 8; ++i) pw[i / 4] |= mc::p_elem<T>(s[frag::mfma_32x32x16_b8_from_c(lane, kb, i).slot]) << (8 * (i % 4));
        const u32x2 p{pw[0], pw[1]};
        const int k0 = frag::mfma_32x32x8_c(lane, 8 * kb).row, k1 = frag::mfma_32x32x8_c(lane, 8 * kb + 4).row;
#pragma unroll
        for (int db = 0; db < DB; ++db)
          if (db < nd) {
            const E* vrow = vt + (32 * db + ka.row) * kVStride;
            mfma<T, true>(o[db], u32x2{load4(vrow + k0), load4(vrow + k1)}, p);
          }
      }
    }
  }

  l += shfl_xor(l, 32, kWave);
  if (!row_ok) return;
  tile::RowEnd re = tile::row_end(m, l, bs.scale_log2);
  const float inv = T::kFp8 ? re.inv_l * a.v_descale : re.inv_l;  // v's descale (q's and k's are in scale_log2)
  const int64_t o_at = tile::o_row(a, c, row);
#pragma unroll
  for (int db = 0; db < DB; ++db)
#pragma unroll
    for (int i = 0; i < 16; i += 2)
      if (db < nd)
        tile::store_pair<T>(a, c, row, o_at, 32 * db + frag::mfma_32x32x8_c(lane, i).row, o[db][i] * inv, o[db][i + 1] * inv);
  if (lane < 32) tile::store_lse(a, c, row, re.lse);
#else
  (void)a;
#endif
}

// DMAX: the compiled head dim (64, 128, 256); D <= DMAX runs with the 32-dim blocks past D skipped.
// gfx942 (clang-19, device libraries linked): 152 / 232 / 397 VGPRs (arch + AGPR; bf16 alike)
// for DMAX 64 / 128 / 256, no scratch; 152 / 232 / 393 before varlen and window (64-bit tile
// tests cost 8 more; a select between a length in the serving view and AttnArgs.S put both in
// scratch: tile::seq_shape branches instead). Under clang-15 the O^T vectors spilled 192-640 B while
// the epilogue left its unrolled loop with `break`; a guarded body keeps them in registers.
// SERVE: the instance for problems with serving fields (AttnArgs.serving set), as mma's: keys
// through the serving view (pages), softcap/ALiBi (mc::block_scores). The dense instance is the
// kernel as it was (152 / 232 / 397 VGPRs, gfx942 clang-19 as above); SERVE takes 160 / 240 / 402,
// no scratch. FP8 instances exist for archs whose MFMA multiplies FNUZ (gfx94x); elsewhere they trap.
// With FP8 (one body for both; 2026-11-28, emulator build): fp16 152 / 236 / 397 (SERVE 164 / 244 /
// 402), bf16 152 / 232 / 394, FP8 144 / 216 / 360 (SERVE 152 / 224 / 368), no scratch; SGPR spills
// to VGPR lanes grew (0 -> 13-36 at DMAX 128, 4-12 -> 56-68 at 256): untimed, as the kernel is.
template <typename T, int DMAX, bool SERVE>
__global__ void __launch_bounds__(kWaves * kWave) mfma_fwd(AttnArgs a) {
  if constexpr (T::kFp8 && !FA_HAS_MFMA_FP8_FNUZ) {
    (void)a;
    unsupported_arch();
  } else if constexpr (FA_HAS_MFMA_GFX9) {
    mfma_body<T, DMAX, SERVE>(a);
  } else {
    (void)a;
    unsupported_arch();
  }
}

template <typename T, int DMAX>
void launch(const AttnArgs& a, Stream st) {
  const dim3 grid((a.S + kBM - 1) / kBM, a.H, a.B * (a.G > 1 ? a.G : 1));
  if (a.serving) mfma_fwd<T, DMAX, true><<<grid, kWaves * kWave, 0, st>>>(a);
  else mfma_fwd<T, DMAX, false><<<grid, kWaves * kWave, 0, st>>>(a);
  FA_GPU_CHECK_LAUNCH("mfma_fwd");
}

void launch_mfma(const AttnArgs& a, DType t, Stream st) {
  with_fnuz_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    if (a.D <= 64) return launch<T, 64>(a, st);
    if (a.D <= 128) return launch<T, 128>(a, st);
    return launch<T, 256>(a, st);
  });
}

PathRow mfma_row(const DeviceFacts&) {
  PathRow r{"mfma", "gpu", "AMD CDNA MFMA 32x32x8 (FP8 32x32x16) FlashAttention-2: 4 waves of 64, S/P in MFMA registers, split-K",
            "kv_cache: the append runs first; B*G, H <= 65535", false, nullptr,
            [](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<mc::Execution>(p, in, G, ctx, launch_mfma);
            }};
  r.auto_rank = 45;  // the matrix-core path of its arch (compile-verified only: see the README)
  r.tiles = TileShape{128, 32};
  // D: the 64/128/256 instances, 32-key MFMA steps over D (launch_mfma).
  r.fp8_p = DType::fp8_e4m3;  // the e4m3 of the inputs' family: e4m3fnuz (mc::p_elem)
  r.declare(mc::caps(DeviceNeed::mfma_gfx9, HeadDims::range(64, 256, 32), Fp8Formats::fnuz), mc::grid_limits);
  return r;
}
FA_REGISTER_PATH(mfma_row);

}  // namespace
}  // namespace fa::gpu
