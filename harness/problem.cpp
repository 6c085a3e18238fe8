// Problem conventions (scale, causal alignment, strides, FLOP/byte counts), defined once here.
#include "harness/problem.hpp"

#include "harness/conventions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

namespace fa {

std::string_view layout_name(Layout l) { return l == Layout::bshd ? "bshd" : l == Layout::bhsd ? "bhsd" : "thd"; }

std::optional<Layout> parse_layout(std::string_view s) {
  if (s == "bshd" || s == "BSHD") return Layout::bshd;
  if (s == "bhsd" || s == "BHSD") return Layout::bhsd;
  if (s == "thd" || s == "THD") return Layout::thd;
  return std::nullopt;
}

double Problem::softmax_scale() const { return scale > 0 ? scale : 1.0 / std::sqrt(double(D)); }

int64_t Problem::keys_visible(int64_t i) const { return visible_keys(i, S, Sk, causal); }

ServingSpec Problem::serving_spec() const {
  ServingSpec sp;
  sp.B = B, sp.H = H, sp.S = S, sp.Sk = Sk, sp.seed = seed;
  sp.seqlens_q = seqlens_q, sp.seqlens_k = seqlens_k, sp.alibi = alibi, sp.page_size = page_size;
  return sp;
}

const ServingShape& Problem::serving() const {
  // A field resolve_serving reads, set after a first call, resolves again.
  ServingSpec spec = serving_spec();
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  if (!serving_ || !(spec == serving_spec_)) {
    serving_ = std::make_shared<const ServingShape>(resolve_serving(spec));
    serving_spec_ = std::move(spec);
  }
  return *serving_;
}

ServingSet Problem::serving_set() const {
  ServingSet f;
  if (!seqlens_q.empty()) f.add(ServingField::seqlens_q);
  if (!seqlens_k.empty()) f.add(ServingField::seqlens_k);
  if (layout == Layout::thd) f.add(ServingField::thd);
  if (paged()) f.add(ServingField::page_size);
  if (windowed()) f.add(ServingField::window);
  if (has_alibi()) f.add(ServingField::alibi);
  if (softcap > 0) f.add(ServingField::softcap);
  return f;
}

std::vector<std::string> Problem::serving_fields() const { return serving_set().names(); }

std::string serving_refusal(const std::vector<std::string>& fields, const std::string& who) {
  std::string list;
  for (const auto& f : fields) list += (list.empty() ? "" : ", ") + f;
  return fmt::format("{} take no {} (serving fields not implemented there yet)", who, list);
}

int64_t Problem::q_len(int64_t b) const { return seqlens_q.empty() ? S : serving().q_len[size_t(b)]; }
int64_t Problem::k_len(int64_t b) const { return varlen() ? serving().k_len[size_t(b)] : Sk; }

KeyRange Problem::row_keys(int64_t b, int64_t s) const {
  return fa::row_keys(s, q_len(b), k_len(b), causal, window_left, window_right);
}

double Problem::bias(int64_t b, int64_t h, int64_t s, int64_t j) const {
  if (!has_alibi()) return 0.0;
  return alibi_bias(serving().slopes[size_t(h)], s, k_len(b) - q_len(b), j);
}

int64_t Problem::q_elements() const {
  const int64_t rows = layout == Layout::thd ? serving().cu_q[size_t(B)] : B * S;
  return rows * H * D;
}

int64_t Problem::kv_elements() const {
  if (paged()) return serving().pages * page_size * Hk * D;
  const int64_t rows = layout == Layout::thd ? serving().cu_k[size_t(B)] : B * Sk;
  return rows * Hk * D;
}

namespace {

// Visible (row, key) pairs of one sequence: closed form for the dense causal and full cases, a sum
// over rows otherwise (a window, or lengths that make the closed form's clamps awkward: exact either way).
double sequence_pairs(int64_t sq, int64_t sk, bool causal, int64_t left, int64_t right) {
  const bool windowed = left >= 0 || (right >= 0 && !causal);
  if (!windowed && !causal) return double(sq) * double(sk);
  if (!windowed) {
    // Rows i with i + off + 1 in [1, sk) see i + off + 1 keys; later rows see all sk keys.
    const int64_t off = sk - sq;
    const int64_t first = std::max<int64_t>(0, -off);              // first row that sees a key
    const int64_t full = std::clamp<int64_t>(sk - off - 1, 0, sq);  // first row that sees all keys
    double pairs = 0;
    if (full > first) {
      const double a = double(first + off + 1), z = double(full - 1 + off + 1);
      pairs += (a + z) * double(full - first) / 2.0;
    }
    pairs += double(sq - std::max(full, first)) * double(sk);
    return pairs;
  }
  double pairs = 0;
  for (int64_t i = 0; i < sq; ++i) {
    const KeyRange r = row_keys(i, sq, sk, causal, left, right);
    pairs += double(r.end - r.begin);
  }
  return pairs;
}

// Keys some row of the sequence sees: the union of the rows' ranges, swept in row order (their
// ends never move left, so one running end counts each key once).
int64_t sequence_keys_read(int64_t sq, int64_t sk, bool causal, int64_t left, int64_t right) {
  const bool windowed = left >= 0 || (right >= 0 && !causal);
  if (!windowed) return sq > 0 && row_keys(sq - 1, sq, sk, causal, left, right).end > 0 ? sk : 0;
  int64_t seen = 0, end = 0;
  for (int64_t i = 0; i < sq; ++i) {
    const KeyRange r = row_keys(i, sq, sk, causal, left, right);
    if (r.end <= r.begin) continue;
    seen += r.end - std::max(r.begin, end);
    end = std::max(end, r.end);
  }
  return seen;
}

}  // namespace

double Problem::unmasked_pairs() const {
  if (!varlen()) return double(B) * sequence_pairs(S, Sk, causal, window_left, window_right);
  double pairs = 0;
  for (int64_t b = 0; b < B; ++b) pairs += sequence_pairs(q_len(b), k_len(b), causal, window_left, window_right);
  return pairs;
}

double Problem::flops() const { return 4.0 * double(H) * double(D) * unmasked_pairs(); }

double Problem::bytes() const {
  const double e = dtype_bytes(dtype), eo = dtype_bytes(out_dtype(dtype));  // FP8: 1-byte Q/K/V, bf16 O
  double q_rows = 0, k_rows = 0;
  for (int64_t b = 0; b < (varlen() ? B : 1); ++b) {
    const int64_t sq = q_len(b), sk = k_len(b);
    q_rows += double(sq);
    k_rows += double(sequence_keys_read(sq, sk, causal, window_left, window_right));
  }
  if (!varlen()) q_rows *= double(B), k_rows *= double(B);
  const double table = paged() ? 4.0 * double(serving().pages) : 0.0;  // int32 entries, each read once
  return (e + eo) * q_rows * double(H * D) + e * 2 * k_rows * double(Hk * D) + 4.0 * q_rows * double(H) + table;
}

std::string Problem::label() const {
  if (!name.empty()) return name;
  std::string s = fmt::format("B{} H{}", B, H);
  if (Hk != H) s += fmt::format("/{}", Hk);
  s += fmt::format(" S{} Sk{} D{}", S, Sk, D);
  if (causal) s += " causal";
  if (kv_cache) s += " kv-cache";
  if (varlen()) s += " varlen";
  if (paged()) s += fmt::format(" page{}", page_size);
  if (windowed()) s += fmt::format(" window{},{}", window_left, causal ? 0 : window_right);
  if (has_alibi()) s += " alibi";
  if (softcap > 0) s += fmt::format(" softcap{}", softcap);
  return s;
}

Strides strides_for(Layout l, int64_t seq_len, int64_t heads, int64_t dim) {
  if (l == Layout::bhsd) return {heads * seq_len * dim, dim, seq_len * dim};
  return {seq_len * heads * dim, heads * dim, dim};  // bshd; thd's rows are bshd's with cu offsets
}

Strides q_strides(const Problem& p) {
  Strides st = strides_for(p.layout, p.S, p.H, p.D);
  if (p.layout == Layout::thd) st.cu = p.serving().cu_q.data();
  return st;
}

Strides kv_strides(const Problem& p) {
  if (p.paged()) {
    const ServingShape& sh = p.serving();
    Strides st{0, p.Hk * p.D, p.D};  // the pool: [pages][page_size][Hk][D]
    st.table = sh.table.data(), st.table_row = sh.pages_per_seq, st.page = p.page_size;
    return st;
  }
  Strides st = strides_for(p.layout, p.Sk, p.Hk, p.D);
  if (p.layout == Layout::thd) st.cu = p.serving().cu_k.data();
  return st;
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

std::optional<FieldError> validate_lengths(const Problem& p, const char* field, const std::string& spec, int64_t bound,
                                           const char* bound_name) {
  if (spec.empty()) return std::nullopt;
  if (auto why = check_seqlens_spec(spec)) return FieldError{field, *why};
  if (spec.rfind("uniform:", 0) == 0) {
    const int64_t hi = std::stoll(spec.substr(spec.rfind(':') + 1));
    if (hi > bound) return FieldError{field, fmt::format("draws lengths up to {}, over {} = {} (the maximum)", hi, bound_name, bound)};
    return std::nullopt;
  }
  const size_t n = size_t(std::count(spec.begin(), spec.end(), '|')) + 1;
  if (int64_t(n) != p.B) return FieldError{field, fmt::format("{} lengths but B = {} (one a sequence)", n, p.B)};
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t bar = spec.find('|', at);
    const int64_t len = std::stoll(spec.substr(at, bar - at));
    if (len > bound)
      return FieldError{field, fmt::format("sequence {} has length {}, over {} = {} (the maximum)", i, len, bound_name, bound)};
    at = bar + 1;
  }
  return std::nullopt;
}

std::optional<FieldError> validate_serving(const Problem& p) {
  if (auto e = validate_lengths(p, "seqlens_q", p.seqlens_q, p.S, "S")) return e;
  if (auto e = validate_lengths(p, "seqlens_k", p.seqlens_k, p.Sk, "Sk")) return e;
  if (!p.seqlens_q.empty() && p.layout != Layout::thd)
    return FieldError{"layout", "seqlens_q packs the queries: the layout must be thd"};
  if (p.varlen()) {
    const ServingShape& sh = p.serving();
    for (int64_t b = 0; b < p.B; ++b) {
      if (sh.k_len[size_t(b)] < 0)
        return FieldError{"seqlens_k", fmt::format("sequence {}: {} queries and Sk - S = {} leave {} keys; give seqlens_k",
                                                   b, sh.q_len[size_t(b)], p.Sk - p.S, sh.k_len[size_t(b)])};
      if (p.kv_cache && sh.k_len[size_t(b)] < sh.q_len[size_t(b)])
        return FieldError{"kv_cache", fmt::format("sequence {} appends {} tokens to a cache of {} keys (needs keys >= queries)",
                                                  b, sh.q_len[size_t(b)], sh.k_len[size_t(b)])};
    }
  }
  if (p.page_size < 0) return FieldError{"page_size", fmt::format("must be 0 (not paged) or positive, got {}", p.page_size)};
  // The page table holds int32 page numbers (harness/serving.cpp builds none beyond them).
  if (p.paged() && p.serving().pages > INT32_MAX)
    return FieldError{"page_size", fmt::format("a pool of {} pages of {} keys: the page table's int32 entries number at most {}",
                                               p.serving().pages == INT64_MAX ? std::string("over 2^63") : std::to_string(p.serving().pages),
                                               p.page_size, INT32_MAX)};
  if (p.paged() && !checked_product({2 * 4, p.serving().pages, p.page_size, p.Hk, p.D}))  // fp32 K and V pools
    return FieldError{"page_size", fmt::format("a pool of {} pages of {} keys (x Hk {} x D {}) overflows int64",
                                               p.serving().pages, p.page_size, p.Hk, p.D)};
  if (p.window_left < -1 || p.window_right < -1)
    return FieldError{"window", fmt::format("left and right must be -1 (unbounded) or >= 0, got {},{}", p.window_left,
                                            p.window_right)};
  if (p.causal && p.window_right > 0)
    return FieldError{"window", fmt::format("causal means right = 0; got right = {}", p.window_right)};
  if (auto why = check_alibi_spec(p.alibi)) return FieldError{"alibi", *why};
  if (p.has_alibi() && p.alibi != "1") {
    const int64_t n = int64_t(std::count(p.alibi.begin(), p.alibi.end(), '|')) + 1;
    if (n != p.H) return FieldError{"alibi", fmt::format("{} slopes but H = {} (one a query head)", n, p.H)};
  }
  if (p.softcap < 0 || !std::isfinite(p.softcap)) return FieldError{"softcap", "must be 0 (none) or a positive number"};
  // Paths cap in fp32: a cap below its smallest normal is 0 there (flushed on GPUs), "no cap", and
  // one above its largest is infinite; either would blame the kernel for the input.
  if (p.softcap > 0 && (p.softcap < std::numeric_limits<float>::min() || p.softcap > std::numeric_limits<float>::max()))
    return FieldError{"softcap", fmt::format("{:g} is outside fp32's normal range [{:g}, {:g}] that the paths cap in",
                                             p.softcap, double(std::numeric_limits<float>::min()),
                                             double(std::numeric_limits<float>::max()))};
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
  return validate_serving(p);
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


}  // namespace fa
