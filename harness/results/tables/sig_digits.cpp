// Three-significant-digit formatting.
#include "harness/results/tables/sig_digits.hpp"

#include <fmt/format.h>

#include <cmath>

namespace fa {

std::string sig3(double x) {
  if (x == 0) return "0";
  if (!std::isfinite(x)) return fmt::format("{}", x);
  int mag = int(std::floor(std::log10(std::fabs(x))));
  const double unit = std::pow(10.0, mag - 2);
  const double r = std::round(x / unit) * unit;  // 9.996 rounds to 10.0: one more digit left of the point
  mag = int(std::floor(std::log10(std::fabs(r))));
  return fmt::format("{:.{}f}", r, std::max(0, 2 - mag));
}

}  // namespace fa
