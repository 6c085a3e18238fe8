// Layout probe kernels for AMD matrix instructions (fa-bench probe-layout, docs/probe-layout.md):
// one wave runs every iteration of harness/probe/probe_plan.hpp's passes through one instruction
// and writes D's registers raw, so an ISA emulator can run them too: each kernel is
// `extern "C" __global__ void NAME(float* out)`, one wave (64 lanes for MFMA, 32 for WMMA), no other
// argument; out holds probe_floats(shape) floats. Names: fa_probe_mfma_32x32x8_{f16,bf16} (gfx90a,
// gfx94x, gfx950), fa_probe_mfma_32x32x16_fp8 (gfx94x, e4m3fnuz), fa_probe_wmma_16x16x16_{f16,bf16}
// (gfx11), fa_probe_wmma12_16x16x16_{f16,bf16,fp8} (gfx12, OCP e4m3); on other archs a kernel traps.
// Standalone code object: clang++-19 -x hip -std=c++17 -nogpulib --cuda-device-only --no-gpu-bundle-output
//   --offload-arch=gfx942 -O3 -I. -o probe_gfx942.hsaco kernels/amd/probe_layout.hip  (gfx1100, gfx1201 alike)
// fa-bench-isa: gfx942: v_mfma_f32_32x32x8 v_mfma_f32_32x32x16_fp8_fp8
// fa-bench-isa: gfx1100: v_wmma_f32_16x16x16
// fa-bench-isa: gfx1201: v_wmma_f32_16x16x16_f16 v_wmma_f32_16x16x16_bf16 v_wmma_f32_16x16x16_fp8_fp8
#include <type_traits>

#include "harness/probe/probe_plan.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/device/gpu.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/probe_layout.hpp"

#if FA_HIP
namespace fa::gpu::probe_amd {

// Small integers (0..16) into 16-bit inputs: exact in both, so bf16 is the float's top half.
__device__ inline short f16_bits(float x) { return __builtin_bit_cast(short, static_cast<_Float16>(x)); }
__device__ inline short bf16_bits(float x) { return short(__builtin_bit_cast(unsigned, x) >> 16); }
__device__ inline unsigned char e4m3_bits(float x, int bias) { return probe::probe_e4m3_bits(int(x), bias); }

// Every iteration of the plan: lane `lane` fills its A and B slots (Op::a_k, Op::b_k: the table's
// k of a slot, for the K passes), D = A B + 0 through Op::mma, D's registers to out.
template <typename Op>
__device__ inline void run(float* out) {
  constexpr probe::ProbeShape s = Op::shape();
  static_assert(s.digits == 1, "K <= radix: each k is one digit");
  const int lane = __builtin_amdgcn_workitem_id_x();
  // Each slot's bits of 1 + its k, found once, so an iteration encodes nothing: it picks 0, 1 or
  // those bits by probe_value, a few operations a slot. tinygrad's ISA emulator stops a wave after
  // 1M instructions between barriers: the heaviest probe (32x32x16 fp8, 2048 iterations) stays under.
  typename Op::In a_k1, b_k1;
#pragma unroll
  for (int i = 0; i < Op::kSlots; ++i) {
    a_k1[i] = Op::bits(float(1 + Op::a_k(lane, i) % s.radix));
    b_k1[i] = Op::bits(float(1 + Op::b_k(lane, i) % s.radix));
  }
  const auto zero = Op::bits(0.f), one = Op::bits(1.f);
  for (int it = 0; it < probe::probe_iterations(s); ++it) {
    const probe::ProbeStep st = probe::probe_step(s, it);
    typename Op::In a, b;
#pragma unroll
    for (int i = 0; i < Op::kSlots; ++i) {
      const float va = probe::probe_value(s, st, false, lane * Op::kSlots + i, Op::a_k(lane, i));
      const float vb = probe::probe_value(s, st, true, lane * Op::kSlots + i, Op::b_k(lane, i));
      a[i] = va == 0.f ? zero : va == 1.f ? one : a_k1[i];
      b[i] = vb == 0.f ? zero : vb == 1.f ? one : b_k1[i];
    }
    const typename Op::Acc d = Op::mma(a, b);
#pragma unroll
    for (int v = 0; v < Op::kRegs; ++v) out[(long long)it * s.c_slots + lane * Op::kRegs + v] = d[v];
  }
}

typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef short i16x8 __attribute__((ext_vector_type(8)));
typedef unsigned char u8x8 __attribute__((ext_vector_type(8)));
typedef int i32x2 __attribute__((ext_vector_type(2)));
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));
typedef short i16x16 __attribute__((ext_vector_type(16)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x16 __attribute__((ext_vector_type(16)));
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef float f32x8 __attribute__((ext_vector_type(8)));

// v_mfma_f32_32x32x8{f16,bf16_1k}: wave64, 4 input slots and 16 accumulator registers a lane.
template <bool BF>
struct Mfma32x32x8 {
  static constexpr int kLanes = 64, kSlots = 4, kRegs = 16;
  using In = i16x4;
  using Acc = f32x16;
  static constexpr probe::ProbeShape shape() { return {kLanes * kSlots, kLanes * kSlots, kLanes * kRegs, 8, 1}; }
  __device__ static int a_k(int lane, int i) { return frag::mfma_32x32x8_a(lane, i).col; }
  __device__ static int b_k(int lane, int i) { return frag::mfma_32x32x8_b(lane, i).row; }
  __device__ static short bits(float x) { return BF ? bf16_bits(x) : f16_bits(x); }
  __device__ static Acc mma(In a, In b) {
    Acc c = {};
#if FA_ARCH_MFMA_GFX9
    if constexpr (BF) c = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, c, 0, 0, 0);
    else c = __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(f16x4, a), __builtin_bit_cast(f16x4, b), c, 0, 0, 0);
#endif
    return c;
  }
};

// v_wmma_f32_16x16x16_{f16,bf16} (gfx11 wave32): 16 input slots and 8 accumulator registers a lane.
template <bool BF>
struct Wmma16x16x16 {
  static constexpr int kLanes = 32, kSlots = 16, kRegs = 8;
  using In = i16x16;
  using Acc = f32x8;
  static constexpr probe::ProbeShape shape() { return {kLanes * kSlots, kLanes * kSlots, kLanes * kRegs, 16, 1}; }
  __device__ static int a_k(int lane, int i) { return frag::wmma_16x16x16_a(lane, i).col; }
  __device__ static int b_k(int lane, int i) { return frag::wmma_16x16x16_b(lane, i).row; }
  __device__ static short bits(float x) { return BF ? bf16_bits(x) : f16_bits(x); }
  __device__ static Acc mma(In a, In b) {
    Acc c = {};
#if FA_ARCH_WMMA_GFX11
    if constexpr (BF) c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a, b, c);
    else c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(f16x16, a), __builtin_bit_cast(f16x16, b), c);
#endif
    return c;
  }
};

// v_mfma_f32_32x32x16_fp8_fp8 (gfx94x, e4m3fnuz): 8 bytes a lane of A and B; C as 32x32x8's.
struct Mfma32x32x16Fp8 {
  static constexpr int kLanes = 64, kSlots = 8, kRegs = 16;
  using In = u8x8;
  using Acc = f32x16;
  static constexpr probe::ProbeShape shape() { return {kLanes * kSlots, kLanes * kSlots, kLanes * kRegs, 16, 1}; }
  __device__ static int a_k(int lane, int i) { return frag::mfma_32x32x16_a8(lane, i).col; }
  __device__ static int b_k(int lane, int i) { return frag::mfma_32x32x16_b8(lane, i).row; }
  __device__ static unsigned char bits(float x) { return e4m3_bits(x, 8); }
  __device__ static Acc mma(In a, In b) {
    Acc c = {};
#if FA_ARCH_MFMA_FP8 == FA_ARCH_FP8_FNUZ
    c = __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b), c, 0, 0, 0);
#endif
    return c;
  }
};

// v_wmma_f32_16x16x16_{f16,bf16,fp8_fp8} (gfx12 wave32): 8 slots a lane (16-bit, or bytes of OCP
// e4m3), each half-wave its own k; 8 accumulator registers.
template <int KIND>  // 0 f16, 1 bf16, 2 fp8
struct Wmma12 {
  static constexpr int kLanes = 32, kSlots = 8, kRegs = 8;
  using In = std::conditional_t<KIND == 2, u8x8, i16x8>;
  using Acc = f32x8;
  static constexpr probe::ProbeShape shape() { return {kLanes * kSlots, kLanes * kSlots, kLanes * kRegs, 16, 1}; }
  __device__ static int a_k(int lane, int i) {
    return KIND == 2 ? frag::wmma12_16x16x16_a8(lane, i).col : frag::wmma12_16x16x16_a(lane, i).col;
  }
  __device__ static int b_k(int lane, int i) {
    return KIND == 2 ? frag::wmma12_16x16x16_b8(lane, i).row : frag::wmma12_16x16x16_b(lane, i).row;
  }
  __device__ static auto bits(float x) {
    if constexpr (KIND == 2) return e4m3_bits(x, 7);
    else return KIND == 1 ? bf16_bits(x) : f16_bits(x);
  }
  __device__ static Acc mma(In a, In b) {
    Acc c = {};
#if FA_ARCH_WMMA_GFX12
    if constexpr (KIND == 0) c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(__builtin_bit_cast(f16x8, a), __builtin_bit_cast(f16x8, b), c);
    else if constexpr (KIND == 1) c = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(a, b, c);
    else c = __builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12(__builtin_bit_cast(i32x2, a), __builtin_bit_cast(i32x2, b), c);
#endif
    return c;
  }
};

}  // namespace fa::gpu::probe_amd
#define FA_PROBE_BODY(OP, HAS) \
  if constexpr (HAS) fa::gpu::probe_amd::run<fa::gpu::probe_amd::OP>(out); \
  else fa::gpu::unsupported_arch();
#else
#define FA_PROBE_BODY(OP, HAS) fa::gpu::unsupported_arch();
#endif

// The kernels, by stable names (the emulator and --raw dumps refer to them).
#define FA_PROBE_KERNEL(NAME, OP, HAS, LANES) \
  extern "C" __global__ void __launch_bounds__(LANES) NAME(float* out) { FA_PROBE_BODY(OP, HAS) }
FA_PROBE_KERNEL(fa_probe_mfma_32x32x8_f16, Mfma32x32x8<false>, FA_ARCH_MFMA_GFX9, 64)
FA_PROBE_KERNEL(fa_probe_mfma_32x32x8_bf16, Mfma32x32x8<true>, FA_ARCH_MFMA_GFX9, 64)
FA_PROBE_KERNEL(fa_probe_wmma_16x16x16_f16, Wmma16x16x16<false>, FA_ARCH_WMMA_GFX11, 32)
FA_PROBE_KERNEL(fa_probe_wmma_16x16x16_bf16, Wmma16x16x16<true>, FA_ARCH_WMMA_GFX11, 32)
FA_PROBE_KERNEL(fa_probe_mfma_32x32x16_fp8, Mfma32x32x16Fp8, FA_ARCH_MFMA_FP8 == FA_ARCH_FP8_FNUZ, 64)
FA_PROBE_KERNEL(fa_probe_wmma12_16x16x16_f16, Wmma12<0>, FA_ARCH_WMMA_GFX12, 32)
FA_PROBE_KERNEL(fa_probe_wmma12_16x16x16_bf16, Wmma12<1>, FA_ARCH_WMMA_GFX12, 32)
FA_PROBE_KERNEL(fa_probe_wmma12_16x16x16_fp8, Wmma12<2>, FA_ARCH_WMMA_GFX12, 32)
#undef FA_PROBE_KERNEL
#undef FA_PROBE_BODY

namespace fa::gpu {

// The host half: one launch of one wave, out poisoned to NaN first so that an unwritten value
// shows up in the analysis as a value no pass writes.
std::vector<float> probe_launch_amd(const probe::Instr& in) {
  struct Row {
    const char* name;
    void (*kernel)(float*);
    int lanes;
  };
  static constexpr Row rows[] = {{"fa_probe_mfma_32x32x8_f16", fa_probe_mfma_32x32x8_f16, 64},
                                 {"fa_probe_mfma_32x32x8_bf16", fa_probe_mfma_32x32x8_bf16, 64},
                                 {"fa_probe_wmma_16x16x16_f16", fa_probe_wmma_16x16x16_f16, 32},
                                 {"fa_probe_wmma_16x16x16_bf16", fa_probe_wmma_16x16x16_bf16, 32},
                                 {"fa_probe_mfma_32x32x16_fp8", fa_probe_mfma_32x32x16_fp8, 64},
                                 {"fa_probe_wmma12_16x16x16_f16", fa_probe_wmma12_16x16x16_f16, 32},
                                 {"fa_probe_wmma12_16x16x16_bf16", fa_probe_wmma12_16x16x16_bf16, 32},
                                 {"fa_probe_wmma12_16x16x16_fp8", fa_probe_wmma12_16x16x16_fp8, 32}};
  for (const Row& r : rows) {
    if (in.kernel != r.name) continue;
    const size_t n = size_t(probe::probe_floats(in.shape()));
    DeviceBuffer out(n * sizeof(float));
    FA_GPU_CHECK(memset_async(out.as<void>(), 0xFF, n * sizeof(float), nullptr));
    r.kernel<<<1, r.lanes>>>(out.as<float>());
    FA_GPU_CHECK_LAUNCH(r.name);
    FA_GPU_CHECK(stream_sync(nullptr));
    std::vector<float> host(n);
    FA_GPU_CHECK(copy_to_host(host.data(), out.as<void>(), n * sizeof(float)));
    return host;
  }
  throw std::logic_error("kernels/amd/probe_layout.hip has no kernel " + in.kernel);
}

}  // namespace fa::gpu
