// --resume: what a results file already holds, and whether this run may append to it. A file is
// appended to only when its header is this schema's columns in this order and every record is of
// this schema, device and timing mode; otherwise InputError names the file and it is left as it is.
#pragma once
#include <set>
#include <string>

#include "harness/results.hpp"

namespace fa {

struct ResumeState {
  std::set<std::string> done;  // resume keys of final records (every status but error and oom)
  int exit_status = 0;         // of those records, by exit_status()'s rule: 1 fail, else 2 invalid
};

// Reads a results CSV (missing or empty: nothing done).
ResumeState read_resume(const std::string& csv_path, const RunMeta& meta);
// Checks a JSON Lines file's meta line against this run (missing or empty: fine).
void check_json_resume(const std::string& jsonl_path, const RunMeta& meta);

// The exit status of a resumed run: its own records' and the file's earlier ones together.
int combined_exit_status(int earlier, int now);

}  // namespace fa
