// Markdown summary of a sweep: one table per problem (each path's status, error, time, TFLOP/s,
// GB/s, speedup over the baseline path measured in the same run) and a status count.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "harness/results/results.hpp"

namespace fa {

// The detail tables: one per problem, a row per (path, G).
void print_markdown(std::ostream& os, const std::vector<Record>& records, const std::string& baseline);
// The chosen tables (detail first, then the compact grid of harness/results/tables/compact_table.hpp), then the
// status counts line.
enum class Tables { none, detail, compact, both };
void print_tables(std::ostream& os, const std::vector<Record>& records, const std::string& baseline, Tables which);
std::string status_counts(const std::vector<Record>& records);

}  // namespace fa
