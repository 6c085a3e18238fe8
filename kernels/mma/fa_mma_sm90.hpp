// The mma path's sm_90a kernel (mma_wg_fwd): the same tile loop as mma_fwd on warpgroup MMA
// (wgmma), and the traits type its table rows (kernels/mma/fa_mma.hip) instantiate. Built only into
// sm_90a code; elsewhere its body traps and the host never launches it. Included by fa_mma.hip
// alone, hence the unnamed namespace: one translation unit, as before the split.
#pragma once
#include "kernels/device/fragment_layout.hpp"
#include "kernels/device/tile_loop.hpp"
#include "kernels/mma/wgmma_sm90.hpp"

namespace fa::gpu {
namespace {

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
// `row_at(r)` is where row r starts (called for rows below `valid` only); `any` a readable address
// for the rows that read zeros.
template <int D, int R, int THREADS, typename RowAt>
__device__ inline void copy_rows_wg(unsigned char* tile, RowAt&& row_at, const uint16_t* any, int64_t valid, int tid) {
  constexpr int RP = THREADS / 8;  // rows a pass
  static_assert(R % RP == 0, "tile rows");
  const int r0 = tid / 8, c0 = 8 * (tid % 8);
#pragma unroll
  for (int p = 0; p < (R / RP) * (D / 64); ++p) {
    const int r = r0 + RP * (p % (R / RP)), c = c0 + 64 * (p / (R / RP));
    const bool in = r < valid;
    copy16_async(tile + frag::wgmma_sw128_offset(r, c, R), in ? row_at(r) + c : any, in);
  }
}
template <int D, int R, int THREADS>
__device__ inline void copy_tile_wg(unsigned char* tile, const uint16_t* g, int64_t ld, int64_t valid, int tid) {
  copy_rows_wg<D, R, THREADS>(tile, [&](int r) { return g + r * ld; }, g, valid, tid);
}

// SERVE: the instance for problems with serving fields, as mma_fwd's (fa_mma_sm80.hpp).
template <typename T, typename K, bool SERVE>
__global__ void __launch_bounds__(K::THREADS, K::MIN_BLOCKS) mma_wg_fwd(AttnArgs a) {
#if FA_HAS_WGMMA_SM90
  extern __shared__ __align__(128) unsigned char wsm_raw[];
  unsigned char* const wsm = wsm_raw + ((1024 - smem_addr(wsm_raw) % 1024) % 1024);  // the swizzle's alignment
  unsigned char* const qs = wsm;
  auto k_slot = [&](int t) { return wsm + K::Q_TILE + (t % 2) * K::KV_TILE; };
  auto v_slot = [&](int t) { return wsm + K::Q_TILE + (2 + t % 2) * K::KV_TILE; };
  const int tid = threadIdx.x, wgi = tid / 128, wt = tid % 128, lane = tid % 32;
  const tile::BlockCoords c = tile::block_coords(a, K::BM);
  const MmaBlockPlan pl = mma_block_plan<SERVE>(a, c, K::BM, K::BN);
  if (pl.past) return;
  const uint16_t* kg = a.k + c.b * a.k_sb + c.hk * a.k_sh;
  const uint16_t* vg = a.v + c.b * a.k_sb + c.hk * a.k_sh;
  const KeyRows key_row = SERVE ? key_rows(a, c.b, c.hk) : KeyRows{};
  auto load = [&](unsigned char* dst, bool is_v, int t) {  // K_t or V_t into dst
    const int64_t kv0 = pl.kr.begin + int64_t(t) * K::BN;
    if constexpr (SERVE) {  // through the serving view: the page table a key; thd offsets, V as K
      const uint16_t* base = is_v ? a.v : a.k;
      copy_rows_wg<K::D, K::BN, K::THREADS>(dst, [&](int r) { return base + key_row.at(kv0 + r); }, base,
                                            pl.kr.end - kv0, tid);
    } else {
      copy_tile_wg<K::D, K::BN, K::THREADS>(dst, (is_v ? vg : kg) + kv0 * a.k_ss, a.k_ss, pl.kr.end - kv0, tid);
    }
  };
  if constexpr (SERVE)
    copy_rows_wg<K::D, K::BM, K::THREADS>(qs, [&](int r) { return a.q + q_at(a, c.b, c.q0 + r, c.h); }, a.q,
                                          pl.sq - c.q0, tid);
  else
    copy_tile_wg<K::D, K::BM, K::THREADS>(qs, a.q + c.b * a.q_sb + c.h * a.q_sh + int64_t(c.q0) * a.q_ss, a.q_ss,
                                          a.S - c.q0, tid);
  if (pl.ntiles > 0) load(k_slot(0), false, 0);
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
    if (t + 1 < pl.ntiles) load(k_slot(t + 1), false, t + 1);
    if (t < pl.ntiles) load(v_slot(t), true, t);
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
    const int64_t kv0 = pl.kr.begin + int64_t(t) * K::BN;
    if constexpr (SERVE) {
      if (pl.transform || tile::tile_masked(pl.unmasked, int(kv0), K::BN)) {  // scores transformed, or an edge tile
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int row = c.q0 + 64 * wgi + frag::wgmma_m64nNk16_c(wt, 2 * hr).row;
          serve_quad_row<K::BN / 8>([&](int j, int e) -> float& { return s[4 * j + 2 * hr + e]; }, lane, a.scale_log2,
                                    pl.mod, row, int(kv0),
                                    tile::tile_cols(tile::row_keys_in(pl.sh, row, pl.kr), int(kv0), K::BN));
        }
      }
    } else if (kv0 + K::BN > pl.no_mask_end) {  // causal diagonal or the range's last tile
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int row = c.q0 + 64 * wgi + frag::wgmma_m64nNk16_c(wt, 2 * hr).row;
        mask_quad_row<K::BN / 8>([&](int j, int e) -> float& { return s[4 * j + 2 * hr + e]; }, lane,
                                 tile::tile_cols_visible(a, row, kv0, pl.kr.end, K::BN));
      }
    }
#pragma unroll
    for (int hr = 0; hr < 2; ++hr)  // rows (thread % 32) / 4 (slots 4j, 4j + 1) and + 8 (4j + 2, 4j + 3)
      alpha[hr] = softmax_quad_row<K::BN / 8>([&](int j, int e) -> float& { return s[4 * j + 2 * hr + e]; }, m[hr],
                                              l[hr], pl.scale_log2);
  };
  auto pack_p = [&] { wg::pack_p<T>(s, p); };

  if (pl.ntiles > 0) {
    top(0);
    issue_s(0);
    wg::wait<0>();
    wg::pin(s);
    softmax(0);  // O is still zero: no rescale
    pack_p();
    for (int t = 1; t < pl.ntiles; ++t) {
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
    top(pl.ntiles);
    issue_pv(pl.ntiles - 1);
    wg::wait<0>();
    wg::pin(o);
  }

#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float lsum = l[hr];
    lsum += shfl_xor(lsum, 1, 4);
    lsum += shfl_xor(lsum, 2, 4);
    const tile::RowEnd e = tile::row_end(m[hr], lsum, pl.scale_log2);
    const frag::Coord at = frag::wgmma_m64nNk16_c(wt, 2 * hr);
    const int s_row = c.q0 + 64 * wgi + at.row;
    if (s_row >= pl.sq) continue;
    const int64_t o_at = SERVE ? tile::o_row(a, c, s_row) : tile::dense_o_row(a, c, s_row);
    tile::store_row_pairs<T, K::D / 8>(a, c, s_row, o_at, at.col, [&](int j) {
      return make_float2(o[4 * j + 2 * hr] * e.inv_l, o[4 * j + 2 * hr + 1] * e.inv_l);
    });
    if (lane % 4 == 0) tile::store_lse(a, c, s_row, e.lse);
  }
#else
  unsupported_arch();  // built without sm_90a: the host launches this kernel only on sm_90 with it built
#endif
}

}  // namespace
}  // namespace fa::gpu
