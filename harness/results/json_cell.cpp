// Cell typing for the JSON Lines printer.
#include "harness/results/json_cell.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace fa {

nlohmann::json json_cell(const std::string& column, const std::string& text) {
  static const std::set<std::string> kText = {"run_id", "time", "name", "dtype", "layout", "path", "ran_path",
                                              "G_req", "split_rule", "status", "reason", "rule", "timing_mode", "stopped_by",
                                              "timing_note", "bound", "device", "arch", "git_commit", "sweep_file",
                                              "shard"};
  static const std::set<std::string> kBool = {"causal", "kv_cache"};
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
