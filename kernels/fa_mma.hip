// mma: NVIDIA tensor-core FlashAttention-2 forward (sm80+: mma.sync.m16n8k16, fp32 accumulate).
// A block of WARPS warps owns BM query rows (each warp MT 16-row tiles); K/V tiles of BN keys
// stream through a STAGES-deep cp.async ring in shared memory whose rows are padded by 16 bytes,
// so ldmatrix's 8 row addresses fall in 8 distinct bank groups. S and P stay in registers: the
// S accumulator's layout is P's A-operand layout, packed to the dtype with no shared-memory trip.
// Online softmax in the exp2 domain with the scale folded into one FFMA; causal tiles past the
// last row's keys are never visited, and only the diagonal and range-end tiles are masked
// (kernels/device/tile_loop.hpp). G > 1 writes fp32 partials that kernels/device/combine.hip folds.
// On sm_90 (built with sm_90a), D = 64 and 128 run the same tile loop on warpgroup MMA instead
// (mma_wg_fwd below: wgmma, swizzled shared memory, the softmax overlapped with P V).
#include <fmt/format.h>

#include "harness/path_registry.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"
#include "kernels/device/mma_sm80.hpp"
#include "kernels/device/tile_loop.hpp"
#include "kernels/device/wgmma_sm90.hpp"

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


template <typename T, typename K>
__global__ void __launch_bounds__(K::THREADS) mma_fwd(AttnArgs a) {
#if FA_HAS_MMA_SM80
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t* const qs = smem;               // [BM][LD]
  uint16_t* const kv = smem + K::BM * K::LD;  // STAGES x { K [BN][LD], V [BN][LD] }
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const tile::BlockCoords c = tile::block_coords(a, K::BM);
  const KeyRange kr = tile::block_keys(a, c, K::BM, K::BN);
  const int64_t no_mask_end = tile::unmasked_end(a, c, kr);
  const int ntiles = kr.end > kr.begin ? int((kr.end - kr.begin + K::BN - 1) / K::BN) : 0;
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
    if (copier && (K::BM % RPP == 0 || r < K::BM))
      copy16_async(qs + r * K::LD + ch * 8, s < a.S ? qg + int64_t(s) * a.q_ss + ch * 8 : qg, s < a.S);
  }
  copy_async_commit();
  const int64_t pass_stride = int64_t(RPP) * a.k_ss;
  const uint16_t* const kt = kg + int64_t(r0) * a.k_ss + ch * 8;
  const uint16_t* const vt = vg + int64_t(r0) * a.k_ss + ch * 8;
  auto load_tile = [&](int t) {  // tile t into its stage; keys past the range read as zeros
    uint16_t* ks = kv + (t % K::STAGES) * 2 * K::BN * K::LD + r0 * K::LD + ch * 8;
    uint16_t* vs = ks + K::BN * K::LD;
    const int64_t kv0 = kr.begin + int64_t(t) * K::BN;
    const uint16_t* kp = kt + kv0 * a.k_ss;
    const uint16_t* vp = vt + kv0 * a.k_ss;
#pragma unroll
    for (int p = 0; p < (K::BN + RPP - 1) / RPP; ++p) {
      const int r = r0 + p * RPP;
      if (copier && (K::BN % RPP == 0 || r < K::BN)) {
        const bool in = kv0 + r < kr.end;
        copy16_async(ks + p * RPP * K::LD, in ? kp + p * pass_stride : kg, in);
        copy16_async(vs + p * RPP * K::LD, in ? vp + p * pass_stride : vg, in);
      }
    }
  };
#pragma unroll
  for (int t = 0; t < K::STAGES - 1; ++t) {
    if (t < ntiles) load_tile(t);
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

  for (int t = 0; t < ntiles; ++t) {
    copy_async_wait<K::STAGES - 2>();
    __syncthreads();  // tile t landed for every thread; every warp is done with tile t - 1's stage
    if (t + K::STAGES - 1 < ntiles) load_tile(t + K::STAGES - 1);
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
    const int64_t kv0 = kr.begin + int64_t(t) * K::BN;

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

    if (kv0 + K::BN > no_mask_end) {  // causal diagonal or the range's last tile
#pragma unroll
      for (int mt = 0; mt < K::MT; ++mt)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int row = c.q0 + wrow + mt * 16 + frag::mma_m16n8k16_c(lane, 2 * hr).row;
          mask_quad_row<K::NT>([&](int nt, int e) -> float& { return s[mt][nt][2 * hr + e]; }, lane,
                               tile::tile_cols_visible(a, row, kv0, kr.end, K::BN));
        }
    }

#pragma unroll
    for (int mt = 0; mt < K::MT; ++mt) {
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {  // rows lane / 4 (slots 0, 1) and lane / 4 + 8 (slots 2, 3)
        const float alpha = softmax_quad_row<K::NT>([&](int nt, int e) -> float& { return s[mt][nt][2 * hr + e]; },
                                                    m[mt][hr], l[mt][hr], a.scale_log2);
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
      const tile::RowEnd e = tile::row_end(m[mt][hr], lsum, a.scale_log2);
      const frag::Coord at = frag::mma_m16n8k16_c(lane, 2 * hr);
      const int s_row = c.q0 + wrow + mt * 16 + at.row;
      if (s_row >= a.S) continue;
#pragma unroll
      for (int dt = 0; dt < K::DT; ++dt)
        tile::store_pair<T>(a, c, s_row, dt * 8 + at.col, acc[mt][dt][2 * hr] * e.inv_l, acc[mt][dt][2 * hr + 1] * e.inv_l);
      if (lane % 4 == 0) tile::store_lse(a, c, s_row, e.lse);
    }
#else
  unsupported_arch();  // built for an arch without mma.sync: the gate refuses such devices
#endif
}

// ---- sm_90: the same tile loop on warpgroup MMA (wgmma) ------------------------------------
// WGS warpgroups of 64 query rows (BM = 64 WGS) and K/V tiles of BN keys (the traits rows: 2 x 128
// for D=128, 2 x 64 for D=64). Q, K and V sit in shared
// memory in the 128-byte-swizzle layout (frag::wgmma_sw128_offset), which a 16-byte cp.async
// fills directly: S = Q K^T reads both through descriptors (K-major), and P V takes P from
// registers (S's accumulator layout is the A layout, as with mma.sync) and V MN-major. K and V have
// two slots each; iteration t issues S_t = Q K_t^T and O += P_{t-1} V_{t-1} together, so the
// softmax of S_t runs while the tensor cores do P_{t-1} V_{t-1} (FlashAttention-3's intra-warpgroup
// overlap, without its producer warps: every thread copies). Loads of K_{t+1} and V_t are in flight
// through iteration t.
template <int D_, int WGS_, int BN_>
struct WgTraits {
  static constexpr int D = D_, WGS = WGS_, BM = 64 * WGS, BN = BN_, THREADS = 128 * WGS;
  static constexpr bool WG = true;
  static constexpr int KD = D / 16, KN = BN / 16;
  static constexpr int Q_TILE = BM * D * 2, KV_TILE = BN * D * 2;  // bytes
  static constexpr int SMEM = Q_TILE + 4 * KV_TILE + 1024;  // Q, K x 2, V x 2, room to align to 1024
  // Blocks an SM is to hold, which caps the registers: 64-key tiles fit two 2-warpgroup blocks.
  static constexpr int MIN_BLOCKS = BN == 64 ? 4 / WGS : 3 - WGS;
  static_assert(D % 64 == 0 && (WGS == 1 || WGS == 2), "tile shape");
};

// Copies a tile of R rows (rows >= `valid` read as zeros) of D 16-bit columns from `g` (row
// stride `ld` elements) into `tile` in the swizzled layout, with THREADS threads. 8 threads move
// the 128 bytes of one row's 64-column block: one shared-memory wavefront, 128 contiguous bytes.
template <int D, int R, int THREADS>
__device__ inline void copy_tile_wg(unsigned char* tile, const uint16_t* g, int64_t ld, int64_t valid, int tid) {
  constexpr int RP = THREADS / 8;  // rows a pass
  static_assert(R % RP == 0, "tile rows");
  const int r0 = tid / 8, c0 = 8 * (tid % 8);
#pragma unroll
  for (int p = 0; p < (R / RP) * (D / 64); ++p) {
    const int r = r0 + RP * (p % (R / RP)), c = c0 + 64 * (p / (R / RP));
    const bool in = r < valid;
    copy16_async(tile + frag::wgmma_sw128_offset(r, c, R), in ? g + r * ld + c : g, in);
  }
}

template <typename T, typename K>
__global__ void __launch_bounds__(K::THREADS, K::MIN_BLOCKS) mma_wg_fwd(AttnArgs a) {
#if FA_HAS_WGMMA_SM90
  extern __shared__ __align__(128) unsigned char wsm_raw[];
  unsigned char* const wsm = wsm_raw + ((1024 - smem_addr(wsm_raw) % 1024) % 1024);  // the swizzle's alignment
  unsigned char* const qs = wsm;
  auto k_slot = [&](int t) { return wsm + K::Q_TILE + (t % 2) * K::KV_TILE; };
  auto v_slot = [&](int t) { return wsm + K::Q_TILE + (2 + t % 2) * K::KV_TILE; };
  const int tid = threadIdx.x, wgi = tid / 128, wt = tid % 128, lane = tid % 32;
  const tile::BlockCoords c = tile::block_coords(a, K::BM);
  const KeyRange kr = tile::block_keys(a, c, K::BM, K::BN);
  const int64_t no_mask_end = tile::unmasked_end(a, c, kr);
  const int ntiles = kr.end > kr.begin ? int((kr.end - kr.begin + K::BN - 1) / K::BN) : 0;
  const uint16_t* kg = a.k + c.b * a.k_sb + c.hk * a.k_sh;
  const uint16_t* vg = a.v + c.b * a.k_sb + c.hk * a.k_sh;
  auto load = [&](unsigned char* dst, const uint16_t* g, int t) {
    const int64_t kv0 = kr.begin + int64_t(t) * K::BN;
    copy_tile_wg<K::D, K::BN, K::THREADS>(dst, g + kv0 * a.k_ss, a.k_ss, kr.end - kv0, tid);
  };
  copy_tile_wg<K::D, K::BM, K::THREADS>(qs, a.q + c.b * a.q_sb + c.h * a.q_sh + int64_t(c.q0) * a.q_ss, a.q_ss, a.S - c.q0, tid);
  if (ntiles > 0) load(k_slot(0), kg, 0);
  copy_async_commit();

  constexpr frag::DescStrides qk = frag::wgmma_sw128_kmajor(), vd = frag::wgmma_sw128_mnmajor(K::BN);
  const unsigned char* const q_wg = qs + frag::wgmma_sw128_offset(64 * wgi, 0, K::BM);
  float o[K::D / 2], s[K::BN / 2], alpha[2];
  uint32_t p[K::KN][4];
#pragma unroll
  for (int i = 0; i < K::D / 2; ++i) o[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

  // The steps of iteration t, each straight-line code, so that ptxas sees which wgmma group a
  // register read waits for (a branch between issue and wait serialises the pipeline).
  auto top = [&](int t) {  // K_t and V_{t-1} landed; every warpgroup is done with K_{t-1}, V_{t-2}
    copy_async_wait<0>();
    wg::fence_smem_for_async();
    __syncthreads();
    if (t + 1 < ntiles) load(k_slot(t + 1), kg, t + 1);
    if (t < ntiles) load(v_slot(t), vg, t);
    copy_async_commit();
    wg::fence();
  };
  auto issue_s = [&](int t) {  // S = Q K_t^T
    const unsigned char* kt = k_slot(t);
    wg::ss<T, 0>(s, wg::desc(q_wg, qk.lbo, qk.sbo), wg::desc(kt, qk.lbo, qk.sbo));
#pragma unroll
    for (int kk = 1; kk < K::KD; ++kk)
      wg::ss<T, 1>(s, wg::desc(q_wg + frag::wgmma_sw128_offset(0, 16 * kk, K::BM), qk.lbo, qk.sbo),
                        wg::desc(kt + frag::wgmma_sw128_offset(0, 16 * kk, K::BN), qk.lbo, qk.sbo));
    wg::commit();
  };
  auto issue_pv = [&](int t) {  // O += P V_t
    const unsigned char* vt = v_slot(t);
#pragma unroll
    for (int kn = 0; kn < K::KN; ++kn) {
      wg::rs<T>(o, p[kn], wg::desc(vt + frag::wgmma_sw128_offset(16 * kn, 0, K::BN), vd.lbo, vd.sbo));
    }
    wg::commit();
  };
  auto softmax = [&](int t) {  // S_t (landed) -> exp2 in place, row sums, alpha
    const int64_t kv0 = kr.begin + int64_t(t) * K::BN;
    if (kv0 + K::BN > no_mask_end) {  // causal diagonal or the range's last tile
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int row = c.q0 + 64 * wgi + frag::wgmma_m64nNk16_c(wt, 2 * hr).row;
        mask_quad_row<K::BN / 8>([&](int j, int e) -> float& { return s[4 * j + 2 * hr + e]; }, lane,
                                 tile::tile_cols_visible(a, row, kv0, kr.end, K::BN));
      }
    }
#pragma unroll
    for (int hr = 0; hr < 2; ++hr)  // rows (thread % 32) / 4 (slots 4j, 4j + 1) and + 8 (4j + 2, 4j + 3)
      alpha[hr] = softmax_quad_row<K::BN / 8>([&](int j, int e) -> float& { return s[4 * j + 2 * hr + e]; }, m[hr],
                                              l[hr], a.scale_log2);
  };
  auto pack_p = [&] {  // S's column blocks 2kn, 2kn + 1 are P's k16 step kn
#pragma unroll
    for (int kn = 0; kn < K::KN; ++kn) {
      p[kn][0] = pack2<T>(s[8 * kn + 0], s[8 * kn + 1]);
      p[kn][1] = pack2<T>(s[8 * kn + 2], s[8 * kn + 3]);
      p[kn][2] = pack2<T>(s[8 * kn + 4], s[8 * kn + 5]);
      p[kn][3] = pack2<T>(s[8 * kn + 6], s[8 * kn + 7]);
    }
  };

  if (ntiles > 0) {
    top(0);
    issue_s(0);
    wg::wait<0>();
    wg::pin(s);
    softmax(0);  // O is still zero: no rescale
    pack_p();
    for (int t = 1; t < ntiles; ++t) {
      top(t);
      issue_s(t);
      issue_pv(t - 1);
      wg::wait<1>();  // S_t landed; P_{t-1} V_{t-1} may still run
      wg::pin(s);
      softmax(t);
      wg::wait<0>();  // O and P are free
      wg::pin(o);
#pragma unroll
      for (int i = 0; i < K::D / 2; ++i) o[i] *= alpha[(i % 4) / 2];
      pack_p();
    }
    top(ntiles);
    issue_pv(ntiles - 1);
    wg::wait<0>();
    wg::pin(o);
  }

#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float lsum = l[hr];
    lsum += shfl_xor(lsum, 1, 4);
    lsum += shfl_xor(lsum, 2, 4);
    const tile::RowEnd e = tile::row_end(m[hr], lsum, a.scale_log2);
    const frag::Coord at = frag::wgmma_m64nNk16_c(wt, 2 * hr);
    const int s_row = c.q0 + 64 * wgi + at.row;
    if (s_row >= a.S) continue;
#pragma unroll
    for (int j = 0; j < K::D / 8; ++j)
      tile::store_pair<T>(a, c, s_row, 8 * j + at.col, o[4 * j + 2 * hr] * e.inv_l, o[4 * j + 2 * hr + 1] * e.inv_l);
    if (lane % 4 == 0) tile::store_lse(a, c, s_row, e.lse);
  }
#else
  unsupported_arch();  // built without sm_90a: the host launches this kernel only on sm_90 with it built
#endif
}

// The traits table. TFLOP/s: H100, cold L2, medians (torch flash/cuDNN in the same sessions:
// aiter-4 (8,16,16,8192,8192,64) bf16 317/471, whisper-enc-b4 fp16 259/348, (2,16,16,8192,8192,128)
// bf16 354/617, its causal twin 315/546).
// D=64, long key ranges: 128x128, Q re-read from shared memory: aiter-4 318 (128x64 with Q in
//   registers 302; 64x64 3 stages 253; 64x128 216). 64 bytes of spill, which cost less than the
//   extra softmax rounds of 64-key tiles. With the constant-stride copies: 324-332.
// D=64, short key ranges (< 4096 keys a block): 128x64, Q in registers: whisper-enc-b4 240 vs 233.
// D=128: 128x64 (40 B of spill at the 255-register cap): (2,16,16,8192,8192,128) 330, causal 295,
//   FlyDSL's 64-head causal 315; 128x32 313 / 278 / 296 in the same run (before the constant-stride
//   copies, 128x64 spilled 92 B and lost: 307 vs 318). 128x32 3 stages 309; 64x64 276. A later
//   run (torch flash 356 / 317 / 324): 128x64 333 / 298 / 316; 256x64 with 8 warps 343 / 292 / 313;
//   128x64 with 8 warps of 16 rows (<= 128 registers, 2 blocks an SM) 288 / 261 / 277; the same
//   with 32-key tiles, 3 stages 254 / 230 / 245. Copying K/V with 2 threads a row (immediate
//   offsets, fewer registers) lost 22% (259 vs 332): 16 rows a warp instruction, one sector each.
// D=80/96/256: by register count alone (no spill), not yet measured against a peer.
// sm_90 (wgmma), one H100 run each, torch flash in the same call. D=128: 2 warpgroups x 128-key
//   tiles (236 registers, 1 block an SM): d128-8k 424, causal 394, FlyDSL 425 (flash 348 / 311 /
//   322; mma.sync above 332 / 296 / 305); one warpgroup a block 312 / 296 / 298. The first
//   version, without swizzle (core matrices of 128 contiguous bytes), reached 259: the 128-byte
//   swizzle is what lets wgmma read shared memory at speed. D=64: 2 warpgroups x 64-key tiles
//   (122 registers, 2 blocks an SM): aiter-4 373, aiter-3 375, aiter-1 359, whisper-enc-b4 298
//   (flash 309 / 313 / 263 / 261); with 128-key tiles (190 registers, 1 block) 335 / 336 / 324 /
//   249; one warpgroup of 64-key tiles (4 blocks) 323 / 323 / 317 / 269.
using Wg64 = WgTraits<64, 2, 64>;
using Wg128 = WgTraits<128, 2, 128>;
using Mma64Long = MmaTraits<64, 128, 128, 4, 2, false>;
using Mma64Short = MmaTraits<64, 128, 64, 4, 2, true>;
using Mma80 = MmaTraits<80, 128, 64, 4, 2, false>;
using Mma96 = MmaTraits<96, 128, 64, 4, 2, false>;
using Mma128 = MmaTraits<128, 128, 64, 4, 2, false>;
using Mma256 = MmaTraits<256, 64, 32, 4, 2, false>;
constexpr int kLongKeys = 4096;  // keys a block visits from which Mma64Long pays

// The kernel a traits row runs.
template <typename T, typename K>
auto kernel_of() {
  if constexpr (K::WG) return mma_wg_fwd<T, K>;
  else return mma_fwd<T, K>;
}

template <typename T, typename K>
void launch_cfg(const AttnArgs& a, Stream st) {
  const auto kernel = kernel_of<T, K>();
  static thread_local const bool smem_ok = [&] {  // per device: one per --devices worker thread
    FA_GPU_CHECK(set_max_dynamic_smem(kernel, K::SMEM));
    return true;
  }();
  (void)smem_ok;
  const dim3 grid((a.S + K::BM - 1) / K::BM, a.H, a.B * (a.G > 1 ? a.G : 1));
  kernel<<<grid, K::THREADS, K::SMEM, st>>>(a);
  FA_GPU_CHECK_LAUNCH(K::WG ? "mma_wg_fwd" : "mma_fwd");
}

// sm_90 runs the wgmma kernel for D in 64, 128 where this binary holds sm_90a code (wgmma is an
// sm_90a feature: neither sm_80 code nor a later arch runs it).
#ifdef FABENCH_CUDA_SM90A
constexpr bool kBuiltSm90a = true;
#else
constexpr bool kBuiltSm90a = false;
#endif
bool use_wgmma(int64_t D, const DeviceFacts& device) {
  return kBuiltSm90a && device.arch == "sm_90" && (D == 64 || D == 128);
}

// Calls f(K{}) with the traits a launch of (D, Sk, G) uses; false for a D without a kernel.
template <typename F>
bool with_mma_cfg(int64_t D, int64_t Sk, int G, bool wg, F&& f) {
  if (wg) {
    if (D == 64) f(Wg64{});
    else f(Wg128{});
    return true;
  }
  switch (D) {
    case 64:
      if (Sk / (G > 1 ? G : 1) >= kLongKeys) f(Mma64Long{});
      else f(Mma64Short{});
      return true;
    case 80: f(Mma80{}); return true;
    case 96: f(Mma96{}); return true;
    case 128: f(Mma128{}); return true;
    case 256: f(Mma256{}); return true;
    default: return false;
  }
}

void launch_mma(const AttnArgs& a, DType t, bool wg, Stream st) {
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    if (!with_mma_cfg(a.D, a.Sk, a.G, wg, [&](auto k) { launch_cfg<T, decltype(k)>(a, st); }))
      throw std::logic_error(fmt::format("mma has no kernel for D={} (its gate should have said so)", a.D));
  });
}

// The tile and occupancy a run at G uses, for the split rules (blocks an SM holds: the runtime's
// occupancy of that kernel configuration).
TileShape mma_tile(const Problem& p, int G, const DeviceFacts& device) {
  TileShape tile{128, 64, 1};
  if (!device.has_mma_sm80 || p.dtype == DType::fp32) return tile;
  with_dtype(p.dtype, [&](auto tr) {
    using T = decltype(tr);
    with_mma_cfg(p.D, p.Sk, G, use_wgmma(p.D, device), [&](auto k) {
      using K = decltype(k);
      const auto kernel = kernel_of<T, K>();
      FA_GPU_CHECK(set_max_dynamic_smem(kernel, K::SMEM));
      int per_sm = 0;
      FA_GPU_CHECK(max_active_blocks(&per_sm, kernel, K::THREADS, K::SMEM));
      tile = TileShape{K::BM, K::BN, std::max(per_sm, 1)};
    });
  });
  return tile;
}

class MmaExecution : public GpuExecution {
 public:
  MmaExecution(const Problem& p, const HostInputs& in, int G, const GateContext& ctx)
      : GpuExecution(p, in, ctx, G > 1 ? G : 0), wg_(use_wgmma(p.D, ctx.device)) {
    args_.G = G > 1 ? G : 0;
  }

 protected:
  void launch() override {
    launch_mma(args_, p_.dtype, wg_, stream_);
    if (args_.G > 1) launch_combine(args_, p_.dtype, stream_);
  }

 private:
  bool wg_;
};

std::optional<std::string> mma_supports(const Problem& p, int G, const GateContext& ctx) {
  if (auto no = common_gpu_gate(p, ctx)) return no;
  if (!ctx.device.has_mma_sm80)
    return fmt::format("mma needs an NVIDIA GPU with mma.sync (sm_80 or newer); this device is {}", ctx.device.arch);
  if (p.D != 64 && p.D != 80 && p.D != 96 && p.D != 128 && p.D != 256)
    return fmt::format("mma has kernels for D in 64, 80, 96, 128, 256 (got D={})", p.D);
  if (G == 1 || G > 16 || (G & (G - 1))) return fmt::format("mma needs G in 0, 2, 4, 8, 16 (got {})", G);
  if (p.kv_cache) return std::string("kv_cache problems run on the kv-cache path");
  if (p.H > 65535 || p.B * std::max(G, 1) > 65535) return std::string("H or B*G exceeds the grid");
  return std::nullopt;
}

PathRow mma_row(const DeviceFacts&) {
  PathRow r{"mma", "gpu",
            "tensor-core FlashAttention-2 (mma.sync m16n8k16; wgmma on sm_90 for D 64, 128): S/P in registers, "
            "cp.async K/V ring, split-K",
            fmt::format("{}; sm_80+ (mma.sync); D in 64, 80, 96, 128, 256; G in 0, 2, 4, 8, 16", common_gpu_gate_doc()),
            false, mma_supports,
            [](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<MmaExecution>(p, in, G, ctx);
            }};
  r.auto_rank = 45;  // tensor cores: far ahead of tiled/splitk wherever its gate admits
  r.tiles = TileShape{128, 64};
  r.rz_accumulate_keys = 16;  // PV through m16n8k16 / wgmma k16: a truncating fp32 add every 16 keys
  r.tile_at = mma_tile;
  return r;
}
FA_REGISTER_PATH(mma_row);

}  // namespace
}  // namespace fa::gpu
