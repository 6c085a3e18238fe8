// Split-K combine: for each (batch, head, query row), O = sum_g w_g O_g / sum_g w_g and
// LSE = max + log(sum_g w_g), with w_g = exp(LSE_g - max) in fp32 with precise expf/logf.
// Empty splits (LSE_g = -inf) weigh nothing; a row with every split empty gets O = 0, LSE = -inf.
#include "kernels/launchers.hpp"

namespace fa::gpu {
namespace {

template <typename T>
__global__ void combine_splits(AttnArgs a) {
  const int s = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  float mx = -INFINITY;
  for (int g = 0; g < a.G; ++g) mx = fmaxf(mx, a.lse_part[partial_row(a, b, h, g, s)]);
  uint16_t* orow = a.o + b * a.q_sb + int64_t(s) * a.q_ss + h * a.q_sh;
  const int64_t lse_at = (int64_t(b) * a.H + h) * a.S + s;
  if (mx == -INFINITY) {
    for (int d = threadIdx.x; d < a.D; d += blockDim.x) orow[d] = T::store(0.f);
    if (threadIdx.x == 0) a.lse[lse_at] = -INFINITY;
    return;
  }
  float wsum = 0.f;
  for (int g = 0; g < a.G; ++g) wsum += expf(a.lse_part[partial_row(a, b, h, g, s)] - mx);  // exp(-inf) = 0
  const float inv = 1.f / wsum;
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    float acc = 0.f;
    for (int g = 0; g < a.G; ++g) {
      const int64_t pr = partial_row(a, b, h, g, s);
      const float lg = a.lse_part[pr];
      if (lg != -INFINITY) acc += expf(lg - mx) * a.o_part[pr * a.D + d];
    }
    orow[d] = T::store(acc * inv);
  }
  if (threadIdx.x == 0) a.lse[lse_at] = mx + logf(wsum);
}

}  // namespace

void launch_combine(const AttnArgs& a, DType t, Stream st) {
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    combine_splits<T><<<dim3(a.S, a.H, a.B), a.D <= 64 ? 64 : 128, 0, st>>>(a);
    FA_GPU_CHECK_LAUNCH("combine_splits");
  });
}

}  // namespace fa::gpu
