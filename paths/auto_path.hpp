// `auto`, the dispatcher: among the rows with PathRow::auto_rank > 0 whose gate admits the problem,
// runs the one the arch's fitted dispatch table says is fastest (harness/split/dispatch_table.hpp:
// the nearest timed problem), else the highest-ranked; records the path that ran. Built over
// whatever rows this binary has, so its order and its gate_doc come from the rows, never from a
// list of names.
#pragma once
#include <string>
#include <vector>

#include "harness/path.hpp"
#include "harness/split/dispatch_table.hpp"

namespace fa {

// The table `auto` reads on `device`: --heuristic-file's (`file`), else the one found for the
// device's arch as G's parameters are (harness/split/split_rules.hpp: make_dispatch_choice); rank
// order, saying why, where there is none (no GPU: the CPU paths have no fitted table).
DispatchChoice auto_dispatch(const DeviceFacts& device, const std::string& file = "");

PathRow auto_row(const std::vector<PathRow>& rows, const DeviceFacts& device, const DispatchChoice& dispatch);

}  // namespace fa
