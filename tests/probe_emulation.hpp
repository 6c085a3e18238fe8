// Synthetic probe-layout dumps: each matrix instruction emulated on the CPU from the layout its
// vendor documents, stated again here in the documents' direction (element -> lane and slot), not
// by calling the kernels' tables, and fed exactly as the probe kernels feed it
// (harness/probe/probe_plan.hpp). Used by tests/harness/test_probe_layout.cpp and the CLI's tests.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/probe/probe_layout.hpp"

namespace fa::test {

// Where the hardware keeps each element, as flat slots (lane * slots + slot; shared memory: element).
// `halves` > 1: copies of the inputs the hardware reads separately, copy half(d_lane) for the D
// element that lane holds (gfx11 WMMA's half-waves).
struct HwLayout {
  int halves = 1;
  std::function<int(int d_lane)> half = [](int) { return 0; };
  std::function<int(int m, int k, int h)> a;
  std::function<int(int k, int n, int h)> b;
  std::function<int(int m, int n)> c;
};

// PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type": groupID = lane >> 2,
// threadID_in_group = lane % 4; a0,a1: (groupID, 2t + 0/1), a2,a3: (groupID + 8, ...), a4..a7 the same
// 8 columns on; b0,b1: (k 2t + 0/1, n groupID), b2,b3: k + 8; c0,c1: (groupID, 2t + 0/1), c2,c3: row + 8.
inline HwLayout ptx_mma_m16n8k16() {
  HwLayout h;
  h.a = [](int m, int k, int) { return (4 * (m % 8) + (k % 8) / 2) * 8 + (k % 2) + 2 * (m / 8) + 4 * (k / 8); };
  h.b = [](int k, int n, int) { return (4 * n + (k % 8) / 2) * 4 + (k % 2) + 2 * (k / 8); };
  h.c = [](int m, int n) { return (4 * (m % 8) + n / 2) * 4 + (n % 2) + 2 * (m / 8); };
  return h;
}

// PTX ISA, wgmma "Register Fragments": warp w of the warpgroup holds rows 16 w.. of A and D, each in
// mma.m16n8k16's fragment; D's register i covers columns 8 (i / 4) + 2 t + i % 2, rows + 8 ((i % 4) / 2).
// B in shared memory, MN-major with the 128-byte swizzle, in the descriptor's terms ("Shared Memory
// Matrix Layout"; CUTLASS's canonical GMMA layouts): an atom is 8 K-rows of 64 N-elements (128 bytes a
// row), the 16-byte chunk j of row r stored at chunk j ^ r; atoms step by the stride byte offset along
// K and the leading byte offset along N, which the probe kernel sets to 1024 and 16 x 128.
inline HwLayout ptx_wgmma_m64nNk16(int N) {
  HwLayout h;
  h.a = [](int m, int k, int) {
    return (32 * (m / 16) + 4 * (m % 8) + (k % 8) / 2) * 8 + (k % 2) + 2 * ((m % 16) / 8) + 4 * (k / 8);
  };
  h.b = [](int k, int n, int) {
    const int byte = (n / 64) * 2048 + (k / 8) * 1024 + (k % 8) * 128 + ((((n % 64) / 8) ^ (k % 8)) * 16) + (n % 8) * 2;
    return byte / 2;
  };
  h.c = [N](int m, int n) {
    return (32 * (m / 16) + 4 * (m % 8) + (n % 8) / 2) * (N / 2) + 4 * (n / 8) + 2 * ((m % 16) / 8) + (n % 2);
  };
  return h;
}

// AMD Matrix Instruction Calculator, v_mfma_f32_32x32x8_f16 (CDNA3): A[i][k] in lane 32 (k / 4) + i,
// element k % 4 of its 2 VGPRs; B[k][j] in lane 32 (k / 4) + j likewise; D[i][j] in lane
// 32 ((i / 4) % 2) + j, VGPR 4 (i / 8) + i % 4.
inline HwLayout amd_mfma_32x32x8() {
  HwLayout h;
  h.a = [](int i, int k, int) { return (32 * (k / 4) + i) * 4 + k % 4; };
  h.b = [](int k, int j, int) { return (32 * (k / 4) + j) * 4 + k % 4; };
  h.c = [](int i, int j) { return (32 * ((i / 4) % 2) + j) * 16 + 4 * (i / 8) + i % 4; };
  return h;
}

// RDNA3 ISA, "Wave Matrix Multiply Accumulate": A[i][k] in lanes i and i + 16 (element k), B[k][j] in
// lanes j and j + 16, D[i][j] in lane 16 (i % 2) + j, VGPR i / 2. per_half: each half-wave reads its
// own copy of A and B (the replication the document asks for); otherwise lanes 0-15's copy alone.
inline HwLayout amd_wmma_16x16x16(bool per_half) {
  HwLayout h;
  h.halves = per_half ? 2 : 1;
  if (per_half) h.half = [](int lane) { return lane / 16; };
  h.a = [](int i, int k, int half) { return (16 * half + i) * 16 + k; };
  h.b = [](int k, int j, int half) { return (16 * half + j) * 16 + k; };
  h.c = [](int i, int j) { return (16 * (i % 2) + j) * 8 + i / 2; };
  return h;
}

// The calculator, v_mfma_f32_32x32x16_fp8_fp8 (CDNA3): A[i][k] in lane 32 (k / 8) + i, byte k % 8 of
// its 2 VGPRs; B[k][j] in lane 32 (k / 8) + j likewise; D as v_mfma_f32_32x32x8's.
inline HwLayout amd_mfma_32x32x16_fp8() {
  HwLayout h = amd_mfma_32x32x8();
  h.a = [](int i, int k, int) { return (32 * (k / 8) + i) * 8 + k % 8; };
  h.b = [](int k, int j, int) { return (32 * (k / 8) + j) * 8 + k % 8; };
  return h;
}

// RDNA4 ISA, "Wave Matrix Multiply Accumulate" (wave32), no replication: 16-bit A[i][k] in lane
// i of the half-wave (k / 4) % 2 (k 0-3 and 8-11 in lanes 0-15, 4-7 and 12-15 in lanes 16-31),
// element k % 4 + 4 (k / 8) of its 4 VGPRs; 8-bit A[i][k] in lane i of half-wave k / 8, byte k % 8 of
// its 2 VGPRs; B[k][j] likewise with j; D[i][j] in lane 16 (i / 8) + j, VGPR i % 8.
inline HwLayout amd_wmma12_16x16x16(bool eight_bit) {
  HwLayout h;
  if (eight_bit) {
    h.a = [](int i, int k, int) { return (16 * (k / 8) + i) * 8 + k % 8; };
    h.b = [](int k, int j, int) { return (16 * (k / 8) + j) * 8 + k % 8; };
  } else {
    h.a = [](int i, int k, int) { return (16 * ((k / 4) % 2) + i) * 8 + k % 4 + 4 * (k / 8); };
    h.b = [](int k, int j, int) { return (16 * ((k / 4) % 2) + j) * 8 + k % 4 + 4 * (k / 8); };
  }
  h.c = [](int i, int j) { return (16 * (i / 8) + j) * 8 + i % 8; };
  return h;
}

inline HwLayout documented_layout(const std::string& instr) {
  if (instr.rfind("mma_m16n8k16", 0) == 0) return ptx_mma_m16n8k16();
  if (instr == "wgmma_m64n64k16_f16") return ptx_wgmma_m64nNk16(64);
  if (instr == "wgmma_m64n128k16_f16") return ptx_wgmma_m64nNk16(128);
  if (instr.rfind("mfma_32x32x8", 0) == 0) return amd_mfma_32x32x8();
  if (instr == "mfma_32x32x16_fp8") return amd_mfma_32x32x16_fp8();
  if (instr.rfind("wmma12_16x16x16", 0) == 0) return amd_wmma12_16x16x16(instr == "wmma12_16x16x16_fp8");
  if (instr.rfind("wmma_16x16x16", 0) == 0) return amd_wmma_16x16x16(true);
  throw std::invalid_argument("no documented layout for " + instr);
}

// The dump in.kernel would write on hardware laid out as `hw`: every iteration's inputs from
// probe_input with in's table k (as the kernel feeds them), D = A B in exact arithmetic. One of A
// and B is one-hot in every iteration, so only the products through that slot are formed.
inline std::vector<float> emulate_probe(const probe::Instr& in, const HwLayout& hw) {
  const probe::ProbeShape s = in.shape();
  const int M = in.M, N = in.N, K = in.K, H = hw.halves;
  struct Use {
    int row, col, k, h;  // the product D[row][col] += A[row][k] B[k][col] of copy h reads the slot
  };
  std::vector<std::vector<Use>> a_uses(s.a_slots), b_uses(s.b_slots);
  std::vector<int> ka(s.a_slots), kb(s.b_slots), ci(M * N), half(s.c_slots);
  for (int i = 0; i < s.a_slots; ++i) ka[i] = in.a.table(i / in.a.slots, i % in.a.slots).col;
  for (int i = 0; i < s.b_slots; ++i) kb[i] = in.b.table(i / in.b.slots, i % in.b.slots).row;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) ci[m * N + n] = hw.c(m, n);
  for (int c = 0; c < s.c_slots; ++c) half[c] = hw.half(c / in.c.slots);
  for (int h = 0; h < H; ++h)
    for (int k = 0; k < K; ++k) {
      for (int m = 0; m < M; ++m) a_uses[hw.a(m, k, h)].push_back({m, -1, k, h});
      for (int n = 0; n < N; ++n) b_uses[hw.b(k, n, h)].push_back({-1, n, k, h});
    }
  std::vector<float> dump(size_t(probe::probe_floats(s)), 0.f), av(s.a_slots), bv(s.b_slots);
  for (int it = 0; it < probe::probe_iterations(s); ++it) {
    int a_hot = -1, b_hot = -1;
    for (int i = 0; i < s.a_slots; ++i) av[i] = probe::probe_input(s, false, it, i, ka[i]);
    for (int i = 0; i < s.b_slots; ++i) bv[i] = probe::probe_input(s, true, it, i, kb[i]);
    for (int i = 0; i < s.a_slots; ++i) a_hot = av[i] == 0.f ? a_hot : a_hot == -1 ? i : -2;
    for (int i = 0; i < s.b_slots; ++i) b_hot = bv[i] == 0.f ? b_hot : b_hot == -1 ? i : -2;
    if (a_hot < 0 && b_hot < 0) throw std::logic_error("an iteration with neither input one-hot");
    float* d = dump.data() + size_t(it) * s.c_slots;
    const bool by_a = a_hot >= 0;
    for (const Use& u : by_a ? a_uses[a_hot] : b_uses[b_hot])
      for (int x = 0; x < (by_a ? N : M); ++x) {
        const int m = by_a ? u.row : x, n = by_a ? x : u.col, c = ci[m * N + n];
        if (half[c] != u.h) continue;
        d[c] += by_a ? av[a_hot] * bv[hw.b(u.k, n, u.h)] : av[hw.a(m, u.k, u.h)] * bv[b_hot];
      }
  }
  return dump;
}

}  // namespace fa::test
