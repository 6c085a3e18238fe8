// The FP8 pieces of mma's sm_90 kernel (kernels/mma/fa_mma_ws_sm90.hpp), plain C++ (FA_HD) checked on the
// CPU by tests/kernels/test_ws_fp8.cpp: how P's fp32 scores become the 8-bit A operand of O += P V
// without leaving their registers, where the producer warpgroup writes V's transpose, and the order
// and loops of the V^T pre-pass (kernels/mma/ws_vt_prepass.hpp) that replaces it on long problems.
//
// wgmma's 8-bit forms (m64nNk32 .e4m3/.e5m2) take B K-major only, so V (keys x D, D contiguous, as
// the TMA brings it) is transposed into V^T (D rows x BN key bytes): in shared memory, as FA3 does
// (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp, Transpose_V), or before the kernel by the pre-pass. A
// thread's S accumulator holds, per 8-column block, the columns 2q, 2q + 1 of its rows (q = thread %
// 4), where the 8-bit A layout wants 4q .. 4q + 3: so the k32 step's 32 keys are relabelled instead of
// moved. A slot c of the A operand stands for key fp8_key_of_slot(c), and the transpose writes V^T's
// column c from that key's row: P V sums the same products in another order. (FA3 permutes P's
// registers with permute_Cregs_fp8 to the same end.)
//
// 1-byte tiles go through ws_layout.hpp's 16-bit arithmetic as tiles of half as many columns: a row
// of D fp8 values is D / 2 16-bit columns (the same bytes, swizzle, TMA box bytes and descriptors;
// a k32 step of 8-bit elements is the 32 bytes of a k16 step).
#pragma once
#include <cstdint>
#include <numeric>

#include "kernels/mma/ws_layout.hpp"

namespace fa::ws {

// The key (0..31 inside its k32 step) that A slot column c (0..31) stands for.
FA_HD constexpr int fp8_key_of_slot(int c) {
  const int e = c % 4;
  return 16 * (c / 16) + 2 * ((c % 16) / 4) + (e & 1) + 8 * (e >> 1);
}
// The V^T pre-pass (ws_tile_traits.hpp's vt_prepass_rows; kernels/mma/ws_vt_prepass.hpp) writes V^T to
// global memory in the order the consumers read it: column c of a (batch, kv head)'s D x keys matrix
// holds key vt_source_key(c), so that a tile's column c (tiles start on multiples of 32 keys: BN is
// one, and split ranges are whole tiles) is the key its A slot c stands for. Rows are Sk rounded up
// to a multiple of vt_keys_round(BN), the least common multiple of the instance's BN and
// kVtChunkKeys: a whole number of chunks (one pre-pass block each, a whole number of 32-key groups)
// and of tiles (a tile's window of the tensor map then lies inside the row): 896 for D = 128's 224
// keys, 640 for D = 64's 160, 128 for D = 256's 128. The keys past Sk are written as zeros: P is 0
// there, and 0 times a stale E4M3 NaN would not be.
constexpr int kVtChunkKeys = 128;
FA_HD constexpr int vt_keys_round(int BN) { return std::lcm(kVtChunkKeys, BN); }
FA_HD constexpr int64_t vt_keys(int64_t Sk, int BN) {
  const int64_t r = vt_keys_round(BN);
  return (Sk + r - 1) / r * r;
}
FA_HD constexpr int64_t vt_bytes(int64_t B, int64_t Hk, int64_t D, int64_t Sk, int BN) { return B * Hk * D * vt_keys(Sk, BN); }
FA_HD constexpr int64_t vt_source_key(int64_t c) { return c / 32 * 32 + fp8_key_of_slot(int(c % 32)); }
// The pre-pass's loops over one chunk (a block of ws_vt_prepass.hpp; the CPU tests run every item).
// Its rows sit in shared memory vt_chunk_pitch(D) 4-byte words apart (one word of padding: the four
// key rows an item reads, b, b + 1, b + 8, b + 9, fall in different banks where they can); item i of
// the store phase is the output word column w (slots 4 w .. 4 w + 3) of head-dim rows 4 dg .. 4 dg +
// 3: it reads word dg of the key rows its slots stand for (vt_prepass_word, j = 0..3), transposes the
// 4 x 4 bytes (transpose_4x4_bytes: out[r] byte j = in[j] byte r) and writes out[r] to row 4 dg + r
// at byte 4 w; w fastest, so a warp's 32 items write one 128-byte segment of each of 4 rows.
FA_HD constexpr int vt_chunk_pitch(int D) { return D / 4 + 1; }
struct VtItem {
  int dg, w;
};
FA_HD constexpr int vt_items(int D) { return D / 4 * (kVtChunkKeys / 4); }
FA_HD constexpr VtItem vt_item(int i) { return {i / (kVtChunkKeys / 4), i % (kVtChunkKeys / 4)}; }
FA_HD constexpr int vt_prepass_word(const VtItem& it, int j, int D) {
  return int(vt_source_key(4 * it.w + j)) * vt_chunk_pitch(D) + it.dg;
}

// P register r (0..3) of k32 step kn, byte j (0..3): the S accumulator slot it packs (the
// frag::wgmma_m64nNk16_c numbering: slot 4 b + e is column block b's entry e).
FA_HD constexpr int fp8_p_source(int kn, int r, int j) { return 16 * kn + 8 * (r / 2) + 2 * (r % 2) + (j & 1) + 4 * (j >> 1); }
// The P register whose four bytes are row hr's (0: the row thread / 4, 1: + 8) scores of column
// blocks 2 i and 2 i + 1 (each block's entries 2 hr and 2 hr + 1): k step kn, register r. Each
// register's sources are one row's, two adjacent blocks of it, so a softmax that goes row by row,
// block by block, can pack a register once its block pair is done (ws_tile_traits.hpp's
// pack_in_softmax).
struct Fp8PReg {
  int kn, r;
};
FA_HD constexpr Fp8PReg fp8_p_reg_of_blocks(int i, int hr) { return {i / 2, 2 * (i % 2) + hr}; }

// P's exponentials are computed 2^kFp8POffsetLog2 times too large, in [0, 256] instead of [0, 1]
// (FlashAttention-3's Max_offset, hopper/softmax.h): E4M3's normal range starts at 2^-6, and a long
// row's typical weight (e^-4 ~ 2^-5.8 under a 4-sigma max) sits at its edge, so in [0, 1] the weights
// below it keep 2 bits or fewer and those under 2^-10 round to zero; scaled, every weight down to
// 2^-14 of the max keeps E4M3's 3 bits. O and l
// carry the same factor, so O / l is unchanged; the LSE takes it back out. The lazy rescale's
// threshold 0 (the FP8 rows' LAZY) keeps P <= 2^8 < 448, E4M3's largest. Measured (H200, sessions
// 48-49, docs/perf/2026-12-01-fp8-p-offset.md): max error 11-32% lower on dense rows of 2k-64k keys,
// about 1% slower on the 2k-4k D=64 rows and the GQA causal row.
constexpr int kFp8POffsetLog2 = 8;
static_assert((1 << kFp8POffsetLog2) < 448, "P's largest value must stay under E4M3's largest finite one");

// Byte offsets inside the tiles: V as the TMA writes it (BN key rows of D bytes) and V^T as the
// consumers' descriptors read it (D rows of BN bytes), both swizzled.
FA_HD constexpr int fp8_v_offset(int key, int d, int BN, int D) {
  return sw_offset(key, d / 2, BN, swizzle_bytes(D / 2)) + d % 2;
}
FA_HD constexpr int fp8_vt_offset(int d, int c, int BN, int D) {
  return sw_offset(d, c / 2, D, swizzle_bytes_vt(BN / 2)) + c % 2;
}

// The transpose, in items of 8 x 4 bytes: item i covers V^T rows 8 d8 .. 8 d8 + 7 and columns
// 4 c4 .. 4 c4 + 3 (c4 fastest, so a warp's 32 stores of a row fill it whole; with BN = 128 a thread
// keeps one c4 and its source rows for every item). Its sources are V's rows fp8_item_src_key(it, j),
// j = 0..3, at bytes 8 d8 .. 8 d8 + 7 (one 64-bit load each: 8 bytes never straddle a 16-byte
// chunk); output word r (row 8 d8 + r) takes byte r of each.
struct Fp8Item {
  int d8, c4;
};
FA_HD constexpr Fp8Item fp8_item(int i, int BN) { return {i / (BN / 4), i % (BN / 4)}; }
FA_HD constexpr int fp8_items(int BN, int D) { return (BN / 4) * (D / 8); }
FA_HD constexpr int fp8_item_src_key(const Fp8Item& it, int j) { return 32 * (it.c4 / 8) + fp8_key_of_slot(4 * (it.c4 % 8) + j); }

// The same offsets as one transposing thread computes them, with BN = 128 (one swizzle column block
// in V^T; in V one at D <= 128, two at D = 256: fp8_v_load_at below): lane c4 keeps its four source
// rows (row base key * SW and swizzle phase, computed once) and its V^T column, and walks the row
// groups d8. Equal to fp8_v_offset / fp8_vt_offset there (tests/kernels/test_ws_fp8.cpp); unsigned,
// so that the divisions are shifts.
FA_HD constexpr uint32_t fp8_v_at(uint32_t row_base, uint32_t phase, uint32_t d8) {
  return row_base + (((d8 >> 1) ^ phase) << 4) + ((d8 & 1u) << 3);
}
// At D = 256 a V row is 256 bytes, two 128-byte column blocks BN * 128 bytes apart (ws_layout.hpp's
// sw_offset): row groups 16 .. 31 read the second block at the first's offsets. At D <= 128 this is
// fp8_v_at itself. V^T needs no such step: its rows are BN = 128 bytes, one column block, at any D.
template <int D, int BN>
FA_HD constexpr uint32_t fp8_v_load_at(uint32_t row_base, uint32_t phase, uint32_t d8) {
  static_assert(D <= 256 && BN == 128, "one or two 128-byte column blocks of V, 128 keys");
  if constexpr (D > 128) return (d8 >> 4) * uint32_t(BN * 128) + fp8_v_at(row_base, phase, d8 & 15u);
  else return fp8_v_at(row_base, phase, d8);
}
FA_HD constexpr uint32_t fp8_vt_at(uint32_t d8, uint32_t r, uint32_t c4) {
  return d8 * 1024u + r * 128u + ((((c4 >> 2) ^ r) & 7u) << 4) + ((c4 & 3u) << 2);
}

// The row group lane c4 takes where its warp's loop is at d8 (BN = 128, D / 8 a multiple of 4). A
// warp's 64-bit shared loads go as two half-warps, one 128-byte bank line each at best. The four
// source rows of one load (fixed j) have only 4 swizzle phases in a warp (key % 8 is
// 2 (c4 % 4) + j % 2, by fp8_key_of_slot), so with every lane at its warp's d8, 4 lanes of a half
// shared each 8-byte bank slot: 8 wavefronts a load where 2 would do (ncu: 25.6 M shared-load
// conflicts on the Llama-3 GQA causal row in fp8_e4m3, e085a07, 6 a load). XOR-ing d8 with bits 2-3
// of c4, which tell those 4 lanes apart, gives a half-warp's 16 lanes 16 slots at D = 128: 1
// wavefront a half. At D = 64 a bank line holds two rows and the phase's other bit is j's, so 8
// slots: 2 a half. At D = 256 the XOR stays inside a column block (it changes d8's low two bits),
// each of which is D = 128's case: 1 a half. It is a bijection on the row groups, so each lane still
// covers each once over the warps' loops; the stores keep one bank a lane (fp8_vt_at's bank is c4's
// and r's).
FA_HD constexpr uint32_t fp8_lane_d8(uint32_t d8, uint32_t c4) { return d8 ^ ((c4 >> 2) & 3u); }

// PTX prmt (CUDA's __byte_perm) on the device; the same selection on the host: byte k of the result
// is byte (s >> 4k) & 7 of the 8 bytes {y:x}.
FA_HD inline uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t xy = uint64_t(y) << 32 | x;
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= uint32_t((xy >> (8 * ((s >> (4 * k)) & 7))) & 0xFFu) << (8 * k);
  return r;
#endif
}
// 4 x 4 bytes: out[r] byte j = in[j] byte r, in eight byte permutes (pairs interleaved, then halves).
FA_HD inline void transpose_4x4_bytes(const uint32_t (&in)[4], uint32_t (&out)[4]) {
  const uint32_t a = byte_perm(in[0], in[1], 0x5140), b = byte_perm(in[0], in[1], 0x7362);  // {0.0 1.0 0.1 1.1}, {0.2 1.2 0.3 1.3}
  const uint32_t c = byte_perm(in[2], in[3], 0x5140), d = byte_perm(in[2], in[3], 0x7362);
  out[0] = byte_perm(a, c, 0x5410), out[1] = byte_perm(a, c, 0x7632);
  out[2] = byte_perm(b, d, 0x5410), out[3] = byte_perm(b, d, 0x7632);
}

}  // namespace fa::ws
