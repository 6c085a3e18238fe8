// Fragment layouts of the matrix instructions the matrix-core paths use: for each operand (A, B,
// accumulator C) which row and column a lane's slot holds. One named constexpr function per
// instruction, usable in device code (index math) and on the host (layout tests, CPU emulation).
// Plain C++ apart from FA_HD, so tests include it without a GPU compiler.
#pragma once
#include "harness/conventions.hpp"

namespace fa::frag {

struct Coord {
  int row, col;
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

}  // namespace fa::frag
