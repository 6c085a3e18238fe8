// mma-decode's kernel (mma_decode_fwd; the design is kernels/mma/fa_mma_decode.hip's opening
// comment): one block per (kv head, key chunk, batch), the GQA group's query rows packed into one
// 16-row mma.sync tile, a cp.async or TMA ring per warp, the warps' states folded through shared
// memory and the chunks' partials by the last block (decode_fold.hpp). Included by
// fa_mma_decode.hip alone, hence the unnamed namespace: one translation unit, as before the split.
#pragma once
#include "kernels/device/fragment_layout.hpp"
#include "kernels/device/tile_loop.hpp"
#include "kernels/mma/decode_fold.hpp"
#include "kernels/mma/decode_stream_sm90.hpp"
#include "kernels/mma/fa_mma_decode_traits.hpp"
#include "kernels/mma/mma_sm80.hpp"

namespace fa::gpu {
namespace {

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
  // fetches where it is 256 bytes (decode_l2_promote); with the chunks first, a neighbour's half was
  // often evicted before its block read it (H100, (1,32,8,1,131072,64): 278-290 MB read from DRAM
  // for 268.5 MB of K and V).
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

}  // namespace
}  // namespace fa::gpu
