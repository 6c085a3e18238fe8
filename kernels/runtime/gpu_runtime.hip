// Device discovery for the gates and the results' metadata, and the error path of FA_GPU_CHECK.
// A binary without code for the device's arch reports it here, loudly, and every GPU path then
// skips with that reason.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/device/gpu.hpp"
#include "kernels/gpu_device.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {

void throw_error(Error e, const char* call, const char* file, int line) {
  const std::string msg = fmt::format("{} failed: {} ({}:{})", call, error_string(e), file, line);
  if (is_oom(e)) throw OutOfMemory(msg);
  throw std::runtime_error(msg);
}

void check_last_launch(const char* kernel_name, const char* file, int line) {
  const Error e = last_error();
  if (e != kSuccess) throw_error(e, fmt::format("launch of {}", kernel_name).c_str(), file, line);
}

double copy_bandwidth_gbps(size_t bytes, int reps) {
  void *src = nullptr, *dst = nullptr;
  FA_GPU_CHECK(malloc_device(&src, bytes));
  FA_GPU_CHECK(malloc_device(&dst, bytes));
  Event a, b;
  FA_GPU_CHECK(event_create(&a));
  FA_GPU_CHECK(event_create(&b));
  FA_GPU_CHECK(memset_async(src, 1, bytes, nullptr));
  std::vector<float> ms(static_cast<size_t>(reps));
  for (int i = -1; i < reps; ++i) {  // i = -1: warm-up
    FA_GPU_CHECK(event_record(a, nullptr));
    FA_GPU_CHECK(copy_on_device(dst, src, bytes, nullptr));
    FA_GPU_CHECK(event_record(b, nullptr));
    FA_GPU_CHECK(stream_sync(nullptr));
    if (i >= 0) FA_GPU_CHECK(event_elapsed_ms(&ms[size_t(i)], a, b));
  }
  event_destroy(a);
  event_destroy(b);
  free_device(src);
  free_device(dst);
  std::sort(ms.begin(), ms.end());
  return 2.0 * double(bytes) / (double(ms[ms.size() / 2]) * 1e-3) / 1e9;
}

namespace {
constexpr int64_t kMaxD = 256;  // the largest head dimension any GPU path specialises for
}  // namespace

std::optional<std::string> common_gpu_gate(const Problem& p, const GateContext& ctx) {
  if (!ctx.device.gpu) return ctx.device.gpu_absent_why;
  if (p.dtype == DType::fp32) return std::string("GPU paths take fp16/bf16 inputs");
  if (p.D > kMaxD) return fmt::format("D={} > {}", p.D, kMaxD);
  if (p.B * p.H * p.S > (int64_t(1) << 31) - 1) return std::string("B*H*S exceeds 2^31 rows");
  return std::nullopt;
}

std::string common_gpu_gate_doc() { return fmt::format("fp16/bf16; D <= {}", kMaxD); }

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
  f.runtime = fmt::format("HIP {}", rt);
  const std::string a = f.arch;
  f.has_mfma_gfx9 = a.rfind("gfx90a", 0) == 0 || a.rfind("gfx94", 0) == 0 || a.rfind("gfx95", 0) == 0;
  f.has_wmma_gfx11 = a.rfind("gfx11", 0) == 0;  // gfx12's WMMA differs (kernels/device/gpu.hpp)
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
  int clk = 0, mclk = 0;
  if (cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0) == cudaSuccess) f.sm_clock_mhz = clk / 1000;
  if (cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, 0) == cudaSuccess) f.mem_clock_mhz = mclk / 1000;
  last_error();
  int drv = 0;
  cudaDriverGetVersion(&drv);
  f.runtime = fmt::format("CUDA runtime {}.{}, driver {}.{}", rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10);
  f.has_mma_sm80 = pr.major >= 8;
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
