// The producer warpgroup of mma's sm_90 kernel (kernels/mma/fa_mma_ws_sm90.hpp, mma_ws_fwd): the one
// thread that issues the TMA copies of Q and of the K/V ring (ws_produce; a wave's items, ws_produce_wave;
// the block's end, ws_drain), and the FP8 transposing warps that write V^T into shared memory
// (ws_transpose_v). `K` is the kernel's WsTraits; `Maps` its WsMaps. Built only into sm_90a code, as
// the kernel.
#pragma once
#include "kernels/device/tile_loop.hpp"
#include "kernels/mma/async_sm90.hpp"
#include "kernels/mma/ws_fp8.hpp"
#include "kernels/mma/ws_layout.hpp"
#include "kernels/mma/ws_pipeline.hpp"
#include "kernels/mma/ws_wave_item_sm90.hpp"

namespace fa::gpu {
namespace {

#if FA_HAS_WGMMA_SM90
// The producer: one thread of warpgroup 0. An item's Q, then the ring in ws::producer_load's order;
// before refilling a stage it waits for the consumers' release of its previous tile. Its waits trap
// after seconds (mbar_wait_or_trap), so a lost copy or a stuck consumer fails the launch instead of
// hanging. A block that runs several work items counts their tiles on: item tiles t are the block's
// tiles tb + t (stage and parities from that), and its item qk (Q is a ring of QSTAGES: q_full and
// q_empty a stage) goes into Q's stage of qk, which ws_produce_wave has seen released.
template <typename K>
__device__ inline void ws_produce(const sm90::TensorMap* mq, const sm90::TensorMap* mk, const sm90::TensorMap* mv,
                                  const tile::BlockCoords& c, const KeyRange& kr, int ntiles, uint32_t base, int tb,
                                  int qk) {
  constexpr ws::WsSmem L = K::layout();
  const int qs = ws::stage_of(qk, K::QSTAGES);
  sm90::mbar_arrive_expect_tx(base + L.q_full(qs), uint32_t(L.q_bytes));
#pragma unroll
  for (int j = 0; j < K::DE / K::BC; ++j)  // box j: columns [j BC, (j + 1) BC) into column block j
    sm90::tma_load_4d(base + L.q_tile(qs) + j * K::BM * K::SW, mq, base + L.q_full(qs), j * K::BC, c.q0, c.h, c.b);
  bool vt_visible = false;  // PREPASS: the pre-pass grid, launched before this one, has finished
  for (int i = 0; i < 2 * ntiles; ++i) {
    const ws::Load ld = ws::producer_load(i, ntiles);
    const int st = ws::stage_of(tb + ld.tile, K::STAGES);
    const uint32_t full = base + (ld.is_v ? L.v_full(st) : L.k_full(st));
    const uint32_t dst = base + (ld.is_v ? L.v(st) : L.k(st));
    const sm90::TensorMap* map = ld.is_v ? mv : mk;
    const int kv0 = int(kr.begin + int64_t(ld.tile) * K::BN);
    const uint32_t empty = base + (ld.is_v ? L.v_empty(st) : L.k_empty(st));
    sm90::mbar_wait_or_trap(empty, ws::empty_parity(tb + ld.tile, K::STAGES));
    sm90::mbar_arrive_expect_tx(full, uint32_t(L.stage_bytes));
    if constexpr (K::PREPASS) {
      if (ld.is_v) {  // V^T's BN key bytes of all D rows (ws_layout.hpp's tma_tile_vt): box j is column block j
        if (!vt_visible) sm90::grid_dependency_wait(), vt_visible = true;  // the launch overlaps the pre-pass
#pragma unroll
        for (int j = 0; j < K::BN / 2 / K::BCT; ++j)
          sm90::tma_load_4d(dst + j * K::D * K::SWT, map, full, kv0 / 2 + j * K::BCT, 0, c.hk, c.b);
        continue;
      }
    }
#pragma unroll
    for (int j = 0; j < K::DE / K::BC; ++j) sm90::tma_load_4d(dst + j * K::BN * K::SW, map, full, j * K::BC, kv0, c.hk, c.b);
  }
}

// After the block's last item: stay until the last copy into each stage (and the last Q) has
// landed, so that a copy that never lands (a bad tensor map) traps here (mbar_wait_or_trap) instead
// of leaving the consumers to wait forever. Those stages take no later tile, so their phases stay
// where the parity says. `tiles`: the block's tiles in all; `last_q`: the last item whose Q was
// loaded (-1: none), of `items` published. Where a later item took its stage, the producer has seen
// that stage released, so its Q had landed (and the parity no longer names its phase).
template <typename K>
__device__ inline void ws_drain(uint32_t base, int tiles, int last_q, int items) {
  constexpr ws::WsSmem L = K::layout();
  if (last_q >= 0 && last_q + K::QSTAGES >= items)
    sm90::mbar_wait_or_trap(base + L.q_full(ws::stage_of(last_q, K::QSTAGES)), ws::full_parity(last_q, K::QSTAGES));
  for (int t = tiles > K::STAGES ? tiles - K::STAGES : 0; t < tiles; ++t) {
    const int st = ws::stage_of(t, K::STAGES);
    sm90::mbar_wait_or_trap(base + L.k_full(st), ws::full_parity(t, K::STAGES));
    sm90::mbar_wait_or_trap(base + L.v_full(st), ws::full_parity(t, K::STAGES));
  }
}

// A wave's producer (ws_pipeline.hpp's "a wave's items"): it takes the block's items one by one,
// from blockIdx.x on, the next one every gridDim.x-th, or with maps.sched (causal and long non-causal
// waves) the next one the counter hands out (FA3's DynamicPersistentTileScheduler: a block takes the longest item
// left when it is free; its first is blockIdx.x, then atomicAdd + gridDim.x). Each is decoded
// before the wait for its stage, published in the stage's slot, then loaded (ws_produce); the end
// (ntiles -1) once every copy has landed (ws_drain). The counter is zero when a launch starts: the
// block that finishes last zeroes it for the next.
template <typename K, typename Maps>
__device__ inline void ws_produce_wave(const Maps& maps, const AttnArgs& a, int items, uint32_t base) {
  constexpr ws::WsSmem L = K::layout();
  int item = int(blockIdx.x), tb = 0, last_q = -1, k = 0;
  for (;; ++k) {
    const bool live = item < items;
    // The next item asked for before this one's loads, so that the atomic's round trip passes under
    // them (FA3's prefetch_next_work).
    const int next = !live ? item : maps.sched ? atomicAdd(maps.sched, 1) + int(gridDim.x) : item + int(gridDim.x);
    WsWork w{};
    if (live) w = ws_work<K>(maps, a, item);
    else w.ntiles = -1;
    const int qs = ws::stage_of(k, K::QSTAGES);
    sm90::mbar_wait_or_trap(base + L.q_empty(qs), ws::empty_parity(k, K::QSTAGES));  // the slot and Q's stage are free
    if (!live) {
      ws_drain<K>(base, tb, last_q, k);
      put_work(base + L.item(qs), w);
      sm90::mbar_arrive(base + L.q_full(qs));
      break;
    }
    put_work(base + L.item(qs), w);
    if (w.ntiles == 0) {
      sm90::mbar_arrive(base + L.q_full(qs));
    } else {
      ws_produce<K>(&maps.q, &maps.k, &maps.v, w.c, w.kr, w.ntiles, base, tb, k);
      tb += w.ntiles, last_q = k;
    }
    item = next;
  }
  if (maps.sched) {  // every block's last atomicAdd came before its count here: the last one zeroes both
    __threadfence();
    if (atomicAdd(maps.sched + 1, 1) == int(gridDim.x) - 1) {
      __threadfence();  // the count read above (every block's count, so every hand-out) before the reset
      atomicExch(maps.sched, 0);
      atomicExch(maps.sched + 1, 0);
    }
  }
}

// FP8: warp `tw / 32` (0 .. 2) of the producer warpgroup's transposing warps, lane tw % 32. For each
// tile: once V landed (v_full) and the consumers released the stage's V^T (vt_empty), it writes its
// share of V^T (kernels/mma/ws_fp8.hpp: 8 x 4-byte items, rows staggered by fp8_lane_d8, 64-bit
// loads, byte permutes, 32-bit stores), fences the writes for wgmma's reads (the async proxy), and
// its lane 0 arrives on vt_full and on v_empty.
__device__ inline void lds64(uint32_t addr, uint32_t& lo, uint32_t& hi) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(lo), "=r"(hi) : "r"(addr) : "memory");
}
__device__ inline void sts32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
template <typename K>
__device__ inline void ws_transpose_v(int ntiles, uint32_t base, int tw, int tb) {
  static_assert(K::BN == 128, "a lane is one V^T column group: 32 of them, one swizzle block");
  constexpr ws::WsSmem L = K::layout();
  constexpr int kSw = ws::swizzle_bytes(K::D / 2);
  const uint32_t c4 = uint32_t(tw % 32), w = uint32_t(tw / 32);
  uint32_t row[4];  // this lane's four source key rows (their swizzle phase is row / 128's low bits)
#pragma unroll
  for (int j = 0; j < 4; ++j) row[j] = uint32_t(ws::fp8_item_src_key(ws::Fp8Item{0, int(c4)}, j) * kSw);
  for (int t = tb; t < tb + ntiles; ++t) {
    const int st = ws::stage_of(t, K::STAGES);
    sm90::mbar_wait_or_trap(base + L.v_full(st), ws::full_parity(t, K::STAGES));
    sm90::mbar_wait_or_trap(base + L.vt_empty(st), ws::empty_parity(t, K::STAGES));
    const uint32_t src = base + L.v(st), dst = base + L.vt(st);
    for (uint32_t dw = w; dw < uint32_t(K::D / 8); dw += ws::kTransposeWarps) {
      const uint32_t d8 = ws::fp8_lane_d8(dw, c4);  // item (d8, c4): lanes spread over the bank slots
      uint32_t lo[4], hi[4], out[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        lds64(src + ws::fp8_v_load_at<K::D, K::BN>(row[j], (row[j] >> 7) & uint32_t(kSw / 16 - 1), d8), lo[j], hi[j]);
      ws::transpose_4x4_bytes(lo, out);
#pragma unroll
      for (uint32_t r = 0; r < 4; ++r) sts32(dst + ws::fp8_vt_at(d8, r, c4), out[r]);
      ws::transpose_4x4_bytes(hi, out);
#pragma unroll
      for (uint32_t r = 0; r < 4; ++r) sts32(dst + ws::fp8_vt_at(d8, 4 + r, c4), out[r]);
    }
    sm90::fence_proxy_async();
    __syncwarp();
    if (tw % 32 == 0) {
      sm90::mbar_arrive(base + L.vt_full(st));
      sm90::mbar_arrive(base + L.v_empty(st));
    }
  }
}
#endif

}  // namespace
}  // namespace fa::gpu
