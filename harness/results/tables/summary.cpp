// Markdown printer over records, grouped by problem in the order problems first appeared.
#include "harness/results/tables/summary.hpp"

#include <fmt/format.h>

#include <map>

#include "harness/results/tables/compact_table.hpp"
#include "harness/results/tables/sig_digits.hpp"

namespace fa {

std::string status_counts(const std::vector<Record>& records) {
  std::map<std::string, int> n;
  for (const auto& r : records) ++n[status_name(r.status)];
  std::string s = fmt::format("{} records:", records.size());
  for (const char* st : {"pass", "fail", "skip", "invalid", "error", "oom"})
    if (n[st]) s += fmt::format(" {} {}", n[st], st);
  return s;
}

void print_markdown(std::ostream& os, const std::vector<Record>& records, const std::string& baseline) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Record*>> by_problem;
  for (const auto& r : records) {
    const std::string key = r.problem.key() + "|" + r.problem.name;
    if (!by_problem.count(key)) order.push_back(key);
    by_problem[key].push_back(&r);
  }
  for (const auto& key : order) {
    const auto& rs = by_problem[key];
    const Problem& p = rs.front()->problem;
    os << fmt::format("\n### {} — B={} H={} Hk={} S={} Sk={} D={}{}{} {}\n\n", p.label(), p.B, p.H, p.Hk, p.S, p.Sk,
                      p.D, p.causal ? " causal" : "", p.kv_cache ? " kv_cache" : "", dtype_name(p.dtype));
    double base_ms = 0;
    for (const Record* r : rs)
      if (r->path == baseline && r->timing && (base_ms == 0 || r->g_req.str() == "0")) base_ms = r->timing->median_ms;
    os << fmt::format("| path | G | status | max err | tol | ms | samples | spread | TFLOP/s | GB/s | %peak | vs {} |\n",
                      baseline);
    os << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const Record* r : rs) {
      std::string path = r->path;
      if (!r->ran_path.empty() && r->ran_path != r->path) path += " → " + r->ran_path;
      std::string g = r->g_req.str();
      if (r->g_req.is_auto || r->g_used != r->g_req.value) g += fmt::format(" ({})", r->g_used);
      std::string status = status_name(r->status);
      if (!r->reason.empty() && r->status != Status::pass) status += ": " + r->reason;
      if (r->timing && !r->timing->note.empty()) status += "; " + r->timing->note;
      const auto& m = r->metrics;
      const auto& t = r->timing;
      std::string err = m ? fmt::format("{:.2e}", m->max_abs) : "";
      if (m && m->rows_checked < m->rows_total) err += fmt::format(" ({}/{} rows)", m->rows_checked, m->rows_total);
      std::string samples = t ? std::to_string(t->samples) : "";
      if (t && t->batch > 1) samples += fmt::format(" (batch={})", t->batch);
      os << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", path, g, status, err,
                        m ? fmt::format("{:.2e}", r->tol) : "", t ? sig3(t->median_ms) : "", samples,
                        t ? fmt::format("{:.1f}%", 100 * t->spread) : "", t ? sig3(r->tflops) : "",
                        t ? sig3(r->gbps) : "", r->roof ? fmt::format("{:.1f}% {}", r->roof->pct_peak, r->roof->bound) : "",
                        t && base_ms > 0 ? fmt::format("{:.2f}x", base_ms / t->median_ms) : "");
    }
  }
}

void print_tables(std::ostream& os, const std::vector<Record>& records, const std::string& baseline, Tables which) {
  if (which == Tables::compact || which == Tables::both) print_compact_table(os, records);
  if (which == Tables::detail || which == Tables::both) print_markdown(os, records, baseline);
  os << "\n" << status_counts(records) << "\n";
}

}  // namespace fa
