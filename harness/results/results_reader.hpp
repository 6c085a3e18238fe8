// Reads a results CSV (schema in results/README.md) back into records, for `compare` and `gate`.
// Columns are found by header name, so files with extra columns (or written by other tools in
// the same schema, e.g. scripts/sdpa_baseline.py) read the same; empty metric or timing cells
// leave the record without metrics or timing, and columns an older schema lacks read as empty
// (plugin and plugin_version before schema 6: a built-in path). Errors name file:line and the column.
#pragma once
#include <string>
#include <vector>

#include "harness/results/results.hpp"

namespace fa {

struct ReadRecord {
  Record record;
  SourceLoc at;  // the results file and its line
};

struct ResultsFile {
  std::string path;
  std::string device, arch, git_commit;  // from the first record
  std::vector<ReadRecord> records;
};

// Throws InputError (file:line, column) on a missing file, a missing column or a bad cell.
ResultsFile read_results_csv(const std::string& path);

// One line of a results CSV split into its cells, quotes removed and the writer's escapes kept
// (harness/results/text_escape.hpp): commas separate, "..." quotes, "" inside quotes is a quote.
std::vector<std::string> split_csv_line(const std::string& line);

}  // namespace fa
