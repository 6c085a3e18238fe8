// YAML sweep loader. A file is a map:
//   defaults:   {dtype: [fp16, bf16], G: [0, 4], causal: 0}   applied to every row
//   paths:      [cpu-flash, tiled]                             paths to run (CLI --paths wins)
//   thresholds: {max_err: 0.02, cosine: 0.999}                 fixed pass rule
//   problems:   list of entries; an entry is a row ({B: 1, H: 16, S: 1500, D: 64}) or has
//               grid: {field: value-or-list} (cartesian product) and/or
//               zip:  {field: list} (lists of one length, advancing together); its other keys
//               are fixed for every row it expands to. G and dtype lists stay per-row lists.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <set>

#include "harness/sweep/sweep.hpp"

namespace fa {
namespace {

int line_of(const YAML::Node& n) { return n.Mark().line + 1; }

// yaml-cpp keeps both entries of a repeated key and lookups see only the first: refuse them.
void check_unique_keys(const std::string& file, const YAML::Node& map) {
  std::set<std::string> seen;
  for (const auto& kv : map)
    if (!seen.insert(kv.first.Scalar()).second)
      throw InputError(SourceLoc{file, line_of(kv.first)}, kv.first.Scalar(), "duplicate key");
}

// a * b, saturating instead of wrapping (a row count only compared against --max-rows).
size_t times(size_t a, size_t b) {
  size_t out;
  return __builtin_mul_overflow(a, b, &out) ? SIZE_MAX : out;
}

// A scalar, or a list joined with '|' (the list syntax of CSV cells).
std::string cell_text(const std::string& file, const std::string& field, const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) {
    std::string s;
    for (const auto& item : n) {
      if (!item.IsScalar()) throw InputError(SourceLoc{file, line_of(item)}, field, "list items must be scalars");
      s += (s.empty() ? "" : "|") + item.Scalar();
    }
    if (s.empty()) throw InputError(SourceLoc{file, line_of(n)}, field, "empty list");
    return s;
  }
  throw InputError(SourceLoc{file, line_of(n)}, field, "expected a value or a list of values");
}

struct Axis {
  std::string field;
  std::vector<std::string> values;
  int line;
};

// Grid/zip values: a list expands; a scalar is one value. G and dtype lists are kept whole.
std::vector<std::string> axis_values(const std::string& file, const std::string& field, const YAML::Node& n) {
  if (n.IsSequence() && field != "G" && field != "dtype") {
    std::vector<std::string> out;
    for (const auto& item : n) out.push_back(cell_text(file, field, item));
    if (out.empty()) throw InputError(SourceLoc{file, line_of(n)}, field, "empty list");
    return out;
  }
  return {cell_text(file, field, n)};
}

void expand_entry(const std::string& file, const YAML::Node& entry, const std::map<std::string, std::string>& defaults,
                  const Overrides& ovr, Sweep& sweep) {
  if (!entry.IsMap()) throw InputError(SourceLoc{file, line_of(entry)}, "problems", "each entry must be a map");
  check_unique_keys(file, entry);
  RawRow base;
  base.where = SourceLoc{file, line_of(entry)};
  std::vector<Axis> grid, zip;
  for (const auto& kv : entry) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& val = kv.second;
    if (key == "grid" || key == "zip") {
      if (!val.IsMap()) throw InputError(SourceLoc{file, line_of(val)}, key, "must be a map of field: list");
      check_unique_keys(file, val);
      for (const auto& g : val) {
        const std::string field = g.first.Scalar();
        if (key == "zip" && !g.second.IsSequence())
          throw InputError(SourceLoc{file, line_of(g.second)}, "zip." + field, "zip values must be lists");
        (key == "grid" ? grid : zip).push_back({field, axis_values(file, field, g.second), line_of(g.second)});
      }
      continue;
    }
    base.cells[key] = cell_text(file, key, val);
    base.lines[key] = line_of(val);
  }
  size_t zip_len = zip.empty() ? 1 : zip.front().values.size();
  for (const auto& z : zip)
    if (z.values.size() != zip_len)
      throw InputError(SourceLoc{file, z.line}, "zip." + z.field,
                       fmt::format("has {} values but zip.{} has {}; zip lists advance together", z.values.size(),
                                   zip.front().field, zip_len));
  // The row count is known before anything is built: refuse an expansion past --max-rows here.
  size_t count = zip_len;
  for (const auto& ax : grid) count = times(count, ax.values.size());
  check_row_cap(sweep.rows.size() + std::min(count, SIZE_MAX - sweep.rows.size()), ovr, base.where);
  // Odometer over the grid axes, then every zip position.
  std::vector<size_t> idx(grid.size(), 0);
  while (true) {
    for (size_t z = 0; z < zip_len; ++z) {
      RawRow raw = base;
      for (size_t a = 0; a < grid.size(); ++a) {
        raw.cells[grid[a].field] = grid[a].values[idx[a]];
        raw.lines[grid[a].field] = grid[a].line;
      }
      for (const auto& ax : zip) {
        raw.cells[ax.field] = ax.values[z];
        raw.lines[ax.field] = ax.line;
      }
      for (auto& row : build_rows(raw, defaults, ovr)) sweep.rows.push_back(std::move(row));
      check_row_cap(sweep.rows.size(), ovr, base.where);  // dtype lists multiply rows too
    }
    size_t a = 0;
    while (a < grid.size() && ++idx[a] == grid[a].values.size()) idx[a++] = 0;
    if (a == grid.size()) break;
  }
}

// The line of a second document's first content (a '---' line after content), 0 if none. yaml-cpp
// 0.7's LoadAll loops forever on some malformed input (", causal: ]", found by fuzz/), so the file is
// loaded as one document and a second one is found by its marker.
int second_document_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int n = 0, marker = 0;
  bool content = false;
  while (std::getline(in, line)) {
    ++n;
    const bool is_marker = line.rfind("---", 0) == 0 && (line.size() == 3 || std::isspace((unsigned char)line[3]));
    const size_t first = line.find_first_not_of(" \t\r");
    const bool has_content = !is_marker && first != std::string::npos && line[first] != '#' && line[first] != '%';
    if (marker && has_content) return n;
    if (is_marker && content) marker = n;
    content = content || has_content;
  }
  return marker;
}

}  // namespace

Sweep load_yaml_sweep(const std::string& file, const Overrides& ovr) {
  YAML::Node root;
  try {
    std::ifstream f(file);
    if (!f) throw YAML::BadFile(file);
    std::stringstream text;
    text << f.rdbuf();
    if (const int second = second_document_line(text.str()))
      throw InputError(SourceLoc{file, second}, "file", "a second YAML document; a sweep file holds one");
    root = YAML::Load(text.str());
  } catch (const YAML::BadFile&) {
    throw InputError(SourceLoc{file, 0}, "file", "cannot open file");
  } catch (const YAML::Exception& e) {
    throw InputError(SourceLoc{file, e.mark.line + 1}, "yaml", e.msg);
  }
  if (!root.IsMap()) throw InputError(SourceLoc{file, 1}, "file", "top level must be a map with a 'problems' list");
  Sweep sweep;
  sweep.files = {file};
  std::map<std::string, std::string> defaults;
  try {
    check_unique_keys(file, root);
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      const SourceLoc at{file, line_of(v)};
      if (key == "defaults") {
        if (!v.IsMap()) throw InputError(at, key, "must be a map of field: value");
        check_unique_keys(file, v);
        for (const auto& d : v) defaults[d.first.Scalar()] = cell_text(file, d.first.Scalar(), d.second);
      } else if (key == "paths") {
        sweep.paths_where = SourceLoc{file, line_of(kv.first)};
        for (const auto& p : split_list(cell_text(file, key, v))) sweep.paths.push_back(p);
      } else if (key == "thresholds") {
        if (!v.IsMap()) throw InputError(at, key, "must be a map (max_err, cosine)");
        check_unique_keys(file, v);
        for (const auto& t : v) {
          const std::string name = t.first.Scalar();
          double x;
          if (!YAML::convert<double>::decode(t.second, x))
            throw InputError(SourceLoc{file, line_of(t.second)}, "thresholds." + name, "not a number");
          if (!std::isfinite(x) || x < 0 || (name == "cosine" && x > 1))
            throw InputError(SourceLoc{file, line_of(t.second)}, "thresholds." + name,
                             fmt::format("{} is not a finite number >= 0{}", t.second.Scalar(), name == "cosine" ? " and <= 1" : ""));
          if (name == "max_err") sweep.thresholds.max_err = x;
          else if (name == "cosine") sweep.thresholds.cosine = x;
          else throw InputError(SourceLoc{file, line_of(t.first)}, "thresholds." + name, "unknown threshold (max_err, cosine)");
        }
      } else if (key != "problems") {
        throw InputError(SourceLoc{file, line_of(kv.first)}, key, "unknown top-level key (defaults, paths, thresholds, problems)");
      }
    }
    const YAML::Node problems = root["problems"];
    if (!problems || !problems.IsSequence()) throw InputError(SourceLoc{file, 1}, "problems", "a 'problems' list is required");
    for (const auto& entry : problems) expand_entry(file, entry, defaults, ovr, sweep);
  } catch (const YAML::Exception& e) {
    throw InputError(SourceLoc{file, e.mark.line + 1}, "yaml", e.msg);
  }
  return sweep;
}

}  // namespace fa
