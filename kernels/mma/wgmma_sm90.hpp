// Hopper warpgroup MMA (sm_90a: wgmma.mma_async m64nNk16, fp32 accumulate) for the `mma` path's
// sm_90 kernel. A warpgroup is 4 warps (128 threads); one instruction multiplies a 64 x 16 A by a
// 16 x N B into a 64 x N fp32 accumulator of N / 2 registers a thread. A comes from shared memory
// (a matrix descriptor) or registers, B from shared memory; the product runs asynchronously until
// wgmma.wait_group. PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
// Instructions": register fragments (kernels/device/fragment_layout.hpp: wgmma_m64nNk16_{a,c}), "Matrix
// Descriptor Format" and the 128-byte-swizzle canonical shared-memory layout
// (kernels/device/fragment_layout.hpp: wgmma_sw128_offset).
// Defined only where wgmma exists (FA_HAS_WGMMA_SM90: sm_90a); kernels guard their bodies the same way.
#pragma once
#include <type_traits>

#include "kernels/mma/mma_sm80.hpp"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FA_HAS_WGMMA_SM90 1
#else
#define FA_HAS_WGMMA_SM90 0
#endif

namespace fa::gpu::wg {

#if FA_HAS_WGMMA_SM90
// A shared-memory matrix descriptor for the 128-byte swizzle (layout type 1, bits 62-63): start
// address, leading byte offset (between core-matrix blocks adjacent in the leading dimension) and
// stride byte offset (between 8-row groups), in 16-byte units.
__device__ inline uint64_t desc(const void* p, uint32_t lbo, uint32_t sbo) {
  return uint64_t((smem_addr(p) & 0x3FFFFu) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32) |
         (uint64_t(1) << 62);
}

__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N of the warpgroup's committed wgmma groups are still running.
template <int N>
__device__ inline void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Makes this thread's generic-proxy shared-memory writes (cp.async included) visible to wgmma.
__device__ inline void fence_smem_for_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Pins registers an in-flight wgmma reads or writes: the compiler may not move their uses across.
template <int N>
__device__ inline void pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define FA_WG_ACC64 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define FA_WG_ACC32 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// D (64 x N) (+)= A (64 x 16, shared, K-major) B (16 x N, shared, K-major); ACCUM 0 ignores D.
// N = 128 or 64 by the accumulator's size.
template <typename T, int ACCUM>
__device__ inline void ss(float (&d)[64], uint64_t da, uint64_t db) {
  if constexpr (std::is_same_v<T, BF16>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : FA_WG_ACC64 : "l"(da), "l"(db), "n"(ACCUM));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : FA_WG_ACC64 : "l"(da), "l"(db), "n"(ACCUM));
}
template <typename T, int ACCUM>
__device__ inline void ss(float (&d)[32], uint64_t da, uint64_t db) {
  if constexpr (std::is_same_v<T, BF16>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : FA_WG_ACC32 : "l"(da), "l"(db), "n"(ACCUM));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : FA_WG_ACC32 : "l"(da), "l"(db), "n"(ACCUM));
}

// D (64 x N) += A (64 x 16 in registers: each warp's 16 rows in the m16n8k16 A layout) B (16 x N,
// shared, MN-major: the transpose flag set). N = 128 or 64 by the accumulator's size.
template <typename T>
__device__ inline void rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (std::is_same_v<T, BF16>)
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
                 : FA_WG_ACC64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
                 : FA_WG_ACC64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
template <typename T>
__device__ inline void rs(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (std::is_same_v<T, BF16>)
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
                 : FA_WG_ACC32 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
                 : FA_WG_ACC32 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
#undef FA_WG_ACC64
#undef FA_WG_ACC32

// S = Q K^T's accumulator (m64nNk16 C layout) as P, the register A operand of O += P V: S's column
// blocks 2kn, 2kn + 1 are P's k16 step kn (a thread's C slots are its A slots), rounded to T.
template <typename T, int KN>
__device__ inline void pack_p(const float* s, uint32_t (&p)[KN][4]) {
#pragma unroll
  for (int kn = 0; kn < KN; ++kn) {
    p[kn][0] = pack2<T>(s[8 * kn + 0], s[8 * kn + 1]);
    p[kn][1] = pack2<T>(s[8 * kn + 2], s[8 * kn + 3]);
    p[kn][2] = pack2<T>(s[8 * kn + 4], s[8 * kn + 5]);
    p[kn][3] = pack2<T>(s[8 * kn + 6], s[8 * kn + 7]);
  }
}
#endif

}  // namespace fa::gpu::wg
