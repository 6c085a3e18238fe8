// Record folders for `fa-bench check`: what --save-tensors wrote (q, k, v, problem.json) plus the
// o.npy (and optionally lse.npy) another program wrote there. Recovers the problem, reads the
// outputs in the problem's layout and dtype (an '<f4'/'<f8' O is rounded to the dtype, as a kernel's
// store would), and lists the record folders under a --save-tensors root.
#pragma once
#include <string>
#include <vector>

#include "harness/path.hpp"
#include "harness/problem.hpp"

namespace fa {

struct RecordDir {
  std::string dir;
  Problem problem;
  std::string saved_path;  // the path whose record saved it
  SplitRequest g_req;
  int g_used = 0;
};

// Each DIR itself when it holds problem.json, else its sub-folders that do, in name order.
// Throws InputError naming a DIR that is neither.
std::vector<std::string> record_dirs(const std::vector<std::string>& dirs);

// Throws InputError naming DIR/problem.json when it is missing or does not describe a problem.
RecordDir read_record_dir(const std::string& dir);

// DIR/o.npy (required) and, when with_lse, DIR/lse.npy ([B,H,S] '<f4'/'<f8'); throws InputError
// naming the file on a missing file, a wrong shape or dtype.
RunOutputs read_outputs(const std::string& dir, const Problem& p, bool with_lse);

}  // namespace fa
