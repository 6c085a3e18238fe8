// Line-preserving merge of results CSVs, duplicate checks, and the gap list.
#include "harness/results/merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

namespace fa {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

}  // namespace

Merged merge_results(const std::vector<std::string>& files) {
  Merged m;
  std::map<std::string, std::pair<std::string, SourceLoc>> seen;  // key -> (line, where)
  for (const auto& file : files) {
    const ResultsFile rf = read_results_csv(file);
    const auto text = lines_of(file);
    size_t h = 0;
    while (h < text.size() && text[h].find_first_not_of(" \t\r") == std::string::npos) ++h;
    if (m.header.empty()) m.header = text[h];
    else if (text[h] != m.header)
      throw InputError(SourceLoc{file, int(h) + 1}, "header",
                       fmt::format("columns differ from {}'s; merge files of one fa-bench version", files.front()));
    // Within the file, the last line of each key stands (in the place of the key's first line).
    std::vector<const ReadRecord*> last;
    std::map<std::string, size_t> at;
    for (const auto& rr : rf.records) {
      const auto [it, fresh] = at.emplace(rr.record.resume_key(), last.size());
      if (fresh) last.push_back(&rr);
      else last[it->second] = &rr, ++m.replaced;
    }
    for (const ReadRecord* p : last) {
      const ReadRecord& rr = *p;
      const std::string key = rr.record.resume_key();
      const std::string& line = text[size_t(rr.at.line - 1)];
      const auto it = seen.find(key);
      if (it == seen.end()) {
        seen.emplace(key, std::make_pair(line, rr.at));
        m.lines.push_back(line);
        m.records.push_back(rr.record);
      } else if (it->second.first == line) {
        ++m.identical_duplicates;
      } else {
        m.conflicts.push_back(fmt::format("{}: {} and {} differ", key, it->second.second.str(), rr.at.str()));
      }
    }
  }
  return m;
}

std::vector<std::string> find_gaps(const Merged& merged, const std::vector<SweepRow>& expected, int shards) {
  std::vector<std::string> paths;
  std::set<std::string> have;
  for (const auto& r : merged.records) {
    have.insert(r.resume_key());
    if (r.path != "-" && std::find(paths.begin(), paths.end(), r.path) == paths.end()) paths.push_back(r.path);
  }
  if (paths.empty()) paths.push_back("*");  // nothing ran at all: every problem is a gap
  std::vector<std::string> gaps;
  for (size_t k = 0; k < expected.size(); ++k) {
    const SweepRow& row = expected[k];
    const std::string shard = fmt::format("shard {}/{}", k % size_t(std::max(shards, 1)), std::max(shards, 1));
    auto want = [&](const std::string& path, const SplitRequest& g) {
      const Record r{row.problem, row.where, path, "", g};
      if (!have.count(r.resume_key())) gaps.push_back(fmt::format("{} ({}, {})", r.resume_key(), row.where.str(), shard));
    };
    if (row.invalid) want("-", row.splits.front());
    else
      for (const auto& p : paths)
        for (const auto& g : row.splits) want(p, g);
  }
  return gaps;
}

}  // namespace fa
