// The fitted G-rule parameter files (results/heuristics/<arch>.json) compiled into the binary, so
// that `G=auto` runs the fitted model wherever the binary goes. CMakeLists.txt generates the table
// (harness/split/builtin_heuristics.cpp.in) from every JSON in that folder at configure time: a newly
// fitted arch is one more JSON file and a rebuild. harness/split/split_rules.cpp parses the text.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fa {

struct BuiltinHeuristic {
  std::string_view arch;  // the file's name without .json
  std::string_view json;  // its text as committed
};
const std::vector<BuiltinHeuristic>& builtin_heuristics();
// The text built in for `arch`, if any.
std::optional<std::string_view> builtin_heuristic_json(const std::string& arch);

}  // namespace fa
