// The layout probe's passes (fa-bench probe-layout, docs/probe-layout.md): what each operand slot
// of a matrix instruction D = A B + C holds in each iteration of the one probe launch, shared by the
// probe kernels (kernels/mma/probe_layout.hip, kernels/amd/probe_layout.hip) and the host analysis
// (harness/probe/probe_layout.cpp) so both read one plan. Plain C++ apart from FA_HD (device code).
// The raw dump: float32, out[(it * c_slots + c)], it = iteration, c = lane * registers + register of D.
#pragma once
#include "harness/conventions.hpp"

namespace fa::probe {

// Slots are counted over the whole wave (warp, warpgroup): lane * slots a lane + slot, or for an
// operand in shared memory (wgmma's B) the 16-bit element at byte offset 2 * slot.
struct ProbeShape {
  int a_slots, b_slots, c_slots;
  int radix, digits;  // pass K's labels: a k as `digits` digits base `radix`, one sub-pass a digit
};

// The iterations, in launch order, each writing all c_slots registers of D (C is 0 throughout):
//   R  [0, a):                      A one-hot (1) at slot it, B all 1: the lit registers are A's row
//   C  [a, a + b):                  B one-hot at slot it - a, A all 1: B's column
//   KA digit d (0 first), a each:   A one-hot, B slot s = 1 + digit d of its table k: the lit
//                                   registers read 1 + that digit of the k the hardware pairs A's slot with
//   KB digit d, b each:             B one-hot, A slot s = 1 + digit d of its table k: the same for B
// KB is KA mirrored: KA names a wrong k in A's table, KB one in B's (a wrong B k moves one register
// of KA's row only, outvoted there).
FA_HD constexpr int probe_iterations(ProbeShape s) { return (s.a_slots + s.b_slots) * (1 + s.digits); }
FA_HD constexpr long long probe_floats(ProbeShape s) { return (long long)probe_iterations(s) * s.c_slots; }

// Digit d (< digits) of k, base radix; a loop bounded by the shape's constant digit count, so a
// one-digit probe is k % radix with no branch in the kernels.
FA_HD constexpr int probe_digit(int k, int d, int radix, int digits) {
  for (int j = 0; j + 1 < digits; ++j) k = j < d ? k / radix : k;
  return k % radix;
}

// One iteration's inputs, found once (the kernels' loop body then spends a few operations a slot):
// each operand is one-hot at slot `hot` (value 1), or else every slot is 1 (digit -1) or 1 + digit
// `digit` of its table k.
struct ProbeStep {
  int a_hot, b_hot, a_digit, b_digit;
};
FA_HD constexpr ProbeStep probe_step(ProbeShape s, int it) {
  const int na = s.a_slots, nb = s.b_slots;
  if (it < na) return {it, -1, -1, -1};
  it -= na;
  if (it < nb) return {-1, it, -1, -1};
  it -= nb;
  if (it < s.digits * na) return {it % na, -1, -1, it / na};
  it -= s.digits * na;
  return {-1, it % nb, it / nb, -1};
}
// The value slot `slot` of A (is_b false) or B holds in that step; `k` is the slot's k in the table
// under test. Small integers, exact in every input type probed (8-bit forms use radix 16).
FA_HD constexpr float probe_value(ProbeShape s, ProbeStep st, bool is_b, int slot, int k) {
  const int hot = is_b ? st.b_hot : st.a_hot, digit = is_b ? st.b_digit : st.a_digit;
  if (hot >= 0) return float(slot == hot);
  return digit < 0 ? 1.f : float(1 + probe_digit(k, digit, s.radix, s.digits));
}
FA_HD constexpr float probe_input(ProbeShape s, bool is_b, int it, int slot, int k) {
  return probe_value(s, probe_step(s, it), is_b, slot, k);
}

// A value probe_input writes (0 .. 16) as e4m3 bits with exponent bias 7 (OCP) or 8 (FNUZ): v >= 1
// is 2^e (1 + m / 8) exactly, e = floor(log2 v), m its 3 bits below the leading one. Branch-free.
FA_HD constexpr unsigned char probe_e4m3_bits(int v, int bias) {
  const int e = (v >= 2) + (v >= 4) + (v >= 8) + (v >= 16);
  return v <= 0 ? 0 : static_cast<unsigned char>(((e + bias) << 3) | (((v << 3) >> e) & 7));
}

}  // namespace fa::probe
