// Inputs drawn on the device (kernels/runtime/device_inputs.hpp). One thread a pair of elements,
// grid-stride: each pair is rng::normal_pair of its index, as harness/inputs.cpp's fill() draws it
// on the host, and lands at the same storage offset (element e of the logical BSHD tensor at
// b batch + s seq + h head + d). FP8 takes two passes: the tensor's amax (an atomic max of |x|'s
// bits, which order as the non-negative floats do), then x / descale encoded by harness/fp8.hpp's
// fp8_encode, the host's own rounding.
#include "kernels/runtime/device_inputs.hpp"

#include <algorithm>
#include <cmath>

#include "harness/normal_draw.hpp"
#include "kernels/runtime/gpu_device.hpp"

namespace fa::gpu {
namespace {

struct DrawShape {
  int64_t n, D, heads, seq;  // the logical BSHD tensor [B][seq][heads][D], n elements
  int64_t batch, seq_stride, head;  // its storage strides (Strides' batch, seq, head)
  uint64_t seed;
  uint32_t stream;
};

template <typename Put>
__device__ void each_element(const DrawShape& s, Put put) {
  const int64_t pairs = (s.n + 1) / 2;
  for (int64_t pr = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; pr < pairs; pr += int64_t(gridDim.x) * blockDim.x) {
    float z[2];
    rng::normal_pair(s.seed, s.stream, uint64_t(pr), z[0], z[1]);
    for (int k = 0; k < 2; ++k) {
      const int64_t e = 2 * pr + k;
      if (e >= s.n) break;
      const int64_t d = e % s.D, h = (e / s.D) % s.heads, t = (e / (s.D * s.heads)) % s.seq;
      const int64_t b = e / (s.D * s.heads * s.seq);
      put(b * s.batch + t * s.seq_stride + h * s.head + d, z[k]);
    }
  }
}

__global__ void draw_amax(DrawShape s, unsigned* amax_bits) {
  float m = 0.f;
  each_element(s, [&](int64_t, float x) { m = fmaxf(m, fabsf(x)); });
  atomicMax(amax_bits, __float_as_uint(m));
}

__global__ void draw_16(DrawShape s, uint16_t* dst, bool bf16) {
  each_element(s, [&](int64_t at, float x) { dst[at] = bf16 ? float_to_bf16_bits(x) : float_to_half_bits(x); });
}

__global__ void draw_32(DrawShape s, float* dst) {
  each_element(s, [&](int64_t at, float x) { dst[at] = x; });
}

__global__ void draw_8(DrawShape s, uint8_t* dst, float inv, Fp8Format f, float max) {
  each_element(s, [&](int64_t at, float x) { dst[at] = uint8_t(fp8_encode(x * inv, f, max)); });
}

DrawShape shape_of(const Problem& p, uint32_t stream) {
  const bool q = stream == 1;
  const Strides st = q ? q_strides(p) : kv_strides(p);
  DrawShape s{};
  s.seq = q ? p.S : p.Sk, s.heads = q ? p.H : p.Hk, s.D = p.D;
  s.n = p.B * s.seq * s.heads * p.D;
  s.batch = st.batch, s.seq_stride = st.seq, s.head = st.head;
  s.seed = p.seed, s.stream = stream;
  return s;
}

// Pairs a thread: enough blocks to fill any device, a grid-stride loop past that.
dim3 grid_for(const DrawShape& s) { return dim3(unsigned(std::clamp<int64_t>((s.n / 2 + 255) / 256, 1, 4096))); }

}  // namespace

float draw_tensor(const Problem& p, uint32_t stream, DeviceBuffer& dst, Stream st) {
  const DrawShape s = shape_of(p, stream);
  const size_t elements = size_t(stream == 1 ? p.q_elements() : p.kv_elements());
  dst = DeviceBuffer(elements * size_t(dtype_bytes(p.dtype)));
  const dim3 grid = grid_for(s);
  float descale = 1.f;
  if (is_fp8(p.dtype)) {  // harness/inputs.cpp's quantise: descale = amax / dtype_max, in double, then fp32
    DeviceBuffer amax(sizeof(unsigned));
    FA_GPU_CHECK(memset_async(amax.as<void>(), 0, sizeof(unsigned), st));
    draw_amax<<<grid, 256, 0, st>>>(s, amax.as<unsigned>());
    FA_GPU_CHECK_LAUNCH("draw_amax");
    unsigned bits = 0;
    FA_GPU_CHECK(stream_sync(st));
    FA_GPU_CHECK(copy_to_host(&bits, amax.as<void>(), sizeof bits));
    const float a = fp32_from_bits(bits);
    if (a > 0.f) descale = float(a / dtype_max(p.dtype));
    const DTypeRow& r = dtype_row(p.dtype);
    draw_8<<<grid, 256, 0, st>>>(s, dst.as<uint8_t>(), 1.f / descale, fp8_of(r), float(r.max));
    FA_GPU_CHECK_LAUNCH("draw_8");
  } else if (p.dtype == DType::fp32) {
    draw_32<<<grid, 256, 0, st>>>(s, dst.as<float>());
    FA_GPU_CHECK_LAUNCH("draw_32");
  } else {
    draw_16<<<grid, 256, 0, st>>>(s, dst.as<uint16_t>(), p.dtype == DType::bf16);
    FA_GPU_CHECK_LAUNCH("draw_16");
  }
  FA_GPU_CHECK(stream_sync(st));
  return descale;
}

std::vector<uint8_t> drawn_input_bytes(const Problem& p, uint32_t stream) {
  return drawn_on_device(p) ? drawn_bytes(p, stream, nullptr) : std::vector<uint8_t>();
}

std::vector<uint8_t> drawn_bytes(const Problem& p, uint32_t stream, Stream st) {
  DeviceBuffer d;
  draw_tensor(p, stream, d, st);
  std::vector<uint8_t> host(d.bytes());
  FA_GPU_CHECK(copy_to_host(host.data(), d.as<void>(), host.size()));
  return host;
}

}  // namespace fa::gpu
