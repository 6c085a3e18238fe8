// Device discovery for the gates and the results' metadata: name, arch, units, memory, caches
// (L2 as reported; AMD's Infinity Cache from harness/device_model.cpp's table), clocks, bus width,
// runtime versions and the capability flags (from the one arch table, kernels/device/arch_table.hpp).
// A binary without code for the device's arch reports it here, loudly, and every GPU path then
// skips with that reason.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "harness/device_model.hpp"
#include "kernels/device/arch_table.hpp"
#include "kernels/device/gpu.hpp"
#include "kernels/runtime/gpu_device.hpp"

namespace fa::gpu {

namespace {
__global__ void probe_kernel(int* x) {
  if (x) *x = wave_size();
}
}  // namespace

DeviceFacts query_device() {
  DeviceFacts f;
  int n = 0;
  if (device_count(&n) != kSuccess || n == 0) {
    last_error();
    f.gpu_absent_why = fmt::format("no GPU device found ({} backend built in)",
#if FA_HIP
                                   "hip"
#else
                                   "cuda"
#endif
    );
    return f;
  }
  f.device_count = n;
  int rt = 0;
  runtime_version(&rt);
#if FA_HIP
  hipDeviceProp_t pr;
  FA_GPU_CHECK(hipGetDeviceProperties(&pr, 0));
  f.name = pr.name;
  f.arch = pr.gcnArchName;
  f.units = pr.multiProcessorCount;
  f.wave_size = pr.warpSize;
  f.memory_bytes = pr.totalGlobalMem;
  f.l2_bytes = size_t(pr.l2CacheSize);
  f.sm_clock_mhz = pr.clockRate / 1000;
  f.mem_clock_mhz = pr.memoryClockRate / 1000;
  f.mem_bus_bits = pr.memoryBusWidth;  // in hipDeviceProp_t since ROCm 1.x (HIP 5.2 and 7.x alike)
  f.pci = {pr.pciDomainID, pr.pciBusID, pr.pciDeviceID};
  // No HIP release reports the MALL: gcnArchName and the CU count pick its row.
  f.llc_bytes = llc_table_bytes(f.arch, f.units);
  f.runtime = fmt::format("HIP {}", rt);
  const AmdArchCaps caps = amd_arch_caps(pr.gcnArchName);
  f.has_mfma_gfx9 = caps.mfma_gfx9;
  f.has_wmma_gfx11 = caps.wmma_gfx11;
  f.has_wmma_gfx12 = caps.wmma_gfx12;
  f.matrix_fp8_fnuz = caps.fp8 == MatrixFp8::fnuz;
  f.matrix_fp8_ocp = caps.fp8 == MatrixFp8::ocp;
  hipFuncAttributes attr;
  const Error probe = hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(probe_kernel));
#else
  cudaDeviceProp pr;
  FA_GPU_CHECK(cudaGetDeviceProperties(&pr, 0));
  f.name = pr.name;
  f.arch = fmt::format("sm_{}{}", pr.major, pr.minor);
  f.units = pr.multiProcessorCount;
  f.wave_size = pr.warpSize;
  f.memory_bytes = pr.totalGlobalMem;
  f.l2_bytes = size_t(pr.l2CacheSize);
  f.pci = {pr.pciDomainID, pr.pciBusID, pr.pciDeviceID};
  int clk = 0, mclk = 0, bus = 0;
  if (cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0) == cudaSuccess) f.sm_clock_mhz = clk / 1000;
  if (cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, 0) == cudaSuccess) f.mem_clock_mhz = mclk / 1000;
  if (cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, 0) == cudaSuccess) f.mem_bus_bits = bus;
  last_error();
  int drv = 0;
  cudaDriverGetVersion(&drv);
  f.runtime = fmt::format("CUDA runtime {}.{}, driver {}.{}", rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10);
  f.has_mma_sm80 = pr.major >= 8;
#ifdef FABENCH_CUDA_SM90A  // sm_90a code runs on sm_90 alone (not on later archs)
  f.has_wgmma_sm90a = pr.major == 9 && pr.minor == 0;
#endif
  cudaFuncAttributes attr;
  const Error probe = cudaFuncGetAttributes(&attr, probe_kernel);
#endif
  if (probe != kSuccess) {
    last_error();
    f.gpu_absent_why = fmt::format("this binary has no code for {} ({}): rebuild with that arch in FABENCH_{}_ARCHS",
                                   f.arch, error_string(probe),
#if FA_HIP
                                   "HIP"
#else
                                   "CUDA"
#endif
    );
    spdlog::error("{}", f.gpu_absent_why);
    return f;
  }
  f.gpu = true;
  return f;
}

}  // namespace fa::gpu
