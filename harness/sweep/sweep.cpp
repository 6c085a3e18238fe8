// Raw sweep rows to problems: defaults, list cells (G, dtype), number parsing with file:line errors.
#include "harness/sweep/sweep.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

namespace fa {

const std::vector<std::string>& sweep_fields() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> f;
    for (const auto& pf : problem_field_table()) f.push_back(pf.name);
    f.push_back("G");  // the row's split counts: a list, not a problem field
    return f;
  }();
  return fields;
}

std::string known_fields() {
  std::string s;
  for (const auto& f : sweep_fields()) s += (s.empty() ? "" : " ") + f;
  return s;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('|', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    out.push_back(item);
    start = end + 1;
  }
  return out;
}

namespace {

SourceLoc cell_loc(const RawRow& raw, const std::string& field) {
  SourceLoc w = raw.where;
  if (auto it = raw.lines.find(field); it != raw.lines.end()) w.line = it->second;
  return w;
}

std::vector<SplitRequest> parse_splits(const std::string& text, const SourceLoc& at, const std::string& field) {
  std::vector<SplitRequest> splits;
  for (const auto& g : split_list(text)) {
    auto sr = parse_split(g);
    if (!sr) throw InputError(at, field, fmt::format("'{}' is not a split count (0, 2, 4, 8, 16, auto)", g));
    if (std::find(splits.begin(), splits.end(), *sr) == splits.end()) splits.push_back(*sr);
  }
  return splits;
}

std::vector<DType> parse_dtypes(const std::string& text, const SourceLoc& at, const std::string& field) {
  std::vector<DType> dtypes;
  for (const auto& d : split_list(text)) {
    auto t = parse_dtype(d);
    if (!t) throw InputError(at, field, fmt::format("unknown dtype '{}' ({})", d, kDtypeNames));
    if (std::find(dtypes.begin(), dtypes.end(), *t) == dtypes.end()) dtypes.push_back(*t);
  }
  return dtypes;
}

}  // namespace

void check_row_cap(size_t rows, const Overrides& ovr, const SourceLoc& where) {
  if (rows > ovr.max_rows)
    throw InputError(where, "rows",
                     fmt::format("the sweep expands to {} rows or more, over --max-rows {}", rows, ovr.max_rows));
}

std::vector<SweepRow> build_rows(const RawRow& raw, const std::map<std::string, std::string>& file_defaults,
                                 const Overrides& ovr) {
  std::map<std::string, std::string> cells = file_defaults;
  for (const auto& [k, v] : raw.cells) cells[k] = v;
  for (const auto& kv : cells)
    if (std::find(sweep_fields().begin(), sweep_fields().end(), kv.first) == sweep_fields().end())
      throw InputError(cell_loc(raw, kv.first), kv.first, "unknown field (known: " + known_fields() + ")");
  for (const auto& f : problem_field_table())
    if (f.required && (!cells.count(f.name) || cells[f.name].empty()))
      throw InputError(raw.where, f.name, "required value is missing");

  Problem p;
  auto get = [&](const char* f) -> const std::string* {
    auto it = cells.find(f);
    return it == cells.end() || it->second.empty() ? nullptr : &it->second;
  };
  p.seed = ovr.seed;  // a row without a seed takes --seed
  for (const auto& f : problem_field_table()) {
    const std::string* text = get(f.name);
    if (!text || f.row_list) continue;  // dtype: a list, expanded below
    if (auto why = f.set(p, *text)) throw InputError(cell_loc(raw, f.name), f.name, *why);
  }
  for (const auto& f : problem_field_table())  // Hk = H, Sk = S when not given
    if (f.same_as && !get(f.name)) f.set(p, find_problem_field(f.same_as)->cell(p));

  const SourceLoc cli = command_line();
  const std::vector<SplitRequest> splits =
      ovr.G ? parse_splits(*ovr.G, cli, "--G") : parse_splits(get("G") ? *get("G") : "0", cell_loc(raw, "G"), "G");
  const std::vector<DType> dtypes = ovr.dtype ? parse_dtypes(*ovr.dtype, cli, "--dtype")
                                              : parse_dtypes(get("dtype") ? *get("dtype") : "fp16",
                                                             cell_loc(raw, "dtype"), "dtype");

  std::vector<SweepRow> rows;
  for (DType t : dtypes) {
    SweepRow r;
    r.problem = p;
    r.problem.dtype = t;
    r.splits = splits;
    r.where = raw.where;
    r.invalid = validate(r.problem);
    rows.push_back(std::move(r));
  }
  return rows;
}

Sweep load_sweep(const std::string& path, const Overrides& ovr) {
  auto ends_with = [&](const char* suf) {
    const std::string s(suf);
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  Sweep s;
  if (ends_with(".csv")) s = load_csv_sweep(path, ovr);
  else if (ends_with(".yaml") || ends_with(".yml")) s = load_yaml_sweep(path, ovr);
  else throw InputError(SourceLoc{path, 0}, "file", "unknown sweep format (expected .csv, .yaml or .yml)");
  if (s.rows.empty())
    throw InputError(SourceLoc{path, 0}, "problems", "the file defines no problem (an empty list, or a header and no rows)");
  return s;
}

void drop_duplicate_rows(Sweep& sweep) {
  std::map<std::string, SourceLoc> first;  // name|problem|G -> where it was first asked for
  std::vector<SweepRow> kept;
  for (auto& row : sweep.rows) {
    const std::string problem = row.problem.name + "|" + row.problem.key() + "|";
    std::vector<SplitRequest> splits;
    for (const auto& g : row.splits) {
      const auto [it, fresh] = first.emplace(problem + (row.invalid ? "invalid" : g.str()), row.where);
      if (fresh) splits.push_back(g);
      else
        spdlog::warn("{}: {} {} G={} repeats {}; run once", row.where.str(), row.problem.label(),
                     dtype_name(row.problem.dtype), g.str(), it->second.str());
    }
    if (splits.empty()) continue;
    row.splits = std::move(splits);
    kept.push_back(std::move(row));
  }
  sweep.rows = std::move(kept);
}

}  // namespace fa
