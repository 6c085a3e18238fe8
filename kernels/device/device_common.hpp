// Shared device-side pieces: the one argument block every attention kernel takes, element traits
// for fp16/bf16 storage, and the dispatch from a runtime dtype to a traits type.
#pragma once
#include "harness/conventions.hpp"
#include "harness/problem.hpp"
#include "kernels/device/gpu.hpp"

namespace fa::gpu {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct AttnArgs {
  const uint16_t* q;
  const uint16_t* k;
  const uint16_t* v;
  uint16_t* o;
  float* lse;                   // [B][H][S], natural log
  int64_t q_sb, q_ss, q_sh;     // Q and O strides (elements)
  int64_t k_sb, k_ss, k_sh;     // K and V strides
  int B, H, Hk, S, Sk, D;
  int causal;
  float scale_log2;             // softmax scale * log2(e): scores go straight to exp2
  int G;                        // splits; > 1: write partials instead of O/LSE
  float* o_part;                // [B][H][G][S][D]
  float* lse_part;              // [B][H][G][S]
};

AttnArgs make_args(const Problem& p);  // sizes, strides, scale; pointers left null

struct F16 {
  __device__ static float load(uint16_t b) { return half_bits_to_float(b); }
  __device__ static uint16_t store(float f) { return float_to_half_bits(f); }
};
struct BF16 {
  __device__ static float load(uint16_t b) { return bf16_bits_to_float(b); }
  __device__ static uint16_t store(float f) { return float_to_bf16_bits(f); }
};

// Calls f(F16{}) or f(BF16{}); GPU paths take 16-bit dtypes only (their gates say so).
template <typename F>
void with_dtype(DType t, F&& f) {
  if (t == DType::bf16) f(BF16{});
  else f(F16{});
}

// The LSE output's one index convention, [B][H][S]: every kernel that writes a final LSE goes through it.
__device__ inline int64_t lse_row(const AttnArgs& a, int b, int h, int s) { return (int64_t(b) * a.H + h) * a.S + s; }

// The partials' index, [B][H][G][S] (rows of D floats in o_part).
__device__ inline int64_t partial_row(const AttnArgs& a, int b, int h, int g, int s) {
  return ((int64_t(b) * a.H + h) * a.G + g) * a.S + s;
}

}  // namespace fa::gpu
