// Which query rows a validation checks. All rows when affordable; otherwise a seeded sample that
// always holds the first and last rows, the rows on both sides of every tile boundary a kernel
// may use (16, 32, 64, 128), of the last partial tile, and of the causal "first visible row".
#pragma once
#include <cstdint>
#include <vector>

#include "harness/problem.hpp"

namespace fa {

// n <= 0 or n >= S: every row. Result is sorted and unique.
std::vector<int64_t> sample_rows(const Problem& p, int64_t n, uint64_t seed);

// How many rows fit a CPU budget (in FLOPs) for the reference (fp64 + low-precision pass).
int64_t rows_within_budget(const Problem& p, double budget_flops);

}  // namespace fa
