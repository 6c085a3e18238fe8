// Fragment layouts of the matrix instructions the matrix-core paths use: for each operand (A, B,
// accumulator C) which row and column a lane's slot holds. One named constexpr function per
// instruction, usable in device code (index math) and on the host (layout tests, CPU emulation).
// Plain C++ apart from FA_HD, so tests include it without a GPU compiler. A slot is a 16-bit
// element (inputs) or an fp32 register (accumulator), numbered in register order, low half first.
// Tested by tests/test_fragment_layout.cpp (ownership, table entries, emulated tile products).
#pragma once
#include "harness/conventions.hpp"

namespace fa::frag {

struct Coord {
  int row, col;
};
// A register slot of one lane: where a value lives in the wave's registers.
struct Slot {
  int lane, slot;
};

// ---- NVIDIA mma.sync.aligned.m16n8k16 (sm80+), fp16/bf16 inputs, fp32 accumulator ----------
// PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type": groupID = lane / 4,
// threadID_in_group = lane % 4. A (16x16, row-major) is 4 registers of 2 halves: slot i = 0..7.
FA_HD constexpr Coord mma_m16n8k16_a(int lane, int i) {
  return {lane / 4 + 8 * ((i >> 1) & 1), 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)};
}
// B (16x8: row = k, col = n) is 2 registers of 2 halves: slot i = 0..3.
FA_HD constexpr Coord mma_m16n8k16_b(int lane, int i) { return {2 * (lane % 4) + (i & 1) + 8 * (i >> 1), lane / 4}; }
// C/D (16x8 fp32) is 4 registers: slot i = 0..3.
FA_HD constexpr Coord mma_m16n8k16_c(int lane, int i) { return {lane / 4 + 8 * (i >> 1), 2 * (lane % 4) + (i & 1)}; }

// movmatrix.sync.aligned.m8n8.trans.b16 (sm_75+): a warp's 8x8 matrix of 16-bit elements in
// the C layout's shape (lane: row lane / 4, columns 2 (lane % 4) + i, i = 0, 1) transposed in
// registers. PTX ISA, "Warp-level matrix transpose instruction: movmatrix": the output holds the
// transpose in that same shape, so output slot i of a lane is the input's element (row, col):
FA_HD constexpr Coord movmatrix_m8n8_trans(int lane, int i) { return {2 * (lane % 4) + i, lane / 4}; }

// ---- NVIDIA wgmma.mma_async.sync.aligned.m64nNk16 (sm_90a), fp16/bf16 inputs, fp32 accumulator ----
// PTX ISA, "Register Fragments and Shared Memory Matrix Layouts" for wgmma (figures "WGMMA
// .m64nNk16 register fragment layout for matrix A" and "... for accumulator matrix D"): a thread
// of the warpgroup (0..127) sits in warp thread / 32, which owns rows 16 * warp .. + 15; inside
// them, each 8-column block of D is mma.m16n8k16's C layout, and A in registers is its A layout.
// C/D (64 x N fp32): N / 2 registers, slot i = 0 .. N / 2 - 1, column block i / 4.
FA_HD constexpr Coord wgmma_m64nNk16_c(int thread, int i) {
  return {16 * (thread / 32) + (thread % 32) / 4 + 8 * ((i % 4) >> 1), 8 * (i / 4) + 2 * (thread % 4) + (i & 1)};
}
// A (64 x 16) from registers: 4 registers of 2 halves, slot i = 0..7.
FA_HD constexpr Coord wgmma_m64nNk16_a(int thread, int i) {
  return {16 * (thread / 32) + (thread % 32) / 4 + 8 * ((i >> 1) & 1), 2 * (thread % 4) + (i & 1) + 8 * (i >> 2)};
}
// A (64 x 32) of 8-bit inputs (wgmma m64nNk32 .e4m3/.e5m2) from registers: 4 registers of 4 bytes,
// slot i = 0..15 (register i / 4, byte i % 4, low byte first): mma.m16n8k32's 8-bit A layout a warp.
FA_HD constexpr Coord wgmma_m64nNk32_a8(int thread, int i) {
  return {16 * (thread / 32) + (thread % 32) / 4 + 8 * ((i >> 2) & 1), 4 * (thread % 4) + (i & 3) + 16 * (i >> 3)};
}
// Shared memory with the 128-byte swizzle ("Shared Memory Matrix Layout", canonical layouts;
// CUTLASS cute/atom/mma_traits_sm90_gmma.hpp, make_gmma_desc, B128): a tile of `rows` rows of
// 16-bit elements is stored as blocks of 64 columns; within a block, row r is 128 contiguous
// bytes whose 16-byte chunk c sits at position c ^ (r % 8), so 8 consecutive rows' chunk c fall in
// 8 different bank groups. The hardware applies the XOR to address bits 4-6 from bits 7-9, so the
// tile starts 1024-byte aligned. Byte offset of element (r, c):
FA_HD constexpr int wgmma_sw128_offset(int r, int c, int rows) {
  return (c / 64) * rows * 128 + r * 128 + ((((c % 64) / 8) ^ (r % 8)) * 16) + (c % 8) * 2;
}
// The descriptor strides of that layout in bytes. K-major operand (rows are M or N, columns K: Q
// and K): 8-row groups 1024 bytes apart (SBO); a k16 step never leaves its 64-column block, so
// LBO is unused (16). MN-major operand (rows are K, columns N: V): 8-row groups of K 1024 bytes
// apart (SBO), 64-column blocks of N rows * 128 apart (LBO).
struct DescStrides {
  int lbo, sbo;
};
FA_HD constexpr DescStrides wgmma_sw128_kmajor() { return {16, 1024}; }
FA_HD constexpr DescStrides wgmma_sw128_mnmajor(int rows) { return {rows * 128, 1024}; }

// ---- AMD CDNA v_mfma_f32_32x32x8f16 / v_mfma_f32_32x32x8bf16_1k (gfx90a, gfx94x), wave64 ----
// AMD "CDNA3 Instruction Set Architecture" reference guide, chapter "Matrix Arithmetic
// Instructions", and the AMD Matrix Instruction Calculator (ROCm/amd_matrix_instruction_calculator
// 2ef9189, `-a cdna3 -i v_mfma_f32_32x32x8_f16 -d`): A[i][k] lane 32 * (k / 4) + i, VGPR
// (k / 2) % 2, half k % 2; B likewise with j for i; D[i][j] lane 32 * ((i / 4) % 2) + j,
// VGPR 4 * (i / 8) + i % 4. The bf16_1k variant has the same layout. D = A * B + C with
// A 32x8 (2 VGPRs, slot i = 0..3), B 8x32 (2 VGPRs), C/D 32x32 fp32 (16 VGPRs, slot i = 0..15).
FA_HD constexpr Coord mfma_32x32x8_a(int lane, int i) { return {lane % 32, 4 * (lane / 32) + i}; }
FA_HD constexpr Coord mfma_32x32x8_b(int lane, int i) { return {4 * (lane / 32) + i, lane % 32}; }
FA_HD constexpr Coord mfma_32x32x8_c(int lane, int i) { return {8 * (i / 4) + 4 * (lane / 32) + i % 4, lane % 32}; }
// An accumulator fed back as the B operand of the next product (its rows become k, in blocks of
// 8): B slot i of k-block kb is the same lane's C slot 4 * kb + i, so P never leaves registers.
FA_HD constexpr Slot mfma_32x32x8_b_from_c(int lane, int kb, int i) { return {lane, 4 * kb + i}; }

// ---- AMD CDNA3 v_mfma_f32_32x32x16_fp8_fp8 and its bf8 forms (gfx94x: FNUZ), wave64 ------------
// The 8-bit form of the above (CDNA3 ISA, "Matrix Arithmetic Instructions"; the calculator's `-a
// cdna3 -i v_mfma_f32_32x32x16_fp8_fp8`): A[i][k] lane 32 * (k / 8) + i, byte k % 8 of its 2 VGPRs
// (slot i = 0..7); B likewise with j; C/D 32x32 fp32 exactly as mfma_32x32x8_c.
FA_HD constexpr Coord mfma_32x32x16_a8(int lane, int i) { return {lane % 32, 8 * (lane / 32) + i}; }
FA_HD constexpr Coord mfma_32x32x16_b8(int lane, int i) { return {8 * (lane / 32) + i, lane % 32}; }
// An accumulator fed back as the 8-bit B operand, 16 rows (k) a block: B slot i of block kb is the
// same lane's C slot 8 * kb + i. Those slots hold rows 16 kb + 4 (lane / 32) + 0..3 and the same + 8,
// not B's k = 16 kb + 8 (lane / 32) + i: the A operand of that product must be read at the C rows
// (mfma_32x32x8_c(lane, 8 * kb + i).row), which the sum over k does not otherwise see.
FA_HD constexpr Slot mfma_32x32x16_b8_from_c(int lane, int kb, int i) { return {lane, 8 * kb + i}; }

// ---- AMD RDNA3 v_wmma_f32_16x16x16_f16 / _bf16 (gfx11), wave32 ------------------------------
// AMD "RDNA3 Instruction Set Architecture" reference guide, section "Wave Matrix Multiply
// Accumulate (WMMA)", and the calculator (`-a rdna3 -i v_wmma_f32_16x16x16_f16 -d`, wave32):
// A[i][k] in lanes i and i + 16, VGPR k / 2, half k % 2; B[k][j] in lanes j and j + 16; D[i][j]
// lane 16 * (i % 2) + j, VGPR i / 2. The inputs are replicated: lanes l and l + 16 must hold the
// same 16 elements. The fp32 accumulator's rows interleave by half-wave: lane / 16 is the row
// parity. A 16x16 (8 VGPRs, slot i = 0..15), B 16x16 (8 VGPRs), C/D 16x16 fp32 (8 VGPRs).
FA_HD constexpr Coord wmma_16x16x16_a(int lane, int i) { return {lane % 16, i}; }
FA_HD constexpr Coord wmma_16x16x16_b(int lane, int i) { return {i, lane % 16}; }
FA_HD constexpr Coord wmma_16x16x16_c(int lane, int i) { return {2 * i + lane / 16, lane % 16}; }
// An accumulator fed back as the B operand (its rows become k): B slot i (k = i) comes from the
// half-wave whose parity is i % 2, C slot i / 2; half of a lane's B slots are its partner's
// (lane ^ 16), so one exchange across the half-waves builds the replicated operand.
FA_HD constexpr Slot wmma_16x16x16_b_from_c(int lane, int i) { return {16 * (i % 2) + lane % 16, i / 2}; }

// ---- AMD RDNA4 v_wmma_f32_16x16x16_{f16,bf16,fp8_fp8,fp8_bf8,bf8_fp8,bf8_bf8} (gfx12), wave32 -----
// AMD "RDNA4 Instruction Set Architecture" reference guide, "Wave Matrix Multiply Accumulate", and
// the calculator (`-a rdna4 -i v_wmma_f32_16x16x16_f16 -w 32 --get-register`): no replication, the
// two half-waves hold different k. 16-bit inputs: a lane's 8 slots (VGPR e / 2, half e % 2) hold
// k = e % 4 + 4 (lane / 16) + 8 (e / 4) of row lane % 16 of A, the same k of column lane % 16 of B.
// 8-bit inputs (`_fp8_fp8`): slot e (VGPR e / 4, byte e % 4) holds k = 8 (lane / 16) + e. D[i][j]
// (16x16 fp32, 8 VGPRs) lane 16 (i / 8) + j, VGPR i % 8, for both.
FA_HD constexpr Coord wmma12_16x16x16_a(int lane, int e) { return {lane % 16, e % 4 + 4 * (lane / 16) + 8 * (e / 4)}; }
FA_HD constexpr Coord wmma12_16x16x16_b(int lane, int e) { return {e % 4 + 4 * (lane / 16) + 8 * (e / 4), lane % 16}; }
FA_HD constexpr Coord wmma12_16x16x16_a8(int lane, int e) { return {lane % 16, 8 * (lane / 16) + e}; }
FA_HD constexpr Coord wmma12_16x16x16_b8(int lane, int e) { return {8 * (lane / 16) + e, lane % 16}; }
FA_HD constexpr Coord wmma12_16x16x16_c(int lane, int v) { return {8 * (lane / 16) + v, lane % 16}; }
// An accumulator fed back as the B operand (its rows become k): B slot e is the lane's own C slot
// e, which holds row 8 (lane / 16) + e: the 8-bit B's k itself; for 16-bit B not its k, so the A
// operand of that product is read at the C rows, as for mfma_32x32x16_b8_from_c.
FA_HD constexpr Slot wmma12_16x16x16_b_from_c(int lane, int e) { return {lane, e}; }

}  // namespace fa::frag
