// Hopper's asynchronous machinery for mma's sm_90 kernel, as small PTX wrappers (PTX ISA 8.x):
// mbarriers with transaction counts, TMA bulk tensor copies (cp.async.bulk.tensor) completing on
// them, register reallocation between warpgroups (setmaxnreg), named barriers (bar.sync/bar.arrive),
// and wgmma.mma_async for every N the tile table uses (kernels/mma/wgmma_sm90.hpp has the
// fence/commit/wait/pin these go with, and N = 64/128 only). The PTX forms follow CUTLASS
// (include/cutlass/arch/barrier.h: ClusterBarrier, ClusterTransactionBarrier, NamedBarrier,
// fence_barrier_init; include/cute/arch/copy_sm90_tma.hpp: SM90_TMA_LOAD_4D; copy_sm90_desc.hpp:
// prefetch_tma_descriptor; include/cutlass/arch/reg_reconfig.h); none of its code is used.
// Defined only where wgmma exists (FA_HAS_WGMMA_SM90: the sm_90a pass); the sm_80 pass, the host pass
// and AMD see the TensorMap type and FA_GRID_CONSTANT alone.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/mma/wgmma_sm90.hpp"
#include "kernels/mma/ws_tile_traits.hpp"

// A kernel parameter the kernel reads in place (the TMA engine reads tensor maps from parameter
// space by address: CUDA's __grid_constant__). Other toolchains pass it as a plain parameter.
#if defined(__CUDACC__)
#define FA_GRID_CONSTANT __grid_constant__
#else
#define FA_GRID_CONSTANT
#endif

namespace fa::gpu::sm90 {

// A CUtensorMap's bytes (cuda.h: 16 opaque quadwords, 128-byte aligned), so that kernels and their
// launchers name the type without cuda.h; the host encodes into a CUtensorMap and copies it here.
struct alignas(128) TensorMap {
  uint64_t opaque[16];
};

#if FA_HAS_WGMMA_SM90
// ---- mbarriers (CUTLASS ClusterBarrier / ClusterTransactionBarrier, CTA scope) -------------------
__device__ inline void mbar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}
// Orders the inits before their use by other threads and by the TMA engine (the async proxy):
// CUTLASS's fence_barrier_init, plus the proxy fence the CUDA programming guide's TMA example uses.
__device__ inline void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ inline void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival, and `bytes` more that the current phase waits for (the TMA copies' complete_tx).
__device__ inline void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// True once the phase of parity `parity` before the current one completed (kernels/mma/ws_pipeline.hpp).
// try_wait suspends the thread for a while before it answers false, so a loop over it is no hot spin.
__device__ inline bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.b32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ inline void mbar_wait(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}
// The same, but a wait past kWaitTrapNs traps instead of hanging: a TMA copy that never lands (a bad
// tensor map) or a protocol bug then fails the launch with an error the harness reports, where a
// hang would eat a device session's command limit. Healthy waits last microseconds (milliseconds
// under compute-sanitizer); the clock is read only once the first try has failed. The producer's
// waits use it (a trap ends the whole grid, the consumers' waits with it); in the consumers' loop the
// clock's registers made ptxas spill and serialise the wgmmas (C7512, nvcc 13.0).
constexpr uint64_t kWaitTrapNs = 4000000000ull;
__device__ inline void mbar_wait_or_trap(uint32_t bar, uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
  const uint64_t t0 = wall_ticks();  // %globaltimer: nanoseconds
  while (!mbar_try_wait(bar, parity))
    if (wall_ticks() - t0 > kWaitTrapNs) __trap();
}

// ---- TMA (cute SM90_TMA_LOAD_4D without the cache hint; SM90_TMA_STORE_4D) ------------------
// Copies the box at coordinates (c0 innermost .. c3) of the tensor `tmap` describes to shared memory
// at `dst`, in the tensor map's swizzle; the bytes complete on `bar`'s current phase.
__device__ inline void tma_load_4d(uint32_t dst, const TensorMap* tmap, uint32_t bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
// The same with five coordinates (cute SM90_TMA_LOAD_5D without the cache hint).
__device__ inline void tma_load_5d(uint32_t dst, const TensorMap* tmap, uint32_t bar, int c0, int c1, int c2, int c3,
                                   int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}
// The other direction (cute SM90_TMA_STORE_4D): the box at `src` in shared memory, in the tensor
// map's swizzle, to the tensor's box at (c0 .. c3); elements outside the tensor (rows past S) are not
// written. The copy joins this thread's bulk group (bulk_commit); its shared-memory source may be
// rewritten once bulk_wait_read says the group has read it. The writer threads order their
// shared-memory writes for it with fence_proxy_async and a barrier first (CUTLASS tma_store_fence).
__device__ inline void tma_store_4d(const TensorMap* tmap, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(tmap)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
__device__ inline void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until at most N of this thread's bulk groups still read their shared-memory sources.
template <int N>
__device__ inline void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Fetches a tensor map into the TMA unit's descriptor cache ahead of its first copy.
__device__ inline void prefetch_tensor_map(const TensorMap* tmap) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(tmap)) : "memory");
}

// ---- setmaxnreg (executed by every thread of a warpgroup) ----------------------------------------
template <int REGS>
__device__ inline void reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ inline void reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// ---- named barriers: `threads` (a multiple of 32) arrive on barrier `id` (1..15; 0 is __syncthreads's)
__device__ inline void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ inline void bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- wgmma.mma_async m64nNk16, fp32 accumulators d[N / 2] (layout: frag::wgmma_m64nNk16_c) ----------
// Operand lists for N / 2 accumulator registers, built from blocks of 8; the descriptors (and A's
// registers) follow them, their numbers spelled out at each use below.
#define FA_WS_R8_0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define FA_WS_R8_1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define FA_WS_R8_2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define FA_WS_R8_3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define FA_WS_R8_4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define FA_WS_R8_5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define FA_WS_R8_6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define FA_WS_R8_7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define FA_WS_R8_8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define FA_WS_R8_9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define FA_WS_R8_10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define FA_WS_R8_11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define FA_WS_R8_12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define FA_WS_R8_13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define FA_WS_R8_14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define FA_WS_R8_15 "%120, %121, %122, %123, %124, %125, %126, %127"
#define FA_WS_REGS_32 FA_WS_R8_0 ", " FA_WS_R8_1 ", " FA_WS_R8_2 ", " FA_WS_R8_3
#define FA_WS_REGS_40 FA_WS_REGS_32 ", " FA_WS_R8_4
#define FA_WS_REGS_48 FA_WS_REGS_40 ", " FA_WS_R8_5
#define FA_WS_REGS_64 FA_WS_REGS_48 ", " FA_WS_R8_6 ", " FA_WS_R8_7
#define FA_WS_REGS_80 FA_WS_REGS_64 ", " FA_WS_R8_8 ", " FA_WS_R8_9
#define FA_WS_REGS_88 FA_WS_REGS_64 ", " FA_WS_R8_8 ", " FA_WS_R8_9 ", " FA_WS_R8_10
#define FA_WS_REGS_112 FA_WS_REGS_88 ", " FA_WS_R8_11 ", " FA_WS_R8_12 ", " FA_WS_R8_13
#define FA_WS_REGS_128 FA_WS_REGS_88 ", " FA_WS_R8_11 ", " FA_WS_R8_12 ", " FA_WS_R8_13 ", " FA_WS_R8_14 ", " FA_WS_R8_15
#define FA_WS_D8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define FA_WS_ACC_32 FA_WS_D8(0), FA_WS_D8(8), FA_WS_D8(16), FA_WS_D8(24)
#define FA_WS_ACC_40 FA_WS_ACC_32, FA_WS_D8(32)
#define FA_WS_ACC_48 FA_WS_ACC_40, FA_WS_D8(40)
#define FA_WS_ACC_64 FA_WS_ACC_48, FA_WS_D8(48), FA_WS_D8(56)
#define FA_WS_ACC_80 FA_WS_ACC_64, FA_WS_D8(64), FA_WS_D8(72)
#define FA_WS_ACC_88 FA_WS_ACC_64, FA_WS_D8(64), FA_WS_D8(72), FA_WS_D8(80)
#define FA_WS_ACC_112 FA_WS_ACC_88, FA_WS_D8(88), FA_WS_D8(96), FA_WS_D8(104)
#define FA_WS_ACC_128 FA_WS_ACC_88, FA_WS_D8(88), FA_WS_D8(96), FA_WS_D8(104), FA_WS_D8(112), FA_WS_D8(120)

// D (64 x N) (+)= A (64 x K, shared, K-major) B (K x N, shared, K-major); SCALE_D 0 ignores D. TAIL
// ends the immediates: the 16-bit forms' transpose flags (0, 0: both K-major); the 8-bit forms have none.
#define FA_WS_SS_K(N, K, R, I0, I1, I2, TY, TAIL)                                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #I2 ", 0;\n"                                                 \
               "wgmma.mma_async.sync.aligned.m64n" #N "k" #K ".f32." TY "." TY " {" FA_WS_REGS_##R "}, %" #I0       \
               ", %" #I1 ", p, 1, 1" TAIL ";\n}\n"                                                                 \
               : FA_WS_ACC_##R                                                                                     \
               : "l"(da), "l"(db), "n"(SCALE_D))
#define FA_WS_SS(N, R, I0, I1, I2, TY) FA_WS_SS_K(N, 16, R, I0, I1, I2, TY, ", 0, 0")
// D (64 x N) += A (64 x K in registers: the m16n8k16 / m16n8k32 A layout a warp) B (K x N, shared);
// TAIL: the 16-bit forms' B transpose flag (1: MN-major V); the 8-bit forms have none (K-major V^T).
#define FA_WS_RS_K(N, K, R, I0, I1, I2, I3, I4, TA, TB, TAIL)                                                     \
  asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k" #K ".f32." TA "." TB " {" FA_WS_REGS_##R "}, {%" #I0    \
               ", %" #I1 ", %" #I2 ", %" #I3 "}, %" #I4 ", 1, 1, 1" TAIL ";\n"                                     \
               : FA_WS_ACC_##R                                                                                     \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db))
#define FA_WS_RS(N, R, I0, I1, I2, I3, I4, TY) FA_WS_RS_K(N, 16, R, I0, I1, I2, I3, I4, TY, TY, ", 1")

template <typename T, int N, int SCALE_D>
__device__ inline void ss(float (&d)[N / 2], uint64_t da, uint64_t db) {
  static_assert(ws::wgmma_has_n(N), "wgmma N without an operand list here: add it beside FA_WS_REGS_*");
  constexpr bool bf = std::is_same_v<T, BF16>;
  if constexpr (N == 64) {
    if constexpr (bf) FA_WS_SS(64, 32, 32, 33, 34, "bf16"); else FA_WS_SS(64, 32, 32, 33, 34, "f16");
  } else if constexpr (N == 80) {
    if constexpr (bf) FA_WS_SS(80, 40, 40, 41, 42, "bf16"); else FA_WS_SS(80, 40, 40, 41, 42, "f16");
  } else if constexpr (N == 96) {
    if constexpr (bf) FA_WS_SS(96, 48, 48, 49, 50, "bf16"); else FA_WS_SS(96, 48, 48, 49, 50, "f16");
  } else if constexpr (N == 128) {
    if constexpr (bf) FA_WS_SS(128, 64, 64, 65, 66, "bf16"); else FA_WS_SS(128, 64, 64, 65, 66, "f16");
  } else if constexpr (N == 176) {
    if constexpr (bf) FA_WS_SS(176, 88, 88, 89, 90, "bf16"); else FA_WS_SS(176, 88, 88, 89, 90, "f16");
  } else {
    static_assert(N == 256, "the last operand list is N = 256's: give this N its own branch");
    if constexpr (bf) FA_WS_SS(256, 128, 128, 129, 130, "bf16"); else FA_WS_SS(256, 128, 128, 129, 130, "f16");
  }
}

template <typename T, int N>
__device__ inline void rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  static_assert(ws::wgmma_has_n(N), "wgmma N without an operand list here: add it beside FA_WS_REGS_*");
  constexpr bool bf = std::is_same_v<T, BF16>;
  if constexpr (N == 64) {
    if constexpr (bf) FA_WS_RS(64, 32, 32, 33, 34, 35, 36, "bf16"); else FA_WS_RS(64, 32, 32, 33, 34, 35, 36, "f16");
  } else if constexpr (N == 80) {
    if constexpr (bf) FA_WS_RS(80, 40, 40, 41, 42, 43, 44, "bf16"); else FA_WS_RS(80, 40, 40, 41, 42, 43, 44, "f16");
  } else if constexpr (N == 96) {
    if constexpr (bf) FA_WS_RS(96, 48, 48, 49, 50, 51, 52, "bf16"); else FA_WS_RS(96, 48, 48, 49, 50, 51, 52, "f16");
  } else if constexpr (N == 128) {
    if constexpr (bf) FA_WS_RS(128, 64, 64, 65, 66, 67, 68, "bf16"); else FA_WS_RS(128, 64, 64, 65, 66, 67, 68, "f16");
  } else if constexpr (N == 176) {
    if constexpr (bf) FA_WS_RS(176, 88, 88, 89, 90, 91, 92, "bf16"); else FA_WS_RS(176, 88, 88, 89, 90, 91, 92, "f16");
  } else {
    static_assert(N == 256, "the last operand list is N = 256's: give this N its own branch");
    if constexpr (bf) FA_WS_RS(256, 128, 128, 129, 130, 131, 132, "bf16"); else FA_WS_RS(256, 128, 128, 129, 130, 131, 132, "f16");
  }
}
// ---- wgmma.mma_async m64nNk32 with 8-bit inputs (.e4m3 / .e5m2): both operands K-major (the 8-bit
// forms have no transpose), so V comes as its transpose (kernels/mma/ws_fp8.hpp). A from shared
// memory (S = Q K^T) or from registers (O += P V; frag::wgmma_m64nNk32_a8). S's BN: 64, 128, 160 (D = 64's
// pre-pass row) or 224 (D = 128's); O's D: 64, 128 or 256 (ws_tile_traits.hpp's wgmma8_ss_has_n / _rs_has_n).
#define FA_WS_SS8(N, R, I0, I1, I2, TY) FA_WS_SS_K(N, 32, R, I0, I1, I2, TY, "")
#define FA_WS_RS8(N, R, I0, I1, I2, I3, I4, TB) FA_WS_RS_K(N, 32, R, I0, I1, I2, I3, I4, "e4m3", TB, "")

// D (64 x N) (+)= A (64 x 32) B (32 x N), both E4M3 or both E5M2 (E4M3 true / false).
template <bool E4M3, int N, int SCALE_D>
__device__ inline void ss8(float (&d)[N / 2], uint64_t da, uint64_t db) {
  static_assert(ws::wgmma8_ss_has_n(N), "8-bit wgmma N without an operand list here");
  if constexpr (N == 64) {
    if constexpr (E4M3) FA_WS_SS8(64, 32, 32, 33, 34, "e4m3"); else FA_WS_SS8(64, 32, 32, 33, 34, "e5m2");
  } else if constexpr (N == 128) {
    if constexpr (E4M3) FA_WS_SS8(128, 64, 64, 65, 66, "e4m3"); else FA_WS_SS8(128, 64, 64, 65, 66, "e5m2");
  } else if constexpr (N == 160) {
    if constexpr (E4M3) FA_WS_SS8(160, 80, 80, 81, 82, "e4m3"); else FA_WS_SS8(160, 80, 80, 81, 82, "e5m2");
  } else {
    static_assert(N == 224, "the last operand list is N = 224's: give this N its own branch");
    if constexpr (E4M3) FA_WS_SS8(224, 112, 112, 113, 114, "e4m3"); else FA_WS_SS8(224, 112, 112, 113, 114, "e5m2");
  }
}
// D (64 x N) += P (64 x 32, E4M3 in registers) B (32 x N, E4M3 or E5M2, shared, K-major).
template <bool E4M3_B, int N>
__device__ inline void rs8(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  static_assert(ws::wgmma8_rs_has_n(N), "8-bit wgmma N without an operand list here");
  if constexpr (N == 64) {
    if constexpr (E4M3_B) FA_WS_RS8(64, 32, 32, 33, 34, 35, 36, "e4m3"); else FA_WS_RS8(64, 32, 32, 33, 34, 35, 36, "e5m2");
  } else if constexpr (N == 128) {
    if constexpr (E4M3_B) FA_WS_RS8(128, 64, 64, 65, 66, 67, 68, "e4m3"); else FA_WS_RS8(128, 64, 64, 65, 66, 67, 68, "e5m2");
  } else {
    static_assert(N == 256, "the last operand list is N = 256's: give this N its own branch");
    if constexpr (E4M3_B) FA_WS_RS8(256, 128, 128, 129, 130, 131, 132, "e4m3"); else FA_WS_RS8(256, 128, 128, 129, 130, 131, 132, "e5m2");
  }
}
// Four fp32 values as four E4M3 bytes, x0 in the low byte (satfinite, round to nearest even).
__device__ inline uint32_t pack4_e4m3(float x0, float x1, float x2, float x3) {
  uint16_t lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(x1), "f"(x0));  // the first source is the upper byte
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(x3), "f"(x2));
  return uint32_t(lo) | (uint32_t(hi) << 16);
}
// Orders this thread's ordinary shared-memory writes before the async proxy's reads (wgmma's).
__device__ inline void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Programmatic dependent launch: this thread waits until the grid this one was launched to overlap
// (the V^T pre-pass) has finished and its writes are visible; at once where there is none.
__device__ inline void grid_dependency_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
#undef FA_WS_SS8
#undef FA_WS_RS8
#undef FA_WS_SS
#undef FA_WS_RS
#undef FA_WS_SS_K
#undef FA_WS_RS_K
#endif

}  // namespace fa::gpu::sm90
