// Row sampling for validation of large problems.
#include "harness/check/row_sample.hpp"

#include <algorithm>
#include <set>

#include "harness/rng.hpp"

namespace fa {

std::vector<int64_t> sample_rows(const Problem& p, int64_t n, uint64_t seed) {
  std::vector<int64_t> rows;
  if (n <= 0 || n >= p.S) {
    rows.resize(size_t(p.S));
    for (int64_t i = 0; i < p.S; ++i) rows[size_t(i)] = i;
    return rows;
  }
  std::set<int64_t> pick;
  auto add = [&](int64_t r) {
    if (r >= 0 && r < p.S) pick.insert(r);
  };
  add(0);
  add(p.S - 1);
  for (int64_t t : {16, 32, 64, 128}) {
    add(t - 1);
    add(t);
    add(p.S - p.S % t - 1);
    add(p.S - p.S % t);
  }
  if (p.causal && p.S > p.Sk) {
    add(p.S - p.Sk - 1);
    add(p.S - p.Sk);
  }
  uint64_t ctr = 0;
  while (int64_t(pick.size()) < n) {
    const auto r = philox4x32_10({uint32_t(ctr), uint32_t(ctr >> 32), 7u, 0u}, {uint32_t(seed), uint32_t(seed >> 32)});
    ++ctr;
    add(int64_t(((uint64_t(r[0]) << 32) | r[1]) % uint64_t(p.S)));
  }
  return {pick.begin(), pick.end()};
}

int64_t rows_within_budget(const Problem& p, double budget_flops) {
  // The low-precision pass costs about half the fp64 pass on the CPU (fp32 GEMMs).
  const double per_row = 1.5 * p.flops() / double(p.S);
  if (per_row * double(p.S) <= budget_flops) return p.S;
  return std::clamp<int64_t>(int64_t(budget_flops / per_row), 32, p.S);
}

}  // namespace fa
