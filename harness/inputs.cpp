// Input generation: parallel over pairs of elements, each a pure function of (seed, stream, index).
#include "harness/inputs.hpp"

#include "harness/rng.hpp"

namespace fa {
namespace {

void fill(std::vector<float>& out, const Problem& p, uint32_t stream, int64_t seq, int64_t heads) {
  const int64_t n = p.B * seq * heads * p.D;
  out.resize(size_t(n));
  const Strides st = strides_for(p.layout, seq, heads, p.D);
  const int64_t pairs = (n + 1) / 2;
#pragma omp parallel for schedule(static)
  for (int64_t pr = 0; pr < pairs; ++pr) {
    const auto z = normal_pair(p.seed, stream, uint64_t(pr));
    for (int64_t e = 2 * pr; e < std::min(n, 2 * pr + 2); ++e) {
      // e is the logical BSHD index ((b*seq + s)*heads + h)*D + d.
      const int64_t d = e % p.D, h = (e / p.D) % heads, s = (e / (p.D * heads)) % seq, b = e / (p.D * heads * seq);
      out[size_t(st.at(b, s, h) + d)] = round_to(p.dtype, z[e & 1]);
    }
  }
}

}  // namespace

HostInputs make_inputs(const Problem& p) {
  HostInputs in;
  fill(in.q, p, 1, p.S, p.H);
  fill(in.k, p, 2, p.Sk, p.Hk);
  fill(in.v, p, 3, p.Sk, p.Hk);
  return in;
}

TypedBuffer to_typed(DType t, const std::vector<float>& values) {
  TypedBuffer b(t, int64_t(values.size()));
  for (size_t i = 0; i < values.size(); ++i) b.set(int64_t(i), values[i]);
  return b;
}

}  // namespace fa
