// CSV sweep loader (fast-cpp-csv-parser): header-named columns in any order, optional columns
// default, `#` comment lines (indented or not), blank lines and a UTF-8 BOM skipped, unknown
// columns rejected by name.
#include <fmt/format.h>
#include <libfccp/csv.h>

#include <array>
#include <fstream>
#include <utility>

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

constexpr size_t kColumns = kNumProblemFields + 1;  // the problem fields and G
using Reader = io::CSVReader<kColumns, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>,
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
        throw InputError(SourceLoc{path, n}, col, "unknown column in header (known: " + known_fields() + ")");
      start = end + 1;
    }
    return;
  }
  throw InputError(SourceLoc{path, 0}, "header", "file has no header line");
}

template <size_t... I>
void read_header(Reader& in, const std::vector<std::string>& f, std::index_sequence<I...>) {
  in.read_header(io::ignore_missing_column, f[I]...);
}

template <size_t... I>
bool read_row(Reader& in, std::array<std::string, kColumns>& v, std::index_sequence<I...>) {
  return in.read_row(v[I]...);
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
    read_header(in, f, std::make_index_sequence<kColumns>());
    for (const auto& pf : problem_field_table())
      if (pf.required && !in.has_column(pf.name))
        throw InputError(SourceLoc{path, int(in.get_file_line())}, pf.name, "required column is missing from the header");
    std::array<std::string, kColumns> v;
    while (true) {
      for (auto& s : v) s.clear();
      if (!read_row(in, v, std::make_index_sequence<kColumns>())) break;
      RawRow raw;
      raw.where = SourceLoc{path, int(in.get_file_line())};
      for (size_t i = 0; i < kColumns; ++i)
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
