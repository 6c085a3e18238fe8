// Backslash escapes for text cells (harness/results/text_escape.hpp). UTF-8 validity by the RFC 3629
// table: no overlongs, no surrogates, nothing above U+10FFFF.
#include "harness/results/text_escape.hpp"

#include <fmt/format.h>

namespace fa {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (0: not valid there).
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  const unsigned c = b(i);
  if (c < 0x80) return 1;
  const auto cont = [&](size_t k) { return (b(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return b(i + 1) >= lo && b(i + 1) <= hi && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return b(i + 1) >= lo && b(i + 1) <= hi && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string escape_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
    else if (const size_t n = utf8_length(s, i)) {
      out.append(s, i, n);
      i += n;
      continue;
    } else out += fmt::format("\\x{:02x}", c);
    ++i;
  }
  return out;
}

std::string unescape_text(const std::string& s) {
  if (s.find('\\') == std::string::npos) return s;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char n = i + 1 < s.size() ? s[i + 1] : '\0';
    if (s[i] != '\\') out += s[i];
    else if (n == '\\') out += '\\', ++i;
    else if (n == 'n') out += '\n', ++i;
    else if (n == 'r') out += '\r', ++i;
    else if (n == 't') out += '\t', ++i;
    else if (n == 'x' && i + 3 < s.size() && hex_digit(s[i + 2]) >= 0 && hex_digit(s[i + 3]) >= 0) {
      out += char(hex_digit(s[i + 2]) * 16 + hex_digit(s[i + 3]));
      i += 3;
    } else out += s[i];
  }
  return out;
}

}  // namespace fa
