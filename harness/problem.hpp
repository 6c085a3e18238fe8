// The problem: one attention forward call (B, H, Hk, S, Sk, D, causal, dtype, layout, seed, scale,
// kv_cache, and the serving fields: per-sequence lengths, a paged KV pool, a sliding window, ALiBi
// and softcap) and the conventions every path and the reference share: softmax scale, bottom-right
// alignment, which keys a row sees, tensor addressing per layout, and the exact FLOP and byte counts.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/conventions.hpp"
#include "harness/dtype.hpp"
#include "harness/serving.hpp"
#include "harness/split_set.hpp"

namespace fa {

// bshd, bhsd: [B][S][H][D] and [B][H][S][D], S the padded length. thd: packed rows, [sum of the
// sequences' lengths][H][D], sequence b starting at row cu_seqlens[b] (varlen APIs' layout).
enum class Layout { bshd, bhsd, thd };
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
  // Serving fields (harness/serving.hpp). Lengths: empty, `a|b|c` or `uniform:lo:hi`; S and Sk are
  // then the maxima (the padded extent and every length's bound).
  std::string seqlens_q, seqlens_k;
  int64_t page_size = 0;                       // > 0: K and V live in pages of a pool, via a page table
  int64_t window_left = -1, window_right = -1;  // FA's window_size, in keys; -1 unbounded
  std::string alibi = "0";                     // 0, 1 (standard slopes) or s1|s2|... a query head
  double softcap = 0;                          // > 0: s -> softcap * tanh(s / softcap)

  double softmax_scale() const;
  // Bottom-right causal: query row i sees keys j <= i + causal_offset().
  int64_t causal_offset() const { return Sk - S; }
  // Number of keys row i attends to (0 for rows a causal mask hides completely).
  int64_t keys_visible(int64_t i) const;
  int64_t kv_cache_offset() const { return kv_cache ? Sk - S : Sk; }
  int64_t group_size() const { return H / Hk; }

  // Serving: the resolved shape, computed once (and again only when a field it depends on changes).
  const ServingShape& serving() const;
  bool varlen() const { return !seqlens_q.empty() || !seqlens_k.empty(); }
  bool paged() const { return page_size > 0; }
  bool windowed() const { return window_left >= 0 || (window_right >= 0 && !causal); }
  bool has_alibi() const { return alibi != "0"; }
  // The serving fields this problem sets; by name ("seqlens_q", "page_size", ...): a path's gate
  // names the ones it refuses.
  ServingSet serving_set() const;
  std::vector<std::string> serving_fields() const;
  ServingSpec serving_spec() const;  // what resolve_serving reads
  int64_t q_len(int64_t b) const;  // sequence b's queries (S without seqlens)
  int64_t k_len(int64_t b) const;  // its keys (Sk without seqlens; with seqlens_q only, q_len + Sk - S)
  bool row_exists(int64_t b, int64_t s) const { return s < q_len(b); }
  // The keys query row s of sequence b sees (causal, window); empty for a row that sees none.
  KeyRange row_keys(int64_t b, int64_t s) const;
  // The ALiBi bias of query head h, row s of sequence b, key j (0 without ALiBi).
  double bias(int64_t b, int64_t h, int64_t s, int64_t j) const;
  int64_t cache_begin(int64_t b) const { return kv_cache ? k_len(b) - q_len(b) : k_len(b); }
  int64_t q_elements() const;   // storage of Q (and O): thd packs, the others pad to S
  int64_t kv_elements() const;  // storage of K (and V): the page pool, packed rows, or padded to Sk

  double unmasked_pairs() const;  // exact count summed over the sequences, one head
  double flops() const;           // 4 * H * D * unmasked_pairs
  // Q read once, the keys and values some row sees read once, O and LSE written once, and the page
  // table read once.
  double bytes() const;
  std::string key() const;        // identity of the inputs: everything but the name
  std::string label() const;      // name if given, else a short shape string

 private:
  mutable std::shared_ptr<const ServingShape> serving_;
  mutable ServingSpec serving_spec_;
};

// "<who> take no seqlens_q, window (serving fields not implemented there yet)": a refusal's words.
std::string serving_refusal(const std::vector<std::string>& fields, const std::string& who);

// Addressing (in elements) of a 4-D tensor over (batch, seq, head, dim); dim stride is 1. Dense
// layouts are affine; thd starts sequence b at packed row cu[b]; a paged pool finds row s of
// sequence b in page table[b * table_row + s / page] at slot s % page. The pointers are into the
// problem's ServingShape: the Strides live no longer than the problem.
struct Strides {
  int64_t batch, seq, head;
  const int64_t* cu = nullptr;
  const int64_t* table = nullptr;
  int64_t table_row = 0, page = 0;
  int64_t at(int64_t b, int64_t s, int64_t h) const {
    if (table) return (table[b * table_row + s / page] * page + s % page) * seq + h * head;
    return (cu ? cu[b] * seq : b * batch) + s * seq + h * head;
  }
  bool affine() const { return !cu && !table; }
};
Strides strides_for(Layout l, int64_t seq_len, int64_t heads, int64_t dim);
Strides q_strides(const Problem& p);
Strides kv_strides(const Problem& p);
// LSE is [B, H, S] fp32 in every layout (rows past a sequence's length are not part of the result).
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

}  // namespace fa
