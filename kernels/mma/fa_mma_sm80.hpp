// The mma path's sm80+ kernel (mma_fwd): FlashAttention-2 forward on mma.sync.m16n8k16 with fp32
// accumulate, and the traits type its table rows (kernels/mma/fa_mma.hip) instantiate. Included by
// fa_mma.hip alone, hence the unnamed namespace: one translation unit, as before the split.
#pragma once
#include "kernels/device/fragment_layout.hpp"
#include "kernels/mma/mma_sm80.hpp"
#include "kernels/device/tile_loop.hpp"

namespace fa::gpu {
namespace {

// One row of the traits table: head dim, query rows a block, keys a tile, warps, pipeline stages,
// whether Q's fragments live in registers for the whole loop (else re-read from shared memory).
template <int D_, int BM_, int BN_, int WARPS_, int STAGES_, bool QREG_>
struct MmaTraits {
  static constexpr int D = D_, BM = BM_, BN = BN_, WARPS = WARPS_, STAGES = STAGES_;
  static constexpr bool Q_IN_REGS = QREG_, WG = false;
  static constexpr int THREADS = WARPS * 32;
  static constexpr int MT = BM / (16 * WARPS);  // 16-row tiles a warp
  static constexpr int NT = BN / 8;             // n8 tiles of S
  static constexpr int DT = D / 8;              // n8 tiles of O
  static constexpr int KD = D / 16;             // k16 steps of Q K^T
  static constexpr int KN = BN / 16;            // k16 steps of P V
  static constexpr int LD = D + 8;              // shared row stride in elements (16-byte pad)
  static constexpr int CPR = D / 8;             // 16-byte chunks a row
  static constexpr int SMEM = (BM + 2 * BN * STAGES) * LD * 2;
  static_assert(MT >= 1 && BM % (16 * WARPS) == 0 && BN % 16 == 0 && D % 16 == 0, "tile shape");
};


// SERVE: the instance for problems with serving fields (AttnArgs.serving set: per-sequence lengths,
// thd, paged K/V, window, ALiBi, softcap). Rows and keys go through the sequence's shape and the
// serving view (q_at, k_at), tiles outside the block's window are never visited, and edge tiles are
// masked per row (tile_range.hpp). The dense instance keeps its own expressions: a serving branch
// in it, never taken, cost the D=128 sm_90a kernel 36 B more spill.
template <typename T, typename K, bool SERVE>
__global__ void __launch_bounds__(K::THREADS) mma_fwd(AttnArgs a) {
#if FA_HAS_MMA_SM80
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t* const qs = smem;               // [BM][LD]
  uint16_t* const kv = smem + K::BM * K::LD;  // STAGES x { K [BN][LD], V [BN][LD] }
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const tile::BlockCoords c = tile::block_coords(a, K::BM);
  const MmaBlockPlan pl = mma_block_plan<SERVE>(a, c, K::BM, K::BN);
  if (pl.past) return;
  const uint16_t* qg = a.q + c.b * a.q_sb + c.h * a.q_sh;
  const uint16_t* kg = a.k + c.b * a.k_sb + c.hk * a.k_sh;
  const uint16_t* vg = a.v + c.b * a.k_sb + c.hk * a.k_sh;

  // Copies: thread tid moves 16-byte chunk tid % CPR of rows tid / CPR + p * RPP, p = 0, 1, ...;
  // the pointers advance by constant strides, so a pass is one predicated LDGSTS per tensor.
  constexpr int RPP = K::THREADS / K::CPR;  // rows a pass of the block copies
  const int r0 = tid / K::CPR, ch = tid % K::CPR;
  const bool copier = K::THREADS % K::CPR == 0 || r0 < RPP;
#pragma unroll
  for (int p = 0; p < (K::BM + RPP - 1) / RPP; ++p) {  // Q rows past S read as zeros
    const int r = r0 + p * RPP, s = c.q0 + r;
    if (copier && (K::BM % RPP == 0 || r < K::BM)) {
      if constexpr (SERVE)
        copy16_async(qs + r * K::LD + ch * 8, s < pl.sq ? a.q + q_at(a, c.b, s, c.h) + ch * 8 : a.q, s < pl.sq);
      else
        copy16_async(qs + r * K::LD + ch * 8, s < a.S ? qg + int64_t(s) * a.q_ss + ch * 8 : qg, s < a.S);
    }
  }
  copy_async_commit();
  const int64_t pass_stride = int64_t(RPP) * a.k_ss;
  const uint16_t* const kt = kg + int64_t(r0) * a.k_ss + ch * 8;
  const uint16_t* const vt = vg + int64_t(r0) * a.k_ss + ch * 8;
  const KeyRows key_row = SERVE ? key_rows(a, c.b, c.hk) : KeyRows{};
  auto load_tile = [&](int t) {  // tile t into its stage; keys past the range read as zeros
    uint16_t* ks = kv + (t % K::STAGES) * 2 * K::BN * K::LD + r0 * K::LD + ch * 8;
    uint16_t* vs = ks + K::BN * K::LD;
    const int64_t kv0 = pl.kr.begin + int64_t(t) * K::BN;
    const uint16_t* kp = kt + kv0 * a.k_ss;
    const uint16_t* vp = vt + kv0 * a.k_ss;
#pragma unroll
    for (int p = 0; p < (K::BN + RPP - 1) / RPP; ++p) {
      const int r = r0 + p * RPP;
      if (copier && (K::BN % RPP == 0 || r < K::BN)) {
        const bool in = kv0 + r < pl.kr.end;
        if constexpr (SERVE) {  // each key's row through the serving view (thd offsets, the page table)
          const int64_t at = in ? key_row.at(kv0 + r) + ch * 8 : 0;
          copy16_async(ks + p * RPP * K::LD, a.k + at, in);
          copy16_async(vs + p * RPP * K::LD, a.v + at, in);
        } else {
          copy16_async(ks + p * RPP * K::LD, in ? kp + p * pass_stride : kg, in);
          copy16_async(vs + p * RPP * K::LD, in ? vp + p * pass_stride : vg, in);
        }
      }
    }
  };
#pragma unroll
  for (int t = 0; t < K::STAGES - 1; ++t) {
    if (t < pl.ntiles) load_tile(t);
    copy_async_commit();
  }

  const int wrow = warp * K::MT * 16;  // the warp's first row in the block
  float acc[K::MT][K::DT][4] = {};
  float m[K::MT][2], l[K::MT][2];
#pragma unroll
  for (int mt = 0; mt < K::MT; ++mt)
    for (int hr = 0; hr < 2; ++hr) m[mt][hr] = -INFINITY, l[mt][hr] = 0.f;
  uint32_t qf[K::Q_IN_REGS ? K::MT : 1][K::Q_IN_REGS ? K::KD : 1][4];
  // ldmatrix x4 row addresses: A (Q) takes rows lane % 16, column half lane / 16; B from K rows
  // takes (lane / 16) * 8 + lane % 8 with column half (lane / 8) % 2; V^T (trans) the reverse.
  const int a_row = lane % 16, a_col = (lane / 16) * 8;
  const int b_row = (lane / 16) * 8 + lane % 8, b_col = ((lane / 8) % 2) * 8;
  const int v_row = ((lane / 8) % 2) * 8 + lane % 8, v_col = (lane / 16) * 8;
  auto load_q = [&](uint32_t (&f)[4], int mt, int kk) {
    ldsm_x4(smem_addr(qs + (wrow + mt * 16 + a_row) * K::LD + kk * 16 + a_col), f);
  };

  for (int t = 0; t < pl.ntiles; ++t) {
    copy_async_wait<K::STAGES - 2>();
    __syncthreads();  // tile t landed for every thread; every warp is done with tile t - 1's stage
    if (t + K::STAGES - 1 < pl.ntiles) load_tile(t + K::STAGES - 1);
    copy_async_commit();
    if constexpr (K::Q_IN_REGS) {
      if (t == 0) {
#pragma unroll
        for (int mt = 0; mt < K::MT; ++mt)
#pragma unroll
          for (int kk = 0; kk < K::KD; ++kk) load_q(qf[mt][kk], mt, kk);
      }
    }
    const uint16_t* ks = kv + (t % K::STAGES) * 2 * K::BN * K::LD;
    const uint16_t* vs = ks + K::BN * K::LD;
    const int64_t kv0 = pl.kr.begin + int64_t(t) * K::BN;

    float s[K::MT][K::NT][4] = {};
#pragma unroll
    for (int kk = 0; kk < K::KD; ++kk) {
      uint32_t qa[K::MT][4];
#pragma unroll
      for (int mt = 0; mt < K::MT; ++mt) {
        if constexpr (K::Q_IN_REGS) {
#pragma unroll
          for (int i = 0; i < 4; ++i) qa[mt][i] = qf[mt][kk][i];
        } else {
          load_q(qa[mt], mt, kk);
        }
      }
#pragma unroll
      for (int np = 0; np < K::NT / 2; ++np) {
        uint32_t kb[4];
        ldsm_x4(smem_addr(ks + (np * 16 + b_row) * K::LD + kk * 16 + b_col), kb);
#pragma unroll
        for (int mt = 0; mt < K::MT; ++mt) {
          mma16816<T>(s[mt][2 * np], qa[mt], kb[0], kb[1]);
          mma16816<T>(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    if constexpr (SERVE) {
      if (pl.transform || tile::tile_masked(pl.unmasked, int(kv0), K::BN)) {  // scores transformed, or an edge tile
#pragma unroll
        for (int mt = 0; mt < K::MT; ++mt)
#pragma unroll
          for (int hr = 0; hr < 2; ++hr) {
            const int row = c.q0 + wrow + mt * 16 + frag::mma_m16n8k16_c(lane, 2 * hr).row;
            serve_quad_row<K::NT>([&](int nt, int e) -> float& { return s[mt][nt][2 * hr + e]; }, lane, a.scale_log2,
                                  pl.mod, row, int(kv0),
                                  tile::tile_cols(tile::row_keys_in(pl.sh, row, pl.kr), int(kv0), K::BN));
          }
      }
    } else if (kv0 + K::BN > pl.no_mask_end) {  // causal diagonal or the range's last tile
#pragma unroll
      for (int mt = 0; mt < K::MT; ++mt)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int row = c.q0 + wrow + mt * 16 + frag::mma_m16n8k16_c(lane, 2 * hr).row;
          mask_quad_row<K::NT>([&](int nt, int e) -> float& { return s[mt][nt][2 * hr + e]; }, lane,
                               tile::tile_cols_visible(a, row, kv0, pl.kr.end, K::BN));
        }
    }

#pragma unroll
    for (int mt = 0; mt < K::MT; ++mt) {
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {  // rows lane / 4 (slots 0, 1) and lane / 4 + 8 (slots 2, 3)
        const float alpha = softmax_quad_row<K::NT>([&](int nt, int e) -> float& { return s[mt][nt][2 * hr + e]; },
                                                    m[mt][hr], l[mt][hr], pl.scale_log2);
#pragma unroll
        for (int dt = 0; dt < K::DT; ++dt) acc[mt][dt][2 * hr] *= alpha, acc[mt][dt][2 * hr + 1] *= alpha;
      }
    }

#pragma unroll
    for (int kn = 0; kn < K::KN; ++kn) {
      // The C layout of S's n8 tiles 2kn and 2kn + 1 is the A layout of P for k16 step kn.
      uint32_t pa[K::MT][4];
#pragma unroll
      for (int mt = 0; mt < K::MT; ++mt) {
        pa[mt][0] = pack2<T>(s[mt][2 * kn][0], s[mt][2 * kn][1]);
        pa[mt][1] = pack2<T>(s[mt][2 * kn][2], s[mt][2 * kn][3]);
        pa[mt][2] = pack2<T>(s[mt][2 * kn + 1][0], s[mt][2 * kn + 1][1]);
        pa[mt][3] = pack2<T>(s[mt][2 * kn + 1][2], s[mt][2 * kn + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < K::DT / 2; ++dp) {
        uint32_t vb[4];
        ldsm_x4_trans(smem_addr(vs + (kn * 16 + v_row) * K::LD + dp * 16 + v_col), vb);
#pragma unroll
        for (int mt = 0; mt < K::MT; ++mt) {
          mma16816<T>(acc[mt][2 * dp], pa[mt], vb[0], vb[1]);
          mma16816<T>(acc[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }

#pragma unroll
  for (int mt = 0; mt < K::MT; ++mt)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float lsum = l[mt][hr];
      lsum += shfl_xor(lsum, 1, 4);
      lsum += shfl_xor(lsum, 2, 4);
      const tile::RowEnd e = tile::row_end(m[mt][hr], lsum, pl.scale_log2);
      const frag::Coord at = frag::mma_m16n8k16_c(lane, 2 * hr);
      const int s_row = c.q0 + wrow + mt * 16 + at.row;
      if (s_row >= pl.sq) continue;
      const int64_t o_at = SERVE ? tile::o_row(a, c, s_row) : tile::dense_o_row(a, c, s_row);
      tile::store_row_pairs<T, K::DT>(a, c, s_row, o_at, at.col, [&](int dt) {
        return make_float2(acc[mt][dt][2 * hr] * e.inv_l, acc[mt][dt][2 * hr + 1] * e.inv_l);
      });
      if (lane % 4 == 0) tile::store_lse(a, c, s_row, e.lse);
    }
#else
  unsupported_arch();  // built for an arch without mma.sync: the gate refuses such devices
#endif
}

}  // namespace
}  // namespace fa::gpu
