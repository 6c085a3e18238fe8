// Shared device-side pieces: the one argument block every attention kernel takes, element traits
// for fp16/bf16 storage (and FP8 inputs with bf16 O), and the dispatch from a runtime dtype to a
// traits type.
#pragma once
#include "harness/conventions.hpp"
#include "harness/fp8.hpp"
#include "harness/problem.hpp"
#include "kernels/device/gpu.hpp"

namespace fa::gpu {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct ServingView;

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
  // Serving fields (harness/serving.hpp), on paths whose gates take them; null otherwise. Behind a
  // pointer, so that the argument block of the kernels that never read them stays as it was.
  const ServingView* serving;
  // FP8 inputs: v's descale, applied with 1/l in the epilogue (q's and k's are in scale_log2); 1 otherwise.
  float v_descale;
};

// Device memory, written once per execution (kernels/runtime/gpu_execution.hip).
struct ServingView {
  const int32_t* cu_q;  // thd: B + 1 packed-row offsets of Q and O (q_sb unused); null: dense
  const int32_t* cu_k;  // thd, not paged: of K and V
  const int32_t* q_len; // per-sequence queries (null: S)
  const int32_t* k_len; // per-sequence keys (null: Sk)
  const int32_t* table; // paged: [B][table_row] pool pages; K/V are [pages][page][Hk][D]
  int table_row, page;
  int window_left, window_right;  // FA's window_size; -1 unbounded
  const float* slopes;  // ALiBi per query head (null: none)
  float softcap;        // > 0: s -> softcap * tanh(s / softcap)
};

// Sequence b's queries and keys, and where row s / key j of head h lives (dense, thd or paged):
// the device side of harness/problem.hpp's Strides.
__device__ inline int seq_q(const AttnArgs& a, int b) { return a.serving && a.serving->q_len ? a.serving->q_len[b] : a.S; }
__device__ inline int seq_k(const AttnArgs& a, int b) { return a.serving && a.serving->k_len ? a.serving->k_len[b] : a.Sk; }
__device__ inline int64_t q_at(const AttnArgs& a, int b, int s, int h) {
  const int64_t base = a.serving && a.serving->cu_q ? int64_t(a.serving->cu_q[b]) * a.q_ss : int64_t(b) * a.q_sb;
  return base + int64_t(s) * a.q_ss + int64_t(h) * a.q_sh;
}
// Where the keys of sequence b, kv head hk live, read once a block: the serving view's pointers
// and page size in registers, the page split in 32-bit arithmetic. Per key, k_at below re-reads
// them through a.serving, and a kernel's barriers and async copies keep the compiler from hoisting
// those loads (on the H100 the paged step-llama-gqa8 serving row on mma took 0.30 ms that way,
// 0.20 ms with the rows read once).
struct KeyRows {
  const int32_t* table;  // this sequence's row of the page table; null: not paged
  int64_t base;          // not paged: key 0 of the kv head; paged: the kv head's offset in a row
  int64_t ss;            // elements from one key to the next (inside a page)
  uint32_t page;         // keys a page (paged)
  __device__ int64_t at(int64_t j) const {
    if (!table) return base + j * ss;
    const uint32_t u = uint32_t(j);  // a key index: under 2^31
    return (int64_t(table[u / page]) * page + u % page) * ss + base;
  }
};
__device__ inline KeyRows key_rows(const AttnArgs& a, int b, int hk) {
  const ServingView* v = a.serving;
  if (v && v->table) return {v->table + int64_t(b) * v->table_row, int64_t(hk) * a.k_sh, a.k_ss, uint32_t(v->page)};
  const int64_t base = v && v->cu_k ? int64_t(v->cu_k[b]) * a.k_ss : int64_t(b) * a.k_sb;
  return {nullptr, base + int64_t(hk) * a.k_sh, a.k_ss, 1u};
}
__device__ inline int64_t k_at(const AttnArgs& a, int b, int64_t j, int hk) { return key_rows(a, b, hk).at(j); }
// The keys row s of sequence b sees (causal, window), bottom-right aligned on its own lengths.
__device__ inline KeyRange keys_of(const AttnArgs& a, int b, int s) {
  const int left = a.serving ? a.serving->window_left : -1, right = a.serving ? a.serving->window_right : -1;
  return row_keys(s, seq_q(a, b), seq_k(a, b), a.causal != 0, left, right);
}
__device__ inline bool transforms_scores(const AttnArgs& a) {
  return a.serving && (a.serving->softcap > 0.f || a.serving->slopes);
}
// The score transform (softcap, ALiBi) of one sequence and query head, read once: a kernel that
// reads it through a.serving on every score waits on those loads each time (on the H100 a 256-query
// ALiBi prefill on mma: 59 us that way, 42 us read once, 12 us without ALiBi). apply(): a score in
// the log2 domain the kernels keep (scale * log2(e) * q.k), transformed on the natural-log score
// and mapped back.
struct ScoreMod {
  bool on = false, alibi = false;
  float softcap = 0.f, slope = 0.f;
  int64_t off = 0;  // the sequence's keys minus its queries: row s sits at key s + off
  __device__ float apply(float x_log2, int s, int64_t j) const {
    return transformed_score(x_log2 * kLn2, softcap, alibi ? &slope : nullptr, s, off, j) * kLog2e;
  }
};
__device__ inline ScoreMod score_mod(const AttnArgs& a, int b, int h) {
  ScoreMod m;
  if (!transforms_scores(a)) return m;
  m.on = true, m.alibi = a.serving->slopes != nullptr, m.softcap = a.serving->softcap;
  m.slope = m.alibi ? a.serving->slopes[h] : 0.f;
  m.off = int64_t(seq_k(a, b)) - seq_q(a, b);
  return m;
}
__device__ inline float transform_score(const AttnArgs& a, float x_log2, int b, int h, int s, int64_t j) {
  return score_mod(a, b, h).apply(x_log2, s, j);
}

// Element traits: get() reads element i's bits from an input tensor (AttnArgs' q, k, v), load()
// widens those bits to fp32, store() rounds an output to O's dtype.
struct F16 {
  static constexpr bool kFp8 = false;
  __device__ static uint16_t get(const uint16_t* t, int64_t i) { return t[i]; }
  __device__ static float load(uint16_t b) { return half_bits_to_float(b); }
  __device__ static uint16_t store(float f) { return float_to_half_bits(f); }
};
struct BF16 {
  static constexpr bool kFp8 = false;
  __device__ static uint16_t get(const uint16_t* t, int64_t i) { return t[i]; }
  __device__ static float load(uint16_t b) { return bf16_bits_to_float(b); }
  __device__ static uint16_t store(float f) { return float_to_bf16_bits(f); }
};
// FP8 inputs (harness/fp8.hpp's formats, K names one): one byte an element, O in bf16.
template <Fp8Kind K>
struct FP8 {
  static constexpr bool kFp8 = true;
  static constexpr Fp8Kind kKind = K;
  __device__ static uint16_t get(const uint16_t* t, int64_t i) { return reinterpret_cast<const uint8_t*>(t)[i]; }
  __device__ static float load(uint16_t b) {
    return fp8_via_half(b, fp8_format(K), [](uint16_t h) { return half_bits_to_float(h); });
  }
  __device__ static uint16_t store(float f) { return float_to_bf16_bits(f); }
};
using E4M3 = FP8<Fp8Kind::e4m3>;
using E5M2 = FP8<Fp8Kind::e5m2>;
using E4M3Fnuz = FP8<Fp8Kind::e4m3fnuz>;
using E5M2Fnuz = FP8<Fp8Kind::e5m2fnuz>;

// Calls f(F16{}) or f(BF16{}): the 16-bit dtypes, which every tensor-core path takes.
template <typename F>
void with_dtype(DType t, F&& f) {
  if (t == DType::bf16) f(BF16{});
  else f(F16{});
}
// Also f(E4M3{}) or f(E5M2{}): the OCP FP8 formats, for wgmma (Hopper has no FNUZ).
template <typename F>
void with_ocp_dtype(DType t, F&& f) {
  if (t == DType::fp8_e4m3) f(E4M3{});
  else if (t == DType::fp8_e5m2) f(E5M2{});
  else with_dtype(t, f);
}
// The FNUZ FP8 formats (gfx94x's MFMA) and the 16-bit dtypes, for mfma.
template <typename F>
void with_fnuz_dtype(DType t, F&& f) {
  if (t == DType::fp8_e4m3fnuz) f(E4M3Fnuz{});
  else if (t == DType::fp8_e5m2fnuz) f(E5M2Fnuz{});
  else with_dtype(t, f);
}
// Every input dtype but fp32, FNUZ included, for the paths with scalar loads (naive, tiled).
template <typename F>
void with_any_dtype(DType t, F&& f) {
  if (is_fnuz(t)) with_fnuz_dtype(t, f);
  else with_ocp_dtype(t, f);
}

// The LSE output's one index convention, [B][H][S]: every kernel that writes a final LSE goes through it.
__device__ inline int64_t lse_row(const AttnArgs& a, int b, int h, int s) { return (int64_t(b) * a.H + h) * a.S + s; }

// The partials' index, [B][H][G][S] (rows of D floats in o_part).
__device__ inline int64_t partial_row(const AttnArgs& a, int b, int h, int g, int s) {
  return ((int64_t(b) * a.H + h) * a.G + g) * a.S + s;
}

}  // namespace fa::gpu
