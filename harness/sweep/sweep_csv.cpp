// CSV sweep loader (fast-cpp-csv-parser): header-named columns in any order, optional columns
// default, `#` comment lines (indented or not), blank lines and a UTF-8 BOM skipped, unknown
// columns rejected by name.
#include <fmt/format.h>
#include <libfccp/csv.h>

#include <fstream>

#include "harness/sweep/sweep.hpp"

namespace fa {
namespace {

// Blank lines and lines whose first non-blank character is '#' (fccp's own policy wants the '#' in
// column 0, so an indented comment above the header became the header).
struct CommentLines {
  static bool is_comment(const char* line) {
    while (*line == ' ' || *line == '\t') ++line;
    return *line == '#' || *line == '\0';
  }
};

using Reader = io::CSVReader<14, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>,
                             io::throw_on_overflow, CommentLines>;

// The header line as the user wrote it, to name unknown or misspelt columns, which the CSV
// reader would otherwise ignore silently.
void check_header(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    if (++n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM (fccp skips it too)
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    size_t start = 0;
    while (start <= line.size()) {
      size_t end = line.find(',', start);
      if (end == std::string::npos) end = line.size();
      std::string col = line.substr(start, end - start);
      col.erase(0, col.find_first_not_of(" \t\""));
      col.erase(col.find_last_not_of(" \t\r\"") + 1);
      const auto& known = sweep_fields();
      if (!col.empty() && std::find(known.begin(), known.end(), col) == known.end())
        throw InputError(SourceLoc{path, n}, col, "unknown column in header (known: name B H Hk S Sk D causal G dtype layout seed scale kv_cache)");
      start = end + 1;
    }
    return;
  }
  throw InputError(SourceLoc{path, 0}, "header", "file has no header line");
}

}  // namespace

Sweep load_csv_sweep(const std::string& path, const Overrides& ovr) {
  if (!std::ifstream(path)) throw InputError(SourceLoc{path, 0}, "file", "cannot open file");
  check_header(path);
  Sweep sweep;
  sweep.files = {path};
  try {
    Reader in(path);
    const auto& f = sweep_fields();
    in.read_header(io::ignore_missing_column, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9],
                   f[10], f[11], f[12], f[13]);
    for (const char* req : {"B", "H", "S", "D"})
      if (!in.has_column(req)) throw InputError(SourceLoc{path, int(in.get_file_line())}, req, "required column is missing from the header");
    std::string v[14];
    while (true) {
      for (auto& s : v) s.clear();
      if (!in.read_row(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13])) break;
      RawRow raw;
      raw.where = SourceLoc{path, int(in.get_file_line())};
      for (int i = 0; i < 14; ++i)
        if (!v[i].empty()) raw.cells[f[i]] = v[i];
      for (auto& row : build_rows(raw, {}, ovr)) sweep.rows.push_back(std::move(row));
      check_row_cap(sweep.rows.size(), ovr, raw.where);
    }
  } catch (const io::error::base& e) {
    // The reader's own message already carries the file and line ("... in line N of file F").
    throw InputError(SourceLoc{path, 0}, "csv", e.what());
  }
  return sweep;
}

}  // namespace fa
