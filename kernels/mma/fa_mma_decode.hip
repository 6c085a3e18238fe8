// mma-decode: flash-decoding on NVIDIA tensor cores (sm80+) for S * (H / Hk) <= 16 — decode
// steps and short query blocks. One block per (kv head, key chunk, batch); the query heads of the
// GQA group and the S query rows are packed into one 16-row mma tile (row = head_in_group * S + s),
// so K and V are read once per group (at group x S <= 8, dense: the transposed products, 8 rows in
// the MMA's N; see NARROW below). Each warp streams its own tiles of the chunk (tiles w,
// w + WARPS, ...) through a private cp.async ring and keeps its own online softmax; the warps
// fold their states through shared memory, and chunks write fp32 partials; the last block of a
// (batch, kv head) to finish folds them (kernels/mma/decode_fold.hpp) in the same launch.
// Chunks: one wave of blocks (occupancy x SMs / (B x Hk)), reported as G_used. `mma` runs this
// kernel on decode-shaped problems too, with its G as the chunk count (kernels/mma/fa_mma.hip). On sm_90
// (sm_90a code built), dense fp16/bf16 problems at D 64 and 128 fill the rings through the TMA
// instead of cp.async (use_tma; the stream's steps: kernels/mma/decode_stream_sm90.hpp).
// fa-bench-isa: sm_90a: mma.sync.aligned.m16n8k16 cp.async.bulk.tensor mbarrier movmatrix.sync.aligned.m8n8.trans.b16
// fa-bench-isa: sm_90a.sass: HMMA UTMALDG
// fa-bench-isa-each: sm_90a: mma_decode_fwd: mma.sync.aligned.m16n8k16
#include <fmt/format.h>

#include <algorithm>

#include "harness/path_registry.hpp"
#include "kernels/mma/decode_fold.hpp"
#include "kernels/mma/decode_stream_sm90.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"
#include "kernels/mma/mma_sm80.hpp"
#include "kernels/device/tile_loop.hpp"
#include "kernels/mma/ws_layout.hpp"
#include "kernels/mma/fa_mma_decode_traits.hpp"
#include "kernels/mma/tensor_map.hpp"

namespace fa::gpu {
namespace {

using mma_decode::decode_head_dims;
using mma_decode::with_traits;

// SERVE: the instance for problems with serving fields (per-sequence key counts, paged K/V, window,
// ALiBi, softcap): the chunks cut the keys some row of the sequence sees (rows_keys), each key's row
// is found through the serving view (k_at: the page table), and edge tiles are masked per row.
// TMA (sm_90, dense only): the warps' rings fill through the TMA on mbarriers, not through cp.async
// (see the traits rows below for what it gained).
// NARROW (dense, group x S <= 8): the transposed products S^T = K Q^T and O^T = V^T P^T, whose
// m16n8k16 tiles hold 8 query rows in N where the others hold 16 in M: half the MMAs, half the
// accumulator. The scores' C layout turns into P^T's B layout through movmatrix (8x8 transposes).
template <typename T, typename K, bool SERVE, bool TMA, bool NARROW = false>
__global__ void __launch_bounds__(K::THREADS)
    mma_decode_fwd(const FA_GRID_CONSTANT DecodeMaps maps, AttnArgs a, int chunk_keys, int* counters) {
  static_assert(!(SERVE && TMA), "the TMA stream reads dense K/V");
  static_assert(!(SERVE && NARROW), "the narrow instances mask dense rows");
#if FA_HAS_MMA_SM80
  extern __shared__ __align__(16) uint16_t smem[];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // The grid is (Hk, chunks, B): blocks start in that order, the kv heads of a chunk side by side.
  // At D=64 two heads' 128-byte rows share each 256-byte line that the stream's L2 promotion
  // fetches; with the chunks first, a neighbour's half was often evicted before its block read it
  // (H100, (1,32,8,1,131072,64): 278-290 MB read from DRAM for 268.5 MB of K and V).
  const int hk = blockIdx.x, chunk = blockIdx.y, b = blockIdx.z;
  const int group = a.H / a.Hk, rows = group * a.S;
  tile::SeqShape sh{};
  KeyRange ck{};  // SERVE: the chunk's keys
  KeyRange unmasked{};
  int64_t k_begin = int64_t(chunk) * chunk_keys, k_end = min(k_begin + chunk_keys, int64_t(a.Sk));
  if constexpr (SERVE) {
    sh = tile::seq_shape(a, b);
    const KeyRange u = tile::rows_keys(sh, 0, a.S);
    k_begin = min(u.begin + int64_t(chunk) * chunk_keys, u.end);
    k_end = min(k_begin + chunk_keys, u.end);
    ck = KeyRange{k_begin, k_end};
    unmasked = tile::rows_unmasked(sh, 0, a.S, ck);
  }
  const bool transform = SERVE && transforms_scores(a);
  const float scale_log2 = SERVE ? serve_scale(a, transform) : a.scale_log2;
  const int ntiles = int((k_end - k_begin + K::BN - 1) / K::BN);
  const uint16_t* kg = a.k + b * a.k_sb + hk * a.k_sh;
  const uint16_t* vg = a.v + b * a.k_sb + hk * a.k_sh;
  // The query position s of packed row r; s = S marks a padding row.
  auto query_pos = [&](int r) { return r < rows ? r % a.S : a.S; };
  // The query position s of the two packed rows this lane holds (C layout rows lane/4 and lane/4 + 8).
  int row_s[2], row_h[2];
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int r = frag::mma_m16n8k16_c(lane, 2 * hr).row;
    row_s[hr] = query_pos(r);
    row_h[hr] = hk * group + (r < rows ? r / a.S : 0);
  }
  ScoreMod mod[2];  // SERVE: each row's head's softcap and ALiBi, read once
  if constexpr (SERVE)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) mod[hr] = score_mod(a, b, row_h[hr]);

  uint16_t* const ring = smem + warp * K::WARP_ELEMS;
  const int r0 = lane / K::CPR, ch = lane % K::CPR;
  const KeyRows key_row = SERVE ? key_rows(a, b, hk) : KeyRows{};
  // TMA: the warp's K and V slots and their mbarriers (K's, then V's). The warp's tile i sits in K
  // slot i % TK and V slot i % TV (the loop carries both and their phases); a slot is refilled once
  // the MMAs that read it are issued (NARROW: they read the tile's fragments, taken out of the slot
  // first), so that the refill's fence finds the slot's reads done.
  const uint32_t tbase = (smem_addr(smem) + uint32_t(ws::kSmemAlign - 1)) & ~uint32_t(ws::kSmemAlign - 1);
  const uint32_t tring = tbase + uint32_t(warp * (K::TK + K::TV) * K::TILE_BYTES);
  const uint32_t tbar = tbase + uint32_t(K::RINGS_BYTES + warp * (K::TK + K::TV) * 8);
  auto tkey = [&](int i) { return int(k_begin) + (warp + i * K::WARPS) * K::BN; };
  auto v_slot = [&](uint32_t q) { return K::TK + q; };  // V's slot q among the warp's TK + TV (K's: q)
  auto load_k = [&](int i, uint32_t q) {  // the warp's tile i into K slot q
    if (lane == 0) tma_load_tile<K>(maps.k, tring + q * K::TILE_BYTES, tbar + 8 * q, tkey(i), hk, b);
  };
  auto load_v = [&](int i, uint32_t q) {
    if (lane == 0) tma_load_tile<K>(maps.v, tring + v_slot(q) * K::TILE_BYTES, tbar + 8 * v_slot(q), tkey(i), hk, b);
  };
  if constexpr (TMA) {
    if (lane == 0) tma_stages_init(tbar, K::TK + K::TV);
    __syncwarp();
  }
  auto load_tile = [&](int i) {  // the warp's i-th tile (chunk tile warp + i * WARPS), cp.async
    uint16_t* ks = ring + (i % K::STAGES) * 2 * K::BN * K::LD + r0 * K::LD + ch * 8;
    uint16_t* vs = ks + K::BN * K::LD;
    const int64_t kv0 = k_begin + int64_t(warp + i * K::WARPS) * K::BN;
#pragma unroll
    for (int p = 0; p < K::BN / K::RPP; ++p) {
      const int64_t key = kv0 + r0 + p * K::RPP;
      const bool in = key < k_end;
      if constexpr (SERVE) {  // the key's row through the serving view (the page table)
        const int64_t at = in ? key_row.at(key) + ch * 8 : 0;
        copy16_async<128>(ks + p * K::RPP * K::LD, a.k + at, in);
        copy16_async<128>(vs + p * K::RPP * K::LD, a.v + at, in);
      } else {
        const int64_t off = (in ? key : 0) * a.k_ss + ch * 8;
        copy16_async<128>(ks + p * K::RPP * K::LD, kg + off, in);  // K/V stream once: fetch whole lines
        copy16_async<128>(vs + p * K::RPP * K::LD, vg + off, in);
      }
    }
  };
  const int mine = ntiles > warp ? (ntiles - warp + K::WARPS - 1) / K::WARPS : 0;
  if constexpr (TMA) {  // every slot takes a tile at once
#pragma unroll
    for (int i = 0; i < K::TK; ++i)
      if (i < mine) load_k(i, i);
#pragma unroll
    for (int i = 0; i < K::TV; ++i)
      if (i < mine) load_v(i, i);
  } else {
#pragma unroll
    for (int i = 0; i < K::STAGES - 1; ++i) {
      if (i < mine) load_tile(i);
      copy_async_commit();
    }
  }

  // Q as the A operand, straight from global memory (padding rows are 0), once the first tiles are on
  // their way: the mbarriers' init fence comes before the first TMA copy, and Q's loads need not.
  // NARROW: Q^T as the B operand (k = column, n = packed row).
  constexpr int QREGS = NARROW ? 2 : 4;
  uint32_t qf[K::KD][QREGS];
#pragma unroll
  for (int kk = 0; kk < K::KD; ++kk)
#pragma unroll
    for (int i = 0; i < QREGS; ++i) {
      const frag::Coord e = NARROW ? frag::mma_m16n8k16_b(lane, 2 * i) : frag::mma_m16n8k16_a(lane, 2 * i);
      const int r = NARROW ? e.col : e.row, col = NARROW ? e.row : e.col;
      qf[kk][i] = r < rows ? *reinterpret_cast<const uint32_t*>(a.q + b * a.q_sb + int64_t(r % a.S) * a.q_ss +
                                                                  (hk * group + r / a.S) * a.q_sh + kk * 16 + col)
                           : 0u;
    }
  // NARROW: the query position of this lane's two columns 2 (lane % 4) + e.
  const int col_s[2] = {query_pos(frag::mma_m16n8k16_c(lane, 0).col), query_pos(frag::mma_m16n8k16_c(lane, 1).col)};

  // The accumulator: O's 16 rows x D (8-column blocks), or NARROW O^T's D rows (16-row blocks) x 8.
  float acc[NARROW ? K::KD : K::DT][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const int b_row = (lane / 16) * 8 + lane % 8, b_col = ((lane / 8) % 2) * 8;  // as in mma.hip
  const int v_row = ((lane / 8) % 2) * 8 + lane % 8, v_col = (lane / 16) * 8;
  // NARROW: K as the A operand (ldmatrix); V^T as the A operand is V's 16x16 block transposed,
  // its four 8x8 matrices at (b_row, b_col).
  const int a_row = lane % 16, a_col = (lane / 16) * 8;
  uint32_t kq = 0, kph = 0, vq = 0, vph = 0;  // TMA: tile i's K and V slots (i % TK, i % TV) and phases
  for (int i = 0; i < mine; ++i) {
    if constexpr (TMA) {
      tma_stage_wait(tbar + 8 * kq, kph);
    } else {
      copy_async_wait<K::STAGES - 2>();
      __syncwarp();  // every lane's copies of tile i are visible; tile i - 1's stage is free
      if (i + K::STAGES - 1 < mine) load_tile(i + K::STAGES - 1);
      copy_async_commit();
    }
    const uint16_t* ks = ring + (i % K::STAGES) * 2 * K::BN * K::LD;
    const uint16_t* vs = ks + K::BN * K::LD;
    const uint32_t kt = tring + kq * K::TILE_BYTES, vt = tring + v_slot(vq) * K::TILE_BYTES;
    // The shared address of (key row r, column c) of the stage's K or V: padded rows, or the TMA's swizzle.
    auto k_at = [&](int r, int c) {
      return TMA ? kt + uint32_t(ws::sw_offset(r, c, K::BN, K::SW)) : smem_addr(ks + r * K::LD + c);
    };
    auto v_at = [&](int r, int c) {
      return TMA ? vt + uint32_t(ws::sw_offset(r, c, K::BN, K::SW)) : smem_addr(vs + r * K::LD + c);
    };
    const int64_t kv0 = k_begin + int64_t(warp + i * K::WARPS) * K::BN;
    // TMA: the MMAs that read tile i's K are issued: its slot takes tile i + TK's
    auto k_done = [&] {
      if constexpr (TMA)
        if (i + K::TK < mine) {
          tma_reads_done();
          load_k(i + K::TK, kq);
        }
    };
    auto v_wait = [&] {  // TMA: tile i's V has landed
      if constexpr (TMA) tma_stage_wait(tbar + 8 * v_slot(vq), vph);
    };
    auto v_done = [&] {  // TMA: the same for V: its slot takes tile i + TV's
      if constexpr (TMA)
        if (i + K::TV < mine) {
          tma_reads_done();
          load_v(i + K::TV, vq);
        }
    };

    if constexpr (NARROW) {
      // S^T (keys x 8 rows): two accumulators over alternate k steps, for two chains of MMAs a block.
      // The tile's K fragments (64 registers) come out of the slot first, the MMAs are issued, and
      // then the slot is refilled: its fence then finds the reads done, and the MMAs run under it;
      // the same for V and PV. What the early refill and a lighter tile gained on the H100 (little:
      // the tile's work is not what holds the stream back) is in the traits header's history.
      float s[K::KN][4] = {}, s2[K::KN][4] = {};
      uint32_t ka[K::KD][K::KN][4];
#pragma unroll
      for (int kk = 0; kk < K::KD; ++kk)
#pragma unroll
        for (int mt = 0; mt < K::KN; ++mt) ldsm_x4(k_at(mt * 16 + a_row, kk * 16 + a_col), ka[kk][mt]);
#pragma unroll
      for (int kk = 0; kk < K::KD; ++kk)
#pragma unroll
        for (int mt = 0; mt < K::KN; ++mt) mma16816<T>(kk % 2 ? s2[mt] : s[mt], ka[kk][mt], qf[kk][0], qf[kk][1]);
      k_done();
#pragma unroll
      for (int mt = 0; mt < K::KN; ++mt)
#pragma unroll
        for (int j = 0; j < 4; ++j) s[mt][j] += s2[mt][j];
      // Slot j of block mt: key mt * 16 + lane / 4 + 8 (j / 2), column j % 2 of the lane's two.
      if (kv0 + K::BN > k_end || (a.causal && a.S > 1)) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int n = tile::tile_cols_visible(a, col_s[e], kv0, k_end, K::BN);
#pragma unroll
          for (int mt = 0; mt < K::KN; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h)
              if (frag::mma_m16n8k16_c(lane, 2 * h).row + 16 * mt >= n) s[mt][2 * h + e] = -INFINITY;
        }
      }
      float alpha[2];
      if (softmax_cols_lazy<K::KN>([&](int e, int mt, int h) -> float& { return s[mt][2 * h + e]; }, m, l,
                                   scale_log2, alpha)) {
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
          for (int dm = 0; dm < K::KD; ++dm) acc[dm][e] *= alpha[e], acc[dm][2 + e] *= alpha[e];
      }
      // O^T += V^T P^T: P^T's k step kn is S^T's block kn, its two 8x8 halves transposed.
      v_wait();
      uint32_t va[K::KN][K::KD][4];
#pragma unroll
      for (int kn = 0; kn < K::KN; ++kn)
#pragma unroll
        for (int dm = 0; dm < K::KD; ++dm) ldsm_x4_trans(v_at(kn * 16 + b_row, dm * 16 + b_col), va[kn][dm]);
#pragma unroll
      for (int kn = 0; kn < K::KN; ++kn) {
        const uint32_t p0 = movmatrix_trans(pack2<T>(s[kn][0], s[kn][1]));
        const uint32_t p1 = movmatrix_trans(pack2<T>(s[kn][2], s[kn][3]));
#pragma unroll
        for (int dm = 0; dm < K::KD; ++dm) mma16816<T>(acc[dm], va[kn][dm], p0, p1);
      }
      v_done();
    } else {
      float s[K::NT][4] = {};
#pragma unroll
      for (int kk = 0; kk < K::KD; ++kk)
#pragma unroll
        for (int np = 0; np < K::NT / 2; ++np) {
          uint32_t kb[4];
          ldsm_x4(k_at(np * 16 + b_row, kk * 16 + b_col), kb);
          mma16816<T>(s[2 * np], qf[kk], kb[0], kb[1]);
          mma16816<T>(s[2 * np + 1], qf[kk], kb[2], kb[3]);
        }
      k_done();
      if constexpr (SERVE) {
        if (transform || tile::tile_masked(unmasked, int(kv0), K::BN)) {  // scores transformed, or an edge tile
#pragma unroll
          for (int hr = 0; hr < 2; ++hr)
            serve_quad_row<K::NT>([&](int nt, int e) -> float& { return s[nt][2 * hr + e]; }, lane, a.scale_log2,
                                  mod[hr], row_s[hr], int(kv0),
                                  tile::tile_cols(tile::row_keys_in(sh, row_s[hr], ck), int(kv0), K::BN));
        }
      } else if (kv0 + K::BN > k_end || (a.causal && a.S > 1)) {  // the chunk's end, or a causal short block
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          mask_quad_row<K::NT>([&](int nt, int e) -> float& { return s[nt][2 * hr + e]; }, lane,
                               tile::tile_cols_visible(a, row_s[hr], kv0, k_end, K::BN));
        }
      }
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const float alpha = softmax_quad_row<K::NT>([&](int nt, int e) -> float& { return s[nt][2 * hr + e]; },
                                                    m[hr], l[hr], scale_log2);
#pragma unroll
        for (int dt = 0; dt < K::DT; ++dt) acc[dt][2 * hr] *= alpha, acc[dt][2 * hr + 1] *= alpha;
      }
      v_wait();
#pragma unroll
      for (int kn = 0; kn < K::KN; ++kn) {
        const uint32_t pa[4] = {pack2<T>(s[2 * kn][0], s[2 * kn][1]), pack2<T>(s[2 * kn][2], s[2 * kn][3]),
                                pack2<T>(s[2 * kn + 1][0], s[2 * kn + 1][1]),
                                pack2<T>(s[2 * kn + 1][2], s[2 * kn + 1][3])};
#pragma unroll
        for (int dp = 0; dp < K::DT / 2; ++dp) {
          uint32_t vb[4];
          ldsm_x4_trans(v_at(kn * 16 + v_row, dp * 16 + v_col), vb);
          mma16816<T>(acc[2 * dp], pa, vb[0], vb[1]);
          mma16816<T>(acc[2 * dp + 1], pa, vb[2], vb[3]);
        }
      }
      v_done();
    }
    if constexpr (TMA) {  // tile i + 1's slots
      if (++kq == K::TK) kq = 0, kph ^= 1u;
      if (++vq == K::TV) vq = 0, vph ^= 1u;
    }
  }
  if constexpr (!TMA) copy_async_wait<0>();  // TMA: every tile's mbarrier was waited on above
  __syncthreads();  // every warp is done with its ring: the shared memory now holds the fold

  // Fold the warps: per warp, 16 rows of acc (D floats) then m and l of the 16 rows.
  float* const fold = reinterpret_cast<float*>(smem);
  float* const mine_acc = fold + warp * K::FOLD_WARP;
  if constexpr (NARROW) {  // column e of the lane's two: row 2 (lane % 4) + e of O
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float lsum = l[e];
      lsum += shfl_xor(lsum, 4, 32);
      lsum += shfl_xor(lsum, 8, 32);
      lsum += shfl_xor(lsum, 16, 32);
      const int r = frag::mma_m16n8k16_c(lane, e).col;
#pragma unroll
      for (int dm = 0; dm < K::KD; ++dm)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          mine_acc[r * K::D + dm * 16 + frag::mma_m16n8k16_c(lane, 2 * h).row] = acc[dm][2 * h + e];
      if (lane < 4) {
        mine_acc[16 * K::D + r] = m[e];
        mine_acc[16 * K::D + 16 + r] = lsum;
      }
    }
  } else {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float lsum = l[hr];
      lsum += shfl_xor(lsum, 1, 4);
      lsum += shfl_xor(lsum, 2, 4);
      const frag::Coord at = frag::mma_m16n8k16_c(lane, 2 * hr);
#pragma unroll
      for (int dt = 0; dt < K::DT; ++dt)
        *reinterpret_cast<float2*>(mine_acc + at.row * K::D + dt * 8 + at.col) =
            make_float2(acc[dt][2 * hr], acc[dt][2 * hr + 1]);
      if (lane % 4 == 0) {
        mine_acc[16 * K::D + at.row] = m[hr];
        mine_acc[16 * K::D + 16 + at.row] = lsum;
      }
    }
  }
  __syncthreads();
  decode_fold_store<T, K>(a, reinterpret_cast<const float*>(smem), b, hk, chunk, scale_log2, counters);
#else
  unsupported_arch();  // built for an arch without mma.sync: the gate refuses such devices
#endif
}

// The keys the chunks cut: the most some sequence's rows see together (the union of the S rows'
// keys under causal and window, per sequence's own key count); Sk for a dense problem.
int64_t decode_span(const Problem& p) {
  if (p.serving_fields().empty()) return p.Sk;
  int64_t span = 0;
  for (int64_t b = 0; b < p.B; ++b) {
    const KeyRange first = p.row_keys(b, 0), last = p.row_keys(b, p.S - 1);
    span = std::max(span, std::max(last.end, first.end) - std::min(first.begin, last.begin));
  }
  return std::max<int64_t>(span, 1);
}

// Whether the device runs the TMA stream: sm_90 with sm_90a code built (use_tma adds the problem's
// conditions). Elsewhere the TMA instances are neither launched nor prepared: their shared memory
// (197 KB at D=128) passes what an A100 (163 KB) or an sm_89 part grants a block.
bool tma_device(const DeviceFacts& device) { return kBuiltSm90a && device.has_wgmma_sm90a; }

// Blocks of the kernel for (dtype, D) one SM holds; its dynamic shared memory is raised first.
// Where the TMA stream runs, the fewer of the cp.async and TMA instances' (one count, whichever a
// run launches; the traits rows give both the same). Counted on the 16-row instances: the narrow
// ones take the same shared memory and fewer registers.
template <typename T, typename K>
int decode_resident(const DeviceFacts& device) {
  FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, false, false>, K::SMEM));
  FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, true, false>, K::SMEM));
  FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, false, false, true>, K::SMEM));
  int per_sm = 0;
  FA_GPU_CHECK(max_active_blocks(&per_sm, mma_decode_fwd<T, K, false, false>, K::THREADS, K::SMEM));
  if constexpr (K::TMA_STREAM) {  // a constexpr test: D = 256's TMA instance is never instantiated
    if (tma_device(device)) {
      FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, false, true>, K::TMA_SMEM));
      FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, false, true, true>, K::TMA_SMEM));
      int tma_per_sm = 0;
      FA_GPU_CHECK(max_active_blocks(&tma_per_sm, mma_decode_fwd<T, K, false, true>, K::THREADS, K::TMA_SMEM));
      per_sm = std::min(per_sm, tma_per_sm);
    }
  }
  return std::max(per_sm, 1);
}

// The keys a chunk holds when the span is cut into `chunks` (at least 1): whole tiles, at least one
// per warp, so a short span runs fewer chunks than asked (chunks_of says how many).
template <typename K>
int chunk_keys_for(const Problem& p, int64_t chunks) {
  chunks = std::max<int64_t>(chunks, 1);
  const int64_t min_keys = int64_t(K::WARPS) * K::BN;
  const int64_t per = (decode_span(p) + chunks - 1) / chunks;
  return int(std::max(min_keys, (per + K::BN - 1) / K::BN * K::BN));
}
int chunks_of(const Problem& p, int chunk_keys) { return int((decode_span(p) + chunk_keys - 1) / chunk_keys); }

// The keys a chunk holds. splits = 0: one wave of blocks, the occupancy-sized count of resident
// blocks over B x Hk (the decode-occupancy rule, mma-decode's own); splits > 0: the keys cut into
// that many chunks (mma's G, where mma runs this kernel). Either way the kernel's shared-memory
// limit is raised here, before any launch: an --isolate child prepares and launches with nothing
// else having done so.
int decode_chunk_keys(const Problem& p, DType t, const DeviceFacts& device, int splits) {
  int keys = 0;
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    with_traits(int(p.D), [&](auto k) {
      using K = decltype(k);
      const int64_t slots = int64_t(decode_resident<T, K>(device)) * std::max(device.units, 1);
      keys = chunk_keys_for<K>(p, splits > 0 ? splits : slots / (p.B * p.Hk));
    });
  });
  return keys;
}

// K's (and V's) tile as the TMA stream reads it: BN key rows of one head and batch, its 64-column
// blocks in one box.
template <typename K>
ws::TmaTile decode_kv_tile(const AttnArgs& a) {
  return ws::tma_tile_one_copy(ws::tma_tile(K::D, K::BN, a.Sk, a.Hk, a.B, a.k_ss, a.k_sh, a.k_sb));
}
// Whether a run streams K/V through the TMA: sm_90 with sm_90a code built, a dense fp16/bf16 problem
// whose K and V the TMA can describe (strides, 16-byte aligned bases) and whose key coordinate fits
// the TMA's int. Elsewhere cp.async.
bool use_tma(const Problem& p, const AttnArgs& a, const DeviceFacts& device) {
  if (!tma_device(device) || !p.serving_fields().empty()) return false;
  if ((p.dtype != DType::fp16 && p.dtype != DType::bf16) || p.Sk > INT32_MAX) return false;
  bool fits = false;
  with_traits(p.D, [&](auto k) {
    using K = decltype(k);
    fits = K::TMA_STREAM && !ws::tma_tile_problem(decode_kv_tile<K>(a));
  });
  return fits && reinterpret_cast<uintptr_t>(a.k) % 16 == 0 && reinterpret_cast<uintptr_t>(a.v) % 16 == 0;
}

class MmaDecodeExecution : public GpuExecution {
 public:
  MmaDecodeExecution(const Problem& p, const HostInputs& in, const GateContext& ctx, int chunk_keys)
      : GpuExecution(p, in, ctx, chunks_of(p, chunk_keys)), chunk_keys_(chunk_keys), chunks_(chunks_of(p, chunk_keys)) {
    args_.G = chunks_ > 1 ? chunks_ : 0;
    if (chunks_ > 65535)  // the grid's y; the gates keep it far below (mma: B x G <= 65535; else one wave)
      throw std::logic_error(fmt::format("mma-decode: {} key chunks exceed the grid", chunks_));
    if (args_.G > 1) {  // one arrival count a (batch, kv head), zero between launches
      counters_ = DeviceBuffer(size_t(p.B) * p.Hk * sizeof(int));
      FA_GPU_CHECK(memset_async(counters_.as<int>(), 0, counters_.bytes(), stream_));
    }
    tma_ = use_tma(p, args_, ctx.device);
    if (tma_)
      with_traits(args_.D, [&](auto k) {
        const ws::TmaTile kv = decode_kv_tile<decltype(k)>(args_);
        maps_ = DecodeMaps{encode_map(p.dtype, args_.k, kv, "K", 256), encode_map(p.dtype, args_.v, kv, "V", 256)};
      });
  }

 protected:
  int g_used() const override { return chunks_; }
  void launch() override {
    append_kv();  // kv_cache: the new tokens into their slots first
    with_dtype(p_.dtype, [&](auto tr) {
      using T = decltype(tr);
      with_traits(args_.D, [&](auto k) {
        using K = decltype(k);
        const dim3 grid(args_.Hk, chunks_, args_.B);
        const int64_t rows = args_.S * (args_.H / args_.Hk);
        if (args_.serving)
          mma_decode_fwd<T, K, true, false>
              <<<grid, K::THREADS, K::SMEM, stream_>>>(maps_, args_, chunk_keys_, counters_.as<int>());
        else if (rows <= 8)
          launch_dense<T, K, true>(grid);
        else
          launch_dense<T, K, false>(grid);
        FA_GPU_CHECK_LAUNCH("mma_decode_fwd");
      });
    });
  }
  // A dense problem's instance: through the TMA where it runs, else cp.async; NARROW at S x group <= 8.
  // The TMA instance goes out in 2-block clusters along x (kv heads h and h + 1 of a chunk, on one
  // GPC) where Hk is even. H100, one call, alternated: (16,32,8,1,8192,128) 3042.2 -> 3065.0 GB/s
  // (16 samples a side; cuDNN 3055.9), (1,32,8,1,131072,128) 2994.7 -> 3016.4 (2 a side), D=64 rows
  // +0.4-0.7%. The stream probe gained 0.3-0.4% so, and lost 4-14% with clusters of 4 or 8; why
  // pairs pay is not pinned down (README, 2026-11-27, session 19).
  template <typename T, typename K, bool NARROW>
  void launch_dense(dim3 grid) {
    if (tma_ && K::TMA_STREAM)
      FA_GPU_CHECK(launch_clusters(mma_decode_fwd<T, K, false, K::TMA_STREAM, NARROW>, grid, dim3(K::THREADS),
                                   K::smem(K::TMA_STREAM), stream_, grid.x % 2 == 0 ? 2u : 1u, maps_, args_,
                                   chunk_keys_, counters_.as<int>()));
    else
      mma_decode_fwd<T, K, false, false, NARROW>
          <<<grid, K::THREADS, K::SMEM, stream_>>>(maps_, args_, chunk_keys_, counters_.as<int>());
  }

 private:
  int chunk_keys_, chunks_;
  DeviceBuffer counters_;
  bool tma_ = false;
  DecodeMaps maps_{};
};

// What mma-decode takes: every serving field but the query lengths and thd (its rows are the S
// dense queries of every head of a group), kv_cache (the append runs first), G = 0 (it sizes its own
// key chunks, reported as G_used).
Capabilities mma_decode_caps() {
  Capabilities c = gpu_caps();
  c.device = DeviceNeed::mma_sm80;
  c.head_dims = decode_head_dims();
  c.serving = {ServingField::seqlens_k, ServingField::page_size, ServingField::window, ServingField::alibi,
               ServingField::softcap};
  c.kv_cache = KvCache::takes;
  return c;
}

std::optional<std::string> mma_decode_limits(const Problem& p, int, const GateContext&) {
  if (p.S * p.group_size() > 16)
    return fmt::format("mma-decode packs S x H/Hk <= 16 query rows into a tile (got {})", p.S * p.group_size());
  if (p.Hk > 65535 || p.B > 65535) return std::string("Hk or B exceeds the grid");
  return std::nullopt;
}

const Gate& mma_decode_supports() {
  static const Gate gate = gated("mma-decode", mma_decode_caps(), mma_decode_limits);
  return gate;
}

}  // namespace

bool packs_gqa_decode(const Problem& p, const DeviceFacts& device) {
  return !mma_decode_supports()(p, 0, GateContext{device});  // its own gate, at its own G
}

TileShape packed_decode_tile(const Problem& p, const DeviceFacts& device) {
  TileShape tile{16, 32, 1, int(p.group_size())};
  with_dtype(p.dtype, [&](auto tr) {
    with_traits(int(p.D), [&](auto k) {
      using K = decltype(k);
      tile.block_n = K::BN;
      tile.resident = decode_resident<decltype(tr), K>(device);
    });
  });
  return tile;
}

int packed_decode_chunks(const Problem& p, int splits) {
  int chunks = 1;
  with_traits(int(p.D), [&](auto k) { chunks = chunks_of(p, chunk_keys_for<decltype(k)>(p, splits)); });
  return chunks;
}

std::unique_ptr<Execution> make_packed_decode(const Problem& p, const HostInputs& in, const GateContext& ctx,
                                              int splits) {
  return std::make_unique<MmaDecodeExecution>(p, in, ctx,
                                              decode_chunk_keys(p, p.dtype, ctx.device, std::max(splits, 1)));
}

namespace {

PathRow mma_decode_row(const DeviceFacts&) {
  PathRow r{"mma-decode", "gpu",
            "flash-decoding on tensor cores: the GQA group x S packed into one 16-row tile, key chunks + combine",
            "S*H/Hk <= 16; own key chunks (G_used); Hk, B <= 65535", false, nullptr,
            [](const Problem& p, const HostInputs& in, int, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<MmaDecodeExecution>(p, in, ctx,
                                                          decode_chunk_keys(p, p.dtype, ctx.device, 0));
            }};
  r.auto_rank = 55;  // S*H/Hk <= 16: reads K/V once per group on tensor cores, ahead of the scalar decode
  r.tiles = TileShape{16, 32};
  r.tile_at = [](const Problem& p, int, const DeviceFacts& d) { return packed_decode_tile(p, d); };
  r.own_split_rule = kDecodeSplitRule;
  r.rz_accumulate_keys = 16;  // PV through m16n8k16: a truncating fp32 add every 16 keys of a chunk
  r.declare(mma_decode_caps(), mma_decode_limits);
  return r;
}
FA_REGISTER_PATH(mma_decode_row);

}  // namespace
}  // namespace fa::gpu
