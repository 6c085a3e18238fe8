// Parse-time checks for every numeric and text flag of every subcommand, so that nonsense
// (`--warmup -1`, `--row-timeout nan`, `--seed -1`, `--shard ''`) is an input error naming the flag
// before anything is read or run. CLI11's own NonNegativeNumber lets NaN through (NaN < 0 is false)
// and its unsigned parse wraps -1 to 2^64-1: these compare the text as well as the value.
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace fa::cli {

// A finite number in [lo, hi].
inline CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
          return fmt::format("'{}' is not a finite number in [{:g}, {:g}]", text, lo, hi);
        return std::string();
      },
      fmt::format("FINITE in [{:g},{:g}]", lo, hi));
}

// A whole number in [lo, hi], written in decimal digits (a sign only for a negative lo).
inline CLI::Validator whole_in(long long lo, unsigned long long hi = std::numeric_limits<unsigned long long>::max()) {
  return CLI::Validator(
      [lo, hi](std::string& text) {
        const bool neg = !text.empty() && text[0] == '-';
        const std::string digits = neg || (!text.empty() && text[0] == '+') ? text.substr(1) : text;
        errno = 0;
        char* end = nullptr;
        const unsigned long long mag = std::strtoull(digits.c_str(), &end, 10);
        const bool ok = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos && errno == 0 &&
                        (neg ? lo < 0 && mag <= (unsigned long long)(-(lo + 1)) + 1 : mag <= hi && (lo <= 0 || mag >= (unsigned long long)lo));
        if (!ok) return fmt::format("'{}' is not a whole number in [{}, {}]", text, lo, hi);
        return std::string();
      },
      fmt::format("INT in [{},{}]", lo, hi));
}

// Text that, once given, may not be empty (`--shard ''` is not "no shard").
inline CLI::Validator non_empty() {
  return CLI::Validator([](std::string& text) { return text.empty() ? std::string("an empty value is not allowed") : std::string(); },
                        "TEXT");
}

}  // namespace fa::cli
