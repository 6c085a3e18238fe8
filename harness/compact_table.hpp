// The compact table: one markdown row per problem, one column per (path, G) (G shown where it
// is not 0), each cell the path's throughput to 3 significant digits: TFLOP/s, or GB/s on rows that
// are memory-bound (the roofline says so where the arch has a peak, else S == 1). Cells without
// a time show the status (skip, fail, error, ...); a failed result keeps its number, marked.
#pragma once
#include <ostream>
#include <vector>

#include "harness/results.hpp"

namespace fa {

void print_compact_table(std::ostream& os, const std::vector<Record>& records);

// Whether a problem's row reports GB/s: by any record's roofline bound, else S == 1.
bool memory_bound_row(const std::vector<const Record*>& records_of_problem);

}  // namespace fa
