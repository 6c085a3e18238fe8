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

FA_HD constexpr int probe_digit(int k, int d, int radix) {
  for (; d > 0; --d) k /= radix;
  return k % radix;
}

// The value slot `slot` of A (is_b false) or B holds in iteration `it`; `k` is that slot's k in the
// table under test. Small integers, exact in every input type probed (8-bit forms use radix 16).
FA_HD constexpr float probe_input(ProbeShape s, bool is_b, int it, int slot, int k) {
  const int na = s.a_slots, nb = s.b_slots;
  if (it < na) return is_b ? 1.f : float(slot == it);
  it -= na;
  if (it < nb) return is_b ? float(slot == it) : 1.f;
  it -= nb;
  if (it < s.digits * na) return is_b ? float(1 + probe_digit(k, it / na, s.radix)) : float(slot == it % na);
  it -= s.digits * na;
  return is_b ? float(slot == it % nb) : float(1 + probe_digit(k, it / nb, s.radix));
}

// A value probe_input writes (0 .. 16) as e4m3 bits with exponent bias 7 (OCP) or 8 (FNUZ): v >= 1
// is 2^e (1 + m / 8) exactly, e = floor(log2 v), m its 3 bits below the leading one.
FA_HD constexpr unsigned char probe_e4m3_bits(int v, int bias) {
  if (v <= 0) return 0;
  int e = 0;
  while ((v >> (e + 1)) != 0) ++e;
  return static_cast<unsigned char>(((e + bias) << 3) | (((v << 3) >> e) & 7));
}

}  // namespace fa::probe
