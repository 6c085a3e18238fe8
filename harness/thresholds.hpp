// Fixed pass thresholds, from a sweep file or the command line (--max-err, --min-cosine). When any
// is set the fixed rule replaces the adaptive one (harness/check/tolerance.hpp).
#pragma once
#include <optional>

namespace fa {

struct Thresholds {
  std::optional<double> max_err, cosine;
  bool any() const { return max_err || cosine; }
};

}  // namespace fa
