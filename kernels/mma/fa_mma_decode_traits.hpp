// mma-decode's traits table (kernels/mma/fa_mma_decode.hip): a row a head dim, tile keys, warps, the
// cp.async stages and the TMA stream's K and V slots, and the shared-memory layout they give, with
// the H100 measurements that chose each row; with_traits is the head-dim list the gate asks.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "harness/check/peaks.hpp"
#include "kernels/mma/ws_layout.hpp"

namespace fa::gpu::mma_decode {

// STAGES: the cp.async ring's stages (K and V) a warp; TK and TV: the TMA stream's K and V slots a
// warp (no row padding: more fit; K's slots turn over sooner, so it may take more).
template <int D_, int BN_, int WARPS_, int STAGES_, int TK_ = STAGES_, int TV_ = TK_>
struct DecodeTraits {
  static constexpr int D = D_, BN = BN_, WARPS = WARPS_, STAGES = STAGES_, TK = TK_, TV = TV_;
  static constexpr int THREADS = WARPS * 32;
  static constexpr int NT = BN / 8, DT = D / 8, KD = D / 16, KN = BN / 16;
  static constexpr int LD = D + 8;   // shared row stride in elements (16-byte pad, as in mma)
  static constexpr int CPR = D / 8;  // 16-byte chunks a row
  static constexpr int RPP = 32 / CPR;  // rows a pass of one warp copies
  static constexpr int WARP_ELEMS = STAGES * 2 * BN * LD;
  static constexpr int FOLD_WARP = 16 * (D + 2);  // floats a warp folds: 16 rows of acc, then m and l
  static constexpr int FOLD_BYTES = WARPS * FOLD_WARP * 4;
  // The TMA stream (sm_90, dense): a warp's TK K slots then TV V slots, each a tile of D / 64 column
  // blocks of BN rows x 128 bytes in the 128-byte swizzle (ws_layout.hpp's sw_offset), one box
  // (tma_tile_one_copy), from a 1024-aligned base; after the warps' rings, an mbarrier a slot.
  static constexpr int SW = 128, TILE_BYTES = BN * D * 2;
  static constexpr int RINGS_BYTES = WARPS * (TK + TV) * TILE_BYTES;
  static constexpr int TMA_BYTES = ws::kSmemAlign + RINGS_BYTES + WARPS * (TK + TV) * 8;
  // Dynamic shared memory of the cp.async instances and of the TMA one.
  static constexpr int SMEM = std::max(WARPS * WARP_ELEMS * 2, FOLD_BYTES), TMA_SMEM = std::max(TMA_BYTES, FOLD_BYTES);
  static constexpr int smem(bool tma) { return tma ? TMA_SMEM : SMEM; }
  // D = 256 keeps cp.async: its TMA instance spilled 136 bytes (nvcc 13.0), where the cp.async one spills none.
  static constexpr bool TMA_STREAM = D <= 128;
  static_assert(TMA_SMEM <= 227 * 1024, "the TMA instance fits an sm_90 block");
  static_assert(ws::swizzle_bytes(D) == SW, "TMA boxes of 64 columns");
  static_assert(32 % CPR == 0 && BN % RPP == 0 && BN % 16 == 0 && D % 16 == 0, "tile shape");
};

// H100, bf16, GB/s with the device copy (2941) and torch flash/cuDNN in the same run: (1,32,8,1,131072,128)
// 2579 = 88% of copy (flash 2308, cuDNN 2376); (16,32,8,1,8192,128) 2708; (1,32,8,1,32768,128) 1870.
// With the combine folded into the last block of each (batch, kv head): 2650 = 90.4% of a 2933 copy,
// 2680, 1990 (flash 2151 / 2473 / 1451, cuDNN 2574 / 2671 / 1633 in that run).
// Tried for D=128 in that run: 16-key tiles, 3 stages (2 blocks an SM, 33 chunks) 2476; 32-key tiles,
// 3 stages 2557; 8 warps of 16-key tiles 2562: one block of 4 warps with 2 x 32-key stages is best.
// A later run (copy 2915 / 2942 before and after): 2631 as above; the copies with the L2::128B
// prefetch hint 2671, L2::256B 2660; 33, 24 or 66 chunks 2567 / 2517 / 2499; 3 stages 2643.
// The TMA stream (sm_90), A/B alternated in one call, (16,32,8,1,8192,128) / (1,32,8,1,131072,128) /
// (1,32,8,1,32768,128): cp.async 2860 / 2805 / 2380 -> TMA 2970 / 2915 / 2458 (cuDNN 3021 / 2925 /
// 2539 in the next call). A bandwidth probe of the same grid that only touches what it loads read
// 2800 through cp.async and 2910 through the TMA. No faster with the TMA (next call, each against
// 2988 / 2940 / 2469): 3 stages (197 KB), 8 warps of 16-key tiles x 3 stages, 2 blocks an SM of
// 16-key tiles x 3 stages, L2 promotion of 128 bytes or none (none: exactly the DRAM's sectors
// requested of L2, where 256 requests 1.25x; 2972 / 2921 / 2432), K's boxes before V's.
// Later calls, with Q loaded after the first tiles: 3 TMA stages (the cp.async rows keep 2: 3
// padded stages would pass the A100's 163 KB) 3015 / 2958 / 2530 -> 3020 / 2961 / 2550, and no
// faster with the softmax of the tile's padding rows 8..15 skipped, 16-key tiles x 4 stages, 2 warps
// of 64-key tiles, or L2 prefetches (cp.async.bulk.prefetch.tensor) of the warp's tiles 2 or 4
// rounds ahead (2629 / 1671 on the first row). The first row's bandwidth probe read 3073 with the
// tiles only touched and 3029 with 2000 cycles spent on each: the softmax and MMAs between a
// warp's tiles cost about that much; cuDNN (an sm_80 cp.async kernel, 128 blocks of 4 warps on
// 128-key tiles) reads 3046-3052 there. So the tile's work shrank, and K's slot turns over sooner.
// A/B in one call, the three rows: 16-row tiles 3019 / 2971 / 2556 (3017 / 2969 / 2563 again);
// NARROW (S^T = K Q^T at group x S <= 8: half the MMAs) 3035 / 2980 / 2585; K's slot refilled
// once the scores are out of it (its own mbarrier) 3036 / 2975 / 2583; both 3039-3047 / 2978-2994
// / 2602-2609 (cuDNN 3054 / 2940 / 2497 in that call). With K and V rings apart, 4 K slots and 3 V
// slots (224 KB) or 5 and 2 were no faster than 3 and 3 (next call: 3024-3044 for 3 and 3, 3027-
// 3038 for 4 and 3, 3032-3043 for 5 and 2; cuDNN 3045-3056). Left: per-SM speed. A globaltimer
// trace of the first row's 128 blocks (one a pair, one an SM) had 24 blocks done at 130-135 us, 20
// at 154-158 and 84 at 172-174: a third of the SMs idle for the last 15-40 us. A dynamic split
// (warps taking key tiles of their pair through an atomic, then helping other pairs) lost in a
// probe (2073 against 3064 static): the atomic's round trip sat in front of every refill. Nor
// does a balanced split pay: a probe of the stream with a persistent grid of 132 blocks claiming
// (pair, key chunk) items two ahead through an atomic, the pairs' big chunks first (4096, 2048,
// 1024, 512, 512 keys; a block barrier, a fold and a 2 KB partial an item), ended its blocks within
// 12 us of each other where the static grid's ended from 139 to 181 us, and read 2860 against the
// static grid's 2904 (memset flush, 2026-11-27): the SMs that finish early leave the DRAM no less
// busy. Nor the start (A/B alternated, twice, in one call; cuDNN 3046-3058 / 2942 / 2485-2497):
// 3032-3041 / 2985-2989 / 2594-2599 as is; Q by 1-D bulk copies issued before the first tiles
// 3030-3037 / 2979-2984 / 2567-2569; with the tensor maps prefetched too 3021-3028; with an
// L2 evict_first policy on the K/V boxes (and Q first) 3026-3027; all three 3038-3042 / 2963-2974.
// Sampled properly (5 calls, 12 alternated samples a side): 3039-3042 against cuDNN's 3053-3055,
// 0.995-0.997x; the stream alone (tiles only touched, same calls) 3055-3080. A %globaltimer trace:
// first tile 3.6-4.1 us after the first block's start; after the last tile lands, 1.0-1.5 us of
// the tile's math, the fold and the stores (the stores 0.77 us, 0.51 with a.o / a.lse held in
// registers from the start). TMA issue first with the maps prefetched, plus the held pointers and
// a one-chunk store loop: +0.2% (3 calls), not reproduced in the shared epilogue's form; folding
// into each warp's own ring, no proxy fence, or mma's G = 2-16 chunks: no gain (README, 2026-11-27).
// Time against Sk (1k-16k keys): mma-decode 5.91 us + 20.80 us / 1k keys, cuDNN 6.34 + 20.72: the
// gap is in the stream, not the start or the tail. A warp spends ~1560 cycles on a tile (clock64),
// and a probe of the stream lost 0.6-1% per 1000 cycles a tile held its slots, so the narrow rows
// refill a slot once the tile's fragments are in registers: 3041 / 2988 / 2617 against 3039 / 2985
// / 2610 (cuDNN 3054 / 2944 / 2504). No faster (12 alternated samples a side, against 3042-3044):
// (TK, TV) = (2, 2) 3041, (3, 2) 3041; L2 promotion 128 B 3025, none 3026; a producer warp issuing
// every refill 3030, one a consumer warp 3017 (the refill waits for it to wake; README, 2026-11-27).
// Less work a tile: one TMA copy a tile (ws::tma_tile_one_copy), the slots and phases carried (no
// division), the MMAs issued before the refill's fence, and the lazy rescale (softmax_cols_lazy) took
// the warps' non-waiting share of ncu's samples from 48% to 38%, and moved the first row by nothing:
// 3043.3 against 3043.5, then 3047.2 against 3044.6 (cuDNN 3055 / 3057; 12 alternated samples a
// side). The work of a tile is not what holds that row back (README, 2026-11-27, session 18).
// Not faster either (alternated, 24 samples a side, as is 3047.9): each 256-byte row's halves
// requested together (the 5-D box as (columns, column blocks, rows); ldmatrix then meets a 2-way
// bank conflict) 3041.7, and without L2 promotion 3037.8, though that asks L2 for exactly the
// DRAM's sectors (16.79 M against 20.98 M); V's fragments out of its slot before the softmax,
// 3043.9 against 3041.7. What moved it was the launch, not the tile: the TMA instance in 2-block
// clusters along the kv heads, 3042.2 -> 3065.0 against cuDNN's 3055.9 (MmaDecodeExecution::
// launch_dense; README, 2026-11-27, session 19).
// D=64: 64-key tiles, so that a tile carries the bytes of D=128's 32-key one (8 KB) for the same
// per-tile work (the fragments take the same 64 registers). A/B alternated in one H100 call against
// 32-key tiles x 3 stages, GB/s (3 samples a side; cuDNN in the same rounds): (16,32,8,1,8192,64)
// 2473 -> 2924 (cuDNN 2871), (1,32,8,1,131072,64) 2489 -> 2569 (cuDNN 2810). The cp.async instances
// keep 2 stages (147 KB: 3 would pass the A100's 163 KB).
using Decode64 = DecodeTraits<64, 64, 4, 2, 3>;
using Decode128 = DecodeTraits<128, 32, 4, 2, 3>;
// D=256 (Gemma-2's decodes): 16-key tiles, so that 4 warps x 2 stages fit shared memory (132 KB);
// Q's fragments (64 registers) and the accumulator (128) leave room for the tile's scores.
using Decode256 = DecodeTraits<256, 16, 4, 2>;

// The L2 promotion of the TMA stream's K and V boxes (tensor_map.hpp's encode_map): a box of 128-byte
// rows (a key's 64 columns) promoted to 256 bytes brings its row's other half into L2 with it, and
// asks L2 for 1.25x the DRAM's sectors (ncu: L2 hit rate 26%, the second halves). On an H100
// (3.35 TB/s) the 256-byte promotion was the faster, 3041-3048 GB/s against 3025-3028 with 128 and
// 3026-3038 with none (the studies of 2026-11-25 and 2026-11-27). On an H200 (4.8 TB/s, the same L2)
// that extra L2 traffic is the limit: ncu on (16,32,8,1,8192,128) bf16 read L2 throughput 90-92% and
// DRAM 82-86% with 256 bytes (two runs), 93% and 93% with 128 (4.49 TB/s), and A/B (H200, 2026-11-30, session 40,
// ms, three rounds alternated, 256 -> 128): (16,32,8,1,8192,128) 0.1330-0.1332 -> 0.1201-0.1204,
// (1,32,8,1,131072,128) 0.1354-0.1356 -> 0.1228-0.1229, (1,32,8,1,32768,128) 0.0389-0.0390 ->
// 0.0368-0.0369; none as 128. The rule below against the build before it (next call, two rounds):
// those rows -7.6%, -7.5%, -4.5%, D=64's (16,32,8,1,8192,64) bf16 0.0678-0.0680 -> 0.0645-0.0646 and
// (1,32,8,1,131072,64) fp16 0.0716 -> 0.0671-0.0672, (8,32,8,4,16384,128) bf16 -6.8%; interleaved with
// cuDNN (torch 2.11, three rounds) 1.012x, 1.034x, 1.049x, 1.143x, 1.044x (the first was 0.934x).
// So 256 bytes only where DRAM's peak (peaks.hpp, from the device's bus and memory clock) is under
// kDecodePromote256MaxGbps; cards between the two are unmeasured.
constexpr double kDecodePromote256MaxGbps = 4000;
inline int decode_l2_promote(const DeviceFacts& d) {
  const std::optional<Peak> pk = device_peak(d, PeakClass::bit16);
  return pk && pk->gbps >= kDecodePromote256MaxGbps ? 128 : 256;
}

// The dispatch: calls f(K{}) with the traits row of head dim D, or returns false for a D without a
// row. It is the head-dim list: the gate and the row's words ask it.
template <typename F>
bool with_traits(int64_t D, F&& f) {
  switch (D) {
    case 64: f(Decode64{}); return true;
    case 128: f(Decode128{}); return true;
    case 256: f(Decode256{}); return true;
    default: return false;
  }
}
inline HeadDims decode_head_dims() {
  return head_dims_where([](int D) { return with_traits(D, [](auto) {}); });
}

}  // namespace fa::gpu::mma_decode
