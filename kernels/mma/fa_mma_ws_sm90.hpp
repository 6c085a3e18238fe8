// The mma path's sm_90 kernel (mma_ws_fwd): FlashAttention-3's forward structure on sm_90a, written
// from its description and hopper/ sources (flash_fwd_kernel_sm90.h, mainloop_fwd_sm90_tma_gmma_ws.hpp)
// without their code. A block of 128 (1 + WGS) threads owns BM = 64 WGS query rows of one (batch,
// head, split), WGS (2 or 3) being its tile-table row's consumer warpgroups:
// - warpgroup 0 produces (its code: kernels/mma/ws_produce_sm90.hpp): setmaxnreg.dec (24 registers
//   beside two consumers, 32 beside three, 40 where it transposes FP8's V at D <= 128, 24 at D = 256),
//   then one thread issues TMA copies of Q (once) and of each K and V tile into a STAGES-deep ring
//   (kernels/mma/ws_pipeline.hpp: order, stages, parities), each tile completing on its stage's full
//   mbarrier;
// - FP8 inputs: V^T, wgmma's K-major 8-bit B operand (kernels/mma/ws_fp8.hpp), either made by warps
//   1-3 of warpgroup 0 from each V tile, on a second pair of barriers a stage, or (PREPASS, the row's
//   vt_prepass_rows) made before the kernel by ws_vt_prepass.hpp and brought into the V ring by the TMA;
// - warpgroups 1 .. WGS consume, 64 rows each, with setmaxnreg.inc (to 240, 160, or 232 / 152 beside
//   FP8's transposer):
//   S = Q K^T from shared memory (wgmma, both operands by descriptor), the online softmax in the
//   exp2 domain on S's registers, P packed in registers as the A operand of O += P V (wgmma with A
//   from registers; E4M3 with FP8 inputs, O scaled by v's descale with 1/l);
//   S_t and P_{t-1} V_{t-1} are issued together and the softmax of S_t runs under P_{t-1} V_{t-1}
//   (intra-warpgroup overlap; where the row says so, pack_in_softmax: the FP8 rows, its max phase,
//   and the exponentials follow the wait for P_{t-1} V_{t-1} and pack P as they go), O's rescale
//   where the row says so (rescale_under_s) between the two issues, under S_t, and where the row
//   says so (take_turns: the 16-bit rows) the
//   warpgroups take turns issuing (round robin on WGS named barriers) so that one's softmax runs
//   under the others' GEMMs. A warp releases a stage (one arrival on its empty mbarrier) once its
//   wgmma.wait_group shows every read of it done. Where the row says so (group_tiles: FP8 D = 64) a
//   warpgroup stops at the last tile that holds a key its own rows see, and releases the item's
//   later tiles unread.
// - WAVE (short items, or long ones on some rows: ws_tile_traits.hpp's ws_launch_wave): one wave of
//   blocks, each taking item after item: every gridDim.x-th where the items are short and cost alike,
//   or (causal, or long and not causal: ws_wave_from_counter) the longest left from an atomic counter
//   (FA3's DynamicPersistentTileScheduler). The producer decodes
//   each item and publishes it in its Q stage's slot (ws_produce_wave;
//   kernels/mma/ws_wave_item_sm90.hpp; ws_pipeline.hpp's "a wave's items"); the ring's stages and
//   parities run on across items, and Q is a ring of QSTAGES (two where shared memory has room:
//   ws_layout.hpp's ws_q_stages) that the consumers free after their last S of an item, so the producer
//   loads the next item's Q and K/V while they finish the last one.
// - Else one item a block, of a (q tiles, H, B x G) grid; causal blocks take their items in FA3's
//   longest-first order within sections of heads that share the L2 (tile_range.hpp's lpt_block).
// - The epilogue: where the row has room (ws_layout.hpp's ws_stage_o) and the launch does not split,
//   each consumer warpgroup writes its rows of O to shared memory and one of its threads stores them
//   with the TMA (cp.async.bulk.tensor, FA3's epilogue too); else each thread stores its own pairs.
// Shared memory (kernels/mma/ws_layout.hpp): Q, the K ring, the V ring in the TMA's swizzle, which
// is the layout the wgmma descriptors describe; O's staging tile where there is one, Q's second stage
// where there is one; then the mbarriers and a wave's item slots. Tile loop conventions (causal limit, split ranges, masks,
// epilogue, partials) are the mma path's (kernels/device/tile_loop.hpp).
// Built only into sm_90a code; elsewhere its body traps and the host never launches it (fa_mma.hip's use_ws).
#pragma once
#include "kernels/mma/async_sm90.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/device/tile_loop.hpp"
#include "kernels/mma/ws_fp8.hpp"
#include "kernels/mma/ws_layout.hpp"
#include "kernels/mma/ws_pipeline.hpp"
#include "kernels/mma/ws_produce_sm90.hpp"
#include "kernels/mma/ws_tile_traits.hpp"
#include "kernels/mma/ws_wave_item_sm90.hpp"

namespace fa::gpu {
namespace {

// One row of the tile table (kernels/mma/ws_tile_traits.hpp) as compile-time constants: D's row,
// or its short row (SHORT_ROW; the kernel reads a.causal either way), for EB-byte elements. An FP8
// row (EB = 1) goes through the layout arithmetic as 16-bit columns, DE = D / 2 of them a row
// (kernels/mma/ws_fp8.hpp); its tensor maps are encoded the same way. PAD: the instance runs problems
// of a smaller head dim (ws_tile_traits.hpp's ws_run_d): the host's maps describe their D, and the
// epilogue's own stores leave O's columns past it alone. PREPASS (FP8, a row with vt_prepass_rows): V^T
// comes from the pre-pass's scratch tensor (ws_vt_prepass.hpp) by the TMA, into the V ring, and no
// warp of the producer transposes; the instance takes the pre-pass row (ws_fp8_row's `prepass`: 224
// keys at D = 128, 160 at D = 64, V^T in 32-byte swizzle blocks).
template <int D_, bool SHORT_ROW = false, int EB_ = 2, bool PAD_ = false, bool PREPASS_ = false>
struct WsTraits {
  static constexpr ws::WsTileRow ROW = ws::ws_tile_row(D_, EB_, SHORT_ROW, PREPASS_);
  static constexpr int D = D_, BM = ROW.BM, BN = ROW.BN, STAGES = ROW.stages, WGS = ROW.consumer_wgs, EB = EB_;
  static constexpr int POLY = ROW.exp2_poly_of_8;        // exponentials of 8 on the FMA pipe (exp2_poly.hpp)
  static constexpr int LAZY = ROW.lazy_rescale_log2;     // the lazy rescale's threshold (softmax_rows)
  static constexpr bool TURNS = ROW.take_turns;          // the consumers take turns issuing (ws_pipeline.hpp)
  static constexpr bool RESCALE_UNDER_S = ROW.rescale_under_s;  // O's rescale between S's and P V's issues
  static constexpr int TRIM = ROW.trim_keys / 8;         // column blocks of a trimmed masked tile (0: none)
  static constexpr bool GROUP_TILES = ROW.group_tiles;   // each consumer warpgroup's own tiles (ws_consume)
  static constexpr bool PACK_IN_SOFTMAX = EB == 1 && ROW.pack_in_softmax;  // P's E4M3 pack inside the softmax
  static constexpr bool FP8 = EB == 1, PAD = PAD_, PREPASS = PREPASS_;
  static constexpr bool TRANSPOSES = FP8 && !PREPASS;  // the producer's warps 1-3 transpose V in shared memory
  static constexpr int DE = D * EB / 2;                  // 16-bit columns a Q/K/V row
  static constexpr int THREADS = ws::block_threads(WGS);
  static constexpr int SW = ws::swizzle_bytes(DE), BC = ws::block_cols(SW);  // swizzle bytes, columns a block
  static constexpr int KD = DE / 16;                     // k steps (32 bytes each) of Q K^T
  static constexpr int KN = BN * EB / 32;                // k steps of P V: 16 keys (16-bit), 32 keys (FP8)
  static constexpr int SWT = FP8 ? ws::swizzle_bytes_vt(BN / 2) : 0;  // FP8: V^T's rows are BN bytes
  static constexpr int BCT = ws::block_cols(SWT > 0 ? SWT : 128);  // PREPASS: 16-bit columns a V^T box
  // O through shared memory and TMA stores (ws_layout.hpp's ws_stage_o; the epilogue below).
  static constexpr bool STAGE_O = ws::ws_stage_o(BM, BN, D, STAGES, EB);
  static constexpr int QSTAGES = ws::ws_q_stages(BM, BN, D, STAGES, EB, STAGE_O, PREPASS);  // Q's ring (ws_layout.hpp)
  // Whether a launch with split count G stores O through the staging tile and the TMA (the kernel's
  // epilogue; the host encodes O's tensor map then): splits store fp32 partials thread by thread.
  static constexpr FA_HD bool tma_stores_o(int G) { return STAGE_O && G <= 1; }
  static constexpr ws::WsSmem layout() { return ws::ws_smem(BM, BN, D, STAGES, EB, STAGE_O, QSTAGES, PREPASS); }
  static constexpr int SMEM = layout().total;
  static_assert(ROW.BM > 0, "no tile row for this head dim");
  static_assert(WGS >= 2 && WGS <= ws::kMaxConsumerWgs && BM == 64 * WGS, "one 64-row slice a consumer warpgroup");
  static_assert(ws::budgets_fit(WGS, TRANSPOSES, D), "setmaxnreg's budgets past the registers the block enters with");
  static_assert(!PREPASS || (FP8 && ROW.vt_prepass_rows > 0 && (BN / 2) % BCT == 0), "the V^T pre-pass is an FP8 row's");
  static_assert(!PREPASS || ws::vt_keys_round(BN) % BN == 0, "the pre-pass's rows hold whole tiles (its tensor map's window)");
  static_assert(ROW.vt_prepass_rows == ws::ws_tile_row(D_, EB_, SHORT_ROW).vt_prepass_rows,
                "the host decides the pre-pass on the transposing row's threshold (fa_mma_ws.hpp's vt_prepass)");
  static_assert(SW > 0 && DE % BC == 0 && BN % (32 / EB) == 0 && STAGES >= 2, "tile shape");
  static_assert(!FP8 || (SWT > 0 && (D == 64 || D == 128 || D == 256) && BN % 32 == 0), "FP8 tile shape");
  static_assert(SMEM <= ws::kMaxDynamicSmem, "shared memory");
  static_assert(!GROUP_TILES || !TURNS, "a turn counts every tile of the item");
  static_assert(ROW.trim_keys >= 0 && ROW.trim_keys % 8 == 0 && ROW.trim_keys < BN,
                "a trimmed softmax is whole column blocks of the tile");
};

// The tensor maps, encoded on the host (kernels/mma/fa_mma_ws.hpp), read by the TMA in place: Q, K, V,
// and O (64-row boxes, one consumer warpgroup's rows) where the row stages O and the launch does
// not split (G <= 1; splits store fp32 partials thread by thread), else zeros.
struct WsMaps {
  sm90::TensorMap q, k, v, o;
  tile::ItemDivs divs;  // a wave's item decoding (block_coords_at)
  tile::LptOrder lpt;   // the items' order, LPT (block_coords_lpt, lpt_coords), where the host takes it
  int* sched;           // a wave with a counter (ws_wave_from_counter): two ints, zero between launches
                        // (the next item's counter, the blocks done)
};

#if FA_HAS_WGMMA_SM90
// A consumer warpgroup `cw` (0 .. WGS - 1: rows [64 cw, 64 cw + 64) of the block), thread `wt` of it.
template <typename T, typename K, bool WAVE>
__device__ inline void ws_consume(const AttnArgs& a, const sm90::TensorMap* mo, const tile::BlockCoords& c,
                                  const KeyRange& kr, int ntiles, uint32_t base, int cw, int wt, int tb, int qk) {
  constexpr ws::WsSmem L = K::layout();
  constexpr ws::DescStrides kd = ws::kmajor_strides(K::SW), vd = ws::mnmajor_strides(K::BN, K::SW);
  constexpr ws::DescStrides td = ws::kmajor_strides(K::FP8 ? K::SWT : 128);  // FP8: V^T, K-major
  // The V stage the consumers read, its barriers: V itself, or with FP8 its transpose.
  auto v_ready = [&](int st) { return base + (K::TRANSPOSES ? L.vt_full(st) : L.v_full(st)); };
  auto v_free = [&](int st) { return K::TRANSPOSES ? L.vt_empty(st) : L.v_empty(st); };
  const int lane = wt % 32;
  const int64_t no_mask_end = tile::unmasked_end(a, c, kr);
  float o[K::D / 2], s[K::BN / 2], alpha[2];
  bool rescale = false;  // the last softmax moved a row's max: O is to be multiplied by alpha
  uint32_t p[K::KN][4];
#pragma unroll
  for (int i = 0; i < K::D / 2; ++i) o[i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

  // Each step straight-line code, as in mma_wg_fwd (fa_mma_sm90.hpp): ptxas then sees which wgmma
  // group a register read waits for.
  auto issue_s = [&](int t) {  // S = Q K_t^T over this warpgroup's 64 rows
    const uint32_t kt = base + L.k(ws::stage_of(tb + t, K::STAGES)), q = base + L.q_tile(ws::stage_of(qk, K::QSTAGES));
    auto qd = [&](int kk) { return ws::gmma_desc(q + ws::kmajor_start(64 * cw, kk, K::BM, K::SW), kd.lbo, kd.sbo, K::SW); };
    auto kdesc = [&](int kk) { return ws::gmma_desc(kt + ws::kmajor_start(0, kk, K::BN, K::SW), kd.lbo, kd.sbo, K::SW); };
    if constexpr (K::FP8) {
      sm90::ss8<std::is_same_v<T, E4M3>, K::BN, 0>(s, qd(0), kdesc(0));
#pragma unroll
      for (int kk = 1; kk < K::KD; ++kk) sm90::ss8<std::is_same_v<T, E4M3>, K::BN, 1>(s, qd(kk), kdesc(kk));
    } else {
      sm90::ss<T, K::BN, 0>(s, qd(0), kdesc(0));
#pragma unroll
      for (int kk = 1; kk < K::KD; ++kk) sm90::ss<T, K::BN, 1>(s, qd(kk), kdesc(kk));
    }
    wg::commit();
  };
  auto issue_pv = [&](int t) {  // O += P V_t
    if constexpr (K::FP8) {  // B = V^T (D rows of BN key bytes), K-major; k step kn is its bytes [32 kn, 32 kn + 32)
      const int vst = ws::stage_of(tb + t, K::STAGES);
      const uint32_t vtt = base + (K::TRANSPOSES ? L.vt(vst) : L.v(vst));  // PREPASS: the V ring holds V^T
#pragma unroll
      for (int kn = 0; kn < K::KN; ++kn)
        sm90::rs8<std::is_same_v<T, E4M3>, K::D>(
            o, p[kn], ws::gmma_desc(vtt + ws::kmajor_start(0, kn, K::D, K::SWT), td.lbo, td.sbo, K::SWT));
    } else {
      const uint32_t vt = base + L.v(ws::stage_of(tb + t, K::STAGES));
#pragma unroll
      for (int kn = 0; kn < K::KN; ++kn)
        sm90::rs<T, K::D>(o, p[kn], ws::gmma_desc(vt + ws::mnmajor_start(kn, K::BN, K::SW), vd.lbo, vd.sbo, K::SW));
    }
    wg::commit();
  };
  auto release = [&](int bar) {  // this warp's wgmma reads of the stage are done (ws_pipeline.hpp)
    if (lane == 0) sm90::mbar_arrive(base + uint32_t(bar));
  };
  // A wave's Q stage and item slot: every lane has read the slot (ws_wave_items) and arrives itself
  // (ws_pipeline.hpp's q_empty_lane_arrivals).
  auto release_q = [&] { sm90::mbar_arrive(base + uint32_t(L.q_empty(ws::stage_of(qk, K::QSTAGES)))); };
  // E4M3 P: k32 step kn's register r packs the slots ws_fp8.hpp names (V^T matches).
  auto pack_fp8_reg = [&](int kn, int r) {
    p[kn][r] = sm90::pack4_e4m3(s[ws::fp8_p_source(kn, r, 0)], s[ws::fp8_p_source(kn, r, 1)],
                                s[ws::fp8_p_source(kn, r, 2)], s[ws::fp8_p_source(kn, r, 3)]);
  };
  auto pack_p = [&] {
    if constexpr (K::FP8) {
#pragma unroll
      for (int kn = 0; kn < K::KN; ++kn)
#pragma unroll
        for (int r = 0; r < 4; ++r) pack_fp8_reg(kn, r);
    } else {
      wg::pack_p<T>(s, p);
    }
  };
  auto pack_pair = [&](int hr, int j) {  // block j of row hr done: with block j - 1, a register of P
    if (j % 2 == 0) return;
    const ws::Fp8PReg g = ws::fp8_p_reg_of_blocks(j / 2, hr);
    pack_fp8_reg(g.kn, g.r);
  };
  // S_t (landed) -> exp2 in place, row sums, alpha: the maxes (softmax_rows_max; alpha and `rescale`
  // set), then `mid()`, then the exponentials (softmax_rows_exp). With the row's PACK_IN_SOFTMAX a full-width tile's
  // exponentials go into P's registers as they are made (fp8_p_reg_of_blocks), so mid must leave P
  // free; a trimmed tile packs after its exponentials (a second fused form in the kernel made ptxas
  // serialise every wgmma: C7511, insufficient registers for the wgmma pipeline, nvcc 13.0).
  auto softmax = [&](int t, auto&& mid) {
    const int64_t kv0 = kr.begin + int64_t(t) * K::BN;
    // Rows (thread % 32) / 4 (slots 4j, 4j + 1) and + 8 (4j + 2, 4j + 3); with the row's LAZY their
    // max is kept while no score of the tile passes it by 2^LAZY, and O is then not rescaled. The
    // softmax over the first NT column blocks: all of them, or a trimmed masked tile's.
    auto at = [&](int hr, int j, int e) -> float& { return s[4 * j + 2 * hr + e]; };
    auto softmax_blocks = [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      SoftmaxStep<2> st = softmax_rows_max<NT, 2, K::LAZY>(at, m, a.scale_log2, alpha, quad_max);
      if constexpr (K::FP8)  // P in [0, 2^8] (ws_fp8.hpp's kFp8POffsetLog2)
        for (float& n : st.neg_m) n += float(ws::kFp8POffsetLog2);
      rescale = st.grow;
      mid();
      if constexpr (K::PACK_IN_SOFTMAX && NT == K::BN / 8) {
        wg::pin(s);  // the exponentials, and so P's new values, after mid's wait (no second P live)
        softmax_rows_exp<NT, 2, K::POLY>(at, st, l, a.scale_log2, alpha, pack_pair);
      } else {
        softmax_rows_exp<NT, 2, K::POLY>(at, st, l, a.scale_log2, alpha);
        if constexpr (K::PACK_IN_SOFTMAX) pack_p();
      }
    };
    if (kv0 + K::BN > no_mask_end) {  // causal diagonal or the range's last tile
      int vis[2];
#pragma unroll
      for (int hr = 0; hr < 2; ++hr)
        vis[hr] = tile::tile_cols_visible(a, c.q0 + 64 * cw + frag::wgmma_m64nNk16_c(wt, 2 * hr).row, kv0, kr.end, K::BN);
      auto mask_blocks = [&](auto nt) {
#pragma unroll
        for (int hr = 0; hr < 2; ++hr)
          mask_quad_row<decltype(nt)::value>([&](int j, int e) -> float& { return at(hr, j, e); }, lane, vis[hr]);
      };
      // No row of the warpgroup sees a key past the first TRIM blocks: its last row before S sees the
      // most (row_key_end grows with the row; rows past S are padding, which nothing stores and whose
      // masked scores past TRIM blocks only drop out), so every thread decides alike without a word
      // between the warps. A decision per warp (session 41's) put the warps of one warpgroup on
      // different paths, and mid may wait for a wgmma group there: wgmma.wait_group is .aligned, and
      // synccheck saw the warps at different PCs (session 47). The warp's reduction of a value every
      // lane already holds puts it in a uniform register, as the loop bound's below: taken from the
      // thread's registers as it stands, the branch cost FP8 D = 128 4.6% (session 47, call 4; its
      // SASS moved wgmma's descriptors through 23 more R2UR, with 24 more WARPSYNC).
      if constexpr (K::TRIM > 0) {
        const int last = c.q0 + 64 * cw + 63 < a.S ? c.q0 + 64 * cw + 63 : a.S - 1;
        if (__reduce_max_sync(0xffffffffu, tile::tile_cols_visible(a, last, kv0, kr.end, K::BN)) <= 8 * K::TRIM) {
          mask_blocks(std::integral_constant<int, K::TRIM>{});
#pragma unroll
          for (int i = 4 * K::TRIM; i < K::BN / 2; ++i) s[i] = 0.f;  // P's columns past them: no key
          softmax_blocks(std::integral_constant<int, K::TRIM>{});
          return;
        }
      }
      mask_blocks(std::integral_constant<int, K::BN / 8>{});
    }
    softmax_blocks(std::integral_constant<int, K::BN / 8>{});
  };
  // O *= alpha where the last softmax moved a row's max, before the next P V: with the row's
  // RESCALE_UNDER_S between the issues of S_t and P_{t-1} V_{t-1}, so that it runs under S_t (FA3's
  // rescale_o), else once P_{t-1} V_{t-1} is done, before the next issue.
  auto rescale_o = [&] {
    if (rescale) {
#pragma unroll
      for (int i = 0; i < K::D / 2; ++i) o[i] *= alpha[(i % 4) / 2];
    }
  };

  // The tiles this warpgroup computes: with the row's GROUP_TILES those that hold a key of its rows
  // (ws_pipeline.hpp's group_tiles; it releases the rest unread), else all of the item's.
  // The count is the same in every lane; the warp's reduction puts it in a uniform register, so the
  // loop stays uniform (a bound derived from the thread index made ptxas move every wgmma descriptor
  // through regular registers: 182 R2UR against 40, and the FP8 rows 7-16% slower).
  const int nt = K::GROUP_TILES
                     ? __reduce_min_sync(0xffffffffu, ws::group_tiles(a.S, a.Sk, a.causal, c.q0, cw, kr, K::BN, ntiles))
                     : ntiles;
  if (WAVE && nt == 0) release_q();  // nothing to compute: the slot is read, this warpgroup is done with Q
  if (nt > 0) {
    sm90::mbar_wait(base + L.q_full(ws::stage_of(qk, K::QSTAGES)), ws::full_parity(qk, K::QSTAGES));
    sm90::mbar_wait(base + L.k_full(ws::stage_of(tb, K::STAGES)), ws::full_parity(tb, K::STAGES));
    wg::fence();
    issue_s(0);
    wg::wait<0>();
    wg::pin(s);
    release(L.k_empty(ws::stage_of(tb, K::STAGES)));
    if (WAVE && nt == 1) release_q();  // every S of the item landed: Q is free
    softmax(0, SoftmaxNoHook{});  // O is still zero: its first rescale (alpha 0 from a max of -inf) keeps it so
    if constexpr (!K::PACK_IN_SOFTMAX) pack_p();
    if (K::TURNS && ws::sched_first_arrive(cw, nt)) sm90::bar_arrive(ws::sched_barrier(0), ws::kSchedThreads);
    for (int t = 1; t < nt; ++t) {
      const int ks = ws::stage_of(tb + t, K::STAGES), vs = ws::stage_of(tb + t - 1, K::STAGES);
      // Both tiles landed before either GEMM issues: a wait loop between the two issues makes ptxas
      // serialise every wgmma of the kernel (C7520, nvcc 13.0), where FA3 waits for V in between.
      sm90::mbar_wait(base + L.k_full(ks), ws::full_parity(tb + t, K::STAGES));
      sm90::mbar_wait(v_ready(vs), ws::full_parity(tb + t - 1, K::STAGES));
      if (K::TURNS) sm90::bar_sync(ws::sched_barrier(cw), ws::kSchedThreads);  // this warpgroup's turn on the tensor cores
      wg::fence();  // P packed (and, RESCALE_UNDER_S off, O rescaled) by ordinary instructions since the last wgmma
      issue_s(t);
      if constexpr (K::RESCALE_UNDER_S) {
        rescale_o();  // under S_t: O is not in flight (P_{t-2} V_{t-2} is done)
        wg::pin(o);   // the multiplies stay before the fence
        wg::fence();  // O rescaled by ordinary instructions before the wgmma that accumulates into it
      }
      issue_pv(t - 1);
      if (K::TURNS && ws::sched_arrive_after(cw, t, nt, K::WGS))
        sm90::bar_arrive(ws::sched_barrier(ws::sched_next(cw, K::WGS)), ws::kSchedThreads);
      wg::wait<1>();  // S_t landed; P_{t-1} V_{t-1} may still run
      wg::pin(s);
      release(L.k_empty(ks));
      if (WAVE && t == nt - 1) release_q();
      auto pv_done = [&] {  // after the softmax's max phase: alpha and rescale are this tile's
        wg::wait<0>();  // O and P are free
        wg::pin(o);
        release(v_free(vs));
        if constexpr (!K::RESCALE_UNDER_S) rescale_o();
      };
      if constexpr (K::PACK_IN_SOFTMAX) {
        softmax(t, pv_done);  // P V_{t-1} waited for between the maxes and the exponentials
      } else {
        softmax(t, SoftmaxNoHook{});
        pv_done();
        pack_p();
      }
    }
    const int vs = ws::stage_of(tb + nt - 1, K::STAGES);
    sm90::mbar_wait(v_ready(vs), ws::full_parity(tb + nt - 1, K::STAGES));
    if constexpr (K::RESCALE_UNDER_S) {
      rescale_o();
      wg::pin(o);  // as in the loop: the multiplies stay before the fence
    }
    wg::fence();
    issue_pv(nt - 1);
    wg::wait<0>();
    wg::pin(o);
    release(v_free(vs));
  }
  // The item's tiles past this warpgroup's keys, each released once it has landed (ws_pipeline.hpp's
  // group_tiles says why then). Their count is recounted from the range as ws_work counts it rather
  // than kept in ntiles through the loop; the two forms ran alike (session 42's calls 1-2, both with
  // the non-uniform bound), and the recount is the form measured since.
  const int all = K::GROUP_TILES && kr.end > kr.begin ? int((kr.end - kr.begin + K::BN - 1) / K::BN) : nt;
  for (int t = nt; t < all; ++t) {
    const int st = ws::stage_of(tb + t, K::STAGES);
    sm90::mbar_wait(base + L.k_full(st), ws::full_parity(tb + t, K::STAGES));
    release(L.k_empty(st));
    sm90::mbar_wait(v_ready(st), ws::full_parity(tb + t, K::STAGES));
    release(v_free(st));
  }

  // The epilogue. STAGE_O without splits: the warpgroup writes its 64 rows of O into its slice of
  // the staging tile (Q's swizzled layout: 4-byte writes, a warp's 32 on 32 banks) and one thread
  // stores the slice with the TMA (rows past S are clipped there), where each thread's 64-bit
  // address arithmetic and stores took 274 instructions a warp an item at D = 64 (ncu). The slice's
  // previous store must have read it first (a block that runs several items).
  const bool staged = K::tma_stores_o(a.G);
  if (staged) {
    if (wt == 0) sm90::bulk_wait_read<0>();
    sm90::bar_sync(ws::epilogue_barrier(cw), 128);
  }
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float lsum = l[hr];
    lsum += shfl_xor(lsum, 1, 4);
    lsum += shfl_xor(lsum, 2, 4);
    tile::RowEnd e = tile::row_end(m[hr], lsum, a.scale_log2);
    if constexpr (K::FP8) {
      e.inv_l *= a.v_descale;  // v's descale, with 1/l (q's and k's are in scale_log2)
      e.lse -= float(ws::kFp8POffsetLog2) * kLn2;  // l holds P's offset (-inf stays -inf)
    }
    const frag::Coord at = frag::wgmma_m64nNk16_c(wt, 2 * hr);
    const int s_row = c.q0 + 64 * cw + at.row;
    auto pair = [&](int j) { return make_float2(o[4 * j + 2 * hr] * e.inv_l, o[4 * j + 2 * hr + 1] * e.inv_l); };
    if constexpr (K::STAGE_O) {
      if (staged) {
        const uint32_t row = base + uint32_t(L.o);
#pragma unroll
        for (int j = 0; j < K::D / 8; ++j)
          sts32(row + uint32_t(ws::sw_offset(64 * cw + at.row, 8 * j + at.col, K::BM, K::SW)),
                pack2<T>(pair(j).x, pair(j).y));
        if (lane % 4 == 0 && s_row < a.S) tile::store_lse(a, c, s_row, e.lse);
        continue;
      }
    }
    if (s_row >= a.S) continue;
    // Thread by thread (splits, or no staging tile): the row's address once (store_row_pairs). At
    // D = 64 the per-pair form had read 1.5-2.5% faster on the rows run as a wave (H100, 157da81);
    // those rows now stage O.
    if constexpr (K::PAD) tile::store_row_pairs<T, K::D / 8>(a, c, s_row, at.col, int(a.D / 8), pair);  // D % 8 == 0
    else tile::store_row_pairs<T, K::D / 8>(a, c, s_row, at.col, pair);
    if (lane % 4 == 0) tile::store_lse(a, c, s_row, e.lse);
  }
  if (staged) {
    sm90::fence_proxy_async();  // the writes above, before the TMA's reads
    sm90::bar_sync(ws::epilogue_barrier(cw), 128);
    if (wt == 0) {
#pragma unroll
      for (int j = 0; j < K::DE / K::BC; ++j)  // column block j of the warpgroup's rows
        sm90::tma_store_4d(mo, base + uint32_t(L.o + j * K::BM * K::SW + 64 * cw * K::SW), j * K::BC, c.q0 + 64 * cw,
                           c.h, c.b);
      sm90::bulk_commit();
    }
  }
}
#endif

// WAVE: one wave of blocks walks the work items (kernels/mma/fa_mma_ws.hpp says where); else a block
// is one item, and its code is the single-item code (tiles and Q loads counted from 0, no Q release):
// the loop there cost the D=96 causal row 2.4% and the D=128 causal rows up to 1% (H100, one call).
template <typename T, typename K, bool WAVE>
__global__ void __launch_bounds__(K::THREADS, 1) mma_ws_fwd(const FA_GRID_CONSTANT WsMaps maps, AttnArgs a) {
#if FA_HAS_WGMMA_SM90
  extern __shared__ __align__(128) unsigned char ws_smem_raw[];
  const uint32_t base = (smem_addr(ws_smem_raw) + uint32_t(ws::kSmemAlign - 1)) & ~uint32_t(ws::kSmemAlign - 1);
  constexpr ws::WsSmem L = K::layout();
  const int tid = threadIdx.x;
  if (tid == 0) {
#pragma unroll
    for (int i = 0; i < K::QSTAGES; ++i) {
      sm90::mbar_init(base + L.q_full(i), 1);
      sm90::mbar_init(base + L.q_empty(i), ws::q_empty_lane_arrivals(K::WGS, K::TRANSPOSES));
    }
#pragma unroll
    for (int st = 0; st < K::STAGES; ++st) {
      sm90::mbar_init(base + L.k_full(st), 1);
      sm90::mbar_init(base + L.v_full(st), 1);
      sm90::mbar_init(base + L.k_empty(st), ws::empty_arrivals(K::WGS));
      sm90::mbar_init(base + L.v_empty(st), ws::v_empty_arrivals(K::WGS, K::TRANSPOSES));
      if constexpr (K::TRANSPOSES) {
        sm90::mbar_init(base + L.vt_full(st), ws::kTransposeWarps);
        sm90::mbar_init(base + L.vt_empty(st), ws::empty_arrivals(K::WGS));
      }
    }
    sm90::fence_mbar_init();
  }
  __syncthreads();  // the last block-wide barrier: the roles below sync only through mbarriers and bar 1 .. WGS
  // The block's work items: WAVE, those ws_produce_wave publishes (ws_pipeline.hpp's "a wave's items");
  // else the one item of its place in a (q tiles, H, B x G) grid.
  if (tid < 128) {
    sm90::reg_dealloc<ws::producer_regs(K::WGS, K::TRANSPOSES, K::D)>();
    if (tid == 0) {
      sm90::prefetch_tensor_map(&maps.q);
      sm90::prefetch_tensor_map(&maps.k);
      sm90::prefetch_tensor_map(&maps.v);
    }
    if constexpr (WAVE) {
      if (tid == 0) ws_produce_wave<K>(maps, a, maps.divs.nq.divisor() * a.H * a.B * (a.G > 1 ? a.G : 1), base);
      if constexpr (K::TRANSPOSES)
        if (tid >= 32)
          ws_wave_items<K>(base, [&](const WsWork& w, int tb, int k) {
            sm90::mbar_arrive(base + L.q_empty(ws::stage_of(k, K::QSTAGES)));  // each lane, after its reads
            ws_transpose_v<K>(w.ntiles, base, tid - 32, tb);
          });
    } else {
      const WsWork w = ws_work<K>(maps, a, -1);
      if (w.ntiles > 0) {
        if (tid == 0) {
          ws_produce<K>(&maps.q, &maps.k, &maps.v, w.c, w.kr, w.ntiles, base, 0, 0);
          ws_drain<K>(base, w.ntiles, 0, 1);
        }
        if constexpr (K::TRANSPOSES)
          if (tid >= 32) ws_transpose_v<K>(w.ntiles, base, tid - 32, 0);
      }
    }
  } else {
    sm90::reg_alloc<ws::consumer_regs(K::WGS, K::TRANSPOSES, K::D)>();
    const int cw = tid / 128 - 1, wt = tid % 128;
    if constexpr (WAVE)
      ws_wave_items<K>(base, [&](const WsWork& w, int tb, int k) {
        ws_consume<T, K, true>(a, &maps.o, w.c, w.kr, w.ntiles, base, cw, wt, tb, k);
      });
    else {
      const WsWork w = ws_work<K>(maps, a, -1);
      ws_consume<T, K, false>(a, &maps.o, w.c, w.kr, w.ntiles, base, cw, wt, 0, 0);
    }
    if constexpr (K::STAGE_O)  // the last TMA store has read O's staging tile before the block's memory goes
      if (tid % 128 == 0) sm90::bulk_wait_read<0>();
  }
#else
  (void)maps, (void)a;
  unsupported_arch();  // built without sm_90a: the host launches this kernel only where the gate admits it
#endif
}

}  // namespace
}  // namespace fa::gpu
