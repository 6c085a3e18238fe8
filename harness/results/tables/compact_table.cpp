// Problems x (path, G) throughput grid, and its markdown and CSV printers.
#include "harness/results/tables/compact_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "harness/results/tables/sig_digits.hpp"

namespace fa {

bool memory_bound_row(const std::vector<const Record*>& rs) {
  for (const Record* r : rs)
    if (r->roof) return r->roof->bound == "memory";
  return !rs.empty() && rs.front()->problem.S == 1;
}

namespace {

std::string column_of(const Record& r) { return r.g_req.str() == "0" ? r.path : r.path + " G=" + r.g_req.str(); }

std::string cell(const Record& r, bool memory) {
  if (!r.timing) return status_name(r.status);
  const bool throttled = r.timing->clocks && r.timing->clocks->throttled_samples > 0;
  const std::string v = sig3(memory ? r.gbps : r.tflops) + (throttled ? kThrottledMark : "");
  return r.status == Status::pass ? v : v + " (" + status_name(r.status) + ")";
}

}  // namespace

CompactGrid compact_grid(const std::vector<Record>& records) {
  CompactGrid g;
  std::vector<std::string> problems;
  std::map<std::string, std::vector<const Record*>> by_problem;
  for (const auto& r : records) {
    if (r.status == Status::invalid) continue;
    const std::string key = r.problem.key() + "|" + r.problem.name;
    if (!by_problem.count(key)) problems.push_back(key);
    by_problem[key].push_back(&r);
    if (std::find(g.columns.begin(), g.columns.end(), column_of(r)) == g.columns.end()) g.columns.push_back(column_of(r));
  }
  for (const auto& key : problems) {
    const auto& rs = by_problem[key];
    const bool memory = memory_bound_row(rs);
    const Problem& p = rs.front()->problem;
    CompactGrid::Row row{fmt::format("{} {}", p.label(), dtype_name(p.dtype)), memory ? "GB/s" : "TFLOP/s", {}};
    for (const auto& c : g.columns) {
      const auto it = std::find_if(rs.begin(), rs.end(), [&](const Record* r) { return column_of(*r) == c; });
      row.cells.push_back(it == rs.end() ? std::string() : cell(**it, memory));
    }
    g.rows.push_back(std::move(row));
  }
  return g;
}

void print_compact_table(std::ostream& os, const std::vector<Record>& records) {
  const CompactGrid g = compact_grid(records);
  if (g.rows.empty()) return;
  os << "\n### Throughput: TFLOP/s, or GB/s on memory-bound rows\n\n| problem | unit |";
  for (const auto& c : g.columns) os << " " << c << " |";
  os << "\n|---|---|";
  for (size_t i = 0; i < g.columns.size(); ++i) os << "---|";
  os << "\n";
  bool marked = false;
  for (const auto& row : g.rows) {
    os << fmt::format("| {} | {} |", row.problem, row.unit);
    for (const auto& c : row.cells) {
      os << " " << c << " |";
      marked |= c.find(kThrottledMark) != std::string::npos;
    }
    os << "\n";
  }
  if (marked)
    os << "\n" << kThrottledMark << " throttled: some samples ran under a power, thermal or other clock-event reason "
       << "(the record's throttled_samples and throttle_reasons)\n";
}

void write_compact_csv(std::ostream& os, const CompactGrid& g) {
  os << "problem,unit";
  for (const auto& c : g.columns) os << "," << csv_escape(c);
  os << "\n";
  for (const auto& row : g.rows) {
    os << csv_escape(row.problem) << "," << row.unit;
    for (const auto& c : row.cells) os << "," << csv_escape(c);
    os << "\n";
  }
}

}  // namespace fa
