// Markdown summary of a sweep: one table per problem (each path's status, error, time, TFLOP/s,
// GB/s, speedup over the baseline path measured in the same run) and a status count.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "harness/results.hpp"

namespace fa {

void print_markdown(std::ostream& os, const std::vector<Record>& records, const std::string& baseline);
std::string status_counts(const std::vector<Record>& records);

}  // namespace fa
