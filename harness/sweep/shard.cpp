// Shard parsing and the modulo partition.
#include "harness/sweep/shard.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace fa {

Shard parse_shard(const std::string& text, const std::string& flag) {
  const size_t slash = text.find('/');
  auto bad = [&] {
    return InputError(command_line(), flag,
                      fmt::format("'{}' is not i/n with 0 <= i < n (e.g. 0/4 ... 3/4)", text));
  };
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) throw bad();
  char* end = nullptr;
  const long i = std::strtol(text.c_str(), &end, 10);
  if (end != text.c_str() + slash) throw bad();
  const long n = std::strtol(text.c_str() + slash + 1, &end, 10);
  if (*end != '\0' || n < 1 || i < 0 || i >= n || n > 1000000) throw bad();
  return Shard{int(i), int(n)};
}

std::vector<SweepRow> take_shard(std::vector<SweepRow> rows, const Shard& s) {
  std::vector<SweepRow> out;
  for (size_t k = 0; k < rows.size(); ++k)
    if (in_shard(k, s)) out.push_back(std::move(rows[k]));
  return out;
}

}  // namespace fa
