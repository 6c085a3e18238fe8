// Sweep files: CSV (header-named columns, any order, `#` comments) and YAML (rows, grid: cartesian
// products, zip: lists that advance together, file-level defaults). Both reduce to raw rows of
// (field, text) cells; build_rows() turns a raw row into problems, one per dtype, each carrying
// its G list. Syntax errors throw InputError (file:line, field); semantically invalid rows
// (zero sizes, H % Hk != 0) become rows with `invalid` set so the rest of the sweep still runs.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/input_error.hpp"
#include "harness/problem.hpp"
#include "harness/problem_fields.hpp"
#include "harness/thresholds.hpp"

namespace fa {

// The columns a row may name: every problem field (harness/problem_fields.hpp) and G. Required: the
// table's required fields (B, H, S, D).
const std::vector<std::string>& sweep_fields();
std::string known_fields();  // "name B H ... G", for messages

struct RawRow {
  SourceLoc where;
  std::map<std::string, std::string> cells;  // field -> text; lists as "a|b|c"
  std::map<std::string, int> lines;          // field -> line where the cell sits (YAML)
};

struct SweepRow {
  Problem problem;
  std::vector<SplitRequest> splits{SplitRequest{}};
  SourceLoc where;
  std::optional<FieldError> invalid;
};

// Values from the command line that replace a file's values (G, dtype) or fill its gaps (seed),
// and the bound on how many rows loading may produce (--max-rows).
struct Overrides {
  std::optional<std::string> G, dtype;  // errors in these name the flag (--G, --dtype), not a file line
  uint64_t seed = 1;
  size_t max_rows = 100000;
};

struct Sweep {
  std::vector<SweepRow> rows;
  std::vector<std::string> paths;  // from the file; empty when the file names none
  Thresholds thresholds;
  std::vector<std::string> files;  // the files it was read from (no output may be one of them)
  SourceLoc paths_where;           // the file and line of `paths:`, for errors about a name in it
};

std::vector<SweepRow> build_rows(const RawRow& raw, const std::map<std::string, std::string>& file_defaults,
                                 const Overrides& ovr);

Sweep load_csv_sweep(const std::string& path, const Overrides& ovr);
Sweep load_yaml_sweep(const std::string& path, const Overrides& ovr);
// Dispatches on the extension (.csv, .yaml/.yml). A file that defines no problem (`problems: []`,
// a CSV header with no rows) is an InputError naming it.
Sweep load_sweep(const std::string& path, const Overrides& ovr);

// One key per record: a row (name, problem, G) that repeats an earlier one adds no record. Drops
// each repeated split count, and a row left with none, with a warning naming both lines.
void drop_duplicate_rows(Sweep& sweep);

std::vector<std::string> split_list(const std::string& text);  // "a|b|c" -> {a, b, c}, trimmed

// Throws InputError at `where` when `rows` (expanded so far, or about to be) exceeds ovr.max_rows.
void check_row_cap(size_t rows, const Overrides& ovr, const SourceLoc& where);

}  // namespace fa
