// Portability header: the few runtime calls and device intrinsics the kernels use, mapped to HIP
// on AMD (hipcc / clang -x hip) and to CUDA on NVIDIA (nvcc), plus named capability predicates.
// Small and explicit: no blanket renaming; shuffles always name their mask and width. Every
// runtime call goes through FA_GPU_CHECK, whose error names the call.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "kernels/device/arch_table.hpp"

#if defined(__HIP__) || defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#define FA_HIP 1
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define FA_CUDA 1
#endif

namespace fa::gpu {

// ---- runtime -------------------------------------------------------------------------------
#if FA_HIP
using Error = hipError_t;
using Stream = hipStream_t;
using Event = hipEvent_t;
constexpr Error kSuccess = hipSuccess;
inline bool is_oom(Error e) { return e == hipErrorOutOfMemory || e == hipErrorMemoryAllocation; }
inline const char* error_string(Error e) { return hipGetErrorString(e); }
inline Error malloc_device(void** p, size_t n) { return hipMalloc(p, n); }
inline Error free_device(void* p) { return hipFree(p); }
inline Error copy_to_device(void* d, const void* h, size_t n) { return hipMemcpy(d, h, n, hipMemcpyHostToDevice); }
inline Error copy_to_host(void* h, const void* d, size_t n) { return hipMemcpy(h, d, n, hipMemcpyDeviceToHost); }
inline Error copy_on_device(void* d, const void* s, size_t n, Stream st) { return hipMemcpyAsync(d, s, n, hipMemcpyDeviceToDevice, st); }
inline Error memset_async(void* d, int v, size_t n, Stream s) { return hipMemsetAsync(d, v, n, s); }
inline Error event_create(Event* e) { return hipEventCreate(e); }
inline Error event_destroy(Event e) { return hipEventDestroy(e); }
inline Error event_record(Event e, Stream s) { return hipEventRecord(e, s); }
inline Error event_elapsed_ms(float* ms, Event a, Event b) { return hipEventElapsedTime(ms, a, b); }
inline Error stream_sync(Stream s) { return hipStreamSynchronize(s); }
inline Error last_error() { return hipGetLastError(); }
inline Error device_count(int* n) { return hipGetDeviceCount(n); }
inline Error set_device(int ordinal) { return hipSetDevice(ordinal); }  // per host thread
inline Error runtime_version(int* v) { return hipRuntimeGetVersion(v); }
template <typename K>
Error set_max_dynamic_smem(K kernel, int bytes) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
template <typename K>
Error max_active_blocks(int* n, K kernel, int threads, size_t smem) {
  return hipOccupancyMaxActiveBlocksPerMultiprocessor(n, kernel, threads, smem);
}
// HIP has no thread-block clusters: a plain launch (launch errors surface at FA_GPU_CHECK_LAUNCH).
template <typename... P, typename... A>
Error launch_clusters(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, Stream s, unsigned, A&&... args) {
  hipLaunchKernelGGL(kernel, grid, block, smem, s, std::forward<A>(args)...);
  return hipSuccess;
}
// No programmatic dependent launch here either: a plain launch, after the previous kernel.
template <typename... P, typename... A>
Error launch_overlapping(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, Stream s, A&&... args) {
  hipLaunchKernelGGL(kernel, grid, block, smem, s, std::forward<A>(args)...);
  return hipSuccess;
}
#else
using Error = cudaError_t;
using Stream = cudaStream_t;
using Event = cudaEvent_t;
constexpr Error kSuccess = cudaSuccess;
inline bool is_oom(Error e) { return e == cudaErrorMemoryAllocation; }
inline const char* error_string(Error e) { return cudaGetErrorString(e); }
inline Error malloc_device(void** p, size_t n) { return cudaMalloc(p, n); }
inline Error free_device(void* p) { return cudaFree(p); }
inline Error copy_to_device(void* d, const void* h, size_t n) { return cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); }
inline Error copy_to_host(void* h, const void* d, size_t n) { return cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); }
inline Error copy_on_device(void* d, const void* s, size_t n, Stream st) { return cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, st); }
inline Error memset_async(void* d, int v, size_t n, Stream s) { return cudaMemsetAsync(d, v, n, s); }
inline Error event_create(Event* e) { return cudaEventCreate(e); }
inline Error event_destroy(Event e) { return cudaEventDestroy(e); }
inline Error event_record(Event e, Stream s) { return cudaEventRecord(e, s); }
inline Error event_elapsed_ms(float* ms, Event a, Event b) { return cudaEventElapsedTime(ms, a, b); }
inline Error stream_sync(Stream s) { return cudaStreamSynchronize(s); }
inline Error last_error() { return cudaGetLastError(); }
inline Error device_count(int* n) { return cudaGetDeviceCount(n); }
inline Error set_device(int ordinal) { return cudaSetDevice(ordinal); }  // per host thread
inline Error runtime_version(int* v) { return cudaRuntimeGetVersion(v); }
template <typename K>
Error set_max_dynamic_smem(K kernel, int bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
template <typename K>
Error max_active_blocks(int* n, K kernel, int threads, size_t smem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, kernel, threads, smem);
}
// A launch whose blocks go out in clusters of `cluster_x` along x (sm_90: a cluster's blocks run at
// once, on one GPC); grid.x must be a multiple of it, and 1 is a plain launch.
template <typename... P, typename... A>
Error launch_clusters(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, Stream s, unsigned cluster_x,
                      A&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = s;
  cudaLaunchAttribute at{};
  at.id = cudaLaunchAttributeClusterDimension;
  at.val.clusterDim.x = cluster_x, at.val.clusterDim.y = 1, at.val.clusterDim.z = 1;
  cfg.attrs = &at, cfg.numAttrs = cluster_x > 1 ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}
// A launch that may start while the stream's previous kernel runs (programmatic dependent launch,
// sm_90): its blocks take SMs once every block of that kernel has run griddepcontrol.launch_dependents
// or left, and a thread that reads what that kernel writes runs griddepcontrol.wait first.
template <typename... P, typename... A>
Error launch_overlapping(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, Stream s, A&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = s;
  cudaLaunchAttribute at{};
  at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &at, cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}
#endif

// Throws fa::OutOfMemory for allocation failures and std::runtime_error otherwise, naming the call.
[[noreturn]] void throw_error(Error e, const char* call, const char* file, int line);
#define FA_GPU_CHECK(call)                                                   \
  do {                                                                       \
    const ::fa::gpu::Error fa_err_ = (call);                                 \
    if (fa_err_ != ::fa::gpu::kSuccess) ::fa::gpu::throw_error(fa_err_, #call, __FILE__, __LINE__); \
  } while (0)
// After a kernel launch: launch-configuration errors surface here, naming the kernel.
void check_last_launch(const char* kernel_name, const char* file, int line);
#define FA_GPU_CHECK_LAUNCH(kernel_name) ::fa::gpu::check_last_launch(kernel_name, __FILE__, __LINE__)

// ---- capability predicates (device code: the arch being compiled) ---------------------------
// The AMD rows come from the one arch table (kernels/device/arch_table.hpp).
#define FA_HAS_WMMA_GFX11 FA_ARCH_WMMA_GFX11
#define FA_HAS_WMMA_GFX12 FA_ARCH_WMMA_GFX12
#define FA_HAS_MFMA_GFX9 FA_ARCH_MFMA_GFX9
#define FA_HAS_MFMA_FP8_FNUZ (FA_ARCH_MFMA_FP8 == FA_ARCH_FP8_FNUZ)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define FA_HAS_MMA_SM80 1
#else
#define FA_HAS_MMA_SM80 0
#endif
// Physical wave size of the arch being compiled: 64 on CDNA (gfx9), 32 on RDNA and NVIDIA.
#if FA_HIP && FA_ARCH_WAVE64
#define FA_WAVE_SIZE 64
#else
#define FA_WAVE_SIZE 32
#endif

__host__ __device__ constexpr bool has_wmma_gfx11() { return FA_HAS_WMMA_GFX11; }
__host__ __device__ constexpr bool has_mfma_gfx9() { return FA_HAS_MFMA_GFX9; }
__host__ __device__ constexpr bool has_mma_sm80() { return FA_HAS_MMA_SM80; }
__host__ __device__ constexpr int wave_size() { return FA_WAVE_SIZE; }

// ---- device intrinsics ---------------------------------------------------------------------
// The body of a kernel compiled for an arch without its instructions: fail loudly at run time
// (the gates refuse such devices, so reaching it is a dispatch bug). The device-side trap of each
// toolchain: nvcc (CUDA 13) treats __builtin_trap as a host function inside a __global__, and an
// sm_80 pass of an sm_90a-only kernel then fails to compile (README command 1's default archs).
__device__ inline void unsupported_arch() {
#if FA_HIP
  __builtin_trap();
#else
  __trap();
#endif
}

// XOR shuffle within groups of `width` lanes (a power of two <= the wave size). Every lane of
// the wave must call it (no divergence); the CUDA mask is therefore the full warp.
__device__ inline float shfl_xor(float v, int lane_mask, int width) {
#if FA_HIP
  return __shfl_xor(v, lane_mask, width);
#else
  return __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
#endif
}

// Whether `p` holds on some lane of the wave. Every lane must call it, as shfl_xor.
__device__ inline bool warp_any(bool p) {
#if FA_HIP
  return __any(p);
#else
  return __any_sync(0xffffffffu, p);
#endif
}

// 2^x, hardware approximation (about 2 ulp); the kernels' softmax runs in base 2.
__device__ inline float fast_exp2(float x) {
#if FA_HIP
  return exp2f(x);  // v_exp_f32
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}

// log2(x) and 1/x for the epilogue's row factors (x = l >= 1, a row's softmax sum): the hardware
// approximations on NVIDIA (lg2.approx, rcp.approx: about 2^-22 relative, far inside the LSE and
// 16-bit output tolerances), where log2f and the IEEE division took about 55 instructions a row in
// mma_ws_fwd's epilogue (ncu). The library forms elsewhere.
__device__ inline float fast_log2(float x) {
#if FA_HIP
  return log2f(x);
#else
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}
__device__ inline float fast_rcp(float x) {
#if FA_HIP
  return 1.f / x;
#else
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}

// 16-byte global -> shared copies that complete asynchronously where the hardware can
// (cp.async, sm_80+), so a kernel can fetch its next tile while computing on the current one.
// `valid == false` fills the 16 bytes with zeros. Elsewhere they are plain loads and stores.
// L2_PREFETCH (0, 64, 128 or 256 bytes, CUDA only) asks L2 to fetch that much around the address
// from DRAM at once (PTX cp.async's .L2::NB qualifier): worth it for data streamed exactly once.
template <int L2_PREFETCH = 0>
__device__ inline void copy16_async(void* smem, const void* gmem, bool valid) {
#if FA_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  if constexpr (L2_PREFETCH == 0)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0));
  else
    asm volatile("cp.async.cg.shared.global.L2::%3B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0),
                 "n"(L2_PREFETCH));
#else
  *reinterpret_cast<uint4*>(smem) = valid ? *reinterpret_cast<const uint4*>(gmem) : uint4{0u, 0u, 0u, 0u};
#endif
}
__device__ inline void copy_async_commit() {
#if FA_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until at most N of this thread's committed copy groups are still in flight.
template <int N>
__device__ inline void copy_async_wait() {
#if FA_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// A 64-bit device clock for timed waits (the test-only planted delay), whose rate callers measure
// with events: %globaltimer (nanoseconds) on NVIDIA; on AMD the 100 MHz real-time counter,
// through s_memrealtime (gfx8-gfx10) or the REALTIME message (gfx11+: 0x83). ROCm 5.2 has no
// hipDeviceAttributeWallClockRate, and its wall_clock64() returns -1 on gfx11; the cycle counter
// there (HW_REG_SHADER_CYCLES) is 20 bits wide and wraps within a millisecond.
__device__ inline uint64_t wall_ticks() {
#if FA_HIP && __has_builtin(__builtin_amdgcn_s_memrealtime)
  return __builtin_amdgcn_s_memrealtime();
#elif FA_HIP && __has_builtin(__builtin_amdgcn_s_sendmsg_rtnl)
  return __builtin_amdgcn_s_sendmsg_rtnl(0x83);
#elif FA_HIP && defined(__HIP_DEVICE_COMPILE__)
#error "wall_ticks: this AMD arch has neither s_memrealtime nor the REALTIME message"
#elif FA_HIP
  return 0;  // the host pass of a device function: never runs
#else
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

__device__ inline float half_bits_to_float(uint16_t b) { return __half2float(__ushort_as_half(b)); }
__device__ inline uint16_t float_to_half_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ inline float bf16_bits_to_float(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }
__device__ inline uint16_t float_to_bf16_bits(float f) {  // round to nearest even; NaN stays NaN
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace fa::gpu
