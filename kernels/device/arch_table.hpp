// The one arch table: for each AMD arch the kernels know, whether it has gfx9 MFMA (with the
// 4-element bf16 32x32x8), gfx11 WMMA (16x16x16 with half-wave replication) and its physical wave
// size. Device code reads its row through the macro the compiler defines for the arch being built
// (FA_ARCH_MFMA_GFX9, FA_ARCH_WMMA_GFX11, FA_ARCH_WAVE64); the host reads the same rows by name
// (amd_arch_caps, for the gates and `info`). NVIDIA has one rule: sm_80 and later have mma.sync.
// A new arch is one row in each half below, side by side.
#pragma once
#include <cstring>

// ---- device: the arch being compiled ---------------------------------------------------------
// gfx908 (MI100) lacks v_mfma_f32_32x32x8bf16_1k; gfx12's WMMA has other builtins and no
// half-wave replication of A and B (clang-19 cannot select the gfx11 builtins for gfx1201).
#if defined(__gfx908__)
#define FA_ARCH_MFMA_GFX9 0
#define FA_ARCH_WMMA_GFX11 0
#define FA_ARCH_WAVE64 1
#elif defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
#define FA_ARCH_MFMA_GFX9 1
#define FA_ARCH_WMMA_GFX11 0
#define FA_ARCH_WAVE64 1
#elif defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || \
    defined(__gfx1150__) || defined(__gfx1151__)
#define FA_ARCH_MFMA_GFX9 0
#define FA_ARCH_WMMA_GFX11 1
#define FA_ARCH_WAVE64 0
#else  // NVIDIA, other AMD archs, and the host pass
#define FA_ARCH_MFMA_GFX9 0
#define FA_ARCH_WMMA_GFX11 0
#define FA_ARCH_WAVE64 0
#endif

// ---- host: a device's arch name (hipDeviceProp_t::gcnArchName, "gfx942:sramecc+:xnack-") -------
namespace fa::gpu {

struct AmdArchCaps {
  const char* name;
  bool mfma_gfx9, wmma_gfx11;
  int wave_size;
};
inline constexpr AmdArchCaps kAmdArchs[] = {
    {"gfx908", false, false, 64},  {"gfx90a", true, false, 64},   {"gfx940", true, false, 64},
    {"gfx941", true, false, 64},   {"gfx942", true, false, 64},   {"gfx950", true, false, 64},
    {"gfx1100", false, true, 32},  {"gfx1101", false, true, 32},  {"gfx1102", false, true, 32},
    {"gfx1103", false, true, 32},  {"gfx1150", false, true, 32},  {"gfx1151", false, true, 32},
};

// The row of `gcn_arch` (its name up to the first ':'), or an all-false row for an arch not listed.
inline AmdArchCaps amd_arch_caps(const char* gcn_arch) {
  const size_t n = std::strcspn(gcn_arch, ":");
  for (const AmdArchCaps& row : kAmdArchs)
    if (std::strlen(row.name) == n && std::strncmp(row.name, gcn_arch, n) == 0) return row;
  return AmdArchCaps{"", false, false, 0};
}

}  // namespace fa::gpu
