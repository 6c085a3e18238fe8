// Problem conventions (scale, causal alignment, strides, FLOP/byte counts), defined once here.
#include "harness/problem.hpp"

#include "harness/conventions.hpp"
#include "harness/problem_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fa {

std::string_view layout_name(Layout l) { return l == Layout::bshd ? "bshd" : "bhsd"; }

std::optional<Layout> parse_layout(std::string_view s) {
  if (s == "bshd" || s == "BSHD") return Layout::bshd;
  if (s == "bhsd" || s == "BHSD") return Layout::bhsd;
  return std::nullopt;
}

double Problem::softmax_scale() const { return scale > 0 ? scale : 1.0 / std::sqrt(double(D)); }

int64_t Problem::keys_visible(int64_t i) const { return visible_keys(i, S, Sk, causal); }

double Problem::unmasked_pairs() const {
  if (!causal) return double(S) * double(Sk);
  // Rows i with i + off + 1 in [1, Sk) see i + off + 1 keys; later rows see all Sk keys.
  const int64_t off = causal_offset();
  const int64_t first = std::max<int64_t>(0, -off);             // first row that sees a key
  const int64_t full = std::clamp<int64_t>(Sk - off - 1, 0, S);  // first row that sees all keys
  double pairs = 0;
  if (full > first) {
    const double a = double(first + off + 1), z = double(full - 1 + off + 1);
    pairs += (a + z) * double(full - first) / 2.0;
  }
  pairs += double(S - std::max(full, first)) * double(Sk);
  return pairs;
}

double Problem::flops() const { return 4.0 * double(B) * double(H) * double(D) * unmasked_pairs(); }

double Problem::bytes() const {
  const double e = dtype_bytes(dtype);
  const double q = double(B) * S * H * D, kv = double(B) * Sk * Hk * D;
  return e * (2 * q + 2 * kv) + 4.0 * double(B) * H * S;
}

std::string Problem::key() const {
  std::string k;
  for (const auto& f : problem_field_table())
    if (f.in_key) k += (k.empty() ? "" : ",") + f.cell(*this);
  return k;
}

std::string Problem::label() const {
  if (!name.empty()) return name;
  std::string s = fmt::format("B{} H{}", B, H);
  if (Hk != H) s += fmt::format("/{}", Hk);
  s += fmt::format(" S{} Sk{} D{}", S, Sk, D);
  if (causal) s += " causal";
  if (kv_cache) s += " kv-cache";
  return s;
}

Strides strides_for(Layout l, int64_t seq_len, int64_t heads, int64_t dim) {
  if (l == Layout::bshd) return {seq_len * heads * dim, heads * dim, dim};
  return {heads * seq_len * dim, dim, seq_len * dim};
}

namespace {

// The product of `factors`, or nullopt where it does not fit int64.
std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors) {
  int64_t out = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(out, f, &out)) return std::nullopt;
  return out;
}

// Every size the harness multiplies must fit int64 (element counts, score pairs, FLOPs, host bytes
// of fp32 copies of Q, K, V, O and LSE). Checked at load time so no path allocates or indexes from a
// wrapped product; causal S = 2^62, Sk = 1 has one visible pair but 2^68 elements of Q.
std::optional<FieldError> overflow(const Problem& p) {
  const auto q = checked_product({p.B, p.H, p.S, p.D});
  if (!q) return FieldError{"S", fmt::format("B*H*S*D = {}*{}*{}*{} overflows int64", p.B, p.H, p.S, p.D)};
  const auto kv = checked_product({p.B, p.Hk, p.Sk, p.D});
  if (!kv) return FieldError{"Sk", fmt::format("B*Hk*Sk*D = {}*{}*{}*{} overflows int64", p.B, p.Hk, p.Sk, p.D)};
  const auto pairs = checked_product({p.S, p.Sk});
  if (!pairs) return FieldError{"Sk", fmt::format("S*Sk = {}*{} overflows int64", p.S, p.Sk)};
  if (!checked_product({4, p.B, p.H, p.D, *pairs}))
    return FieldError{"S", fmt::format("FLOPs 4*B*H*D*S*Sk overflow int64 (B={} H={} D={} S={} Sk={})", p.B, p.H, p.D,
                                       p.S, p.Sk)};
  const auto qo = checked_product({2 * 4, *q}), kvb = checked_product({2 * 4, *kv});
  const auto lse = checked_product({4, p.B, p.H, p.S});
  int64_t bytes = 0;
  if (!qo || !kvb || !lse || __builtin_add_overflow(*qo, *kvb, &bytes) || __builtin_add_overflow(bytes, *lse, &bytes))
    return FieldError{"S", "bytes of Q, K, V, O and LSE overflow int64"};
  return std::nullopt;
}

}  // namespace

std::optional<FieldError> validate(const Problem& p) {
  const std::pair<const char*, int64_t> sizes[] = {{"B", p.B}, {"H", p.H}, {"Hk", p.Hk},
                                                   {"S", p.S}, {"Sk", p.Sk}, {"D", p.D}};
  for (auto [field, v] : sizes)
    if (v <= 0) return FieldError{field, fmt::format("must be positive, got {}", v)};
  if (auto o = overflow(p)) return o;
  if (p.H % p.Hk != 0) return FieldError{"Hk", fmt::format("H % Hk must be 0 (H={}, Hk={})", p.H, p.Hk)};
  if (p.D > 256) return FieldError{"D", fmt::format("head dimension {} exceeds 256", p.D)};
  if (p.scale < 0 || !std::isfinite(p.scale)) return FieldError{"scale", "must be a positive number"};
  if (p.kv_cache && p.S > p.Sk) return FieldError{"kv_cache", "needs S <= Sk (the new tokens are the last S keys)"};
  return std::nullopt;
}

std::optional<SplitRequest> parse_split(std::string_view s) {
  if (s == "auto") return SplitRequest{true, 0};
  int v = 0;
  if (s.empty()) return std::nullopt;
  for (char c : s) {
    if (c < '0' || c > '9' || v > 1000) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (!split_count_allowed(v)) return std::nullopt;
  return SplitRequest{false, v};
}

bool split_count_allowed(int g) { return g == 0 || g == 2 || g == 4 || g == 8 || g == 16; }

}  // namespace fa
