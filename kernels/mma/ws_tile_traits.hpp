// The tile table of mma's sm_90 kernel (mma_ws_fwd, kernels/mma/fa_mma_ws_sm90.hpp): per head dim
// and element size, short or long (ws_takes_short_row), and for FP8 the V^T pre-pass's instance or not,
// the query rows a block (BM = 64 per consumer warpgroup), the keys a K/V tile (BN), the K/V ring's
// stages and the consumer warpgroups. The table is the kernel's head-dim list: the dispatch
// (kernels/mma/fa_mma_ws.hpp) and mma's use_ws (kernels/mma/fa_mma.hip) instantiate and pick exactly
// the rows below. Plain C++; checked on the CPU by tests/kernels/test_ws_tile_traits.cpp (shared
// memory fits, wgmma shapes exist, the fragments fit the consumers' register budget).
//
// FA3's hopper/tile_size.h (tile_size_fwd_sm90, 16-bit elements) is the starting point, with P kept
// in registers (RS) everywhere, and FA3's two stages (hopper/flash_fwd_launch_template.h: kStages = 2
// on sm90). Each row's numbers: one H100 call, cold L2, medians, TFLOP/s, torch flash / cuDNN in the
// same call, with the row it replaced where one was measured against it.
#pragma once

#include <cstdint>

#include "harness/conventions.hpp"

namespace fa::ws {

struct WsTileRow {
  int D = 0, elem_bytes = 0;
  int BM = 0, BN = 0, stages = 0, consumer_wgs = 0;
  // Of every 8 exponentials a consumer thread computes in the softmax, how many run as a polynomial
  // on the FMA pipe instead of on MUFU (kernels/mma/exp2_poly.hpp; issue 46 found the FP8 instance's
  // exp2 queueing on MUFU). 0 in every row: measured and lost (H200, 2026-11-29, FP8 e4m3, ms, two
  // rounds alternated, shares 0 / 2 / 4 in the FP8 rows): (2,16,16,8192,8192,128) 1.543 / 1.535 /
  // 1.602, (8,16,16,8192,8192,64) 4.764 / 4.916 / 5.200, (1,16,16,8192,8192,256) 1.328 / 1.362 / 1.405:
  // share 2 within 1% at D = 128, 3% slower at D = 64 and 256 (and 7% slower at D = 128 beside the
  // lazy rescale with four-chain sums, a variant not shipped). Under ncu (D = 128, share 0) MUFU issued 38% of
  // its peak and the tensor pipe was 36% busy: the exponentials are not the limiter, and the
  // polynomial's 7 instructions in place of 1 cost issue slots. With 0 the kernel is the MUFU-only one.
  // FP8 at D = 64 on three consumer warpgroups is the exception (its row below): there MUFU issued 61%
  // of its peak, and 1 of 8 won 1.8%; its pre-pass instance (192 x 160) keeps 1 of 8, 2 of 8 lost 4.3-6.6%
  // there (session 46, docs/perf/2026-12-01-fp8-d64-prepass-landed-form.md). With pack_in_softmax, 0 of
  // 8 against 1 (session 48, .dev/s48/c5.sh, three rounds alternated, fastest, ms): (8,16,16,8192,8192,64)
  // 3.6235 -> 3.7024 (+2.2%), its 8k causal row 0.4991 -> 0.5118 (+2.5%), (16,16,16,2048,2048,64) +0.7%,
  // (8,16,16,4096,4096,64) 0.9874 -> 0.9649 (-2.3%: there 0 of 8 won): 1 of 8 kept.
  int exp2_poly_of_8 = 0;
  // The consumers' rescale made lazy (mma_sm80.hpp's softmax_rows, FlashAttention-4's conditional
  // rescaling): a warp keeps its rows' max while no score passes it by more than 2^lazy_rescale_log2,
  // and skips the max reduction and O's rescale. 0: only where no max moved (the eager kernel's
  // results bit for bit); -1: eager. FP8 rows take 0 or -1: P is E4M3 there, and a kept max leaves
  // the row's largest P inexact (the eager max's is exactly 1), which the validator's rule measured
  // (test_gpu_paths' e4m3 D = 128 and e5m2 D = 256 rows failed at 8: max |err| 0.035 > 0.031 and
  // 0.055 > 0.037). Measured against eager (H200, 2026-11-29, two rounds alternated, ms): 16-bit at
  // 8, (2,16,16,8192,8192,128) bf16 1.627 -> 1.571, its causal Llama-3 GQA 0.895 -> 0.866,
  // (8,16,16,8192,8192,64) 4.137 -> 3.988, (1,16,16,8192,8192,256) 1.453 -> 1.366, (1,64,64,8192,8192,
  // 128,1) fp16 1.794 -> 1.734, the batch-32 short rows 0-3% faster; FP8 at 0, D = 128 1.545 ->
  // 1.451, GQA causal 0.850 -> 0.805, D = 256 1.333 -> 1.303, but D = 64 4.766 -> 4.928 (at 8 too:
  // 5.287), so D = 64 stays eager; its 160-key pre-pass instance at 0 lost 1.1-3.6% too (session 46).
  int lazy_rescale_log2 = 8;
  // FP8 rows: V^T (wgmma's K-major 8-bit B operand) made before the kernel by a pre-pass
  // (kernels/mma/ws_vt_prepass.hpp: V read once, V^T written to a scratch tensor in the key order
  // P's registers hold) and brought in by the TMA like K, instead of transposed in shared memory by
  // the producer warpgroup's warps, for problems with at least this many query rows a kv head
  // (S x H / Hk: each V byte is then read by that many rows, and the pre-pass's extra pass over V
  // is a small share); 0: never. The producer then keeps 24 registers (no transposer) and the
  // consumers 240 (as a 16-bit block), and the third ring (V^T) is gone from shared memory. Measured
  // below per row; both instances exist, the transposing one for problems under the threshold.
  int vt_prepass_rows = 0;
  // The consumer warpgroups take turns issuing their wgmma (FA3's ping-pong: a named barrier before
  // and an arrival after, kernels/mma/ws_pipeline.hpp), so that one's softmax runs under the others'
  // GEMMs. Off in the FP8 rows: there the exponentials take as long as the GEMMs, the warpgroups'
  // softmaxes overlap each other whatever the order, and the turn only made them wait (ncu, session
  // 31: 5% of the FP8 D = 128 kernel's samples on the turn's barrier). Measured without the turns
  // (H200, 2026-11-29, session 31, ms, two rounds alternated): (2,16,16,8192,8192,128) e4m3 1.257-1.261
  // -> 1.247-1.250, the Llama-3 GQA causal row 0.700-0.704 -> 0.699, (1,16,16,8192,8192,256)
  // 0.926-0.927 -> 0.916-0.917, (8,16,16,8192,8192,64) 3.853 -> 3.806-3.807, its causal 2-batch row
  // 0.579-0.582 -> 0.570-0.572. The 16-bit rows keep them: without, (2,16,16,8192,8192,128) bf16
  // 1.576-1.579 -> 1.596-1.597, its Llama-3 GQA causal row 0.869 -> 0.881-0.882, (8,16,16,8192,8192,64)
  // 3.98 (one round; the other ran under the power cap) -> 4.40, (1,16,16,8192,8192,256) 1.372-1.374
  // -> 1.385-1.387, the batch-32 short rows 2-6% slower but (32,16,16,1024,1024,128) bf16 (0.437 ->
  // 0.431-0.432).
  bool take_turns = true;
  // O's rescale (O *= alpha, D / 2 FMUL a thread, where the last softmax moved a row's max) issued
  // between S_t's wgmma and P_{t-1} V_{t-1}'s, so that it runs under S_t (FA3's rescale_o), rather
  // than after P_{t-1} V_{t-1} is done, on the path to the next issue. Measured (H200, 2026-11-29,
  // session 33, ms, two calls of three rounds alternated, off -> on): (2,16,16,8192,8192,128) e4m3
  // 1.234-1.237 -> 1.217-1.221, bf16 1.566-1.573 -> 1.537-1.544, their Llama-3 GQA causal rows
  // 0.697-0.699 -> 0.689-0.692 and 0.860-0.869 -> 0.842-0.854, (1,16,16,8192,8192,256) e4m3
  // 0.912-0.918 -> 0.905-0.912. Off where it lost (why was not measured): (8,16,16,8192,8192,64)
  // e4m3 3.801-3.805 -> 3.885-3.889 (the row of three warpgroups and the eager rescale) and
  // (1,16,16,8192,8192,256) bf16 1.360-1.371 -> 1.374-1.385 (O 128 registers a thread).
  bool rescale_under_s = true;
  // Causal problems whose items are longer than kWsPersistentTiles key tiles (up to
  // kWsLongWaveTiles) run as one wave too (ws_wave below), their items longest first from the counter,
  // instead of a one-item grid in LPT order: a block then loads its next item's Q and first K/V tiles
  // under its last one's tail. Measured (H200, session 37, .dev/s37c3.sh, ms, three rounds
  // alternated, one-item LPT grid -> wave): (1,32,8,8192,8192,128,1) bf16 0.829-0.832 -> 0.802-0.804
  // (47 tiles), e4m3 0.668-0.674 -> 0.649-0.653, (2,16,16,8192,8192,128,1) e4m3 0.682-0.687 ->
  // 0.668-0.670, (4,16,16,4096,4096,128,1) e4m3 0.419-0.425 -> 0.389-0.391, (2,16,16,4096,4096,128,1)
  // bf16 0.247-0.249 -> 0.241-0.243, (4,16,16,3072,3072,128,1) bf16 0.266-0.268 -> 0.263,
  // (4,16,16,4096,4096,64,1) bf16 0.323-0.325 -> 0.318-0.319, (1,64,64,8192,8192,128,1) fp16 the same
  // (1.663-1.668); lost: (2,16,16,8192,8192,128,1) bf16 0.824-0.826 -> 0.829-0.831 (+0.7%, kept: its GQA
  // twin gains 3.3%) and (2,16,16,8192,8192,64,1) bf16 0.546-0.552 -> 0.559 (64 tiles: past the cap).
  // Off where it lost in session 35 (.dev/s35c2.sh): (1,32,32,4096,4096,80,1) fp16 (D = 96's row)
  // 0.201 -> 0.208-0.209, (2,16,16,4096,4096,256,1) bf16 0.407 -> 0.471 (one Q stage); FP8 D = 64,
  // D = 256 and D = 128's transposing instance (problems under its pre-pass threshold) unmeasured, off.
  bool long_causal_wave = false;
  // A masked tile (the causal diagonal, a key range's last tile) in which no row of a consumer
  // warpgroup sees a key past the first trim_keys runs its softmax over those keys alone (per warp
  // until session 47: pack_in_softmax's wait made the decision a warpgroup's), and P's
  // columns past them are zeros (mma_ws_fwd's softmax: the same results bit for bit, the masked
  // scores' exponentials being 0); 0: every tile's softmax is BN keys wide. One width a row: a second
  // (a fully masked warp skipping its softmax, or 56 / 128 / 176 keys of 224) made ptxas spill 2.9-4.8 KB
  // in the FP8 D = 128 instances. The FP8 rows take it, their softmax being most of a tile's time
  // (docs/perf/2026-11-30-fp8-softmax-phase-clocks.md): 128 of D = 128's 224 keys, so that the last
  // tile of every power-of-two key count from 1024 to 32768 is trimmed, and half of the 128-key rows.
  // Measured (H200, session 41, .dev/c3.sh, e4m3, ms, three rounds alternated, fastest, off -> on):
  // (1,32,8,8192,8192,128,causal) 0.6457 -> 0.6377 (-1.2%), (2,16,16,8192,8192,128,causal) 0.6634 ->
  // 0.6583 (-0.8%), (2,16,16,8192,8192,128) 1.2035 -> 1.1997 (-0.3%), (4,16,16,4096,4096,128,causal)
  // -0.2%, (16,16,16,1024,1024,128,causal) (the transposing instance) -0.7%, (8,16,16,8192,8192,64)
  // 3.8272 -> 3.8142 (-0.3%), (2,16,16,8192,8192,64,causal) -0.1%; in the same call FP8 D = 256, whose
  // kernel did not change, moved -0.6%, and the bf16 kernels 0.0%. Off where it lost (call 2, half of
  // every row's tile): the 16-bit rows 1.1-3.6% slower on every row measured, the non-causal ones
  // with no tile trimmed (ptxas's schedule of the larger kernel: (2,16,16,8192,8192,128) bf16 1.5444
  // -> 1.5869, (2,16,16,8192,8192,64,causal) bf16 0.5439 -> 0.5632), and FP8 D = 256
  // (1,16,16,8192,8192,256) 0.9072 -> 0.9172, a row with no masked tile.
  int trim_keys = 0;
  // Each consumer warpgroup computes only the key tiles that hold a key its own rows see
  // (ws_pipeline.hpp's group_tiles) and releases the rest unread, rather than every tile of the
  // block's last row: a causal block's first warpgroups stop a tile or more early, and a warpgroup
  // whose rows are all padding past S computes nothing. Rows without turns only (a turn counts every
  // tile). On FP8 D = 64, whose 192-row blocks span 1.5 of its 128-key tiles: measured (H200, session
  // 42, .dev/c4.sh, e4m3, ms, three rounds alternated, fastest, off -> on) (2,16,16,8192,8192,64,causal)
  // 0.5313 -> 0.5174 (-2.6%), (4,16,16,4096,4096,64,causal) 0.3144 -> 0.2981 (-5.2%),
  // (16,16,16,1024,1024,64,causal) 0.1242 -> 0.1125 (-9.4%), (32,16,16,512,512,64,causal) 0.0854 ->
  // 0.0764 (-10.5%), (8,16,16,8192,8192,64) 3.8214 -> 3.7626 (-1.5%: its last q tile's third warpgroup
  // is padding), but (16,16,16,1024,1024,64) 0.1602 -> 0.1625 (+1.4%, two warpgroups of padding in
  // the last q tile; why was not measured). Off on D = 128's pre-pass row, where warpgroup 0 stops
  // early in 2 of every 7 q tiles and the waves lost (.dev/c3.sh, the same rounds): the Llama-3 GQA
  // causal row 0.6414 -> 0.6527 (+1.8%), (4,16,16,4096,4096,128,causal) +2.3%,
  // (8,16,16,2048,2048,128,causal) +4.5%, (2,16,16,8192,8192,128,causal) 0.0%; why was not measured.
  // First built with the count taken straight from the thread index, the FP8 rows ran 7-16% slower
  // (ws_consume's comment says why). docs/perf/2026-11-30-fp8-d64-group-tiles.md.
  bool group_tiles = false;
  // Non-causal problems whose items hold more than kWsPersistentTiles key tiles and at most this many
  // run as one wave too (ws_launch_wave below), their items from the counter as a causal wave's
  // (ws_wave_from_counter): a block loads its next item's Q and first K/V tiles under its last one's
  // tail, where one-item blocks paid a prologue and an epilogue each; 0: such problems stay one-item
  // grids. Measured (H200, session 43, .dev/c2.sh, ms, rounds alternated, fastest, one-item grid ->
  // wave; `static`: the items in turn, every gridDim.x-th, `counter`: from the counter):
  // (4,16,16,4096,4096,128) e4m3 (19 tiles of 224) 0.6837 -> static 0.6617, counter 0.6577 (-3.8%), bf16
  // (24 of 176) 0.8300 -> 0.8179 / 0.8215 (-1.0%), (8,16,16,4096,4096,64) (32 of 128) e4m3 1.0199 ->
  // static 1.0317 (+1.2%), counter 1.0051 (-1.5%), bf16 1.0613 -> 1.0418 / 1.0383 (-2.2%),
  // (1,16,16,8192,8192,256) e4m3 (64 of 128) 0.9005 -> 0.8827 / 0.8852 (-1.7%). Lost, so the rows'
  // caps leave them one-item grids: (2,16,16,8192,8192,128) e4m3 (37 of 224) 1.1981 -> 1.2133 / 1.2041
  // (+0.5%), bf16 (47 of 176) 1.5365 -> 1.5520 / 1.5573 (+1.0-1.4%), (8,16,16,8192,8192,64) e4m3 (64 of
  // 128) 3.7949 -> 3.8107 / 3.8004 (+0.1-0.4%), and D = 96's row at both lengths measured (D = 80
  // padded: (1,32,32,4096,4096,80) fp16, 32 tiles, 0.3532 -> 0.3653 / 0.3669, +3.4-3.9%;
  // (2,16,16,8192,8192,80) bf16, 64 tiles, 1.3165 -> 1.3894-1.3988, +5.5-6.3%). The caps lie between
  // a measured win and loss: 25-32 tiles on the 16-bit D = 128 row and 20-32 on FP8 D = 128's pre-pass
  // row are unmeasured. 16-bit D = 256 (103 tiles at 8k) and FP8 D = 128's and D = 256's transposing
  // instances (problems under their rows' pre-pass thresholds) unmeasured, 0. The rule as
  // landed, in a later call (.dev/c3.sh, two rounds, fastest): (4,16,16,4096,4096,128) e4m3 0.6767 ->
  // 0.6545 (-3.3%), bf16 0.8421 -> 0.8239 (-2.2%), (8,16,16,4096,4096,64) e4m3 1.0134 -> 1.0039 (-0.9%),
  // bf16 1.0554 -> 1.0371 (-1.7%), (1,16,16,8192,8192,256) e4m3 0.9101 -> 0.8891 (-2.3%); the 8k D = 128
  // rows, whose launch did not change, e4m3 1.1922 -> 1.1975, bf16 1.5623 -> 1.5608.
  int dense_wave_tiles = 0;
  // FP8 rows: P's E4M3 pack done inside the softmax, each register as soon as its four exponentials
  // are in place (ws_consume's softmax; ws_fp8.hpp's fp8_p_reg_of_blocks), rather than as a phase of
  // its own after the last exponential. P's registers are the A operand of the P V in flight, so the
  // consumer waits for that GEMM once the row maxes are known, before the first exponential, instead
  // of after the last: the max phase still runs under it. A trimmed tile packs after its softmax (the
  // kernel's comment says why). The packs then fill issue slots between MUFU's exponentials, where
  // they were a phase of their own on the path to the next wgmma (session 39 clocked it at 290 of a
  // 3,950-cycle FP8 D = 128 period). Measured with the trim decided per warp (H200, session 47,
  // .dev/s47/c2.sh, e4m3, ms, two rounds alternated, fastest, off -> on): (8,16,16,8192,8192,64)
  // 3.7167 -> 3.5896 (-3.4%), (2,16,16,8192,8192,64,causal) 0.5095 -> 0.4927 (-3.3%),
  // (8,16,16,4096,4096,64) 0.9824 -> 0.9756 (-0.7%), (16,16,16,2048,2048,64) (the transposing
  // instance) 0.5355 -> 0.5237 (-2.2%), (2,16,16,8192,8192,128) 1.1949 -> 1.1579 (-3.1%), the Llama-3
  // GQA causal row 0.6356 -> 0.6066 (-4.6%), (16,16,16,1024,1024,128,causal) (transposing) 0.1465 ->
  // 0.1426 (-2.7%), (1,16,16,8192,8192,256) 0.8892 -> 0.8717 (-2.0%); the bf16 rows within 0.2%. That
  // form failed synccheck (the wait inside a per-warp branch); the trim decided per warpgroup from the
  // thread's registers passed it but ran 2.2-4.6% slower than off on the trimmed rows (D = 256, no
  // trim, kept -1.8%: its SASS had 63 R2UR and 26 WARPSYNC against 40 and 2, divergent code around
  // the wgmma pipeline); the form here, the same decision through a warp reduction, has the first
  // form's SASS counts, and against off (session 48, .dev/s48/c1.sh, two rounds alternated, fastest):
  // (8,16,16,8192,8192,64) 3.7477 -> 3.6262 (-3.2%), its 8k causal row -2.8%, (16,16,16,2048,2048,64)
  // -2.6%, (8,16,16,4096,4096,64) -0.1%, (2,16,16,8192,8192,128) 1.1987 -> 1.1737 (-2.1%), GQA causal
  // 0.6412 -> 0.6160 (-3.9%), the transposing D = 128 causal row -2.4%, D = 256 -1.8%; synccheck and
  // racecheck clean.
  // docs/perf/2026-12-01-fp8-pack-in-softmax.md. The 16-bit rows keep their pack after the softmax.
  bool pack_in_softmax = false;
};

// fp16 and bf16 share rows (FA3 keys its table on the element size, not the type), and so do the
// two FP8 formats (elem_bytes 1). FP8 rows: wgmma's fp8 B operand must be K-major, so V is
// transposed: by the producer warpgroup in shared memory into a third buffer a stage, or, at or past
// the row's vt_prepass_rows, by a pre-pass kernel into global memory. FA3's fp8 shapes (tile_size.h's
// element_size == 1 branch: D64 192 x 160, D128 128 x 224, D256 128 x 128) are the start; here 128
// keys, one 128-byte swizzle span of the transposed V (the transposer's loops are written for it), and
// FA3's 224 and 160 for D = 128's and D = 64's pre-pass instances (ws_fp8_row below).
//
// Measured on an H200 (2026-11-29, session 30, FP8 e4m3, ms, two rounds alternated, cold L2):
// - The transposer bounds the FP8 kernel: with its loop taken out (a timing-only build, wrong
//   results) (2,16,16,8192,8192,128) ran 1.311 against 1.436, (1,16,16,8192,8192,256) 0.873 against
//   1.301, the Llama-3 GQA causal row 0.725 against 0.795, (8,16,16,8192,8192,64) 3.869 against 3.923.
// - The pre-pass (ws_vt_prepass.hpp) in its first form (byte loads; 44 us on the D = 256 row's 32 MiB
//   of V under ncu), against the transposer: D = 128 (B,16,16,S,S) S = 512 +30%, 1k +14%, 2k +3.4%,
//   4k causal +0.6%, 8k -6.5%; (4,32,8,256,16384) (1024 rows a kv head) +12%; D = 256 S = 512 +8%,
//   1k -8.6%, 2k causal -10%, 8k -27%; (4,32,8,S,16384) S = 32 (128 rows a kv head) +18%, S = 128
//   (512 rows) +20%. With 4x4 byte transposes the pre-pass saved 21 us on the D = 256 row (0.945 ->
//   0.924 ms), about half its cost there. The thresholds are that cost halved on every row, an
//   estimate (the device time ran out before the mid-size rows were timed again): D = 128 from 2048
//   rows a kv head (2k then about 2% faster, 1k about 5% slower), D = 256 from 256 (512-row rows then
//   6-7% faster). The candidate in one call: D = 128 1.321 (832 TFLOP/s,
//   1.19x the bf16 row's 1.573 in the same call), GQA causal 0.727 (1.19x bf16's 0.867), D = 256
//   0.924 (1190 TFLOP/s, 1.48x bf16's 1.369). Issue 46 asks 1.3x at D = 128: not met.
// - FP8 D = 64 on three consumer warpgroups (192 x 128, as the 16-bit row; FA3: 192 x 160), 152
//   registers a consumer beside a 40-register transposing producer: 4.70 -> 3.92 (2 warpgroups ->
//   3); then 1 of 8 exponentials as the polynomial 3.85 (2 of 8: 4.03), the lazy rescale at 0 3.87
//   (not taken with the polynomial: not measured together). 571 TFLOP/s, 1.03x the bf16 row (issue
//   46 asks 1.15x). The 16-bit D = 64 row lost with the polynomial (1 of 8: aiter-3 4.26 against
//   4.08-4.27, whisper-enc 0.0910 against 0.0874). With the V^T pre-pass from 2048 rows a kv head
//   (no transposer; consumers 160 registers; H200, session 34, three rounds, ms): (8,16,16,8192,8192,
//   64) 3.783-3.785 -> 3.764-3.770, but its causal 2-batch row 0.527-0.528 -> 0.533, (16,16,16,2048,
//   2048,64) 0.518-0.519 -> 0.536-0.538, (4,16,16,4096,4096,64,causal) 0.313-0.314 -> 0.321-0.322:
//   at D = 64 the transposer is not the limiter (issue slots and MUFU are). What the pre-pass frees is
//   the tile's width: the transposer's loops are written for 128 keys, the pre-pass instance's are
//   not, and FA3's D = 64 FP8 tile is 192 x 160. Its own row since session 44 (ws_fp8_row's
//   `prepass`: 160 keys, S 80 registers a thread; the wave instance spills 20 bytes, the one-item
//   none): the consumers' per-tile instructions (the max's shuffles, alpha, O's rescale, the waits
//   and wgmma issue) spread over 25% more keys. Measured (H200, session 44, .dev/c5.sh, e4m3, ms,
//   three rounds alternated, fastest; transposer -> pre-pass at 160 keys / at 128 keys, from 2048
//   rows a kv head): (8,16,16,8192,8192,64) 3.7984 -> 3.7529 (-1.2%) / 3.8289,
//   (2,16,16,8192,8192,64,causal) 0.5222 -> 0.5132 (-1.7%) / 0.5277, (4,16,16,4096,4096,64,causal)
//   0.3006 -> 0.3004 / 0.3070, (8,16,16,4096,4096,64) (26 tiles of 160: a dense wave) 1.0073 ->
//   0.9910 (-1.6%) / 0.9941, but (16,16,16,2048,2048,64) 0.5394 -> 0.5632 (+4.4%) / 0.5558 (the
//   pre-pass's pass over V a larger share; that build rounded V^T's rows to 4480 keys, 2.2x this
//   row's keys, where vt_keys_round(160) is 640). So the pre-pass from 4096 rows a kv head. In the
//   same call bf16 (8,16,16,8192,8192,64) ran 3.8733: FP8 / bf16 1.020x -> 1.032x (issue 46 asks 1.15x).
//   With the landed 640-key rows the pre-pass still lost from 2048 rows (session 46, .dev/c2.sh, three
//   rounds, fastest, from 4096 -> from 2048): (16,16,16,2048,2048,64) 0.5385 -> 0.5494 (+2.0%), its
//   causal twin 0.3225 -> 0.3448 (+6.9%), (8,16,16,3072,3072,64) 0.5705 -> 0.5759 (+0.9%); the rows
//   from 4096 rows the same.
// - FP8 D = 128 with three K/V stages (16 KB each): 1.438-1.448 -> 1.424-1.434, GQA causal 0.798-0.803
//   -> 0.793, both rounds (before the pre-pass; the pre-pass instance keeps three, of 28 KB since its
//   224-key row).
//
// FA3's D = 256 FP8 tile, 128 x 128 (tile_size.h): P V is m64n256k32, V's rows span two 128-byte
// column blocks for the transposer (ws_fp8.hpp's fp8_v_load_at), O's 128 registers a thread take
// the consumers to 240 and leave the producer warpgroup, transposer included, 24 (ws_pipeline.hpp:
// FA3's split); shared memory Q 32 KB, K, V and V^T 2 x 32 KB each (no V^T ring with the pre-pass).
// Built with the row on (nvcc 13.0, sm_90a), ptxas spills 24 bytes (36 loaded) in the one-item
// instance and 120 in the wave instance (the D = 64 and 128 FP8 ones then: 0 and 44); with D <= 128's
// 40 / 232 instead, 48 and 92. With the pre-pass (session 30) its one-item instance spills nothing and
// its wave instance 44; D = 64 on three warpgroups spills 40 in its wave instance, D = 128's
// transposing wave instance 44, and its 224-key pre-pass instance (session 32) nothing in the
// one-item instance and 40 (44 loaded) in the wave one (256 keys: 144 in the one-item instance). On
// since its first GPU run (H200, 2026-11-29, a build before the short row's change):
// test_gpu_paths' ws head dims (e4m3 and e5m2, causal or not, G 0, 2, 16, ragged and ring-wrapping
// key ranges) and fp8.yaml pass; memcheck, racecheck and synccheck are clean on it;
// (1,16,16,8192,8192,256) e4m3 runs at 845-849 TFLOP/s, 1.06x the bf16 row's 796 (issue 46 asks
// 1.3x); with the V^T pre-pass (session 30, above) 1.48x. kWsFp8D256On false takes it out of the
// table again: nothing of it is then instantiated, and mma refuses such problems by name.
constexpr int kVtPrepassRowsD64 = 4096, kVtPrepassRowsD128 = 2048, kVtPrepassRowsD256 = 256;
constexpr WsTileRow kWsFp8D256Row = {256, 1, 128, 128, 2, 2, 0, 0, kVtPrepassRowsD256, false};
constexpr bool kWsFp8D256On = true;
// `prepass`: the row of the instance that takes its V^T from the pre-pass (the threshold is the
// transposing row's; both rows carry it). At D = 128 that instance has its own row, FA3's 128 x 224
// direction: with no transposer (whose loops are written for 128 keys) the tile can be wider, and the
// consumers' per-tile costs (their turn and wgmma issue, the S wait, the mbarrier waits, the row
// max's shuffles) spread over more keys. 224 keys (session 32): V^T rows of 224 bytes are seven
// 32-byte swizzle blocks (ws_layout.hpp's swizzle_bytes_vt; the TMA's 32-byte swizzle and wgmma's
// layout type 3), S is 112 registers a thread. Measured (H200, 2026-11-29, session 32, e4m3, ms, two
// rounds alternated, call 1, 192 -> 224 keys): (2,16,16,8192,8192,128) 1.248 / 1.245 -> 1.236 / 1.238
// (-0.8%; 1.276x the bf16 row's 1.578 / 1.579), the Llama-3 GQA causal row 0.698 / 0.698 -> 0.697 /
// 0.698; 256 keys (two 128-byte blocks, S 128 registers: ptxas spills 144 bytes) 1.439 and 0.831.
// Three consumer warpgroups (session 43, .dev/c1.sh, e4m3, ms, three rounds alternated, fastest;
// 128 x 224 -> 192 x 96, the same with group_tiles, 192 x 128; V^T rows rounded to 2688 keys for 96; ptxas
// spilled 20 bytes in the 96-key wave instance, 144-164 in the 128-key ones): (2,16,16,8192,8192,128)
// 1.1972 -> 1.2742 / 1.2886 / 1.3791, the Llama-3 GQA causal row 0.6372 -> 0.6793 / 0.6768 / 0.7294,
// (2,16,16,8192,8192,128,causal) 0.6582 -> 0.6986 / 0.6971 / 0.7473, (4,16,16,4096,4096,128,causal)
// 0.3866 -> 0.4052 / 0.3932 / 0.4448, (8,16,16,2048,2048,128) 0.3852 -> 0.4200 / 0.4249 / 0.4112: all
// slower, 1.7-15%; why was not measured.
// Before it, 192 keys (three 64-byte blocks; session 31, e4m3 unless named, 128 -> 192 keys):
// calls 3 and 4, four rounds: (2,16,16,8192,8192,128) 1.316-1.325 -> 1.247-1.263 (call 4: 1.258-1.261
// in the sweep beside bf16, 873 TFLOP/s, 1.26x the bf16 row's 1.583-1.584; issue 46 asks 1.3x), e5m2
// 1.311 -> 1.245-1.249, Llama-3 GQA causal 0.720-0.730 -> 0.696-0.705 (1.23x bf16's 0.865); ncu:
// tensor pipe 45.3% -> 48.2%, MUFU (XU) 46.1% -> 48.9%. Two
// stages instead of three: the same (1.258, 0.704); 1 of 8 exponentials as the polynomial: 4% slower
// (1.313, 0.736). The threshold, with this row on every D = 128 problem against the transposer:
// (32,16,16,512,512) +28%, (16,16,16,1024,1024) +11.5%, (4,32,8,64,16384) (256 rows a kv head)
// +6.8%, (4,32,8,256,16384) (1024 rows) -2.3%, (8,16,16,2048,2048) -2.4%, (4,16,16,4096,4096,causal)
// -0.2%: 2048 rows a kv head kept.
constexpr WsTileRow ws_fp8_row(int D, bool prepass = false) {
  switch (D) {
    case 64: {
      WsTileRow r{64, 1, 192, 128, 2, 3, 1, -1, kVtPrepassRowsD64, false, false};
      r.trim_keys = 64, r.group_tiles = true, r.dense_wave_tiles = 32, r.pack_in_softmax = true;
      if (prepass) r.BN = 160;  // the pre-pass instance: FA3's 160 keys (above)
      return r;
    }
    case 128: {
      WsTileRow r{128, 1, 128, 128, 3, 2, 0, 0, kVtPrepassRowsD128, false};
      r.trim_keys = 64, r.pack_in_softmax = true;
      if (prepass)  // the pre-pass instance: a wider tile, long waves
        r.BN = 224, r.long_causal_wave = true, r.trim_keys = 128, r.dense_wave_tiles = 32;
      return r;
    }
    case 256: {
      if (!kWsFp8D256On) return {};
      WsTileRow r = kWsFp8D256Row;
      r.pack_in_softmax = true;
      if (prepass) r.dense_wave_tiles = 64;  // the transposing instance's long dense waves: unmeasured
      return r;
    }
    default: return {};
  }
}
constexpr WsTileRow ws_tile_row(int D, int elem_bytes, bool short_row = false, bool prepass = false) {
  if (elem_bytes == 1) return ws_fp8_row(D, prepass);
  if (elem_bytes != 2) return {};
  switch (D) {
    // FA3: 192 x 192 (128 keys for causal) with three consumer warpgroups. Here three, and its causal
    // 128-key tile for both (192 keys in registers would exceed the 160 a consumer gets beside two
    // others). Measured against 128 x 128 with two warpgroups (2026-11-24; bf16 GEMM 761 in the same
    // call): 8k 508 (was 426; 312/478), 32k 510 (426; 309/477), 40k 441 (414; 261/417), S=512 fp16 244
    // (226; 191/253), whisper 1500 fp16 370 (307; 246/298). Under ncu the two-warpgroup kernel kept
    // the tensor pipe 44% busy: 64-wide GEMMs leave too little matrix work per softmax for two.
    // The short row, two warpgroups on 128 x 128, for short causal problems where 192-row blocks
    // compute much padding and masked area (ws_takes_short_row below has the rule and the measurements).
    case 64: {
      if (short_row) return WsTileRow{64, 2, 128, 128, 2, 2, 0, 8, 0, true, true, true};
      WsTileRow r{64, 2, 192, 128, 2, 3, 0, 8, 0, true, true, true};
      r.dense_wave_tiles = 32;
      return r;
    }
    // FA3: 192 x 144 with P through shared memory (SS); here two warpgroups, P in registers, and the
    // 64-byte swizzle (96 is not a multiple of 64: ws_layout.hpp). Causal 364 (mma.sync 248; 243/334).
    case 96: return {96, 2, 128, 128, 2, 2};
    // FA3: 128 x 176 (non-causal), 128 x 128 (causal, local); here 176 for long problems and 128 for
    // short ones (the short row: ws_short_row below). Measured 2026-11-24:
    // non-causal 8k 667 with 176 keys against 645 with 128 (351/635). 176 for causal too won 2-3% on
    // the 8k rows (causal 606 against 591, Llama-3 GQA 610 / 595, 64-head fp16 608 / 598), but in a
    // later call lost 5-8% on short ones: sweeps/ci.yaml's causal-2k-d128 (1.051-1.057x the time)
    // and gqa-prefill-1k (1.076-1.079x), where the diagonal tile's masked half is a larger share.
    // So causal problems of 4096 or more queries and keys take the 176-key row. A/B in one call,
    // twice each (2026-11-24, TFLOP/s, 128 -> 176 keys; cuDNN beside):
    // (2,16,16,8192,8192,128,1) 588 -> 602 (615), Llama-3 GQA 592 -> 606 (613), 64-head fp16
    // 588 -> 600 (617), (2,16,16,4096,4096,128,1) 489 -> 493, GQA 4k 490 -> 495; 2k keeps 128.
    // Short non-causal problems lost with 176 keys too (issue 46's batch-32 rows, H200, 2026-11-29,
    // A/B twice each, ms, 176 -> 128 keys): (32,16,16,512,512) fp16 0.1514 -> 0.1315, (32,16,16,1024,1024)
    // bf16 0.5005 -> 0.4339; interleaved with cuDNN, the 128-key build ran them at 1.205x and 1.076x
    // (the 176-key one at 1.011x and 0.882x). So non-causal problems under 2048 queries and keys take
    // the 128-key row. Between 2048 and 8192 it is unmeasured.
    case 128: {
      if (short_row) return WsTileRow{128, 2, 128, 128, 2, 2, 0, 8, 0, true, true, true};
      WsTileRow r{128, 2, 128, 176, 2, 2, 0, 8, 0, true, true, true};
      r.dense_wave_tiles = 32;
      return r;
    }
    // FA3: 128 x 80 ("hits the limit of smem"): 64 KB of Q and 2 x 2 x 40 KB of K/V. Causal 555
    // (mma.sync 230; 269/549).
    case 256: return {256, 2, 128, 80, 2, 2, 0, 8, 0, true, false};
    default: return {};
  }
}
constexpr bool ws_has_row(int D, int elem_bytes) { return ws_tile_row(D, elem_bytes).BM > 0; }
// A head dim without a row of its own may run on a wider row's instance, padded: its tensor maps
// describe D columns, the TMA fills the rest of the wider tile with zeros (ws_layout.hpp's
// tma_tile_padded), and only D columns of O are stored. FA3 rounds every head dim up to its next
// instance (hopper/flash_api.cpp's round_up_headdim: 80 runs as 96). Here D = 80 (16-bit) on D = 96's
// row, where mma.sync ran 0.76-0.81x cuDNN (issue 46). Measured (H200, 2026-11-29, ms, mma.sync ->
// padded; cuDNN interleaved with the padded side): (1,32,32,4096,4096,80) fp16 0.538 -> 0.392 (1.07x
// cuDNN; 1.13x in the README table's call), (4,32,32,2048,2048,80,1) fp16 0.343 -> 0.258 (1.09x),
// (2,16,16,8192,8192,80) bf16 2.083 -> 1.479 (1.06x); test_gpu_paths, the sanitizers and the shipped
// sweeps passed on it (a build before the short row's change). With kWsPadOn
// false every D runs on its own row or not at all.
constexpr bool kWsPadOn = true;
struct WsPad {
  int D, run_D, elem_bytes;
};
constexpr WsPad kWsPads[] = {{80, 96, 2}};
// The row's D that a problem's D runs on: D itself, the padded row's, or 0 (no ws kernel).
constexpr int ws_run_d(int D, int elem_bytes) {
  if (ws_has_row(D, elem_bytes)) return D;
  if (kWsPadOn)
    for (const WsPad& p : kWsPads)
      if (p.D == D && p.elem_bytes == elem_bytes) return p.run_D;
  return 0;
}
constexpr bool same_row(const WsTileRow& a, const WsTileRow& b) {
  return a.D == b.D && a.elem_bytes == b.elem_bytes && a.BM == b.BM && a.BN == b.BN && a.stages == b.stages &&
         a.consumer_wgs == b.consumer_wgs && a.exp2_poly_of_8 == b.exp2_poly_of_8 &&
         a.lazy_rescale_log2 == b.lazy_rescale_log2 && a.vt_prepass_rows == b.vt_prepass_rows &&
         a.take_turns == b.take_turns && a.rescale_under_s == b.rescale_under_s &&
         a.long_causal_wave == b.long_causal_wave && a.trim_keys == b.trim_keys && a.group_tiles == b.group_tiles &&
         a.dense_wave_tiles == b.dense_wave_tiles && a.pack_in_softmax == b.pack_in_softmax;
}
// Whether a problem is short, the domain of the short rows (ws_takes_short_row below decides per D):
// causal and short enough that the diagonal tiles' masked halves are a large share of the work, or
// not causal and short (the row comments above hold the measurements). The kernel reads causal
// itself, so either row's instance runs either kind.
constexpr int64_t kWsLongCausal = 4096, kWsLongDense = 2048;
constexpr bool ws_short_row(bool causal, int64_t S, int64_t Sk) {
  return causal ? S < kWsLongCausal || Sk < kWsLongCausal : S < kWsLongDense && Sk < kWsLongDense;
}
// Whether a one-item grid's blocks take their items in LPT order (kernels/device/tile_range.hpp's
// lpt_block; fa_mma_ws.hpp's make_maps): causal problems whose longest item (all the keys of a split) has
// at least kWsLptTiles key tiles. Causal problems of at most kWsPersistentTiles (16) run as a wave
// since session 35 (ws_wave below, which wins at 16), in LPT order from a counter, wherever their
// items outnumber the SMs, and since session 37 so do those of up to kWsLongWaveTiles on the rows with
// long_causal_wave; the 2k, 4k and D = 128 8k rows measured below as one-item grids are such waves now.
// Measured (H200, session 34, ms, three rounds alternated, grid order ->
// LPT): from 16 tiles every causal row gained (2k: (4,16,16,2048,2048,128) bf16 0.147-0.148 ->
// 0.136-0.137, (4,32,32,2048,2048,96) fp16 0.245-0.247 -> 0.232-0.234; 4k and 8k 1-11%, the rows in
// fa_mma_ws.hpp's comment); at 8 or fewer, four of issue 46's six short rows lost 1-3%, one 0.3%, and one
// gained 0.4%: (32,16,16,512,512,128,1) fp16 0.1325-0.1330 -> 0.1364-0.1366, (32,16,16,1024,1024,128,1)
// bf16 0.3403-0.3410 -> 0.3474-0.3477, (32,16,16,512,512,64,1) fp16 0.1141-0.1143 -> 0.1163,
// (32,32,8,1024,1024,128,1) bf16 0.658-0.661 -> 0.667-0.668, (32,16,16,1024,1024,128,1) e4m3 0.370 ->
// 0.371, (16,32,32,1024,1024,64,1) bf16 0.2972-0.2974 -> 0.2961-0.2963. A greedy model of the block
// scheduler gives the short rows 2-4% and misses what they lose (their blocks are short and memory-heavy,
// and the order spreads a head's blocks apart in time); 9-15 tiles are unmeasured.
// The key tiles of a problem's longest work item: a split's share of Sk (G 0 and 1: all of it) in
// BN-key tiles. The launch's choice of the wave reads it too (fa_mma_ws.hpp's launch_ws_cfg).
constexpr int64_t ws_item_tiles(int64_t Sk, int BN, int splits) {
  const int64_t per = int64_t(splits > 1 ? splits : 1) * BN;
  return (Sk + per - 1) / per;
}
// A launch's work items: q tiles of BM rows x heads x batch x splits.
constexpr int64_t ws_items(int64_t S, int64_t H, int64_t B, int splits, int BM) {
  return (S + BM - 1) / BM * H * B * (splits > 1 ? splits : 1);
}
// Whether a launch runs its items as one wave of `sms` blocks, each taking item after item
// (fa_mma_ws.hpp's launch_ws_cfg; the kernel's ws_produce_wave), rather than a grid of one block an
// item: short items (at most kWsPersistentTiles key tiles) or, with `long_items` (a causal problem on a
// row with long_causal_wave: ws_long_wave), items of up to kWsLongWaveTiles; more of them than SMs; and
// indices that stay ints past the counter's last answers (a counter wave's atomicAdd + gridDim.x).
// fa_mma_ws.hpp's launch comment and the row's field hold the measurements. Long non-causal items
// are ws_dense_wave's (the row's dense_wave_tiles).
constexpr int64_t kWsPersistentTiles = 16, kWsLongWaveTiles = 48;
constexpr bool ws_wave_items_fit(int64_t items, int64_t sms) { return items > sms && items <= INT32_MAX - sms; }
constexpr bool ws_wave(int64_t items, int64_t item_tiles, int64_t sms, bool long_items = false) {
  return (item_tiles <= kWsPersistentTiles || (long_items && item_tiles <= kWsLongWaveTiles)) &&
         ws_wave_items_fit(items, sms);
}
// Whether a non-causal problem's items are long (more than kWsPersistentTiles key tiles) and run as a
// wave all the same: at most the row's dense_wave_tiles, and ws_wave's bounds on the items.
constexpr bool ws_dense_wave(const WsTileRow& r, bool causal, int64_t items, int64_t item_tiles, int64_t sms) {
  return !causal && item_tiles > kWsPersistentTiles && item_tiles <= r.dense_wave_tiles &&
         ws_wave_items_fit(items, sms);
}
// Whether a problem's items of any length may run as a wave: causal, on a row with long_causal_wave.
constexpr bool ws_long_wave(const WsTileRow& r, bool causal) { return causal && r.long_causal_wave; }
// Whether a launch of the instance with row r (its WsTraits' ROW) on this problem runs as a wave:
// launch_ws_cfg and make_maps ask this (fa_mma_ws.hpp's ws_wave), and so do the tests.
constexpr bool ws_launch_wave(const WsTileRow& r, int64_t S, int64_t Sk, int64_t H, int64_t B, int G, bool causal,
                              int64_t sms) {
  const int splits = G > 1 ? G : 1;
  const int64_t items = ws_items(S, H, B, splits, r.BM), tiles = ws_item_tiles(Sk, r.BN, splits);
  return ws_wave(items, tiles, sms, ws_long_wave(r, causal)) || ws_dense_wave(r, causal, items, tiles, sms);
}
// Whether such a wave's blocks take their items from the launch's counter (the kernel's maps.sched,
// fa_mma_ws.hpp's make_maps), in LPT order, to whichever block is free: causal waves, whose items
// differ, and the long non-causal ones (ws_dense_wave): handed out in turn, FP8 D = 64's 4k row lost
// 1.2% where the counter won 1.5% (dense_wave_tiles' measurements; the SMs do not run alike), and
// elsewhere the two were within 0.5%. Short non-causal waves take theirs in turn, every gridDim.x-th.
constexpr bool ws_wave_from_counter(const WsTileRow& r, int64_t S, int64_t Sk, int64_t H, int64_t B, int G, bool causal,
                                    int64_t sms) {
  const int splits = G > 1 ? G : 1;
  return ws_launch_wave(r, S, Sk, H, B, G, causal, sms) &&
         (causal || ws_item_tiles(Sk, r.BN, splits) > kWsPersistentTiles);
}
constexpr int64_t kWsLptTiles = 16;
constexpr bool ws_lpt_order(bool causal, int64_t Sk, int BN, int splits) {
  return causal && BN > 0 && ws_item_tiles(Sk, BN, splits) >= kWsLptTiles;
}
// Whether an FP8 problem takes its row's V^T pre-pass (WsTileRow::vt_prepass_rows): query rows a kv
// head at least the row's threshold.
constexpr bool ws_vt_prepass(const WsTileRow& r, int64_t S, int64_t H, int64_t Hk) {
  return r.elem_bytes == 1 && r.vt_prepass_rows > 0 && Hk > 0 && S * (H / Hk) >= r.vt_prepass_rows;
}
// Whether D has a short row of its own (the kernel is instantiated for both).
constexpr bool ws_short_row_differs(int D, int elem_bytes) {
  return !same_row(ws_tile_row(D, elem_bytes, true), ws_tile_row(D, elem_bytes, false));
}
// The query rows x keys that a row's blocks compute on a problem (G = 1): whole BM x BN tiles, their
// padding rows and masked keys included, each block over the keys its last row sees (what
// tile_range.hpp's dense_block_split gives a block at G = 1; splits cut whole tiles, so G does not
// change the count). In 64 bits, from the first block that sees a key: causal S > Sk leaves the
// blocks before it none.
inline int64_t ws_tile_area(const WsTileRow& r, bool causal, int64_t S, int64_t Sk) {
  int64_t tiles = 0, q0 = causal && S > Sk ? (S - Sk) / r.BM * r.BM : 0;
  for (; q0 < S; q0 += r.BM) {
    const int64_t keys = visible_keys((q0 + r.BM < S ? q0 + r.BM : S) - 1, S, Sk, causal);
    tiles += (keys + r.BN - 1) / r.BN;
  }
  return tiles * r.BM * r.BN;
}
// Whether a problem takes its (run) D's short row, the dispatch's question (fa_mma_ws.hpp). A short row
// that differs only in its keys (D = 128) is taken by length alone (ws_short_row). One with fewer
// query rows (D = 64: 128 x 128 on two warpgroups against 192 x 128 on three) is taken only by a
// short causal problem, and only where its tiles cover at most kWsShortAreaPct of the long row's area:
// its blocks do less work a tile (the tensor pipe less busy), so it pays only where the 192-row
// blocks' padding rows and diagonal waste more. Measured (H200, 2026-11-30, session 40, ms, three
// rounds alternated, long -> short row; area ratio in brackets): causal (32,16,16,512,512,64) fp16
// 0.0873-0.0878 -> 0.0801-0.0802 (0.741), (16,32,32,1024,1024,64) bf16 0.2475-0.2478 -> 0.2200-0.2204
// (0.750), (32,16,16,1024,1024,64) fp16 0.2484-0.2485 -> 0.2212-0.2215, (8,16,16,2048,2048,64) bf16
// 0.1880-0.1882 -> 0.1846-0.1850 (0.898), (4,16,16,3072,3072,64) bf16 0.1868-0.1875 -> 0.1984-0.1993
// (0.962); not causal, where every one lost: (32,16,16,512,512,64) fp16 0.0931-0.0934 -> 0.0975-0.0980
// (0.889), (16,16,16,1024,1024,64) bf16 0.1628-0.1632 -> 0.1674-0.1677 (0.889), whisper-enc-b4's
// (4,16,16,1500,1500,64) fp16 0.0862-0.0863 -> 0.0975-0.0978 (1.0). 128 keys a tile: 64 (two
// warpgroups on 128 x 64) lost everywhere, 4-39%. The rule's 90, against a second call of causal
// bf16 rows (same rounds): won where it takes the short row at (8,16,16,1280,1280) 0.0887-0.0890 ->
// 0.0867-0.0877 (0.853), 1792 0.1570-0.1578 -> 0.1466-0.1474 (0.833), (4,16,16,2560,2560) 0.1466-0.1467
// -> 0.1432-0.1435 (0.875); lost where it keeps the long row at 1536 (0.929: 0.1115-0.1122 would be
// 0.1154-0.1164); and two misses: (16,16,16,768,768) 0.0742-0.0748 -> 0.0751-0.0756 (0.875: four
// whole 192-row tiles, taken and 1.2% slower) and (4,16,16,2304,2304) 0.1203-0.1206 against the short
// row's 0.1196-0.1200 (0.950: kept, 0.5% left). Interleaved with cuDNN (torch 2.11) on the short row,
// (32,16,16,512,512) fp16 0.975x (0.873x on the long row, session 36), (16,32,32,1024,1024) bf16
// 1.024x (0.899x), (32,16,16,1024,1024) fp16 1.044x, (8,16,16,2048,2048) bf16 1.089x.
constexpr int kWsShortAreaPct = 90;
inline bool ws_takes_short_row(int D, int elem_bytes, bool causal, int64_t S, int64_t Sk) {
  if (!ws_short_row_differs(D, elem_bytes) || !ws_short_row(causal, S, Sk)) return false;
  const WsTileRow s = ws_tile_row(D, elem_bytes, true), l = ws_tile_row(D, elem_bytes, false);
  if (s.BM == l.BM) return true;
  return causal && 100 * ws_tile_area(s, true, S, Sk) <= kWsShortAreaPct * ws_tile_area(l, true, S, Sk);
}

// The instance a problem runs on, by the one rule the dispatch (kernels/mma/fa_mma_ws.hpp) and the
// tests share: its head dim's row (ws_run_d: its own, or the wider row it is padded to), short or long
// (ws_takes_short_row), and for FP8 the V^T pre-pass's instance where ws_vt_prepass admits the problem.
// `row` is that instance's row (its BN is the pre-pass instance's where `prepass`); BM 0: no ws kernel.
struct WsRunRow {
  WsTileRow row;
  bool short_row = false, prepass = false;
};
inline WsRunRow ws_run_row(int D, int elem_bytes, bool causal, int64_t S, int64_t Sk, int64_t H, int64_t Hk) {
  WsRunRow r;
  const int run_d = ws_run_d(D, elem_bytes);
  if (run_d == 0) return r;
  r.short_row = ws_takes_short_row(run_d, elem_bytes, causal, S, Sk);
  r.prepass = ws_vt_prepass(ws_tile_row(run_d, elem_bytes, r.short_row), S, H, Hk);
  r.row = ws_tile_row(run_d, elem_bytes, r.short_row, r.prepass);
  return r;
}

// The wgmma N that kernels/mma/async_sm90.hpp has operand lists for: a row's BN (S = Q K^T) and D
// (O += P V) must be among them. 16-bit (m64nNk16, ss and rs) and 8-bit (m64nNk32: ss8 takes S's BN,
// rs8 O's D) apart.
constexpr bool wgmma_has_n(int N) { return N == 64 || N == 80 || N == 96 || N == 128 || N == 176 || N == 256; }
constexpr bool wgmma8_ss_has_n(int N) { return N == 64 || N == 128 || N == 160 || N == 224; }
constexpr bool wgmma8_rs_has_n(int N) { return N == 64 || N == 128 || N == 256; }

// Accumulator and fragment registers a consumer thread holds through the loop: O (D / 2 floats), S
// (BN / 2 floats) and P (BN / 2 values packed, 2 a register in 16 bits, 4 in FP8). What is left of its setmaxnreg budget
// (ws_pipeline.hpp's consumer_regs) goes to m, l, addresses and loop state; the table's rows leave at
// least kRegisterHeadroom. What ptxas needs (nvcc 13.0, the consumer budget lowered until it spills,
// two consumers, 128-key rows): D=64 no spill at 168, D=96 at 184, D=128 at 200, D=256 at 240 but 20
// bytes at 232: D=256 x 80 keys is at the budget's edge, a wider tile there spills. The rows with 32
// left, D=64 192 x 128 at 160 and D=128 128 x 176 at 240, build without a spill in their one-item
// instances (D=128's wave instances spill 36 bytes, since session 37's long causal waves; D=64's
// short row, 128 x 128 at 240, spills in neither). One row leaves less: FP8 D = 64's pre-pass row, FA3's
// 192 x 160 at 160, leaves 28; its one-item instance builds without a spill, its wave instance spills
// 20 bytes (session 44).
constexpr int ws_fragment_registers(const WsTileRow& r) { return r.D / 2 + r.BN / 2 + r.BN * r.elem_bytes / 8; }
constexpr int kRegisterHeadroom = 32, kRegisterHeadroomFp8D64Prepass = 28;

}  // namespace fa::ws
