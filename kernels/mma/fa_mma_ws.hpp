// The host side of mma's sm_90 kernel (kernels/mma/fa_mma_ws_sm90.hpp, mma_ws_fwd: FlashAttention-3's
// forward structure: a TMA producer warp fills a K/V ring completed on mbarriers; two or three consumer
// warpgroups (setmaxnreg; in the 16-bit rows they take turns on the tensor cores) with P in
// registers): the dispatch from D to a row of the tile table (kernels/mma/ws_tile_traits.hpp), the
// tensor maps (encoded by kernels/mma/tensor_map.hpp), the launch, the tile for the split rules and
// the TMA's refusals.
// kernels/mma/fa_mma.hip includes it (alone: its definitions sit in an unnamed namespace) and decides
// when a problem runs it (use_ws).
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/mma/fa_mma_ws_sm90.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"
#include "kernels/mma/tensor_map.hpp"
#include "kernels/mma/ws_vt_prepass.hpp"

namespace fa::gpu {
namespace {

// The dispatch: calls f(WsTraits<R, ...>{}) for the table's row of (D, short_row: ws_takes_short_row),
// or returns false; R is D, or the wider row a padded D runs on (ws_run_d). It walks the multiples of
// 8 up to 256 and instantiates kernels for the D the table has rows for (a second instance where the
// short row differs, one more for each padded D, one more where an FP8 row has the V^T pre-pass and
// `prepass` asks for it), so the table is the one head-dim list (the gate and the row's words ask this too).
template <int EB, int DC = 8, typename F>
bool with_ws_cfg(int64_t D, bool short_row, bool prepass, F&& f) {
  constexpr int R = ws::ws_run_d(DC, EB);
  if constexpr (R > 0) {
    if (D == DC) {
      auto run = [&](auto short_tag) {
        constexpr bool SHORT = decltype(short_tag)::value;
        if constexpr (ws::ws_tile_row(R, EB, SHORT).vt_prepass_rows > 0) {
          if (prepass) {
            f(WsTraits<R, SHORT, EB, (R != DC), true>{});
            return;
          }
        }
        f(WsTraits<R, SHORT, EB, (R != DC)>{});
      };
      if constexpr (ws::ws_short_row_differs(R, EB)) {
        if (short_row) {
          run(std::true_type{});
          return true;
        }
      }
      run(std::false_type{});
      return true;
    }
  }
  if constexpr (DC < 256) return with_ws_cfg<EB, DC + 8>(D, short_row, prepass, f);
  else return false;
}
// The instance p runs on with elem_bytes-byte rows (ws_run_row: its D, causal, lengths and heads).
ws::WsRunRow run_row(const Problem& p, int elem_bytes) {
  return ws::ws_run_row(int(p.D), elem_bytes, p.causal, p.S, p.Sk, p.H, p.Hk);
}
// FP8 inputs take the 1-byte rows.
template <typename F>
bool with_ws_cfg(const Problem& p, F&& f) {
  if (is_fp8(p.dtype)) {
    const ws::WsRunRow r = run_row(p, 1);
    return with_ws_cfg<1>(p.D, r.short_row, r.prepass, f);
  }
  return with_ws_cfg<2>(p.D, run_row(p, 2).short_row, false, f);
}
// Calls f(T{}, K{}) for p's dtype traits and tile row, or returns false: the pairs that exist only
// (an FP8 dtype with the 1-byte rows, fp16/bf16 with the 2-byte ones).
template <typename F>
bool with_ws_kernel(const Problem& p, F&& f) {
  bool found = false;
  with_ocp_dtype(p.dtype, [&](auto tr) {
    using T = decltype(tr);
    constexpr int eb = std::is_same_v<T, E4M3> || std::is_same_v<T, E5M2> ? 1 : 2;
    const ws::WsRunRow r = run_row(p, eb);  // eb is T's, so the row always matches the traits type
    found = with_ws_cfg<eb>(p.D, r.short_row, r.prepass, [&](auto k) { f(tr, k); });
  });
  return found;
}
std::string ws_head_dims(int elem_bytes = 2) {
  return head_dims_where([&](int D) {
           return elem_bytes == 1 ? with_ws_cfg<1>(D, false, false, [](auto) {})
                                  : with_ws_cfg<2>(D, false, false, [](auto) {});
         }).str();
}

// The TMA's view of Q (rows S, heads H) and of K and V (rows Sk, heads Hk) of head dim D, from
// element strides, in 16-bit columns: an FP8 tensor is one of half as many 2-byte columns (its strides
// halve; odd ones have no such view, and ws_tma_problem says so). A padded instance (K::PAD) views
// the tensor's D columns through its wider tile (ws_layout.hpp's tma_tile_padded).
template <typename K>
ws::TmaTile ws_view(int64_t D, int tile_rows, int64_t rows, int64_t heads, int64_t batch, int64_t s_row,
                    int64_t s_head, int64_t s_batch) {
  const int64_t sr = s_row * K::EB / 2, sh = s_head * K::EB / 2, sb = s_batch * K::EB / 2;
  if constexpr (K::PAD) return ws::tma_tile_padded(int(D * K::EB / 2), K::DE, tile_rows, rows, heads, batch, sr, sh, sb);
  else return ws::tma_tile(K::DE, tile_rows, rows, heads, batch, sr, sh, sb);
}
template <typename K>
bool ws_strides_fit(int64_t s_row, int64_t s_head, int64_t s_batch) {
  return K::EB == 2 || (s_row % 2 == 0 && s_head % 2 == 0 && s_batch % 2 == 0);
}
template <typename K>
ws::TmaTile q_tile(const AttnArgs& a) {
  return ws_view<K>(a.D, K::BM, a.S, a.H, a.B, a.q_ss, a.q_sh, a.q_sb);
}
template <typename K>
ws::TmaTile kv_tile(const AttnArgs& a) {
  return ws_view<K>(a.D, K::BN, a.Sk, a.Hk, a.B, a.k_ss, a.k_sh, a.k_sb);
}
// O has Q's shape and strides (tile_loop.hpp's dense_o_row); a box is one consumer warpgroup's 64 rows.
template <typename K>
ws::TmaTile o_tile(const AttnArgs& a) {
  return ws_view<K>(a.D, 64, a.S, a.H, a.B, a.q_ss, a.q_sh, a.q_sb);
}

// The grid: one block a work item (q tile, head, batch x split), as block_coords reads it. Where the
// items are short (ws_tile_traits.hpp's ws_launch_wave: at most kWsPersistentTiles key tiles, or
// causal ones of up to kWsLongWaveTiles on the rows with long_causal_wave, or non-causal ones of up to
// the row's dense_wave_tiles, and more items than SMs), one wave of `sms` blocks walks them instead
// (the kernel's loop): a block then loads its next item's Q and first K/V tiles while its consumers
// finish the last one, where one-item blocks paid that as prologue and epilogue. Short non-causal
// items go to the blocks in turn; causal ones, which differ, and long non-causal ones go longest first
// (LPT order) to whichever block is free, by an atomic counter (FA3's
// DynamicPersistentTileScheduler; the kernel's ws_produce_wave). H100, A/B in one call (TFLOP/s,
// one-item blocks -> one wave): (16,16,16,512,512,64) fp16, 4 tiles an item, 254 -> 312;
// (4,16,16,1500,1500,64) fp16, 12 tiles, 377 -> 402. Causal waves, H200, session 35 (.dev/s35c3.sh, ms,
// two rounds alternated; the grid side is b7c47cf's build, these kernels with the short rows in LPT
// order, which ws_lpt_order has taken off them since at 1-3% of their time): issue 46's short rows
// (32,16,16,512,512,128) fp16 0.1355-0.1356 -> 0.1001-0.1005, (32,16,16,1024,1024,128) bf16 0.345 ->
// 0.280, (32,16,16,512,512,64) fp16 0.1155-0.1158 -> 0.0868-0.0869, (16,32,32,1024,1024,64) bf16 0.294
// -> 0.246, (32,32,8,1024,1024,128) bf16 0.664-0.665 -> 0.530, (32,16,16,1024,1024,128) e4m3 0.369 ->
// 0.285-0.286; (4,16,16,2048,2048,128,1) bf16 0.136 -> 0.129, (4,32,32,2048,2048,96,1) fp16 0.2317 ->
// 0.2225-0.2226; the non-causal waves and the one-item rows within 0.8%. Long non-causal items (more
// than 16 key tiles) run as a wave only up to their row's dense_wave_tiles, and from the counter: a
// static wave splits the items evenly where the hardware's block scheduler hands more to the SMs that
// run faster (a first build with every non-causal row in a static wave read the long D=64 rows 2-4%
// lower, against another call's numbers; in session 43 the counter won where the static wave lost,
// FP8 D = 64 at 4k, and both won on the other 4k rows and FP8 D = 256's 8k row, within 0.5% of each
// other; both lost on the 8k D = 64 and D = 128 rows and at D = 96: ws_tile_traits.hpp's
// dense_wave_tiles has the figures). Long causal items
// run as a wave on the rows whose long_causal_wave says so, up to kWsLongWaveTiles (ws_tile_traits.hpp:
// that field holds the measurements, sessions 35 and 37: 1.5-7.5% on D = 128's GQA, 3k-4k and FP8 rows,
// a loss at D = 96 and 256). A causal grid's blocks take their items in FA3's LPT order too (make_maps'
// lpt, tile_range.hpp's lpt_block), where the grid's own order (each head's q tiles longest first, head
// by head) started the last heads' longest items last (the D = 64 and D = 128 rows below up to 48 key
// tiles are waves since session 37, in the same order from the counter). H200, session 34, A/B in one
// call (ms, three rounds each; grid order -> LPT): (2,16,16,8192,8192,128,1) bf16 0.850-0.851 ->
// 0.821-0.823, Llama-3 GQA 0.845-0.846 -> 0.828-0.831, its FP8 row 0.692 -> 0.667-0.672,
// (2,16,16,4096,4096,256,1) bf16 0.433-0.435 -> 0.400-0.402, (4,32,32,2048,2048,96,1) fp16 0.245-0.247
// -> 0.232-0.234 (a wave since session 35), (1,32,32,4096,4096,80,1) fp16 0.222-0.225 -> 0.199-0.200,
// (1,64,64,8192,8192,128,1) fp16 1.692-1.694 -> 1.676-1.678. Causal grids of short items (few enough
// that no wave runs) keep the grid's order (ws_tile_traits.hpp's ws_lpt_order), and so do non-causal
// ones.
template <typename K>
bool ws_wave(const AttnArgs& a, int sms) {
  return ws::ws_launch_wave(K::ROW, a.S, a.Sk, a.H, a.B, a.G, a.causal, sms);
}

// V's map: V itself, or (K::PREPASS) the pre-pass's V^T in `vt` (vt_keys(Sk, BN) bytes a row). The items'
// order: LPT for the waves that take their items from the counter `sched` (two ints kept zero between
// launches: causal waves and long non-causal ones, ws_tile_traits.hpp's ws_wave_from_counter) and for
// causal grids of long items (ws_lpt_order); the grid's order elsewhere.
template <typename K>
WsMaps make_maps(const AttnArgs& a, DType t, int sms, int* sched, const void* vt = nullptr) {
  const sm90::TensorMap v =
      K::PREPASS ? encode_map(t, static_cast<const uint16_t*>(vt), ws::tma_tile_vt(K::BN, K::D, ws::vt_keys(a.Sk, K::BN), a.Hk, a.B), "V^T")
                 : encode_map(t, a.v, kv_tile<K>(a), "V");
  const int nq = int((a.S + K::BM - 1) / K::BM);
  const int64_t hb = int64_t(a.H) * a.B * (a.G > 1 ? a.G : 1);
  const bool dynamic = ws::ws_wave_from_counter(K::ROW, a.S, a.Sk, a.H, a.B, a.G, a.causal, sms);
  return WsMaps{encode_map(t, a.q, q_tile<K>(a), "Q"), encode_map(t, a.k, kv_tile<K>(a), "K"), v,
                K::tma_stores_o(a.G) ? encode_map(t, a.o, o_tile<K>(a), "O") : sm90::TensorMap{},
                tile::item_divs(a, nq),
                dynamic || ws::ws_lpt_order(a.causal, a.Sk, K::BN, a.G)
                    ? tile::lpt_order(nq, hb, tile::lpt_section_heads(a.Sk, K::D, dtype_bytes(t), a.H / a.Hk, hb))
                    : tile::LptOrder{},
                dynamic ? sched : nullptr};
}

template <typename T, typename K>
void launch_ws_cfg(const WsMaps& maps, const AttnArgs& a, Stream st, int sms) {
  static thread_local const bool smem_ok = [&] {  // per device: one per --devices worker thread
    FA_GPU_CHECK(set_max_dynamic_smem(mma_ws_fwd<T, K, false>, K::SMEM));
    FA_GPU_CHECK(set_max_dynamic_smem(mma_ws_fwd<T, K, true>, K::SMEM));
    return true;
  }();
  (void)smem_ok;
  const int nq = (a.S + K::BM - 1) / K::BM, splits = a.G > 1 ? a.G : 1;
  const bool wave = ws_wave<K>(a, sms);  // maps.sched: make_maps' decision, from the same sms
  const dim3 grid = wave ? dim3(unsigned(sms)) : dim3(nq, a.H, a.B * splits);
  // After the V^T pre-pass (K::PREPASS) the kernel is launched to overlap it (gpu.hpp's
  // launch_overlapping; FA3 launches its kernels so too): its blocks start as the pre-pass's last ones
  // leave, load Q and K and take S, and the producer waits for the pre-pass grid before its first V^T
  // load (ws_produce). H200, session 38, ms, the fastest of three rounds alternated:
  // (2,16,16,8192,8192,128) e4m3 1.2167 -> 1.2120, (1,16,16,8192,8192,256) 0.9164 -> 0.9123,
  // (4,16,16,4096,4096,128,1) 0.3909 -> 0.3886, (4,16,16,2048,2048,256,1) 0.1993 -> 0.1952,
  // (16,16,16,1024,1024,256) 0.3716 -> 0.3628; the Llama-3 GQA causal row 0.6504 -> 0.6487 (noise).
  if constexpr (K::PREPASS)
    FA_GPU_CHECK(wave ? launch_overlapping(mma_ws_fwd<T, K, true>, grid, dim3(K::THREADS), K::SMEM, st, maps, a)
                      : launch_overlapping(mma_ws_fwd<T, K, false>, grid, dim3(K::THREADS), K::SMEM, st, maps, a));
  else if (wave)
    mma_ws_fwd<T, K, true><<<grid, K::THREADS, K::SMEM, st>>>(maps, a);
  else
    mma_ws_fwd<T, K, false><<<grid, K::THREADS, K::SMEM, st>>>(maps, a);
  FA_GPU_CHECK_LAUNCH("mma_ws_fwd");
}

// The tile and occupancy a run uses, for the split rules.
TileShape ws_tile(const Problem& p, int, const DeviceFacts& device) {
  TileShape tile{128, 128, 1};
  if (!device.has_wgmma_sm90a || p.dtype == DType::fp32) return tile;
  with_ws_kernel(p, [&](auto tr, auto k) {
    using T = decltype(tr);
    using K = decltype(k);
    const auto kernel = mma_ws_fwd<T, K, false>;  // the wave's blocks take the same resources
    FA_GPU_CHECK(set_max_dynamic_smem(kernel, K::SMEM));
    int per_sm = 0;
    FA_GPU_CHECK(max_active_blocks(&per_sm, kernel, K::THREADS, K::SMEM));
    tile = TileShape{K::BM, K::BN, std::max(per_sm, 1)};
  });
  return tile;
}

// Why the TMA cannot describe this problem's Q or K/V (a stride or a size its maps cannot hold), or
// nothing: such problems stay on the other kernels. Asks the table's row of p.D; nothing without one.
std::optional<std::string> ws_tma_problem(const Problem& p) {
  std::optional<std::string> tma;
  with_ws_cfg(p, [&](auto k) {
    using K = decltype(k);
    const Strides qs = q_strides(p), ks = kv_strides(p);
    const ws::TmaTile q = ws_view<K>(p.D, K::BM, p.S, p.H, p.B, qs.seq, qs.head, qs.batch);
    const ws::TmaTile kv = ws_view<K>(p.D, K::BN, p.Sk, p.Hk, p.B, ks.seq, ks.head, ks.batch);
    if (!ws_strides_fit<K>(qs.seq, qs.head, qs.batch) || !ws_strides_fit<K>(ks.seq, ks.head, ks.batch))
      tma = std::string("the TMA's 2-byte view of FP8 inputs needs even strides");
    else if (const char* why = ws::tma_tile_problem(q)) tma = fmt::format("the TMA cannot describe Q: {}", why);
    else if (const char* why2 = ws::tma_tile_problem(kv)) tma = fmt::format("the TMA cannot describe K and V: {}", why2);
  });
  return tma;
}

}  // namespace
}  // namespace fa::gpu
