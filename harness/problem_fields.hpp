// One table of the problem's fields, one row a field: its name (sweep CSV column, YAML key, results
// column, --filter column, JSON key), `run`'s flag, its kind, how a sweep cell's text sets it, its
// results cell, and its value in a --filter comparison. The sweep readers, `run`'s flags, the
// filter, the results writer and the JSON cells walk this table, so a new problem field is its
// member in Problem plus one row here (and kNumProblemFields + 1: the .cpp checks the count).
// The results reader, --resume, Problem::key(), `expand` and --isolate's job walk it too.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/problem.hpp"

namespace fa {

enum class FieldKind {
  count,  // a whole number
  real,   // a real number
  flag,   // 0/1 (true/false, yes/no in sweep files); a JSON boolean; a bare flag for `run`
  word,   // one of a fixed set of names (dtype, layout)
  text,   // free text (name), or a structured cell (seqlens, window, alibi)
};

struct ProblemField {
  const char* name;
  FieldKind kind;
  const char* flag;       // `run`'s flag, or nullptr where a common flag gives it (--dtype, --seed)
  const char* help;       // that flag's help
  bool required;          // a sweep row must give it
  bool listable;          // `run` takes a comma list (the cartesian product of every list)
  const char* same_as;    // default: this other field's value (Hk = H, Sk = S); nullptr: Problem's
  const char* example;    // a valid value other than the default (the table's own test uses it)
  // Sets the field from a cell's text (sweep files, results files, `run`'s flags); returns why the
  // text is no value of it.
  std::optional<std::string> (*set)(Problem& p, const std::string& text);
  std::string (*cell)(const Problem& p);  // the results cell
  double (*number)(const Problem& p);     // its value in a --filter comparison; nullptr: a word, its cell
  bool in_key = true;     // part of Problem::key() (and so of the resume key): all but the name
  bool row_list = false;  // a sweep row gives a list, one problem per value (dtype; --dtype replaces it)
  // The exact text where the results cell rounds (scale: 9 digits there); --isolate's children get
  // this, so they run the very problem. nullptr: the cell is exact.
  std::string (*exact)(const Problem& p) = nullptr;
  // Added after results files existed (the serving fields, schema 7): a results file without the
  // column reads as the default, so older baselines still compare and gate.
  bool optional_column = false;
};

inline constexpr std::size_t kNumProblemFields = 19;

// In results column order.
const std::vector<ProblemField>& problem_field_table();
const ProblemField* find_problem_field(std::string_view name);

}  // namespace fa
