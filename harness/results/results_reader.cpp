// Header-mapped reader of results CSVs. One record per line: the writer escapes newlines (and
// every other control or non-UTF-8 byte) inside text, so a field never spans lines; cells are
// unescaped as they are split.
#include "harness/results/results_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>

#include "harness/problem.hpp"
#include "harness/problem_fields.hpp"

namespace fa {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else if (c != '\r' || quoted) out.back() += c;
  }
  return out;
}

namespace {

class Row {
 public:
  Row(const std::map<std::string, size_t>& cols, std::vector<std::string> cells, SourceLoc at)
      : cols_(cols), cells_(std::move(cells)), at_(std::move(at)) {}

  // A column the header lacks reads as an empty cell.
  const std::string& text(const std::string& col) const {
    static const std::string none;
    const auto it = cols_.find(col);
    return it == cols_.end() ? none : cells_[it->second];
  }
  bool empty(const std::string& col) const { return text(col).empty(); }
  bool has(const std::string& col) const { return cols_.count(col) != 0; }

  double real(const std::string& col) const {
    const std::string& t = text(col);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0') fail(col, fmt::format("'{}' is not a number", t));
    return v;
  }
  int64_t integer(const std::string& col) const {
    const std::string& t = text(col);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0') fail(col, fmt::format("'{}' is not an integer", t));
    if (errno == ERANGE) fail(col, fmt::format("'{}' is out of range for a 64-bit integer", t));
    return v;
  }
  int64_t integer_or_zero(const std::string& col) const { return empty(col) ? 0 : integer(col); }
  double real_or_zero(const std::string& col) const { return empty(col) ? 0 : real(col); }
  [[noreturn]] void fail(const std::string& col, const std::string& why) const { throw InputError(at_, col, why); }

 private:
  const std::map<std::string, size_t>& cols_;
  std::vector<std::string> cells_;
  SourceLoc at_;
};

Status parse_status(const Row& row) {
  const std::string& s = row.text("status");
  for (Status st : {Status::pass, Status::fail, Status::skip, Status::invalid, Status::error, Status::oom})
    if (s == status_name(st)) return st;
  row.fail("status", fmt::format("unknown status '{}' (pass fail skip invalid error oom)", s));
}

// The schema column, where the header has one: a version this reader knows (1 to this build's).
void check_schema(const Row& row) {
  if (!row.has("schema")) return;  // other tools' files in the same columns may leave it out
  const std::string& t = row.text("schema");
  const bool digits = !t.empty() && t.size() < 6 && t.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(t) < 1 || std::stoi(t) > kSchemaVersion)
    row.fail("schema", fmt::format("'{}' is not a results schema this version reads (1 to {})", t, kSchemaVersion));
}

// Counts that cannot be negative (the writer's std::to_string of a count).
int64_t count_cell(const Row& row, const std::string& col) {
  const int64_t v = row.integer_or_zero(col);
  if (v < 0) row.fail(col, fmt::format("{} is a count and cannot be negative", v));
  return v;
}

Record parse_record(const Row& row) {
  Record r;
  Problem& p = r.problem;
  check_schema(row);
  for (const auto& f : problem_field_table()) {
    if (f.optional_column && !row.has(f.name)) continue;  // an older schema: the default
    if (auto why = f.set(p, row.text(f.name))) row.fail(f.name, *why);
  }
  r.status = parse_status(row);
  // The problem as the sweep reader checks it (harness/problem.hpp's validate: sizes, serving lists
  // against B and H, page_size, window, softcap...); an invalid record is a problem that failed it.
  if (r.status != Status::invalid)
    if (const auto e = validate(p)) row.fail(e->field, e->reason);
  r.path = row.text("path");
  if (r.path.empty()) row.fail("path", "empty path");
  r.ran_path = row.text("ran_path");
  r.plugin_file = row.text("plugin");  // schema < 6 has neither column: empty, as for a built-in path
  r.plugin_version = row.text("plugin_version");
  const auto g = parse_split(row.text("G_req"));
  if (!g) row.fail("G_req", fmt::format("'{}' is not a split count", row.text("G_req")));
  r.g_req = *g;
  r.g_used = int(row.integer_or_zero("G_used"));
  r.split_rule = row.text("split_rule");
  r.units = int(row.integer_or_zero("units"));
  r.tile = TileShape{int(row.integer_or_zero("tile_m")), int(row.integer_or_zero("tile_n")),
                     int(row.integer_or_zero("resident"))};
  if (!row.empty("tile_heads")) {  // schema < 8 has no column: one head a block
    const int64_t heads = row.integer("tile_heads");
    if (heads < 1 || heads > std::max<int64_t>(r.problem.H, 1) || r.problem.H % heads)
      row.fail("tile_heads", fmt::format("{} query heads a block, for H={}", heads, r.problem.H));
    r.tile.heads = int(heads);
  }
  r.reason = row.text("reason");
  r.rule = row.text("rule");
  r.tol = row.real_or_zero("tol");
  if (!row.empty("max_abs_err")) {
    Metrics m;
    m.max_abs = row.real("max_abs_err");
    m.mean_abs = row.real_or_zero("mean_abs_err");
    m.rel_l2 = row.real_or_zero("rel_l2");
    m.cosine = row.empty("cosine") ? 1.0 : row.real("cosine");
    m.lse_max_err = row.real_or_zero("lse_max_err");
    m.nan_inf = count_cell(row, "nan_inf");
    m.unwritten = count_cell(row, "unwritten");
    m.cache_mismatch = count_cell(row, "cache_mismatch");
    m.rows_checked = count_cell(row, "rows_checked");
    m.rows_total = count_cell(row, "rows_total");
    m.lp_max_abs = row.real_or_zero("lowprec_max_err");
    r.metrics = m;
  }
  if (!row.empty("median_ms")) {
    TimingStats t;
    t.median_ms = row.real("median_ms");
    t.min_ms = row.real_or_zero("min_ms");
    t.max_ms = row.real_or_zero("max_ms");
    t.spread = row.real_or_zero("spread");
    t.samples = int(row.integer_or_zero("samples"));
    t.mode = row.text("timing_mode");
    r.flush_bytes = size_t(row.integer_or_zero("flush_bytes"));  // schema < 9 has no column: not known
    t.stopped_by = row.text("stopped_by");
    t.note = row.text("timing_note");
    if (!row.empty("clock_mhz_median")) {  // schema < 10, and records no clock reader saw, have none
      ClockStats c;
      c.mhz_median = row.real("clock_mhz_median");
      c.mhz_min = row.empty("clock_mhz_min") ? c.mhz_median : row.real("clock_mhz_min");
      c.power_w_max = row.empty("power_w_max") ? -1 : row.real("power_w_max");
      c.throttled_samples = int(count_cell(row, "throttled_samples"));
      c.throttle_reasons = row.text("throttle_reasons");
      c.cycles_median = row.real_or_zero("cycles_median");
      c.source = row.text("clock_source");
      t.clocks = c;
    }
    r.timing = t;
    r.tflops = row.real_or_zero("tflops");
    r.gbps = row.real_or_zero("gbps");
  }
  r.timed_check = row.text("timed_check");
  if (r.timed_check != "" && r.timed_check != "same" && r.timed_check != "rule" && r.timed_check != "differs")
    row.fail("timed_check", fmt::format("'{}' is not a timed check outcome (same, rule, differs, or empty)", r.timed_check));
  r.time = row.text("time");
  r.where = SourceLoc{row.text("sweep_file"), int(row.integer_or_zero("sweep_line"))};
  return r;
}

// Columns a record cannot be matched or judged without (every problem field, path, G_req, status,
// median_ms); the rest may be absent from the header.
const std::vector<std::string>& required_columns() {
  static const std::vector<std::string> cols = [] {
    std::vector<std::string> c;
    for (const auto& f : problem_field_table())
      if (!f.optional_column) c.push_back(f.name);
    for (const char* o : {"path", "G_req", "status", "median_ms"}) c.push_back(o);
    return c;
  }();
  return cols;
}

}  // namespace

ResultsFile read_results_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(SourceLoc{path, 0}, "file", "cannot open results file");
  ResultsFile out;
  out.path = path;
  std::string line;
  int n = 0;
  std::map<std::string, size_t> cols;
  while (std::getline(f, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto cells = split_csv_line(line);
    for (auto& c : cells) c = unescape_text(c);
    if (cols.empty()) {
      for (size_t i = 0; i < cells.size(); ++i) cols[cells[i]] = i;
      for (const auto& c : required_columns())
        if (!cols.count(c)) throw InputError(SourceLoc{path, n}, c, "column missing from the header; not a fa-bench results CSV?");
      continue;
    }
    if (cells.size() != cols.size())
      throw InputError(SourceLoc{path, n}, "row", fmt::format("{} cells but the header has {} columns", cells.size(), cols.size()));
    const Row row(cols, cells, SourceLoc{path, n});
    out.records.push_back({parse_record(row), SourceLoc{path, n}});
    if (out.records.size() == 1) out.device = row.text("device"), out.arch = row.text("arch"), out.git_commit = row.text("git_commit");
  }
  if (cols.empty()) throw InputError(SourceLoc{path, 0}, "header", "empty results file");
  return out;
}

}  // namespace fa
