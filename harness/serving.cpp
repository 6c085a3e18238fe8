// Serving fields resolved: lengths (lists or the seeded generator), cu_seqlens, the shuffled page
// table, ALiBi slopes.
#include "harness/serving.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "harness/rng.hpp"

namespace fa {
namespace {

// Streams of the serving generator (inputs use 1, 2, 3).
constexpr uint32_t kStreamSeqlensQ = 21, kStreamSeqlensK = 22, kStreamPages = 23;

uint64_t draw(uint64_t seed, uint32_t stream, uint64_t i) {
  const auto r = philox4x32_10({uint32_t(i), uint32_t(i >> 32), stream, 0x5e7u}, {uint32_t(seed), uint32_t(seed >> 32)});
  return (uint64_t(r[0]) << 32) | r[1];
}

bool whole(const std::string& t, int64_t& out) {
  if (t.empty() || t.size() > 18) return false;
  for (char c : t)
    if (c < '0' || c > '9') return false;
  out = std::stoll(t);
  return true;
}

std::vector<std::string> split(const std::string& t, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    const size_t e = t.find(sep, at);
    out.push_back(t.substr(at, e == std::string::npos ? std::string::npos : e - at));
    if (e == std::string::npos) return out;
    at = e + 1;
  }
}

// Lengths of a spec already checked by check_seqlens_spec.
std::vector<int64_t> lengths(const std::string& spec, int64_t B, uint64_t seed, uint32_t stream) {
  std::vector<int64_t> out(static_cast<size_t>(B));
  if (spec.rfind("uniform:", 0) == 0) {
    const auto parts = split(spec, ':');
    const int64_t lo = std::stoll(parts[1]), hi = std::stoll(parts[2]);
    for (int64_t b = 0; b < B; ++b) out[size_t(b)] = lo + int64_t(draw(seed, stream, uint64_t(b)) % uint64_t(hi - lo + 1));
    return out;
  }
  const auto parts = split(spec, '|');
  for (int64_t b = 0; b < B; ++b) out[size_t(b)] = b < int64_t(parts.size()) ? std::stoll(parts[size_t(b)]) : 0;
  return out;
}

std::vector<double> pow2_slopes(int64_t n) {
  std::vector<double> s(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s[size_t(i)] = std::exp2(-8.0 * double(i + 1) / double(n));
  return s;
}

}  // namespace

std::optional<std::string> check_seqlens_spec(const std::string& text) {
  if (text.empty()) return std::nullopt;
  int64_t lo = 0, hi = 0;
  if (text.rfind("uniform:", 0) == 0) {
    const auto parts = split(text, ':');
    if (parts.size() != 3 || !whole(parts[1], lo) || !whole(parts[2], hi))
      return fmt::format("'{}' is not uniform:LO:HI with whole numbers", text);
    if (lo > hi) return fmt::format("'{}': LO {} exceeds HI {}", text, lo, hi);
    return std::nullopt;
  }
  for (const auto& part : split(text, '|'))
    if (!whole(part, lo))
      return fmt::format("'{}' is not a length (a whole number >= 0); give a|b|c or uniform:LO:HI", part);
  return std::nullopt;
}

std::optional<std::string> check_alibi_spec(const std::string& text) {
  if (text == "0" || text == "1") return std::nullopt;
  for (const auto& part : split(text, '|')) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < 0)
      return fmt::format("'{}' is not a slope (a number >= 0); give 0, 1 (the standard slopes) or s1|s2|...", part);
  }
  return std::nullopt;
}

std::vector<double> standard_alibi_slopes(int64_t heads) {
  // A power of two n: 2^(-8i/n), i = 1..n. Otherwise the largest power of two below, then every
  // other slope of twice that many (Press et al., ALiBi's reference code).
  int64_t n = 1;
  while (n * 2 <= heads) n *= 2;
  std::vector<double> s = pow2_slopes(n);
  const std::vector<double> more = pow2_slopes(2 * n);
  for (int64_t i = 0; int64_t(s.size()) < heads; i += 2) s.push_back(more[size_t(i)]);
  return s;
}

std::vector<std::string> ServingSet::names() const {
  std::vector<std::string> out;
  for (ServingField f : kServingFields)
    if (has(f)) out.emplace_back(serving_field_name(f));
  return out;
}

std::string ServingSet::str() const {
  std::string out;
  for (const auto& n : names()) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

ServingShape resolve_serving(const ServingSpec& p) {
  ServingShape sh;
  const int64_t B = std::max<int64_t>(p.B, 0);
  const bool ok_q = !check_seqlens_spec(p.seqlens_q), ok_k = !check_seqlens_spec(p.seqlens_k);
  sh.q_len = p.seqlens_q.empty() || !ok_q ? std::vector<int64_t>(size_t(B), p.S)
                                          : lengths(p.seqlens_q, B, p.seed, kStreamSeqlensQ);
  if (!p.seqlens_k.empty() && ok_k) sh.k_len = lengths(p.seqlens_k, B, p.seed, kStreamSeqlensK);
  else {
    sh.k_len.resize(size_t(B));
    for (int64_t b = 0; b < B; ++b) sh.k_len[size_t(b)] = sh.q_len[size_t(b)] + (p.Sk - p.S);
  }
  sh.cu_q.assign(size_t(B) + 1, 0);
  sh.cu_k.assign(size_t(B) + 1, 0);
  for (int64_t b = 0; b < B; ++b) {
    sh.cu_q[size_t(b) + 1] = sh.cu_q[size_t(b)] + sh.q_len[size_t(b)];
    sh.cu_k[size_t(b) + 1] = sh.cu_k[size_t(b)] + std::max<int64_t>(sh.k_len[size_t(b)], 0);
  }
  std::vector<int64_t> per(p.page_size > 0 ? static_cast<size_t>(B) : 0);  // each sequence's pages
  if (p.page_size > 0) {
    sh.page_size = p.page_size;
    for (int64_t b = 0; b < B; ++b) {
      // Not (keys + page - 1) / page: that overflows for a page near int64's largest value.
      const int64_t keys = std::max<int64_t>(sh.k_len[size_t(b)], 0);
      per[size_t(b)] = keys / p.page_size + (keys % p.page_size != 0);
      if (__builtin_add_overflow(sh.pages, per[size_t(b)], &sh.pages)) sh.pages = INT64_MAX;
      sh.pages_per_seq = std::max(sh.pages_per_seq, per[size_t(b)]);
    }
  }
  // A pool the int32 page table (block_table) cannot number gets no table: harness/problem.cpp's
  // validate refuses it by the same bound, and reading such a row (expand, validate) allocates nothing.
  if (p.page_size > 0 && sh.pages <= INT32_MAX) {
    // A permutation of the pool (Fisher-Yates under the seed): sequences' pages interleave in any order.
    std::vector<int64_t> perm(static_cast<size_t>(sh.pages));
    for (int64_t i = 0; i < sh.pages; ++i) perm[size_t(i)] = i;
    for (int64_t i = sh.pages - 1; i > 0; --i)
      std::swap(perm[size_t(i)], perm[size_t(draw(p.seed, kStreamPages, uint64_t(i)) % uint64_t(i + 1))]);
    sh.table.assign(size_t(B * sh.pages_per_seq), -1);
    int64_t next = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < per[size_t(b)]; ++j) sh.table[size_t(b * sh.pages_per_seq + j)] = perm[size_t(next++)];
  }
  if (p.alibi == "1") sh.slopes = standard_alibi_slopes(p.H);
  else if (p.alibi != "0" && !check_alibi_spec(p.alibi))
    for (const auto& s : split(p.alibi, '|')) sh.slopes.push_back(std::strtod(s.c_str(), nullptr));
  if (!sh.slopes.empty()) sh.slopes.resize(size_t(std::max<int64_t>(p.H, 0)), 0.0);
  return sh;
}

}  // namespace fa
