// `auto`, the dispatcher: runs the highest-ranked row (PathRow::auto_rank > 0) whose gate admits
// the problem, and records the path that ran. Built over whatever rows this binary has, so its
// order and its gate_doc come from the rows' ranks, never from a list of names.
#pragma once
#include <vector>

#include "harness/path.hpp"

namespace fa {

PathRow auto_row(const std::vector<PathRow>& rows, const DeviceFacts& device);

}  // namespace fa
