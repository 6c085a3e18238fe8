// Cell typing for the JSON Lines printer.
#include "harness/results/json_cell.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "harness/problem_fields.hpp"

namespace fa {

nlohmann::json json_cell(const std::string& column, const std::string& text) {
  // The problem's words and text, and its flags, from its field table; the other text columns here.
  static const std::set<std::string> kText = [] {
    std::set<std::string> s = {"run_id", "time", "path", "ran_path", "plugin", "plugin_version", "G_req", "split_rule", "status", "reason", "rule",
                               "timing_mode", "stopped_by", "timing_note", "bound", "device", "arch", "git_commit",
                               "sweep_file", "shard"};
    for (const auto& f : problem_field_table())
      if (f.kind == FieldKind::word || f.kind == FieldKind::text) s.insert(f.name);
    return s;
  }();
  static const std::set<std::string> kBool = [] {
    std::set<std::string> s;
    for (const auto& f : problem_field_table())
      if (f.kind == FieldKind::flag) s.insert(f.name);
    return s;
  }();
  if (text.empty()) return nullptr;
  if (kText.count(column)) return text;
  if (kBool.count(column) && (text == "0" || text == "1")) return text == "1";
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  if (text[0] != '-') {  // seeds use all 64 bits
    const unsigned long long u = std::strtoull(s, &end, 10);
    if (*end == '\0' && errno == 0) return u;
  } else {
    const long long i = std::strtoll(s, &end, 10);
    if (*end == '\0' && errno == 0) return i;
  }
  const double d = std::strtod(s, &end);
  if (*end == '\0' && std::isfinite(d)) return d;
  return text;
}

}  // namespace fa
