// The one arch table: for each AMD arch the kernels know, whether it has gfx9 MFMA (with the
// 4-element bf16 32x32x8), gfx11 WMMA (16x16x16 with half-wave replication of A and B), gfx12 WMMA
// (16x16x16, each half-wave holding its own half of k), which FP8 format its matrix cores multiply
// (gfx94x: FNUZ, v_mfma_f32_32x32x16_fp8; gfx12: OCP, v_wmma_f32_16x16x16_fp8) and its physical
// wave size. Device code reads its row through the macros the compiler's arch define selects
// (FA_ARCH_MFMA_GFX9, FA_ARCH_MFMA_FP8, FA_ARCH_WMMA_GFX11, FA_ARCH_WMMA_GFX12, FA_ARCH_WAVE64); the
// host reads the same rows by name (amd_arch_caps, for the gates and `info`). NVIDIA has one rule:
// sm_80 and later have mma.sync. A new arch is one row in each half below, side by side.
#pragma once
#include <cstring>

// ---- device: the arch being compiled ---------------------------------------------------------
// gfx908 (MI100) lacks v_mfma_f32_32x32x8bf16_1k. gfx90a has no FP8 MFMA. gfx950's FP8 MFMA reads
// OCP, not FNUZ, and no compiler here targets gfx950 (clang-19 has none): FP8 stays off there until
// it is built and proven. gfx12's WMMA has other builtins and operand layout than gfx11's (clang-19
// cannot select the gfx11 builtins for gfx1201), and FP8 forms.
#define FA_ARCH_FP8_NONE 0
#define FA_ARCH_FP8_FNUZ 1
#define FA_ARCH_FP8_OCP 2
#if defined(__gfx908__)
#define FA_ARCH_MFMA_GFX9 0
#define FA_ARCH_MFMA_FP8 FA_ARCH_FP8_NONE
#define FA_ARCH_WMMA_GFX11 0
#define FA_ARCH_WMMA_GFX12 0
#define FA_ARCH_WAVE64 1
#elif defined(__gfx90a__) || defined(__gfx950__)
#define FA_ARCH_MFMA_GFX9 1
#define FA_ARCH_MFMA_FP8 FA_ARCH_FP8_NONE
#define FA_ARCH_WMMA_GFX11 0
#define FA_ARCH_WMMA_GFX12 0
#define FA_ARCH_WAVE64 1
#elif defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define FA_ARCH_MFMA_GFX9 1
#define FA_ARCH_MFMA_FP8 FA_ARCH_FP8_FNUZ
#define FA_ARCH_WMMA_GFX11 0
#define FA_ARCH_WMMA_GFX12 0
#define FA_ARCH_WAVE64 1
#elif defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || \
    defined(__gfx1150__) || defined(__gfx1151__)
#define FA_ARCH_MFMA_GFX9 0
#define FA_ARCH_MFMA_FP8 FA_ARCH_FP8_NONE
#define FA_ARCH_WMMA_GFX11 1
#define FA_ARCH_WMMA_GFX12 0
#define FA_ARCH_WAVE64 0
#elif defined(__gfx1200__) || defined(__gfx1201__)
#define FA_ARCH_MFMA_GFX9 0
#define FA_ARCH_MFMA_FP8 FA_ARCH_FP8_NONE
#define FA_ARCH_WMMA_GFX11 0
#define FA_ARCH_WMMA_GFX12 1
#define FA_ARCH_WAVE64 0
#else  // NVIDIA, other AMD archs, and the host pass
#define FA_ARCH_MFMA_GFX9 0
#define FA_ARCH_MFMA_FP8 FA_ARCH_FP8_NONE
#define FA_ARCH_WMMA_GFX11 0
#define FA_ARCH_WMMA_GFX12 0
#define FA_ARCH_WAVE64 0
#endif

// ---- host: a device's arch name (hipDeviceProp_t::gcnArchName, "gfx942:sramecc+:xnack-") -------
namespace fa::gpu {

// The FP8 format the matrix cores multiply (the device half's FA_ARCH_FP8_*).
enum class MatrixFp8 : unsigned char { none = FA_ARCH_FP8_NONE, fnuz = FA_ARCH_FP8_FNUZ, ocp = FA_ARCH_FP8_OCP };
struct AmdArchCaps {
  const char* name;
  bool mfma_gfx9, wmma_gfx11, wmma_gfx12;
  MatrixFp8 fp8;
  int wave_size;
};
inline constexpr MatrixFp8 kNo8 = MatrixFp8::none, kFnuz = MatrixFp8::fnuz, kOcp = MatrixFp8::ocp;
inline constexpr AmdArchCaps kAmdArchs[] = {
    {"gfx908", false, false, false, kNo8, 64},  {"gfx90a", true, false, false, kNo8, 64},
    {"gfx940", true, false, false, kFnuz, 64},  {"gfx941", true, false, false, kFnuz, 64},
    {"gfx942", true, false, false, kFnuz, 64},  {"gfx950", true, false, false, kNo8, 64},
    {"gfx1100", false, true, false, kNo8, 32},  {"gfx1101", false, true, false, kNo8, 32},
    {"gfx1102", false, true, false, kNo8, 32},  {"gfx1103", false, true, false, kNo8, 32},
    {"gfx1150", false, true, false, kNo8, 32},  {"gfx1151", false, true, false, kNo8, 32},
    {"gfx1200", false, false, true, kOcp, 32},  {"gfx1201", false, false, true, kOcp, 32},
};

// The row of `gcn_arch` (its name up to the first ':'), or an all-false row for an arch not listed.
inline AmdArchCaps amd_arch_caps(const char* gcn_arch) {
  const size_t n = std::strcspn(gcn_arch, ":");
  for (const AmdArchCaps& row : kAmdArchs)
    if (std::strlen(row.name) == n && std::strncmp(row.name, gcn_arch, n) == 0) return row;
  return AmdArchCaps{"", false, false, false, MatrixFp8::none, 0};
}

}  // namespace fa::gpu
