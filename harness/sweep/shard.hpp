// --shard i/n: a deterministic partition of a sweep's expanded problem list (after --filter): the
// problem at index k (0-based, in expansion order: files in the order given, rows in file order,
// one problem per dtype) belongs to shard k % n. Every problem lands in exactly one shard, so n
// runs with i = 0..n-1 together run the unsharded sweep; `fa-bench merge` puts them back together.
#pragma once
#include <string>
#include <vector>

#include "harness/sweep/sweep.hpp"

namespace fa {

struct Shard {
  int index = 0, count = 1;
  std::string str() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "i/n" with 0 <= i < n; anything else throws InputError naming `flag`.
Shard parse_shard(const std::string& text, const std::string& flag);

inline bool in_shard(size_t problem_index, const Shard& s) { return int(problem_index % size_t(s.count)) == s.index; }

std::vector<SweepRow> take_shard(std::vector<SweepRow> rows, const Shard& s);

}  // namespace fa
