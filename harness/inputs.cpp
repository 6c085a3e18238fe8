// Input generation: parallel over pairs of elements, each a pure function of (seed, stream, index).
#include "harness/inputs.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

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

// Q at positions `rows` alone, as [B][rows][H][D]: position s of sequence b is the logical BSHD
// elements [((b*S + s)*H)*D, +H*D), drawn pair by pair as fill draws them (a run may start or end
// inside a pair).
void fill_rows(std::vector<float>& out, const Problem& p, const std::vector<int64_t>& rows) {
  const int64_t R = int64_t(rows.size()), HD = p.H * p.D;
  out.assign(size_t(p.B * R * HD), 0.f);
#pragma omp parallel for schedule(static)
  for (int64_t br = 0; br < p.B * R; ++br) {
    const int64_t e0 = (br / R * p.S + rows[size_t(br % R)]) * HD;  // the run's first logical element
    const int64_t p0 = e0 / 2, p1 = (e0 + HD + 1) / 2;
    std::vector<float> z(size_t(2 * (p1 - p0)));
    draw_pairs(p.seed, 1, p0, p1, z.data());
    std::copy_n(z.begin() + (e0 - 2 * p0), HD, out.begin() + br * HD);
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

bool drawn_on_device(const Problem& p) { return q_strides(p).affine() && kv_strides(p).affine() && !p.kv_cache; }

int64_t HostInputs::q_offset(const Strides& qs, int64_t b, int64_t s, int64_t h) const {
  if (q_rows.empty()) return qs.at(b, s, h);
  return q_compact.at(b, std::lower_bound(q_rows.begin(), q_rows.end(), s) - q_rows.begin(), h);
}

bool HostInputs::has_q_row(int64_t s) const {
  return q_rows.empty() || std::binary_search(q_rows.begin(), q_rows.end(), s);
}

void HostInputs::require_every_q_row(const char* who) const {
  if (!q_rows.empty())
    throw std::logic_error(fmt::format("{}: the host inputs hold {} query rows of Q, drawn for the CPU oracle alone", who, q_rows.size()));
}

HostInputs make_inputs(const Problem& p, std::vector<int64_t> q_rows) {
  HostInputs in;
  const ServingShape& sh = p.serving();  // once, outside the parallel loops
  const auto q_len = [&](int64_t b) { return sh.q_len[size_t(b)]; };
  const auto k_len = [&](int64_t b) { return sh.k_len[size_t(b)]; };
  if (q_rows.empty()) {
    fill(in.q, p, 1, p.S, p.H, p.q_elements(), q_strides(p), q_len);
  } else {
    if (is_fp8(p.dtype) || !drawn_on_device(p))
      throw std::logic_error("make_inputs: only a 16-bit or fp32 problem in a dense layout draws some query rows");
    if (!std::is_sorted(q_rows.begin(), q_rows.end()) || q_rows.front() < 0 || q_rows.back() >= p.S)
      throw std::logic_error("make_inputs: the query rows must ascend within [0, S)");
    const int64_t R = int64_t(q_rows.size());
    in.q_compact = Strides{R * p.H * p.D, p.H * p.D, p.D};
    fill_rows(in.q, p, q_rows);
    in.q_rows = std::move(q_rows);
  }
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
