// A work item of mma's sm_90 kernel (kernels/mma/fa_mma_ws_sm90.hpp): which block coordinates, keys
// and tiles an item index stands for, and how a wave's producer hands a decoded item to the block's
// other warps through its Q stage's slot in shared memory (ws_layout.hpp's WsSmem::item; the protocol
// is ws_pipeline.hpp's "a wave's items"). Built only into sm_90a code, as the kernel.
#pragma once
#include "kernels/device/tile_loop.hpp"
#include "kernels/mma/async_sm90.hpp"
#include "kernels/mma/ws_layout.hpp"
#include "kernels/mma/ws_pipeline.hpp"

namespace fa::gpu {
namespace {

#if FA_HAS_WGMMA_SM90
// A work item: its block coordinates, key range and tiles. `item` < 0: the one-item grid's block
// (in LPT order where maps.lpt is on, else the grid's); else a wave's item `item`, in LPT order where
// maps.lpt is on (the waves with a counter), else the grid's order (`maps`: the kernel's WsMaps). A
// wave's item indices are ints (the host launches a wave only where they fit): in 64 bits their divisions into
// coordinates are subroutine calls (an item's setup took 165 instructions a warp at D = 64, ncu, when
// the consumers decoded it between one item's epilogue and the next one's first S; the producer
// decodes it now, before its wait).
struct WsWork {
  tile::BlockCoords c;
  KeyRange kr;
  int ntiles;
};
template <typename K, typename Maps>
__device__ inline WsWork ws_work(const Maps& maps, const AttnArgs& a, int item) {
  WsWork w;
  w.c = item >= 0 ? (maps.lpt.on ? tile::lpt_coords(a, K::BM, maps.lpt, item, maps.divs.nq.divisor(), maps.divs.h)
                                 : tile::block_coords_at(a, K::BM, item, maps.divs))
        : maps.lpt.on ? tile::block_coords_lpt(a, K::BM, maps.lpt, maps.divs.h)
                      : tile::block_coords(a, K::BM);
  w.kr = tile::dense_block_keys(a, w.c, K::BM, K::BN);  // the gate refuses serving fields, as mma
  w.ntiles = w.kr.end > w.kr.begin ? int((w.kr.end - w.kr.begin + K::BN - 1) / K::BN) : 0;
  return w;
}

// A wave's item slot (ws_layout.hpp's kItemSlotBytes): the item as the producer decoded it, so that
// the consumers read it in two loads where decoding it again took a chain of divisions after their
// wait. ntiles -1: the block's items are done.
__device__ inline void put_work(uint32_t slot, const WsWork& w) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(slot), "r"(w.c.b), "r"(w.c.h), "r"(w.c.hk), "r"(w.c.g)
               : "memory");
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(slot + 16), "r"(w.c.q0), "r"(int(w.kr.begin)),
               "r"(int(w.kr.end)), "r"(w.ntiles)
               : "memory");
}
__device__ inline WsWork get_work(uint32_t slot) {
  WsWork w;
  int begin, end;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(w.c.b), "=r"(w.c.h), "=r"(w.c.hk), "=r"(w.c.g) : "r"(slot)
               : "memory");
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(w.c.q0), "=r"(begin), "=r"(end), "=r"(w.ntiles)
               : "r"(slot + 16)
               : "memory");
  w.kr = KeyRange{begin, end};
  return w;
}

// A wave's consumers and transposing warps: item k of the block from its Q stage's slot, once
// q_full's phase of k has completed; ntiles -1 ends the block's items. Calls f(w, tb, k) for each.
template <typename K, typename F>
__device__ inline void ws_wave_items(uint32_t base, F&& f) {
  constexpr ws::WsSmem L = K::layout();
  int tb = 0;
  for (int k = 0;; ++k) {
    const int qs = ws::stage_of(k, K::QSTAGES);
    sm90::mbar_wait(base + L.q_full(qs), ws::full_parity(k, K::QSTAGES));
    const WsWork w = get_work(base + L.item(qs));
    if (w.ntiles < 0) break;
    f(w, tb, k);
    tb += w.ntiles;
  }
}

#endif

}  // namespace
}  // namespace fa::gpu
