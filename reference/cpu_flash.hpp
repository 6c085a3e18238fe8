// cpu-flash: FlashAttention-2 forward on the CPU, in fp32, with the loop structure the GPU paths
// use: BLOCK_M query rows per task, BLOCK_N key tiles, online softmax (m, l, acc), unnormalised P
// rounded to the dtype before PV (FP8 inputs: to e4m3, as FA3), causal tile skip. With G > 1 each task covers one split of the
// block's live key range and writes fp32 partial O_g and LSE_g; combine_splits() folds them.
#pragma once
#include <vector>

#include "harness/inputs.hpp"
#include "harness/problem.hpp"
#include "harness/reference_result.hpp"

namespace fa {

constexpr int kCpuBlockM = 64, kCpuBlockN = 64;

struct SplitPartials {
  std::vector<float> o;    // [B][H][G][S][D]
  std::vector<float> lse;  // [B][H][G][S]; -inf for an empty split or a masked row
};

// k, v: all Sk keys in the problem's layout. G in {0, 1, 2, 4, 8, 16}; partials sized inside.
// FP8 inputs: ds are their descales (q and k's fold into the scores' scale, v's into the epilogue,
// as FA3 does) and P is rounded to fp8_p before PV.
void cpu_flash_forward(const Problem& p, const float* q, const float* k, const float* v, int G, TypedBuffer& o,
                       std::vector<float>& lse, SplitPartials& partials, const Descales& ds = {},
                       DType fp8_p = kFp8PDefault);

// O = sum_g w_g O_g / sum_g w_g with w_g = exp(LSE_g - max LSE); rows whose splits are all empty
// get O = 0 and LSE = -inf. Writes O in the problem's layout and dtype.
void combine_splits(const Problem& p, int G, const SplitPartials& partials, TypedBuffer& o, std::vector<float>& lse);

}  // namespace fa
