// `fa-bench merge`: results CSVs (shards of one sweep, or runs on several machines) into one.
// Every file must have the same header. Within one file a later line of a key replaces the earlier
// one (a --resume re-running error records, an interrupted --isolate run resumed). Across files a
// record key (row name, problem, path, requested G) may appear twice only with identical lines
// (the same shard passed twice); anything else is a conflict. Given the sweep they came from, find_gaps lists the records no file holds, with the
// shard each belongs to, so the one array task to re-run is named.
#pragma once
#include <string>
#include <vector>

#include "harness/results/results_reader.hpp"
#include "harness/sweep/shard.hpp"

namespace fa {

struct Merged {
  std::string header;
  std::vector<std::string> lines;          // record lines, first occurrence, in file order
  std::vector<Record> records;             // the same, parsed
  std::vector<std::string> conflicts;      // "KEY: A.csv:3 and B.csv:7 differ"
  size_t identical_duplicates = 0;
  size_t replaced = 0;                     // lines replaced by a later line of their own file
};

// Throws InputError on an unreadable file or a header that differs from the first file's.
Merged merge_results(const std::vector<std::string>& files);

// Records the expanded sweep should have produced and `merged` lacks: one line each, "KEY (shard
// i/n)". Paths are those the merged records name (a sweep file does not fix what ran where).
std::vector<std::string> find_gaps(const Merged& merged, const std::vector<SweepRow>& expected, int shards);

}  // namespace fa
