// Layout arithmetic of mma's sm_90 kernel (kernels/mma/fa_mma_ws_sm90.hpp), plain C++ usable in device
// code and on the CPU (tests/kernels/test_ws_layout.cpp): the swizzled shared-memory tile that the
// TMA engine writes and wgmma reads, the wgmma matrix descriptors over it, the TMA box that fills it,
// and the byte layout of one block's shared memory (Q, the K/V stage ring, the mbarriers).
// No CUDA header: the host build without a GPU backend compiles and tests all of it.
#pragma once
#include <cstdint>

#include "harness/conventions.hpp"  // FA_HD

namespace fa::ws {

// ---- the swizzled tile ------------------------------------------------------------------------
// A tile of `rows` rows of 16-bit elements is stored as column blocks of SW / 2 elements (one SW-byte
// row span): block b holds columns [b * SW/2, (b + 1) * SW/2) of every row, row r at r * SW bytes,
// blocks rows * SW bytes apart. Inside a row span, the 16-byte chunk c sits at c ^ phase(r): the
// hardware XORs address bits [4, 4 + log2(SW/16)) with the bits 3 above them (CuTe Swizzle<3,4,3>
// for SW = 128, Swizzle<2,4,3> for SW = 64; CUTLASS cute/swizzle.hpp, the TMA's
// CU_TENSOR_MAP_SWIZZLE_{128B,64B} and wgmma's layout types 1 and 2 are the same pattern), so every
// block must start on a multiple of 8 * SW bytes (the pattern's period) for r to be the row index.
// 128 bytes for D % 64 == 0; D = 96 takes 64 (FA3 does the same: hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp
// picks its smem atoms with CUTLASS's ss_smem_selector, which falls back to the 64-byte swizzle when
// the dimension is not a multiple of 64; wgmma's MN-major canonical layout repeats whole SW/2-column
// atoms along N, so N = 96 has no 128-byte form).
FA_HD constexpr int swizzle_bytes(int D) { return D % 64 == 0 ? 128 : (D % 32 == 0 ? 64 : 0); }
// FP8's V^T rows (BN key bytes, BN / 2 16-bit columns; ws_fp8.hpp): the widest span that divides
// them, the 32-byte swizzle included (224 keys: seven 32-byte blocks; wgmma's layout type 3, the TMA's
// CU_TENSOR_MAP_SWIZZLE_32B). Q, K and V rows keep swizzle_bytes' 64 and 128.
FA_HD constexpr int swizzle_bytes_vt(int cols) { return swizzle_bytes(cols) > 0 ? swizzle_bytes(cols) : cols % 16 == 0 ? 32 : 0; }
FA_HD constexpr int block_cols(int sw) { return sw / 2; }
FA_HD constexpr int swizzle_period(int sw) { return 8 * sw; }  // bytes: 8 rows of one column block
FA_HD constexpr int swizzle_phase(int r, int sw) { return (r * sw / 128) % (sw / 16); }

// Byte offset of element (r, c).
FA_HD constexpr int sw_offset(int r, int c, int rows, int sw) {
  const int bc = block_cols(sw);
  return (c / bc) * rows * sw + r * sw + ((((c % bc) / 8) ^ swizzle_phase(r, sw)) * 16) + (c % 8) * 2;
}
// The same pattern as the hardware applies it: to a byte address (relative to a period-aligned base).
FA_HD constexpr uint32_t swizzle_address(uint32_t a, int sw) {
  return a ^ (((a >> 7) & uint32_t(sw / 16 - 1)) << 4);
}

// ---- wgmma matrix descriptors (PTX ISA "Matrix Descriptor Format"; CUTLASS cute/arch/mma_sm90_desc.hpp
// GmmaDescriptor and cute/atom/mma_traits_sm90_gmma.hpp make_gmma_desc) ------------------------------
// Bits [0,14) start address >> 4, [16,30) leading byte offset >> 4, [32,46) stride byte offset >> 4,
// [49,52) base offset (0: every operand start is a pattern-aligned row, or a k-step inside one,
// which is how CUTLASS's descriptor iterator advances too), [62,64) layout type: 1 = 128-byte
// swizzle, 2 = 64-byte, 3 = 32-byte, 0 = none.
FA_HD constexpr uint64_t desc_layout_type(int sw) { return sw == 128 ? 1 : sw == 64 ? 2 : sw == 32 ? 3 : 0; }
FA_HD constexpr uint64_t gmma_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo, int sw) {
  return uint64_t((smem_addr & 0x3FFFFu) >> 4) | (uint64_t((lbo >> 4) & 0x3FFFu) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFFu) << 32) | (desc_layout_type(sw) << 62);
}
struct DescFields {
  uint32_t start, lbo, sbo;  // bytes
  int sw;
};
FA_HD constexpr DescFields decode_desc(uint64_t d) {
  const int type = int(d >> 62);
  return {uint32_t(d & 0x3FFFu) << 4, uint32_t((d >> 16) & 0x3FFFu) << 4, uint32_t((d >> 32) & 0x3FFFu) << 4,
          type == 1 ? 128 : type == 2 ? 64 : type == 3 ? 32 : 0};
}
// K-major operands (Q and K for S = Q K^T: rows are M or N, columns are k): canonical layout
// ((8, n), 2) : ((SW/16, SBO), 1) in 16-byte units, so SBO = 8 rows = 8 * SW bytes; a k16 step
// stays inside its column block and LBO is unused (CUTLASS: "assumed 1", 16 bytes).
// MN-major operand (V for O += P V: rows are k = keys, columns are n = head dim): canonical layout
// ((SW/16, n), (8, k)) : ((1, LBO), (SW/16, SBO)), so LBO = the column-block stride (rows * SW) and
// SBO = 8 key rows = 8 * SW bytes.
struct DescStrides {
  uint32_t lbo, sbo;
};
FA_HD constexpr DescStrides kmajor_strides(int sw) { return {16u, uint32_t(8 * sw)}; }
FA_HD constexpr DescStrides mnmajor_strides(int rows, int sw) { return {uint32_t(rows * sw), uint32_t(8 * sw)}; }
// Where each wgmma's operand starts inside its tile: K-major A/B at rows [row0, row0 + 64) (A) or
// all rows (B, row0 = 0) and k16 step kk; MN-major B at key rows [16 kn, 16 kn + 16).
FA_HD constexpr int kmajor_start(int row0, int kk, int rows, int sw) { return sw_offset(row0, 16 * kk, rows, sw); }
FA_HD constexpr int mnmajor_start(int kn, int rows, int sw) { return sw_offset(16 * kn, 0, rows, sw); }

// ---- the TMA box that fills a tile (cuTensorMapEncodeTiled's arguments; cuda.h documents the limits)
// A Q, K or V tensor is 4-d to the TMA: (D, rows, heads, batch), innermost first, any strides (BSHD
// and BHSD alike: rows are S or Sk, the strides are AttnArgs's). A box is SW/2 columns (one row
// span: the swizzle's limit on the inner box) by `tile_rows` rows of one head and batch; a tile is
// D / (SW/2) boxes, box j landing at column block j (j * tile_rows * SW bytes on). Rows past the
// tensor's end (S, Sk) come in as zeros and still count toward the bytes the mbarrier expects.
struct TmaTile {
  uint64_t dim[5];     // elements: D, rows, heads, batch (rank 5: the box's columns, rows, column blocks, heads, batch)
  uint64_t stride[4];  // bytes between consecutive rows, heads, batches (rank 5: rows, column blocks, heads, batches)
  uint32_t box[5];     // {SW/2, tile_rows, 1, 1} (rank 5: {SW/2, tile_rows, D/(SW/2), 1, 1})
  int swizzle;         // bytes: 64 or 128 (32: V^T, tma_tile_vt)
  int copies;          // boxes a tile
  int box_bytes;       // shared-memory bytes of one box = the distance between consecutive boxes
  uint32_t tile_bytes; // bytes one tile brings: the mbarrier's expect_tx
  int rank;            // 4, or 5 (tma_tile_one_copy)
  bool walks_cols = false;  // the boxes cover a window of the columns that moves (tma_tile_vt), not all of them
};
// `swizzle`: the span, where not swizzle_bytes(D) (V^T's, swizzle_bytes_vt).
FA_HD constexpr TmaTile tma_tile(int D, int tile_rows, int64_t rows, int64_t heads, int64_t batch, int64_t s_row,
                                 int64_t s_head, int64_t s_batch, int swizzle = 0) {
  const int sw = swizzle > 0 ? swizzle : swizzle_bytes(D), bc = block_cols(sw > 0 ? sw : 128);
  TmaTile t{};
  t.dim[0] = uint64_t(D), t.dim[1] = uint64_t(rows), t.dim[2] = uint64_t(heads), t.dim[3] = uint64_t(batch);
  t.stride[0] = uint64_t(s_row) * 2, t.stride[1] = uint64_t(s_head) * 2, t.stride[2] = uint64_t(s_batch) * 2;
  t.box[0] = uint32_t(bc), t.box[1] = uint32_t(tile_rows), t.box[2] = 1, t.box[3] = 1;
  t.swizzle = sw;
  t.copies = D / bc;
  t.box_bytes = tile_rows * sw;
  t.tile_bytes = uint32_t(tile_rows) * uint32_t(D) * 2u;
  t.rank = 4;
  return t;
}
// The tile of a wider instance over a tensor of D columns (D < D_run, both in 16-bit columns; a
// padded head dim, ws_tile_traits.hpp's ws_run_d): D_run's boxes, copies and expect_tx, with the
// tensor's D as its first dimension. The TMA fills the columns past D with zeros (out of bounds; the
// mbarrier still counts the whole boxes' bytes), so Q K^T sums zeros there and O's columns past D
// are zero; a TMA store through such a map writes only the columns below D. Rank 4 only: in the
// one-copy form the column blocks are a dimension of their own, whose last block would read the next
// row's first columns instead of zeros.
FA_HD constexpr TmaTile tma_tile_padded(int D, int D_run, int tile_rows, int64_t rows, int64_t heads, int64_t batch,
                                        int64_t s_row, int64_t s_head, int64_t s_batch) {
  TmaTile t = tma_tile(D_run, tile_rows, rows, heads, batch, s_row, s_head, s_batch);
  t.dim[0] = uint64_t(D);
  return t;
}
// The same tile in one copy: the column blocks become a dimension of their own, after the rows
// (SW bytes apart in memory), so that one box of (SW/2 columns, tile_rows, D/(SW/2) blocks) lands the
// tile where the 4-D form's `copies` boxes land it (block j after block j - 1's rows), in one
// instruction. The TMA walks a box innermost dimension first.
FA_HD constexpr TmaTile tma_tile_one_copy(TmaTile t) {
  const uint64_t blocks = uint64_t(t.copies);
  // A padded tile has no one-copy form (tma_tile_padded): its D stays, and tma_tile_problem refuses it.
  const uint64_t cols = t.dim[0] == blocks * t.box[0] ? t.box[0] : t.dim[0];
  t.dim[4] = t.dim[3], t.dim[3] = t.dim[2], t.dim[2] = blocks, t.dim[0] = cols;
  t.stride[3] = t.stride[2], t.stride[2] = t.stride[1], t.stride[1] = uint64_t(t.box[0]) * 2;
  t.box[4] = 1, t.box[3] = 1, t.box[2] = uint32_t(blocks);
  t.copies = 1;
  t.box_bytes = int(t.tile_bytes);
  t.rank = 5;
  return t;
}
// V^T as the FP8 pre-pass writes it (kernels/mma/ws_vt_prepass.hpp): per (batch, kv head) D rows of
// `keys` bytes (Sk rounded up to whole tiles), contiguous, as a tensor of keys / 2 16-bit columns.
// A tile is BN key bytes of all D rows, K-major with the swizzle of BN / 2 columns: the layout of a K
// tile with the roles of rows and columns swapped, which is the one the consumers' descriptors read
// (ws_fp8.hpp's fp8_vt_offset). Its boxes cover BN / 2 columns from the tile's first key on.
FA_HD constexpr TmaTile tma_tile_vt(int BN, int D, int64_t keys, int64_t heads, int64_t batch) {
  TmaTile t = tma_tile(BN / 2, D, D, heads, batch, keys / 2, keys / 2 * D, keys / 2 * D * heads, swizzle_bytes_vt(BN / 2));
  t.dim[0] = uint64_t(keys / 2);
  t.walks_cols = true;
  return t;
}
// Why cuTensorMapEncodeTiled would refuse the tile, or nullptr: its documented limits.
inline const char* tma_tile_problem(const TmaTile& t) {
  if (t.swizzle != 64 && t.swizzle != 128 && !(t.walks_cols && t.swizzle == 32))
    return "the head dimension is not a multiple of 32 (no 64- or 128-byte swizzle)";
  if (t.walks_cols ? uint64_t(t.copies) * t.box[0] > t.dim[0]
      : t.rank == 5 ? t.dim[0] != t.box[0]
                    : uint64_t(t.copies) * t.box[0] < t.dim[0] || uint64_t(t.copies - 1) * t.box[0] >= t.dim[0])
    return "the boxes do not cover the head dimension (a padded tile: the last box must hold columns of it)";
  for (int i = 0; i < t.rank; ++i)
    if (t.dim[i] < 1 || t.dim[i] > (uint64_t(1) << 32)) return "a tensor dimension is outside [1, 2^32]";
  for (int i = 0; i < t.rank - 1; ++i)
    if (t.stride[i] % 16 != 0 || t.stride[i] >= (uint64_t(1) << 40)) return "a stride is not a multiple of 16 bytes below 2^40";
  for (int i = 0; i < t.rank; ++i)
    if (t.box[i] < 1 || t.box[i] > 256) return "a box dimension is outside [1, 256]";
  if (t.box[0] * 2 > uint32_t(t.swizzle) || (t.box[0] * 2) % 16 != 0) return "the inner box is not one swizzle span";
  return nullptr;
}

// ---- one block's shared memory --------------------------------------------------------------
// From a base aligned to 1024 bytes (the kernel rounds the dynamic base up, hence `align` spare
// bytes): Q (BM rows), then K stages 0..S-1, then V stages 0..S-1 (BN rows each), with 1-byte
// elements (FP8) transposed in the kernel then V's transposes stages 0..S-1 (D rows of BN bytes: the
// K-major B operand of P V; with the V^T pre-pass the V stages hold those instead),
// with `stage_o` then O's staging tile (BM rows in Q's layout: the consumers write their rows of O
// there and the TMA stores it, ws_stage_o below), with q_stages 2 then Q's second stage
// (ws_q_stages), then the mbarriers, 8 bytes each: q_full, k_full[S], k_empty[S], v_full[S],
// v_empty[S], vt_full[S], vt_empty[S] (those two with the transposes only), q_empty (a block that runs several
// items: the consumers are done with its Q and every reader with its item slot, the producer may load
// and publish the next one), and for Q's second stage its q_full and q_empty; then the item slots, one
// a Q stage (a wave's items, ws_pipeline.hpp). Every tile starts on a
// multiple of 1024 (tile sizes are multiples of 8 rows * SW bytes, SW = 128 or 64: 1024 or 512).
// A wave's item slot: the item's coordinates, key range and tiles as 8 words (the kernel's WsWork),
// written and read as two 16-byte vectors.
constexpr int kItemSlotBytes = 32;
struct WsSmem {
  int q, k0, v0, vt0, stage_bytes, q_bytes;
  int o;      // O's staging tile (q_bytes of them), or -1 without one
  int q1;     // Q's second stage (q_stages 2), or -1
  int bar;    // q_full; then k_full, k_empty, v_full, v_empty, vt_full, vt_empty, `stages` each
  int items;  // a wave's item slots, kItemSlotBytes a Q stage (ws_pipeline.hpp's "a wave's items"), after the barriers
  int stages, ring_bars;  // ring_bars: the barrier arrays a stage has (4, or 6 with V's transposes)
  int used;   // bytes past the aligned base
  int total;  // bytes to ask for: used + the alignment slack
  FA_HD constexpr int k(int s) const { return k0 + s * stage_bytes; }
  FA_HD constexpr int v(int s) const { return v0 + s * stage_bytes; }
  FA_HD constexpr int vt(int s) const { return vt0 + s * stage_bytes; }
  FA_HD constexpr int q_tile(int i) const { return i == 0 ? q : q1; }
  FA_HD constexpr int q_full(int i = 0) const { return i == 0 ? bar : bar + 8 * (2 + ring_bars * stages); }
  FA_HD constexpr int k_full(int s) const { return bar + 8 * (1 + s); }
  FA_HD constexpr int k_empty(int s) const { return bar + 8 * (1 + stages + s); }
  FA_HD constexpr int v_full(int s) const { return bar + 8 * (1 + 2 * stages + s); }
  FA_HD constexpr int v_empty(int s) const { return bar + 8 * (1 + 3 * stages + s); }
  FA_HD constexpr int vt_full(int s) const { return bar + 8 * (1 + 4 * stages + s); }
  FA_HD constexpr int vt_empty(int s) const { return bar + 8 * (1 + 5 * stages + s); }
  FA_HD constexpr int q_empty(int i = 0) const { return bar + 8 * (1 + ring_bars * stages) + 16 * i; }
  FA_HD constexpr int item(int i) const { return items + kItemSlotBytes * i; }
};
constexpr int kSmemAlign = 1024;
constexpr int kMaxDynamicSmem = 232448;  // sm_90's opt-in limit a block (227 KB, cudaFuncSetAttribute)
// `prepass`: FP8 whose V^T comes in by the TMA (ws_tile_traits.hpp's vt_prepass_rows): the V ring holds
// the transposed tiles, and there is no third ring nor its barriers.
FA_HD constexpr WsSmem ws_smem(int BM, int BN, int D, int stages, int elem_bytes = 2, bool stage_o = false,
                               int q_stages = 1, bool prepass = false) {
  const bool vt_ring = elem_bytes == 1 && !prepass;
  WsSmem s{};
  s.q = 0;
  s.q_bytes = BM * D * elem_bytes;
  s.stage_bytes = BN * D * elem_bytes;
  s.stages = stages;
  s.k0 = s.q + s.q_bytes;
  s.v0 = s.k0 + stages * s.stage_bytes;
  s.vt0 = s.v0 + stages * s.stage_bytes;
  const int o0 = s.vt0 + (vt_ring ? stages * s.stage_bytes : 0);
  s.o = stage_o ? o0 : -1;
  const int q1 = o0 + (stage_o ? s.q_bytes : 0);
  s.q1 = q_stages > 1 ? q1 : -1;
  s.bar = q1 + (q_stages > 1 ? s.q_bytes : 0);
  s.ring_bars = vt_ring ? 6 : 4;
  s.items = (s.bar + 8 * (2 + s.ring_bars * stages) + 16 * (q_stages - 1) + 15) / 16 * 16;  // 16-byte stores
  s.used = s.items + kItemSlotBytes * q_stages;
  s.total = s.used + kSmemAlign;
  return s;
}
// Whether a row's block stages O in shared memory for TMA stores (the epilogue of mma_ws_fwd): with
// 16-bit inputs (O is the input dtype, Q's layout fits it), where the staging tile still fits.
// Without it, each thread stores its pairs of O to global memory itself.
FA_HD constexpr bool ws_stage_o(int BM, int BN, int D, int stages, int elem_bytes) {
  return elem_bytes == 2 && ws_smem(BM, BN, D, stages, elem_bytes, true).total <= kMaxDynamicSmem;
}
// Q's stages: two where they fit beside the rest (O's staging tile included), so that a block running
// several items (a wave) loads the next item's Q while its consumers still read the current one; with
// one, that load waited for their release after the item's last S, and the next item's first S waited
// on it (3.4% of the consumer warps' samples on (16,16,16,512,512,64) under ncu).
FA_HD constexpr int ws_q_stages(int BM, int BN, int D, int stages, int elem_bytes, bool stage_o, bool prepass = false) {
  return ws_smem(BM, BN, D, stages, elem_bytes, stage_o, 2, prepass).total <= kMaxDynamicSmem ? 2 : 1;
}

}  // namespace fa::ws
