// Layout probe kernels for NVIDIA matrix instructions (fa-bench probe-layout, docs/probe-layout.md):
// one launch runs every iteration of harness/probe/probe_plan.hpp's passes through one instruction,
// with the kernels' own wrappers (mma_sm80.hpp's mma16816, wgmma_sm90.hpp's rs and descriptor), and
// writes D's registers raw. Kernels `extern "C" __global__ void NAME(float* out)`:
// fa_probe_mma_m16n8k16_{f16,bf16}: one warp (sm_80+).
// fa_probe_wgmma_m64n{64,128}k16_f16: one warpgroup (sm_90a); A from registers, B in shared memory
// as 16 rows of the 128-byte swizzle, MN-major (the transposed form P V uses), 1024-byte aligned.
// fa-bench-isa: sm_90a: mma.sync.aligned.m16n8k16 wgmma.mma_async.sync.aligned.m64n64k16 wgmma.mma_async.sync.aligned.m64n128k16
#include "harness/probe/probe_plan.hpp"
#include "kernels/mma/wgmma_sm90.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/probe_layout.hpp"

namespace fa::gpu {
namespace {

template <typename T>
__device__ inline void probe_mma_m16n8k16(float* out) {
#if FA_HAS_MMA_SM80
  constexpr probe::ProbeShape s{32 * 8, 32 * 4, 32 * 4, 16, 1};
  const int lane = threadIdx.x;
  for (int it = 0; it < probe::probe_iterations(s); ++it) {
    const probe::ProbeStep st = probe::probe_step(s, it);
    float av[8], bv[4];
#pragma unroll
    for (int i = 0; i < 8; ++i) av[i] = probe::probe_value(s, st, false, lane * 8 + i, frag::mma_m16n8k16_a(lane, i).col);
#pragma unroll
    for (int i = 0; i < 4; ++i) bv[i] = probe::probe_value(s, st, true, lane * 4 + i, frag::mma_m16n8k16_b(lane, i).row);
    const uint32_t a[4] = {pack2<T>(av[0], av[1]), pack2<T>(av[2], av[3]), pack2<T>(av[4], av[5]), pack2<T>(av[6], av[7])};
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    mma16816<T>(d, a, pack2<T>(bv[0], bv[1]), pack2<T>(bv[2], bv[3]));
#pragma unroll
    for (int v = 0; v < 4; ++v) out[(long long)it * s.c_slots + lane * 4 + v] = d[v];
  }
#else
  unsupported_arch();
#endif
}

// The B tile: 16 k-rows x N columns, (k, n) at frag::wgmma_sw128_offset(k, n, 16).
template <int N>
__device__ inline void probe_wgmma_m64nNk16(float* out) {
#if FA_HAS_WGMMA_SM90
  constexpr probe::ProbeShape s{128 * 8, 16 * N, 128 * (N / 2), 16, 1};
  __shared__ alignas(1024) uint16_t tile[16 * N];
  constexpr frag::DescStrides vd = frag::wgmma_sw128_mnmajor(16);
  const int t = threadIdx.x;
  for (int it = 0; it < probe::probe_iterations(s); ++it) {
    const probe::ProbeStep st = probe::probe_step(s, it);
    for (int idx = t; idx < 16 * N; idx += 128) {
      const int k = idx / N, n = idx % N, e = frag::wgmma_sw128_offset(k, n, 16) / 2;
      tile[e] = F16::store(probe::probe_value(s, st, true, e, k));
    }
    wg::fence_smem_for_async();
    __syncthreads();
    float av[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) av[i] = probe::probe_value(s, st, false, t * 8 + i, frag::wgmma_m64nNk16_a(t, i).col);
    const uint32_t a[4] = {pack2<F16>(av[0], av[1]), pack2<F16>(av[2], av[3]), pack2<F16>(av[4], av[5]),
                           pack2<F16>(av[6], av[7])};
    float d[N / 2];
#pragma unroll
    for (int v = 0; v < N / 2; ++v) d[v] = 0.f;
    wg::fence();
    wg::rs<F16>(d, a, wg::desc(tile, vd.lbo, vd.sbo));
    wg::commit();
    wg::wait<0>();
    wg::pin(d);
#pragma unroll
    for (int v = 0; v < N / 2; ++v) out[(long long)it * s.c_slots + t * (N / 2) + v] = d[v];
    __syncthreads();  // every thread's wgmma has read the tile before the next iteration rewrites it
  }
#else
  unsupported_arch();
#endif
}

}  // namespace

// The kernels by stable names, as the AMD ones (kernels/amd/probe_layout.hip).
extern "C" __global__ void __launch_bounds__(32) fa_probe_mma_m16n8k16_f16(float* out) { probe_mma_m16n8k16<F16>(out); }
extern "C" __global__ void __launch_bounds__(32) fa_probe_mma_m16n8k16_bf16(float* out) { probe_mma_m16n8k16<BF16>(out); }
extern "C" __global__ void __launch_bounds__(128) fa_probe_wgmma_m64n64k16_f16(float* out) { probe_wgmma_m64nNk16<64>(out); }
extern "C" __global__ void __launch_bounds__(128) fa_probe_wgmma_m64n128k16_f16(float* out) { probe_wgmma_m64nNk16<128>(out); }

// The host half: one launch, out poisoned to NaN first so that an unwritten value shows up in the
// analysis as a value no pass writes.
std::vector<float> probe_launch_nvidia(const probe::Instr& in) {
  struct Row {
    const char* name;
    void (*kernel)(float*);
    int threads;
  };
  static const Row rows[] = {{"fa_probe_mma_m16n8k16_f16", fa_probe_mma_m16n8k16_f16, 32},
                             {"fa_probe_mma_m16n8k16_bf16", fa_probe_mma_m16n8k16_bf16, 32},
                             {"fa_probe_wgmma_m64n64k16_f16", fa_probe_wgmma_m64n64k16_f16, 128},
                             {"fa_probe_wgmma_m64n128k16_f16", fa_probe_wgmma_m64n128k16_f16, 128}};
  for (const Row& r : rows) {
    if (in.kernel != r.name) continue;
    const size_t n = size_t(probe::probe_floats(in.shape()));
    DeviceBuffer out(n * sizeof(float));
    FA_GPU_CHECK(memset_async(out.as<void>(), 0xFF, n * sizeof(float), nullptr));
    r.kernel<<<1, r.threads>>>(out.as<float>());
    FA_GPU_CHECK_LAUNCH(r.name);
    FA_GPU_CHECK(stream_sync(nullptr));
    std::vector<float> host(n);
    FA_GPU_CHECK(copy_to_host(host.data(), out.as<void>(), n * sizeof(float)));
    return host;
  }
  throw std::logic_error("kernels/mma/probe_layout.hip has no kernel " + in.kernel);
}

}  // namespace fa::gpu
