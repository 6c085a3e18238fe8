// The matrix instructions fa-bench probe-layout knows (docs/probe-layout.md): each with the
// fragment tables the kernels use (kernels/device/fragment_layout.hpp), its probe kernel's name and
// the archs that have it; and the launchers of the probe kernels (kernels/mma/probe_layout.hip,
// kernels/amd/probe_layout.hip; GPU builds only). Host code; the analysis is harness/probe/.
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

#include "harness/probe/probe_layout.hpp"
#include "kernels/device/arch_table.hpp"
#include "kernels/device/fragment_layout.hpp"

namespace fa::gpu {

namespace probe_detail {
inline probe::Cell cell(frag::Coord c) { return {c.row, c.col}; }
// wgmma's B (16 x N, k x n) in the probe's shared-memory tile: 16 rows of the 128-byte swizzle,
// MN-major as the kernels' V (wgmma_sw128_mnmajor); element e is the (k, n) stored at byte 2 e.
template <int N>
probe::Cell wgmma_b_smem(int, int e) {
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < N; ++n)
      if (frag::wgmma_sw128_offset(k, n, 16) == 2 * e) return {k, n};
  return {-1, -1};
}
inline probe::Instr mma_m16n8k16(const char* elem) {
  probe::Instr in{std::string("mma_m16n8k16_") + elem, std::string("fa_probe_mma_m16n8k16_") + elem,
                  std::string("mma.sync.aligned.m16n8k16.row.col.f32.") + elem + "." + elem + ".f32",
                  "frag::mma_m16n8k16_{a,b,c}", "nvidia", elem, 16, 8, 16};
  in.a = {32, 8, [](int l, int i) { return cell(frag::mma_m16n8k16_a(l, i)); }};
  in.b = {32, 4, [](int l, int i) { return cell(frag::mma_m16n8k16_b(l, i)); }};
  in.c = {32, 4, [](int l, int i) { return cell(frag::mma_m16n8k16_c(l, i)); }};
  in.radix = 16;
  return in;
}
template <int N>
probe::Instr wgmma_m64nNk16() {
  const std::string n = std::to_string(N);
  probe::Instr in{"wgmma_m64n" + n + "k16_f16", "fa_probe_wgmma_m64n" + n + "k16_f16",
                  "wgmma.mma_async.sync.aligned.m64n" + n + "k16.f32.f16.f16 (A registers, B shared, transposed)",
                  "frag::wgmma_m64nNk16_{a,c}, B at frag::wgmma_sw128_offset(k, n, 16)", "nvidia", "fp16", 64, N, 16};
  in.a = {128, 8, [](int t, int i) { return cell(frag::wgmma_m64nNk16_a(t, i)); }};
  in.b = {1, 16 * N, wgmma_b_smem<N>, true};
  in.c = {128, N / 2, [](int t, int i) { return cell(frag::wgmma_m64nNk16_c(t, i)); }};
  in.radix = 16;
  return in;
}
inline probe::Instr mfma_32x32x8(const char* elem, const char* isa) {
  probe::Instr in{std::string("mfma_32x32x8_") + elem, std::string("fa_probe_mfma_32x32x8_") + elem, isa,
                  "frag::mfma_32x32x8_{a,b,c}", "amd", elem, 32, 32, 8};
  in.a = {64, 4, [](int l, int i) { return cell(frag::mfma_32x32x8_a(l, i)); }};
  in.b = {64, 4, [](int l, int i) { return cell(frag::mfma_32x32x8_b(l, i)); }};
  in.c = {64, 16, [](int l, int i) { return cell(frag::mfma_32x32x8_c(l, i)); }};
  in.radix = 8;
  return in;
}
inline probe::Instr wmma_16x16x16(const char* elem, const char* isa) {
  probe::Instr in{std::string("wmma_16x16x16_") + elem, std::string("fa_probe_wmma_16x16x16_") + elem, isa,
                  "frag::wmma_16x16x16_{a,b,c}", "amd", elem, 16, 16, 16};
  in.a = {32, 16, [](int l, int i) { return cell(frag::wmma_16x16x16_a(l, i)); }};
  in.b = {32, 16, [](int l, int i) { return cell(frag::wmma_16x16x16_b(l, i)); }};
  in.c = {32, 8, [](int l, int i) { return cell(frag::wmma_16x16x16_c(l, i)); }};
  in.radix = 16;
  return in;
}
// gfx94x's FNUZ FP8 MFMA (v_mfma_f32_32x32x16_fp8_fp8: e4m3fnuz A and B, 8 bytes a lane).
inline probe::Instr mfma_32x32x16_fp8() {
  probe::Instr in{"mfma_32x32x16_fp8", "fa_probe_mfma_32x32x16_fp8", "v_mfma_f32_32x32x16_fp8_fp8 (e4m3fnuz)",
                  "frag::mfma_32x32x16_{a8,b8}, frag::mfma_32x32x8_c", "amd", "fp8", 32, 32, 16};
  in.a = {64, 8, [](int l, int i) { return cell(frag::mfma_32x32x16_a8(l, i)); }};
  in.b = {64, 8, [](int l, int i) { return cell(frag::mfma_32x32x16_b8(l, i)); }};
  in.c = {64, 16, [](int l, int i) { return cell(frag::mfma_32x32x8_c(l, i)); }};
  in.radix = 16;
  return in;
}
// gfx12's WMMA: 16-bit inputs 8 slots a lane, 8-bit (OCP e4m3) 8 bytes a lane, no replication.
inline probe::Instr wmma12_16x16x16(const char* elem, const char* isa) {
  const bool b8 = std::string(elem) == "fp8";
  probe::Instr in{std::string("wmma12_16x16x16_") + elem, std::string("fa_probe_wmma12_16x16x16_") + elem, isa,
                  b8 ? "frag::wmma12_16x16x16_{a8,b8,c}" : "frag::wmma12_16x16x16_{a,b,c}", "amd", elem, 16, 16, 16};
  if (b8) {
    in.a = {32, 8, [](int l, int i) { return cell(frag::wmma12_16x16x16_a8(l, i)); }};
    in.b = {32, 8, [](int l, int i) { return cell(frag::wmma12_16x16x16_b8(l, i)); }};
  } else {
    in.a = {32, 8, [](int l, int i) { return cell(frag::wmma12_16x16x16_a(l, i)); }};
    in.b = {32, 8, [](int l, int i) { return cell(frag::wmma12_16x16x16_b(l, i)); }};
  }
  in.c = {32, 8, [](int l, int i) { return cell(frag::wmma12_16x16x16_c(l, i)); }};
  in.radix = 16;
  return in;
}
}  // namespace probe_detail

// Every instruction probe-layout knows, in the order it runs them.
inline std::vector<probe::Instr> probe_instructions() {
  using namespace probe_detail;
  return {mma_m16n8k16("f16"),
          mma_m16n8k16("bf16"),
          wgmma_m64nNk16<64>(),
          wgmma_m64nNk16<128>(),
          mfma_32x32x8("f16", "v_mfma_f32_32x32x8_f16"),
          mfma_32x32x8("bf16", "v_mfma_f32_32x32x8_bf16 (bf16_1k)"),
          mfma_32x32x16_fp8(),
          wmma_16x16x16("f16", "v_wmma_f32_16x16x16_f16 (wave32)"),
          wmma_16x16x16("bf16", "v_wmma_f32_16x16x16_bf16 (wave32)"),
          wmma12_16x16x16("f16", "v_wmma_f32_16x16x16_f16 (gfx12, wave32)"),
          wmma12_16x16x16("bf16", "v_wmma_f32_16x16x16_bf16 (gfx12, wave32)"),
          wmma12_16x16x16("fp8", "v_wmma_f32_16x16x16_fp8_fp8 (gfx12, wave32, OCP e4m3)")};
}

// Whether `arch` ("sm_80", "sm_90a", "gfx942:sramecc+:xnack-", "gfx1201") has `in`: mma.sync from
// sm_80, wgmma on sm_90 (the binary must carry sm_90a code: the caller checks has_wgmma_sm90a),
// MFMA, WMMA and their FP8 forms by the AMD arch table's rows.
inline bool probe_on_arch(const probe::Instr& in, const std::string& arch) {
  const auto is = [&](const char* prefix) { return in.name.rfind(prefix, 0) == 0; };
  if (arch.rfind("sm_", 0) == 0) {
    const int sm = std::atoi(arch.c_str() + 3);
    return is("mma_") ? sm >= 80 : is("wgmma_") && sm == 90;
  }
  const AmdArchCaps caps = amd_arch_caps(arch.c_str());
  if (is("mfma_32x32x16_fp8")) return caps.fp8 == MatrixFp8::fnuz;
  if (is("mfma_")) return caps.mfma_gfx9;
  if (is("wmma12_")) return caps.wmma_gfx12 && (in.elem != "fp8" || caps.fp8 == MatrixFp8::ocp);
  return is("wmma_") && caps.wmma_gfx11;
}

// The instructions of `arch`, in probe_instructions' order; wgmma only where the binary carries
// sm_90a code (DeviceFacts::has_wgmma_sm90a; true for an arch named without a device).
inline std::vector<probe::Instr> probe_instructions_on(const std::string& arch, bool sm90a_code) {
  std::vector<probe::Instr> out;
  for (auto& in : probe_instructions())
    if (probe_on_arch(in, arch) && (sm90a_code || in.name.rfind("wgmma_", 0) != 0)) out.push_back(in);
  return out;
}

// One launch of in's probe kernel on the current device: the raw dump (probe_plan.hpp), every
// value the kernel did not write NaN. Defined by the family's probe_layout.hip in GPU builds.
std::vector<float> probe_launch_nvidia(const probe::Instr& in);
std::vector<float> probe_launch_amd(const probe::Instr& in);
inline std::vector<float> probe_launch(const probe::Instr& in) {
  return in.family == "amd" ? probe_launch_amd(in) : probe_launch_nvidia(in);
}

}  // namespace fa::gpu
