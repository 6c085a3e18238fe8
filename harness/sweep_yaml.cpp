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

#include "harness/sweep.hpp"

namespace fa {
namespace {

int line_of(const YAML::Node& n) { return n.Mark().line + 1; }

// A scalar, or a list joined with '|' (the list syntax of CSV cells).
std::string cell_text(const std::string& file, const std::string& field, const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) {
    std::string s;
    for (const auto& item : n) {
      if (!item.IsScalar()) throw InputError(SourceLoc{file, line_of(item)}, field, "list items must be scalars");
      s += (s.empty() ? "" : "|") + item.Scalar();
    }
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
  RawRow base;
  base.where = SourceLoc{file, line_of(entry)};
  std::vector<Axis> grid, zip;
  for (const auto& kv : entry) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& val = kv.second;
    if (key == "grid" || key == "zip") {
      if (!val.IsMap()) throw InputError(SourceLoc{file, line_of(val)}, key, "must be a map of field: list");
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
    }
    size_t a = 0;
    while (a < grid.size() && ++idx[a] == grid[a].values.size()) idx[a++] = 0;
    if (a == grid.size()) break;
  }
}

}  // namespace

Sweep load_yaml_sweep(const std::string& file, const Overrides& ovr) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw InputError(SourceLoc{file, 0}, "file", "cannot open file");
  } catch (const YAML::Exception& e) {
    throw InputError(SourceLoc{file, e.mark.line + 1}, "yaml", e.msg);
  }
  if (!root.IsMap()) throw InputError(SourceLoc{file, 1}, "file", "top level must be a map with a 'problems' list");
  Sweep sweep;
  std::map<std::string, std::string> defaults;
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      const SourceLoc at{file, line_of(v)};
      if (key == "defaults") {
        if (!v.IsMap()) throw InputError(at, key, "must be a map of field: value");
        for (const auto& d : v) defaults[d.first.Scalar()] = cell_text(file, d.first.Scalar(), d.second);
      } else if (key == "paths") {
        for (const auto& p : split_list(cell_text(file, key, v))) sweep.paths.push_back(p);
      } else if (key == "thresholds") {
        if (!v.IsMap()) throw InputError(at, key, "must be a map (max_err, cosine)");
        for (const auto& t : v) {
          const std::string name = t.first.Scalar();
          double x;
          if (!YAML::convert<double>::decode(t.second, x))
            throw InputError(SourceLoc{file, line_of(t.second)}, "thresholds." + name, "not a number");
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
