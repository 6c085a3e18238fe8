// The compact table: one row per problem, one column per (path, G) (G shown where it is not 0),
// each cell the path's throughput to 3 significant digits: TFLOP/s, or GB/s on rows that are
// memory-bound (the roofline says so where the arch has a peak, else S == 1). Cells without a
// time show the status (skip, fail, error, ...); a failed result keeps its number, marked. A number
// whose samples ran throttled (ClockStats::throttled_samples) carries kThrottledMark, and the
// markdown table then ends with the mark's legend.
// Printed as markdown (after a sweep, and by `fa-bench table`) or as CSV (`table --csv`).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "harness/results/results.hpp"

namespace fa {

inline constexpr const char* kThrottledMark = "*";

struct CompactGrid {
  struct Row {
    std::string problem, unit;       // "whisper-enc fp16", "TFLOP/s" | "GB/s"
    std::vector<std::string> cells;  // one per column; "" where the problem has no such record
  };
  std::vector<std::string> columns;  // "mma", "mma G=4", ... in the order records first show them
  std::vector<Row> rows;             // problems in the order records first show them
};

// Invalid records (no problem to show) are left out; the first record of a (problem, column) wins.
CompactGrid compact_grid(const std::vector<Record>& records);

void print_compact_table(std::ostream& os, const std::vector<Record>& records);
// A header `problem,unit,<columns>` and one line per row, fields CSV-escaped.
void write_compact_csv(std::ostream& os, const CompactGrid& grid);

// Whether a problem's row reports GB/s: by any record's roofline bound, else S == 1.
bool memory_bound_row(const std::vector<const Record*>& records_of_problem);

}  // namespace fa
