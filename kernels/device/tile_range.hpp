// The key ranges of the shared tile loop (kernels/device/tile_loop.hpp), host and device: the keys a
// block of query rows visits (the union of its rows' ranges under causal, window and per-sequence
// lengths, cut into G splits of whole tiles), the keys every row of it sees (tiles inside need no
// mask), whether a tile holds nothing a group of rows sees (skipped), and the columns of a tile one
// row sees (the mask of an edge tile). Plain C++: tests/kernels/test_tile_range.cpp checks it against
// a brute force over rows and keys (ctest -R TileRange).
#pragma once
#include "harness/conventions.hpp"

namespace fa::gpu::tile {

// Division of n in [0, 2^31) by a divisor d in [1, 2^31) fixed for a launch, as a multiply-high, an
// add and a shift: the round-up method of Granlund and Montgomery ("Division by invariant integers
// using multiplication", PLDI 1994; CUTLASS's FastDivmod takes the same form), with l = ceil(log2 d)
// and mul = floor(2^32 (2^l - d) / d) + 1, so that n / d = (mulhi(n, mul) + n) >> l. The host sets
// one up; a kernel's plain `n / d` by a runtime d compiles to about 20 instructions.
struct FastDiv {
  uint32_t d = 1, mul = 1, shift = 0;
  FastDiv() = default;
  FA_HD explicit FastDiv(int64_t divisor) : d(uint32_t(divisor)) {
    while ((uint64_t(1) << shift) < d) ++shift;
    mul = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }
  FA_HD int div(int n) const {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    const uint32_t hi = __umulhi(uint32_t(n), mul);
#else
    const uint32_t hi = uint32_t((uint64_t(uint32_t(n)) * mul) >> 32);
#endif
    return int((hi + uint32_t(n)) >> shift);
  }
  FA_HD int divisor() const { return int(d); }
};

// The order causal blocks (and a long non-causal wave's items, all alike) are handed out in: longest first across the whole problem, in sections of
// heads whose K and V share the L2 (FlashAttention-3's hopper/tile_scheduler.hpp,
// DynamicPersistentTileScheduler: a section is a power of two of kv heads whose K and V 32 MiB holds,
// times the GQA group; its blocks go q tile major, heads minor, q tiles longest first; the last
// section holds the heads left over). FA3 first counted K and V once and rounded up (cutlass's
// find_log2), from its commit d82bbf26 (headdim_v) K and V doubled, and since 5e0c258c ("Fix L2
// swizzle in causal tile scheduler") K and V once, rounded down. Here: K and V doubled, rounded down,
// half FA3's section now (measured so against the grid's order, session 34; FA3's size is unmeasured
// here). The hardware starts a grid's blocks in
// the order of their linear index and each as an SM frees, so a grid ordered head by head (each head's q tiles
// longest first) starts the last heads' longest blocks last, when nothing is left to balance them.
// `hb` is a head of all B x G x H (h fastest); `qx` the q tile in the grid's order, which
// q_tile_row0 reverses for causal problems.
struct LptOrder {
  FastDiv section, heads, last_heads;  // blocks a full section (heads x nq); its heads; the last one's
  int full = 0;                        // sections of `heads` heads
  bool on = false;                     // lpt_order's: the blocks number below 2^31
};
FA_HD inline int lpt_section_heads(int64_t Sk, int D, int elem_bytes, int group, int64_t hb) {
  const int64_t kv_head = 2 * Sk * 2 * int64_t(D) * elem_bytes, l2 = int64_t(32) << 20;
  int64_t kv = 1;
  while (kv_head > 0 && 2 * kv * kv_head <= l2) kv *= 2;
  const int64_t heads = kv * (group > 0 ? group : 1);
  return int(heads < hb ? heads : hb);
}
FA_HD inline LptOrder lpt_order(int64_t nq, int64_t hb, int heads) {
  LptOrder o;
  if (nq < 1 || hb < 1 || heads < 1 || nq * hb >= (int64_t(1) << 31)) return o;
  if (heads > hb) heads = int(hb);
  o.on = true;
  o.section = FastDiv(int64_t(heads) * nq);
  o.heads = FastDiv(heads);
  o.full = int(hb / heads);
  o.last_heads = FastDiv(hb % heads > 0 ? hb % heads : 1);
  return o;
}
// Block `n` of nq x hb in that order: its q tile qx and head hb.
FA_HD inline void lpt_block(const LptOrder& o, int n, int& qx, int& hb) {
  const int s = o.section.div(n), in = n - s * o.section.divisor();
  const FastDiv& w = s < o.full ? o.heads : o.last_heads;
  qx = w.div(in);
  hb = s * o.heads.divisor() + (in - qx * w.divisor());
}

// One sequence as its rows see it: sq queries, sk keys, bottom-right aligned, FlashAttention's
// window (left, right; -1 unbounded). A dense problem is one shape for every batch: S, Sk, no window.
struct SeqShape {
  int64_t sq, sk;
  bool causal;
  int64_t left, right;
};

// The keys query row `row` sees; rows past sq are padding and see none.
FA_HD inline KeyRange keys_of_row(const SeqShape& q, int64_t row) {
  if (row < 0 || row >= q.sq) return {0, 0};
  return row_keys(row, q.sq, q.sk, q.causal, q.left, q.right);
}

// `r` inside `kr`; an empty result is {kr.begin, kr.begin}, so that no tile of kr lies inside it.
FA_HD inline KeyRange clip(KeyRange r, KeyRange kr) {
  const int64_t b = r.begin > kr.begin ? r.begin : kr.begin, e = r.end < kr.end ? r.end : kr.end;
  return e > b ? KeyRange{b, e} : KeyRange{kr.begin, kr.begin};
}

// The keys some row of [r0, r0 + rows) below sq sees. One interval: a row's first and last keys
// never decrease down the rows, a row that sees keys starts at most one past its predecessor's
// start, and rows that see none lead the sequence with begin 0 (so the first row's begin is the
// union's even when that row sees nothing).
FA_HD inline KeyRange rows_keys(const SeqShape& q, int64_t r0, int64_t rows) {
  const int64_t last = (r0 + rows < q.sq ? r0 + rows : q.sq) - 1;
  if (last < r0) return {0, 0};
  const int64_t b = keys_of_row(q, r0).begin, e = keys_of_row(q, last).end;
  return {b, e > b ? e : b};
}

// The keys of `kr` that every row of [r0, r0 + rows) below sq sees: from the last row's first key
// to the first row's end. Tiles inside need no mask; the window's and the diagonal's edges do.
FA_HD inline KeyRange rows_unmasked(const SeqShape& q, int64_t r0, int64_t rows, KeyRange kr) {
  const int64_t last = (r0 + rows < q.sq ? r0 + rows : q.sq) - 1;
  if (last < r0) return {kr.begin, kr.begin};
  return clip(KeyRange{keys_of_row(q, last).begin, keys_of_row(q, r0).end}, kr);
}

// Split g of G (G <= 1: no split) of the keys the block of rows [q0, q0 + block_m) visits: whole
// block_n tiles counted from the window's first live tile (conventions.hpp: split_range_from).
// Empty for a block wholly past sq or whose rows see no key.
FA_HD inline KeyRange block_split(const SeqShape& q, int64_t q0, int block_m, int g, int G, int block_n) {
  const KeyRange u = rows_keys(q, q0, block_m);
  return split_range_from(u.begin, u.end, g, G, block_n);
}

// block_split of a dense problem (no window, one S and Sk, q0 < S), as the dense kernels have always
// computed it, in AttnArgs' int (the split too: no 64-bit division calls): the last row's causal
// limit, split from key 0. The null-serving fast path.
FA_HD inline KeyRange dense_block_split(int S, int Sk, bool causal, int q0, int block_m, int g, int G, int block_n) {
  const int last = (q0 + block_m < S ? q0 + block_m : S) - 1;
  return split_range_in<int>(int(visible_keys(last, S, Sk, causal)), g, G, block_n);
}

// The per-tile tests and masks below compute in 32 bits: a device problem's keys fit an int
// (AttnArgs' Sk is one), and the ranges a kernel keeps across its loop then take half the registers
// (mfma at D = 64 on gfx942: 152 VGPRs, 160 with 64-bit tile tests).

// Whether the tile [kv0, kv0 + block_n) holds no key of `seen` (a group's clipped keys): skipped.
FA_HD inline bool tile_skipped(KeyRange seen, int kv0, int block_n) {
  return kv0 >= int(seen.end) || kv0 + block_n <= int(seen.begin);
}
// Whether the tile needs a mask: it is not wholly inside `unmasked` (rows_unmasked).
FA_HD inline bool tile_masked(KeyRange unmasked, int kv0, int block_n) {
  return kv0 < int(unmasked.begin) || kv0 + block_n > int(unmasked.end);
}

// The keys of `kr` that `row` sees; a padding row (past sq) sees all of kr, so that its arithmetic
// stays finite (nothing of it is stored).
FA_HD inline KeyRange row_keys_in(const SeqShape& q, int64_t row, KeyRange kr) {
  return row < q.sq ? clip(keys_of_row(q, row), kr) : kr;
}

// Columns [lo, hi) of the tile at kv0 that a row seeing `keys` sees, within [0, block_n]; a column
// outside is masked (-inf). lo >= hi: the row sees nothing of the tile.
struct TileCols {
  int lo, hi;
};
FA_HD inline TileCols tile_cols(KeyRange keys, int kv0, int block_n) {
  const int lo = int(keys.begin) - kv0, hi = int(keys.end) - kv0;
  return {lo < 0 ? 0 : (lo > block_n ? block_n : lo), hi < 0 ? 0 : (hi > block_n ? block_n : hi)};
}

}  // namespace fa::gpu::tile
