// The problem's field table (harness/problem_fields.hpp): one row a field, in results column order.
#include "harness/problem_fields.hpp"

#include "harness/serving.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace fa {
namespace {

using Why = std::optional<std::string>;

Why to_int(const std::string& text, int64_t& out) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') return fmt::format("'{}' is not an integer", text);
  if (errno == ERANGE) return fmt::format("'{}' is out of range for a 64-bit integer", text);
  out = v;
  return std::nullopt;
}

Why to_real(const std::string& text, double& out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return fmt::format("'{}' is not a number", text);
  out = v;
  return std::nullopt;
}

Why to_flag(const std::string& text, bool& out) {
  if (text == "1" || text == "true" || text == "yes") return out = true, std::nullopt;
  if (text == "0" || text == "false" || text == "no") return out = false, std::nullopt;
  return fmt::format("'{}' is not 0/1/true/false", text);
}

// Seeds use all 64 bits (--seed takes any; records carry them); a sign is refused.
Why to_seed(const std::string& text, uint64_t& out) {
  if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0]))) {
    errno = 0;
    char* end = nullptr;
    const unsigned long long u = std::strtoull(text.c_str(), &end, 10);
    if (*end == '\0' && errno == 0) return out = u, std::nullopt;
  }
  int64_t v = 0;
  if (auto why = to_int(text, v)) return why;
  if (v < 0) return std::string("must be >= 0");
  out = uint64_t(v);
  return std::nullopt;
}

Why to_layout(const std::string& text, Layout& out) {
  const auto l = parse_layout(text);
  if (!l) return fmt::format("unknown layout '{}' (bshd, bhsd, thd)", text);
  out = *l;
  return std::nullopt;
}

Why to_dtype(const std::string& text, DType& out) {
  const auto d = parse_dtype(text);
  if (!d) return fmt::format("unknown dtype '{}'", text);
  out = *d;
  return std::nullopt;
}

// A text field checked by `check` (lengths, slopes): stored as given.
Why set_spec(const std::string& text, std::string& out, std::optional<std::string> (*check)(const std::string&)) {
  if (auto why = check(text)) return why;
  out = text;
  return std::nullopt;
}

// LEFT,RIGHT (or LEFT|RIGHT, a YAML list's cell); empty: none (-1,-1).
Why to_window(const std::string& text, Problem& p) {
  if (text.empty()) return p.window_left = p.window_right = -1, std::nullopt;
  const size_t sep = text.find_first_of(",|");
  if (sep == std::string::npos) return fmt::format("'{}' is not LEFT,RIGHT (e.g. 4096,0; -1 unbounded)", text);
  int64_t l = 0, r = 0;
  if (to_int(text.substr(0, sep), l) || to_int(text.substr(sep + 1), r))
    return fmt::format("'{}' is not LEFT,RIGHT with whole numbers (e.g. 4096,0; -1 unbounded)", text);
  p.window_left = l, p.window_right = r;
  return std::nullopt;
}

#define FA_COUNT(member)                                                                       \
  [](Problem& p, const std::string& t) { return to_int(t, p.member); },                        \
      [](const Problem& p) { return std::to_string(p.member); },                               \
      [](const Problem& p) { return double(p.member); }
#define FA_FLAG(member)                                                                        \
  [](Problem& p, const std::string& t) { return to_flag(t, p.member); },                       \
      [](const Problem& p) { return std::to_string(int(p.member)); },                          \
      [](const Problem& p) { return double(p.member); }

const std::vector<ProblemField> kFields = {
    {"name", FieldKind::text, "--name", "Label for the tables", false, false, nullptr, "a b",
     [](Problem& p, const std::string& t) -> Why { return p.name = t, std::nullopt; },
     [](const Problem& p) { return p.name; }, nullptr, /*in_key=*/false},
    {"B", FieldKind::count, "--B", "Batch", true, true, nullptr, "2", FA_COUNT(B)},
    {"H", FieldKind::count, "--H", "Query heads", true, true, nullptr, "4", FA_COUNT(H)},
    {"Hk", FieldKind::count, "--Hk", "Key/value heads (default H)", false, true, "H", "2", FA_COUNT(Hk)},
    {"S", FieldKind::count, "--S", "Query length", true, true, nullptr, "3", FA_COUNT(S)},
    {"Sk", FieldKind::count, "--Sk", "Key length (default S)", false, true, "S", "5", FA_COUNT(Sk)},
    {"D", FieldKind::count, "--D", "Head dimension", true, true, nullptr, "32", FA_COUNT(D)},
    {"causal", FieldKind::flag, "--causal", "Bottom-right causal mask", false, false, nullptr, "1", FA_FLAG(causal)},
    {"dtype", FieldKind::word, nullptr, nullptr, false, false, nullptr, "bf16",
     [](Problem& p, const std::string& t) { return to_dtype(t, p.dtype); },
     [](const Problem& p) { return std::string(dtype_name(p.dtype)); }, nullptr, /*in_key=*/true, /*row_list=*/true},
    {"layout", FieldKind::word, "--layout", "bshd (default) or bhsd", false, true, nullptr, "bhsd",
     [](Problem& p, const std::string& t) { return to_layout(t, p.layout); },
     [](const Problem& p) { return std::string(layout_name(p.layout)); }, nullptr},
    {"kv_cache", FieldKind::flag, "--kv-cache", "Append the last S keys to a cache, then attend", false, false,
     nullptr, "1", FA_FLAG(kv_cache)},
    {"scale", FieldKind::real, "--scale", "Softmax scale (default 1/sqrt(D))", false, true, nullptr, "0.25",
     [](Problem& p, const std::string& t) { return to_real(t, p.scale); },
     [](const Problem& p) { return fmt::format("{:.9g}", p.scale); },
     [](const Problem& p) { return p.softmax_scale(); },  // the scale in effect, 1/sqrt(D) when not given
     /*in_key=*/true, /*row_list=*/false, [](const Problem& p) { return fmt::format("{}", p.scale); }},
    {"seqlens_q", FieldKind::text, "--seqlens-q", "Per-sequence query lengths (a|b|c or uniform:LO:HI; layout thd)", false,
     false, nullptr, "5",
     [](Problem& p, const std::string& t) { return set_spec(t, p.seqlens_q, check_seqlens_spec); },
     [](const Problem& p) { return p.seqlens_q; }, nullptr, /*in_key=*/true, /*row_list=*/false, nullptr,
     /*optional_column=*/true},
    {"seqlens_k", FieldKind::text, "--seqlens-k", "Per-sequence key lengths (a|b|c or uniform:LO:HI)", false, false, nullptr,
     "uniform:0:5", [](Problem& p, const std::string& t) { return set_spec(t, p.seqlens_k, check_seqlens_spec); },
     [](const Problem& p) { return p.seqlens_k; }, nullptr, /*in_key=*/true, /*row_list=*/false, nullptr,
     /*optional_column=*/true},
    {"page_size", FieldKind::count, "--page-size", "Keys a page of the paged KV pool (0: not paged)", false, true, nullptr,
     "16", FA_COUNT(page_size), /*in_key=*/true, /*row_list=*/false, nullptr, /*optional_column=*/true},
    {"window", FieldKind::text, "--window", "Sliding window LEFT,RIGHT in keys (-1 unbounded; FA's window_size; empty: none)", false,
     false, nullptr, "4,0", [](Problem& p, const std::string& t) { return to_window(t, p); },
     [](const Problem& p) {  // empty without a window: no quoted comma in every results row
       return p.window_left < 0 && p.window_right < 0 ? std::string() : fmt::format("{},{}", p.window_left, p.window_right);
     },
     nullptr, /*in_key=*/true,
     /*row_list=*/false, nullptr, /*optional_column=*/true},
    {"alibi", FieldKind::text, "--alibi", "ALiBi: 0, 1 (standard slopes) or s1|s2|... a query head", false, false, nullptr,
     "1", [](Problem& p, const std::string& t) { return set_spec(t, p.alibi, check_alibi_spec); },
     [](const Problem& p) { return p.alibi; }, nullptr, /*in_key=*/true, /*row_list=*/false, nullptr,
     /*optional_column=*/true},
    {"softcap", FieldKind::real, "--softcap", "Logit softcap (0: none): s -> c*tanh(s/c)", false, true, nullptr, "50",
     [](Problem& p, const std::string& t) { return to_real(t, p.softcap); },
     [](const Problem& p) { return fmt::format("{:.9g}", p.softcap); }, [](const Problem& p) { return p.softcap; },
     /*in_key=*/true, /*row_list=*/false, [](const Problem& p) { return fmt::format("{}", p.softcap); },
     /*optional_column=*/true},
    {"seed", FieldKind::count, nullptr, nullptr, false, false, nullptr, "18446744073709551615",
     [](Problem& p, const std::string& t) { return to_seed(t, p.seed); },
     [](const Problem& p) { return std::to_string(p.seed); }, [](const Problem& p) { return double(p.seed); }},
};

#undef FA_COUNT
#undef FA_FLAG

}  // namespace

const std::vector<ProblemField>& problem_field_table() {
  static const bool counted = [] {
    if (kFields.size() != kNumProblemFields)
      throw std::logic_error(fmt::format("problem_fields.cpp: {} rows but kNumProblemFields is {}", kFields.size(),
                                         kNumProblemFields));
    return true;
  }();
  (void)counted;
  return kFields;
}

const ProblemField* find_problem_field(std::string_view name) {
  for (const auto& f : problem_field_table())
    if (name == f.name) return &f;
  return nullptr;
}

// The identity of a problem's inputs: every field the table marks in_key, as its cell.
std::string Problem::key() const {
  std::string k;
  for (const auto& f : problem_field_table())
    if (f.in_key) k += (k.empty() ? "" : ",") + f.cell(*this);
  return k;
}

}  // namespace fa
