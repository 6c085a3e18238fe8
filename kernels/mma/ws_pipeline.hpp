// The synchronisation protocol of mma's sm_90 kernel (kernels/mma/fa_mma_ws_sm90.hpp) as plain functions,
// shared by the kernel and the CPU simulation that checks it (tests/kernels/test_ws_pipeline.cpp):
// the roles of the block's warpgroups and their register budgets, the order the producer issues its
// TMA loads in, which ring stage and mbarrier phase parity each load and each wait uses, and the
// ping-pong rule between the consumer warpgroups where their row takes turns (who arrives on which
// named barrier, when).
// Plain C++ (FA_HD); no CUDA header.
#pragma once
#include <cstdint>

#include "harness/conventions.hpp"  // FA_HD

namespace fa::ws {

// ---- roles ------------------------------------------------------------------------------------
// Warpgroup 0 produces (one elected thread issues every TMA load; its other warps exit at once, or
// with FP8 inputs under the row's V^T pre-pass threshold transpose V: kTransposeWarps below),
// warpgroups 1 .. wgs consume: each owns 64 query rows of the block. FA3 does the same
// (hopper/flash_fwd_kernel_sm90.h: NumLoadWarpGroups = 1, the producer's other warps return). The
// consumer count `wgs` is a tile-table row's (ws_tile_traits.hpp): 2, or 3 where 64-wide GEMMs need
// a third warpgroup to keep the tensor pipe fed (FA3's hdim-64 kBlockM = 192).
constexpr int kMaxConsumerWgs = 3;
FA_HD constexpr int block_threads(int wgs) { return 128 * (1 + wgs); }
// setmaxnreg budgets (PTX: a multiple of 8 in [24, 256]): the producer gives its registers to the
// consumers. FA3's numbers for consumer warpgroups fed by TMA (flash_fwd_kernel_sm90.h:
// LoadRegisterRequirement / MmaRegisterRequirement): 2 consumers 24 / 240 (128 * 24 + 256 * 240 =
// 64512), 3 consumers 32 / 160 (128 * 32 + 384 * 160 = 65536). The kernel enters with 65536 /
// threads registers a thread (__launch_bounds__(threads, 1): 168 at 384 threads, 128 at 512), which
// is what makes setmaxnreg take effect (HOPPER.md).
// Where the producer warpgroup's other three warps transpose FP8's V (ws_fp8.hpp), it keeps 40 (FA3's
// producer budget where its warps do more than issue TMA): 128 * 40 + 256 * 232 = 64512.
// FP8 at D = 256 holds O in 128 registers a consumer thread (208 with S and P), so the consumers
// take 240 and the producer warpgroup, transposer included, 24: FA3's split for two consumers fed by
// the TMA, FP8 and its V transpose included (hopper/flash_fwd_kernel_sm90.h). The pool is what the
// block enters with, 384 x 168 = 64512 (__launch_bounds__(384, 1)), not the register file:
// setmaxnreg.inc waits until the pool has the registers, so a split past it hangs the consumers.
// `transposes`: the producer's warps transpose V (FP8 without the V^T pre-pass, ws_tile_traits.hpp);
// with the pre-pass an FP8 block splits its registers as a 16-bit one. Three consumer warpgroups
// beside a transposing producer (FP8 at D = 64) take 152: 128 * 40 + 384 * 152 = 63488 of 65536.
FA_HD constexpr int producer_regs(int wgs, bool transposes = false, int D = 0) {
  return transposes ? (D > 128 ? 24 : 40) : wgs == 2 ? 24 : 32;
}
FA_HD constexpr int consumer_regs(int wgs, bool transposes = false, int D = 0) {
  return transposes ? (D > 128 ? 240 : wgs == 3 ? 152 : 232) : wgs == 2 ? 240 : 160;
}
// The registers a thread enters with under __launch_bounds__(threads, 1) (168 at 384 threads, 128
// at 512), and the block's pool that setmaxnreg divides: what the budgets above must fit.
constexpr int kRegisterFile = 65536;
FA_HD constexpr int entry_regs(int wgs) { return kRegisterFile / block_threads(wgs) / 8 * 8; }
FA_HD constexpr int register_pool(int wgs) { return block_threads(wgs) * entry_regs(wgs); }
FA_HD constexpr bool budgets_fit(int wgs, bool transposes, int D) {
  return 128 * producer_regs(wgs, transposes, D) + 128 * wgs * consumer_regs(wgs, transposes, D) <= register_pool(wgs);
}
// FP8 with the transposer: warps 1 .. 3 of the producer warpgroup transpose each V tile once it lands
// (v_full), into the stage's V^T once the consumers released it (vt_empty); each warp then arrives
// on vt_full and on v_empty (the raw V stage is free for the next copy). So there the raw V stage's
// empty barrier counts the transposing warps, and vt_empty counts the consumer warps. With the V^T
// pre-pass the V ring holds V^T and its barriers count as a 16-bit block's.
constexpr int kTransposeWarps = 3;

// ---- the K/V ring ---------------------------------------------------------------------------
// Tile t of the block's key range lives in stage t % stages of the K ring and of the V ring. Each
// stage has a full mbarrier (1 arrival: the producer's arrive.expect_tx, plus the TMA's bytes) and
// an empty one (empty_arrivals: lane 0 of each consumer warp, after that warp's wgmma.wait_group
// has seen every wgmma reading the stage complete: each warp vouches for itself, no warpgroup-wide
// sync needed; FA3's PipelineTmaAsyncNoCluster lets thread 0 of the warpgroup speak for all four).
// Use u = t / stages of a stage completes phase u of its full barrier and, once consumed, phase u
// of its empty one. mbarrier.try_wait.parity(P) returns true once the phase of parity P before the
// current one has completed, so a fresh barrier (no phase completed) passes a wait on parity 1:
// the producer's first pass through the ring waits for nothing (CUTLASS's producer start state).
FA_HD constexpr int empty_arrivals(int wgs) { return 4 * wgs; }
FA_HD constexpr int v_empty_arrivals(int wgs, bool transposes) { return transposes ? kTransposeWarps : empty_arrivals(wgs); }
FA_HD constexpr int stage_of(int t, int stages) { return t % stages; }
FA_HD constexpr uint32_t full_parity(int t, int stages) { return uint32_t(t / stages) & 1u; }       // consumers wait
FA_HD constexpr uint32_t empty_parity(int t, int stages) { return (uint32_t(t / stages) & 1u) ^ 1u; }  // the producer waits

// The producer's i-th load of 2 * ntiles: K_0, then K_t and V_{t-1} for t = 1 .. ntiles - 1, then
// V_{ntiles-1}. The consumers use K_t (S = Q K_t^T) before V_{t-1} (O += P_{t-1} V_{t-1}) in
// iteration t, so K runs one tile ahead of V (FA3's IntraWGOverlap order, mainloop_fwd_sm90_tma_gmma_ws.hpp
// load(): load_K(n_block) then load_V(n_block_prev)).
struct Load {
  bool is_v;
  int tile;
};
FA_HD constexpr Load producer_load(int i, int ntiles) {
  if (i == 0) return {false, 0};
  if (i == 2 * ntiles - 1) return {true, ntiles - 1};
  return (i % 2) ? Load{false, (i + 1) / 2} : Load{true, i / 2 - 1};
}

// ---- a consumer warpgroup's own tiles ---------------------------------------------------------
// Consumer warpgroup wg holds the block's rows [q0 + 64 wg, q0 + 64 wg + 64). The item's key range kr
// (ntiles tiles of bn keys) is the block's last row's, or a split of it; in a causal block the first
// warpgroups' rows see fewer keys, and where a tile boundary falls between them their last tiles hold
// no key of their rows (with S = Sk: FP8 D = 64's 192-row blocks over 128-key tiles, warpgroup 0 in
// every whole q tile and 1 in every other; D = 128's 224-key tiles under 128-row blocks, warpgroup 0
// in 2 of every 7). With the row's group_tiles (ws_tile_traits.hpp) a warpgroup computes the tiles up
// to the last that holds a key one of its rows sees (none where its rows are all padding past S) and
// releases the rest unread, each once it has landed: then the stage's previous phase is complete, and
// the arrival counts toward this tile's (before, it could complete the previous phase while another
// warpgroup still reads that tile). The block's last warpgroup with a row below S computes every
// tile, so Q's stage is never released before its copy has landed.
FA_HD inline int group_tiles(int64_t S, int64_t Sk, bool causal, int64_t q0, int wg, KeyRange kr, int bn, int ntiles) {
  const int64_t first = q0 + 64 * int64_t(wg), last = first + 63 < S ? first + 63 : S - 1;
  if (last < first) return 0;
  const int64_t v = visible_keys(last, S, Sk, causal), end = v < kr.end ? v : kr.end;
  if (end <= kr.begin) return 0;
  const int64_t n = (end - kr.begin + bn - 1) / bn;
  return n < ntiles ? int(n) : ntiles;
}

// ---- a wave's items ---------------------------------------------------------------------------
// In a wave (ws_tile_traits.hpp's ws_wave) the producer thread decides the block's items, one after
// another, and publishes each to the block: item k (k = 0, 1, ... counts what it publishes, items
// without tiles and the closing one, ntiles -1, included) goes into the slot of Q's stage
// stage_of(k, q_stages) (ws_layout.hpp's WsSmem::item: the item decoded, coordinates, key range and
// tiles). It waits for q_empty's phase of k (the slot and Q's stage free), writes the slot, then
// arrives on q_full: with Q's bytes to come where the item has tiles, plainly where it has none or
// for the closing one. The consumer warpgroups and, with FP8's transposer, its warps wait for
// q_full's phase of k and read the slot (mbarrier.arrive releases the writes, try_wait acquires
// them). q_empty then counts each consumer warp's release (after the item's last S = Q K^T; at once
// for an item without tiles) and each transposing warp's, given once it has read the slot; no one
// releases the closing one. Each lane of a releasing warp arrives itself, after its own reads of the slot
// (q_empty_lane_arrivals): with lane 0 arriving for its warp after a __syncwarp, the memory model orders the
// other lanes' reads before the producer's next write, but compute-sanitizer's racecheck does not credit it
// and reports each read against that write (a test kernel's plain hand-off shows it:
// docs/perf/2026-11-30-wave-slot-racecheck.md). The protocol counts a warp's 32 arrivals as one release
// (q_empty_arrivals, the CPU simulation's unit). Causal waves and long non-causal ones take their items from an
// atomic counter in the longest-first order (FA3's DynamicPersistentTileScheduler, hopper/tile_scheduler.hpp;
// ws_tile_traits.hpp's ws_wave_from_counter), short non-causal ones every gridDim.x-th in turn; the
// protocol is the same.
FA_HD constexpr int q_empty_arrivals(int wgs, bool transposes) {
  return empty_arrivals(wgs) + (transposes ? kTransposeWarps : 0);
}
constexpr int kWarpLanes = 32;
FA_HD constexpr int q_empty_lane_arrivals(int wgs, bool transposes) { return kWarpLanes * q_empty_arrivals(wgs, transposes); }
static_assert(q_empty_lane_arrivals(kMaxConsumerWgs, true) < (1 << 20), "an mbarrier counts at most 2^20 - 1 arrivals");

// ---- ping-pong between the consumer warpgroups ------------------------------------------------
// Where the row takes turns (ws_tile_traits.hpp's take_turns: the 16-bit rows; the FP8 rows skip all
// three steps below and touch no named barrier). Iterations t >= 1 issue S_t = Q K_t^T and
// O += P_{t-1} V_{t-1} back to back. Before issuing, a
// warpgroup waits on its own named barrier (bar.sync, 256 threads); after issuing, it arrives on
// the next one's (bar.arrive): the warpgroups' GEMMs take the tensor cores in turn, round robin,
// while each one's softmax runs during the others' GEMMs (FA3: warp_scheduler_barrier_sync/arrive
// and mma_init, hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp; hopper/named_barrier.hpp's
// WarpSchedulerWG1..3). A barrier's 256 threads are its waiter's 128 and its arriver's 128.
// Warpgroup 0 goes first: it arrives on its own barrier once before the loop. Barrier 0 is
// __syncthreads's; ids 1 .. wgs here are the scheduling barriers (epilogue_barrier's come after).
// Balance: barrier 0 sees the initial arrival plus the last warpgroup's arrivals after iterations
// 1 .. n-2 against warpgroup 0's waits in iterations 1 .. n-1; barrier k > 0 sees warpgroup k-1's
// arrivals after 1 .. n-1 against warpgroup k's waits in 1 .. n-1. So the last warpgroup skips its
// arrival after the last iteration, and with a single tile nobody arrives at all: no arrival is
// left pending at exit.
FA_HD constexpr int sched_barrier(int wg) { return 1 + wg; }
// A consumer warpgroup's own barrier (its 128 threads), around the writes of O's staging tile
// (ws_smem's stage_o): ids kMaxConsumerWgs + 1 .. 2 kMaxConsumerWgs.
FA_HD constexpr int epilogue_barrier(int wg) { return 1 + kMaxConsumerWgs + wg; }
FA_HD constexpr int sched_next(int wg, int wgs) { return wg + 1 == wgs ? 0 : wg + 1; }
constexpr int kSchedThreads = 256;
FA_HD constexpr bool sched_first_arrive(int wg, int ntiles) { return wg == 0 && ntiles > 1; }
FA_HD constexpr bool sched_arrive_after(int wg, int t, int ntiles, int wgs) { return !(wg == wgs - 1 && t == ntiles - 1); }

}  // namespace fa::ws
