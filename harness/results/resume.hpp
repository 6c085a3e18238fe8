// --resume: what a results file already holds, and whether this run may append to it. A file is
// appended to only when its header is this schema's columns in this order and every record is of
// this schema, device and timing mode; otherwise InputError names the file and it is left as it is.
// Every line fa-bench writes ends in a newline (one write() each), so a last line without one is a
// torn write (a full disk, a file-size limit, a kill mid-write): it is left out of the reading and
// the caller cuts it off with a warning before appending, so no two records are ever glued.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "harness/results/results.hpp"

namespace fa {

struct ResumeState {
  std::set<std::string> done;  // resume keys of final records (every status but error and oom)
  int exit_status = 0;         // of those records, by exit_status()'s rule: 1 fail, else 2 invalid
  std::string exit_why;        // the first record behind exit_status: "file:line: status: reason"
  long long complete_bytes = -1;  // >= 0: the file ends in a torn line; its complete part is this long
};

// Reads a results CSV (missing or empty: nothing done).
ResumeState read_resume(const std::string& csv_path, const RunMeta& meta);
// Checks a JSON Lines file's meta line against this run (missing or empty: fine). Returns the
// length of its complete lines when it ends in a torn one, else -1.
long long check_json_resume(const std::string& jsonl_path, const RunMeta& meta);

// --resume with --json: the JSON Lines of the CSV's complete records that the JSON Lines file's
// complete lines lack (one cut by a file-size limit, or all of them when --json is new on a
// resumed run), in the CSV's order. Each is the line JsonLinesWriter wrote for that record: the
// same cells through the same json_cell, so a record the file holds is matched exactly.
std::vector<std::string> json_lines_missing(const std::string& csv_path, const std::string& jsonl_path);

// The exit status of a resumed run: its own records' and the file's earlier ones together.
int combined_exit_status(int earlier, int now);

}  // namespace fa
