// Input generation: parallel over pairs of elements, each a pure function of (seed, stream, index).
#include "harness/inputs.hpp"

#include <algorithm>
#include <cmath>

#include "harness/rng.hpp"

namespace fa {
namespace {

// The normals of pairs [begin, end) into z (two a pair). The draw's arithmetic is explicit fma
// (harness/normal_draw.hpp); where the build's baseline has no FMA (the portable x86-64 build that
// travels to GPU machines), std::fma is a libm call and a pair took 168 ns against 47, so x86-64
// gets an FMA clone chosen at load time. Same bits either way: fma rounds once in both.
#if defined(__x86_64__) && !defined(__FMA__)
__attribute__((target_clones("fma", "default")))
#endif
void draw_pairs(uint64_t seed, uint32_t stream, int64_t begin, int64_t end, float* z) {
  for (int64_t pr = begin; pr < end; ++pr) rng::normal_pair(seed, stream, uint64_t(pr), z[2 * (pr - begin)], z[2 * (pr - begin) + 1]);
}

// Element e of the logical padded BSHD tensor [B][seq][heads][D] is normal_at(seed, stream, e),
// whatever the layout; a row past its sequence's length (len_of) has no storage in a packed or paged
// tensor and is skipped there. Storage no row maps to (a page's unused tail) stays 0.
template <typename Len>
void fill(std::vector<float>& out, const Problem& p, uint32_t stream, int64_t seq, int64_t heads, int64_t elements,
          const Strides& st, Len&& len_of) {
  out.assign(size_t(elements), 0.f);
  const int64_t n = p.B * seq * heads * p.D;
  const int64_t pairs = (n + 1) / 2;
  const bool dense = st.affine();
  constexpr int64_t kBlock = 512;  // pairs a draw_pairs call
#pragma omp parallel for schedule(static)
  for (int64_t p0 = 0; p0 < pairs; p0 += kBlock) {
    float z[2 * kBlock];
    const int64_t p1 = std::min(pairs, p0 + kBlock);
    draw_pairs(p.seed, stream, p0, p1, z);
    for (int64_t e = 2 * p0; e < std::min(n, 2 * p1); ++e) {
      // e is the logical BSHD index ((b*seq + s)*heads + h)*D + d.
      const int64_t d = e % p.D, h = (e / p.D) % heads, s = (e / (p.D * heads)) % seq, b = e / (p.D * heads * seq);
      if (!dense && s >= len_of(b)) continue;
      out[size_t(st.at(b, s, h) + d)] = z[e - 2 * p0];
    }
  }
}

// The drawn values onto the dtype's grid; returns the descale (1 unless FP8). FP8: the tensor's
// largest |x| maps to the format's largest finite value, as per-tensor quantisation (FA3's and
// aiter's FP8 tests, Transformer Engine's delayed scaling with a fresh amax) does.
float quantise(std::vector<float>& x, DType t) {
  float descale = 1.f;
  if (is_fp8(t)) {
    float amax = 0.f;
#pragma omp parallel for reduction(max : amax) schedule(static)
    for (size_t i = 0; i < x.size(); ++i) amax = std::max(amax, std::fabs(x[i]));
    if (amax > 0.f) descale = float(amax / dtype_max(t));
  }
  const float inv = 1.f / descale;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < x.size(); ++i) x[i] = round_to(t, x[i] * inv);
  return descale;
}

}  // namespace

AppendedSlots appended_slots(const Problem& p) {
  AppendedSlots a;
  const Strides ks = kv_strides(p);
  a.head = ks.head, a.Hk = p.Hk, a.D = p.D;
  if (!p.kv_cache) return a;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t j = p.cache_begin(b); j < p.k_len(b); ++j) a.row.push_back(ks.at(b, j, 0));
  return a;
}

HostInputs make_inputs(const Problem& p) {
  HostInputs in;
  const ServingShape& sh = p.serving();  // once, outside the parallel loops
  const auto q_len = [&](int64_t b) { return sh.q_len[size_t(b)]; };
  const auto k_len = [&](int64_t b) { return sh.k_len[size_t(b)]; };
  fill(in.q, p, 1, p.S, p.H, p.q_elements(), q_strides(p), q_len);
  const Strides ks = kv_strides(p);
  fill(in.k, p, 2, p.Sk, p.Hk, p.kv_elements(), ks, k_len);
  fill(in.v, p, 3, p.Sk, p.Hk, p.kv_elements(), ks, k_len);
  in.descale = {quantise(in.q, p.dtype), quantise(in.k, p.dtype), quantise(in.v, p.dtype)};
  in.seeded = true;
  return in;
}

TypedBuffer to_typed(DType t, const std::vector<float>& values) {
  TypedBuffer b(t, int64_t(values.size()));
  const int64_t n = int64_t(values.size());
#pragma omp parallel for schedule(static)  // GBs of K and V on long-context rows
  for (int64_t i = 0; i < n; ++i) b.set(i, values[size_t(i)]);
  return b;
}

}  // namespace fa
