// mma-decode's TMA stream (kernels/mma/fa_mma_decode.hip, its TMA instances): each warp's rings of K
// and V tiles filled by TMA boxes of 64 columns in the 128-byte swizzle, one mbarrier a tile slot.
// The steps exist in the sm_90a pass (FA_HAS_WGMMA_SM90); the host launches the TMA instances only
// on sm_90 with that code built (use_tma), so the other passes' bodies are empty and never run.
#pragma once
#include <cstdint>

#include "kernels/mma/async_sm90.hpp"

namespace fa::gpu {

// The K and V tensor maps of the stream (the host encodes them: kernels/mma/tensor_map.hpp),
// read in place.
struct DecodeMaps {
  sm90::TensorMap k, v;
};

// The `stages` mbarriers (one a slot) from `bar0`, 8 bytes apart, one arrival each (lane 0's
// expect_tx), then one init fence.
__device__ inline void tma_stages_init(uint32_t bar0, int stages) {
#if FA_HAS_WGMMA_SM90
  for (int st = 0; st < stages; ++st) sm90::mbar_init(bar0 + 8 * uint32_t(st), 1);
  sm90::fence_mbar_init();
#else
  (void)bar0, (void)stages;
#endif
}

// Key rows [key, key + BN) of K or V (map: ws::tma_tile_one_copy's five dimensions) for (b, hk)
// into the tile at dst, its D / 64 column blocks of BN rows x 128 bytes one after another, in one
// copy on the tile's own mbarrier.
template <typename K>
__device__ inline void tma_load_tile(const sm90::TensorMap& map, uint32_t dst, uint32_t bar, int key, int hk, int b) {
#if FA_HAS_WGMMA_SM90
  sm90::mbar_arrive_expect_tx(bar, K::TILE_BYTES);
  sm90::tma_load_5d(dst, &map, bar, 0, key, 0, hk, b);
#else
  (void)map, (void)dst, (void)bar, (void)key, (void)hk, (void)b;
#endif
}

__device__ inline void tma_stage_wait(uint32_t bar, uint32_t parity) {
#if FA_HAS_WGMMA_SM90
  sm90::mbar_wait(bar, parity);
#else
  (void)bar, (void)parity;
#endif
}

// The warp's reads of a slot (ldmatrix) before the TMA writes it again: each lane orders its reads
// before the async proxy's writes, then the warp meets, then lane 0 issues the copy.
__device__ inline void tma_reads_done() {
#if FA_HAS_WGMMA_SM90
  sm90::fence_proxy_async();
  __syncwarp();
#endif
}

}  // namespace fa::gpu
