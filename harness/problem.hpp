// The problem: one attention forward call (B, H, Hk, S, Sk, D, causal, dtype, layout, seed, scale,
// kv_cache) and the conventions every path and the reference share: softmax scale, bottom-right
// causal alignment, tensor strides per layout, and the exact FLOP and byte counts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/dtype.hpp"

namespace fa {

enum class Layout { bshd, bhsd };
std::string_view layout_name(Layout l);
std::optional<Layout> parse_layout(std::string_view s);

struct Problem {
  std::string name;  // optional row label from the sweep file
  int64_t B = 1, H = 1, Hk = 1, S = 1, Sk = 1, D = 64;
  bool causal = false;
  DType dtype = DType::fp16;
  Layout layout = Layout::bshd;
  uint64_t seed = 1;
  double scale = 0.0;     // 0: 1/sqrt(D)
  bool kv_cache = false;  // the last S keys/values are appended to a cache before attending

  double softmax_scale() const;
  // Bottom-right causal: query row i sees keys j <= i + causal_offset().
  int64_t causal_offset() const { return Sk - S; }
  // Number of keys row i attends to (0 for rows a causal mask hides completely).
  int64_t keys_visible(int64_t i) const;
  int64_t kv_cache_offset() const { return kv_cache ? Sk - S : Sk; }
  int64_t group_size() const { return H / Hk; }

  double unmasked_pairs() const;  // exact count over one (batch, head)
  double flops() const;           // 4 * B * H * D * unmasked_pairs
  double bytes() const;           // Q, K, V read once; O and LSE written once
  std::string key() const;        // identity of the inputs: everything but the name
  std::string label() const;      // name if given, else a short shape string
};

// Strides (in elements) of a 4-D tensor over (batch, seq, head, dim); dim stride is 1.
struct Strides {
  int64_t batch, seq, head;
  int64_t at(int64_t b, int64_t s, int64_t h) const { return b * batch + s * seq + h * head; }
};
Strides strides_for(Layout l, int64_t seq_len, int64_t heads, int64_t dim);
inline Strides q_strides(const Problem& p) { return strides_for(p.layout, p.S, p.H, p.D); }
inline Strides kv_strides(const Problem& p) { return strides_for(p.layout, p.Sk, p.Hk, p.D); }
// LSE is [B, H, S] fp32 in every layout.
inline int64_t lse_index(const Problem& p, int64_t b, int64_t h, int64_t s) { return (b * p.H + h) * p.S + s; }

// A field that makes a problem invalid, and why.
struct FieldError {
  std::string field, reason;
};
std::optional<FieldError> validate(const Problem& p);

// A requested split count: 0 (no split), 2..16, or auto (the heuristic decides).
struct SplitRequest {
  bool is_auto = false;
  int value = 0;
  std::string str() const { return is_auto ? "auto" : std::to_string(value); }
  bool operator==(const SplitRequest& o) const { return is_auto == o.is_auto && value == o.value; }
};
std::optional<SplitRequest> parse_split(std::string_view s);
bool split_count_allowed(int g);  // 0, 2, 4, 8, 16

}  // namespace fa
