// mfma: FlashAttention-2 forward on AMD CDNA MFMA (gfx90a, gfx94x), after FlyDSL #133 / aiter #3581:
// 4 waves of 64, 128 query rows a block (32 a wave), 32 keys a step, v_mfma_f32_32x32x8 for
// S^T = K Q^T and O^T += V^T P^T, so a lane owns one query row's scores and P is the next
// product's B operand in place (frag::mfma_32x32x8_b_from_c). K and V^T tiles in separate LDS.
// Per-sequence lengths (dense or thd) and windows through the shared tile loop: tiles outside a
// wave's keys are skipped, only edge tiles masked. Problems with serving fields run the SERVE
// instance: paged K/V through the page table, softcap and ALiBi on every score (mma's conventions,
// harness/conventions.hpp); kv_cache appends first (mc::Execution). fp16/bf16; D % 32 == 0, 64 <= D <= 256;
// G in 0, 2, 4, 8, 16. Compile- and ISA-checked here
// (scripts/isa-check.sh); untimed and unrun until a CDNA machine passes `ctest -L gpu`.
// fa-bench-isa: gfx942: v_mfma
#include "harness/path_registry.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/amd/matrix_core.hpp"
#include "kernels/amd/matrix_core_host.hpp"

namespace fa::gpu {
namespace {

[[maybe_unused]] constexpr int kBM = 128, kBN = 32, kWaves = 4, kWave = 64, kRows = kBM / kWaves;
// LDS row pads (in 16-bit elements): the K^T fragment reads 8 bytes per lane at key stride D + 4
// (an odd dword pair per row, so 16 consecutive keys cover all 32 banks); V^T rows of 36.
[[maybe_unused]] constexpr int kKPad = 4, kVStride = kBN + 4;

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
  }
  return true;
}
static_assert(layout_as_assumed(), "mfma.hip's loads, stores and P reuse assume this fragment layout");

#if FA_HAS_MFMA_GFX9
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef uint32_t u32x2 __attribute__((ext_vector_type(2)));  // 4 16-bit elements, low half first

template <typename T>
__device__ inline void mfma(f32x16& acc, u32x2 a, u32x2 b) {
  if constexpr (std::is_same_v<T, F16>)
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), acc, 0, 0, 0);
  else
    acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(__builtin_bit_cast(i16x4, a), __builtin_bit_cast(i16x4, b), acc, 0, 0, 0);
}

__device__ inline u32x2 load8(const uint16_t* p) { return *reinterpret_cast<const u32x2*>(p); }
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
__global__ void __launch_bounds__(kWaves * kWave) mfma_fwd(AttnArgs a) {
#if FA_HAS_MFMA_GFX9
  constexpr int KS = DMAX + kKPad, DB = DMAX / 32;
  __shared__ uint16_t ks[kBN * KS], vt[DMAX * kVStride];
  const int tid = threadIdx.x, lane = tid % kWave, wave = tid / kWave;
  const tile::BlockCoords c = tile::block_coords(a, kBM);
  const tile::SeqShape sh = tile::seq_shape(a, c.b);
  const KeyRange kr = tile::block_keys(a, sh, c, kBM, kBN);
  const mc::WaveKeys wk = mc::wave_keys(sh, c.q0 + wave * kRows, kRows, kr);
  const auto key_rows = mc::block_key_rows<SERVE>(a, c);
  const mc::BlockScores bs = mc::block_scores<SERVE>(a, c);
  const int nd = a.D / 32;

  // Q^T as the B operand of S^T = K Q^T, kept in registers: chunk j holds dims 8j + (b.row ..+3).
  // Rows past the sequence's queries are padding: zeros in, nothing stored.
  const frag::Coord qb = frag::mfma_32x32x8_b(lane, 0);
  const int row = c.q0 + wave * kRows + qb.col;  // the query row of this lane's Q^T, S^T and O^T columns
  const bool row_ok = row < sh.sq;
  const uint16_t* qp = a.q + q_at(a, c.b, row_ok ? row : 0, c.h) + qb.row;
  u32x2 q[DMAX / 8];
#pragma unroll
  for (int j = 0; j < DMAX / 8; ++j) q[j] = (row_ok && j < 4 * nd) ? load8(qp + 8 * j) : u32x2{0u, 0u};

  f32x16 o[DB];
#pragma unroll
  for (int db = 0; db < DB; ++db) o[db] = f32x16{};
  float m = -INFINITY, l = 0.f, neg_m = 0.f;  // l: this lane's half of the row's keys
  const frag::Coord ka = frag::mfma_32x32x8_a(lane, 0);

  for (int kv0 = int(kr.begin); kv0 < int(kr.end); kv0 += kBN) {  // keys fit an int (tile_range.hpp)
    __syncthreads();  // the previous tile's readers are done
    mc::load_kv_tile<kBN, KS, kVStride>(a, key_rows, kv0, kr.end, ks, vt, tid, kWaves * kWave);
    __syncthreads();
    if (tile::tile_skipped(wk.seen, kv0, kBN)) continue;  // wave-uniform: none of this wave's rows sees the tile

    f32x16 s{};
#pragma unroll
    for (int j = 0; j < DMAX / 8; ++j)
      if (j < 4 * nd) mfma<T>(s, load8(ks + ka.row * KS + 8 * j + ka.col), q[j]);

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

    // O^T += V^T P^T over the tile's 4 blocks of 8 keys; P rounded to the dtype (the reference
    // rounds at the same point).
#pragma unroll
    for (int kb = 0; kb < kBN / 8; ++kb) {
      uint16_t pb[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) pb[i] = T::store(s[frag::mfma_32x32x8_b_from_c(lane, kb, i).slot]);
      const u32x2 p{pb[0] | uint32_t(pb[1]) << 16, pb[2] | uint32_t(pb[3]) << 16};
#pragma unroll
      for (int db = 0; db < DB; ++db)
        if (db < nd) mfma<T>(o[db], load8(vt + (32 * db + ka.row) * kVStride + 8 * kb + ka.col), p);
    }
  }

  l += shfl_xor(l, 32, kWave);
  if (!row_ok) return;
  const tile::RowEnd re = tile::row_end(m, l, bs.scale_log2);
  const int64_t o_at = tile::o_row(a, c, row);
#pragma unroll
  for (int db = 0; db < DB; ++db)
#pragma unroll
    for (int i = 0; i < 16; i += 2)
      if (db < nd)
        tile::store_pair<T>(a, c, row, o_at, 32 * db + frag::mfma_32x32x8_c(lane, i).row, o[db][i] * re.inv_l,
                            o[db][i + 1] * re.inv_l);
  if (lane < 32) tile::store_lse(a, c, row, re.lse);
#else
  (void)a;
  unsupported_arch();
#endif
}

template <typename T, int DMAX>
void launch(const AttnArgs& a, Stream st) {
  const dim3 grid((a.S + kBM - 1) / kBM, a.H, a.B * (a.G > 1 ? a.G : 1));
  if (a.serving) mfma_fwd<T, DMAX, true><<<grid, kWaves * kWave, 0, st>>>(a);
  else mfma_fwd<T, DMAX, false><<<grid, kWaves * kWave, 0, st>>>(a);
  FA_GPU_CHECK_LAUNCH("mfma_fwd");
}

void launch_mfma(const AttnArgs& a, DType t, Stream st) {
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    if (a.D <= 64) return launch<T, 64>(a, st);
    if (a.D <= 128) return launch<T, 128>(a, st);
    return launch<T, 256>(a, st);
  });
}

PathRow mfma_row(const DeviceFacts&) {
  PathRow r{"mfma", "gpu", "AMD CDNA MFMA 32x32x8 FlashAttention-2: 4 waves of 64, S/P in MFMA registers, split-K",
            "kv_cache: the append runs first; B*G, H <= 65535", false, nullptr,
            [](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<mc::Execution>(p, in, G, ctx, launch_mfma);
            }};
  r.auto_rank = 45;  // the matrix-core path of its arch (compile-verified only: see the README)
  r.tiles = TileShape{128, 32};
  // D: the 64/128/256 instances, 32-key MFMA steps over D (launch_mfma).
  r.declare(mc::caps(DeviceNeed::mfma_gfx9, HeadDims::range(64, 256, 32)), mc::grid_limits);
  return r;
}
FA_REGISTER_PATH(mfma_row);

}  // namespace
}  // namespace fa::gpu
