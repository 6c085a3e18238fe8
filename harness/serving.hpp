// The serving fields of a problem: which ones it sets (ServingField, ServingSet: the names every
// gate, skip reason and capabilities row use) and their resolved shape: per-sequence query and key
// lengths (explicit lists or a seeded generator), the packed-row offsets of the `thd` layout
// (cu_seqlens), the shuffled page table of a paged KV pool, and the ALiBi slopes.
// Problem::serving() resolves it once per problem, from the problem's ServingSpec.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace fa {

// Every serving field, in the order reasons and tables list them; the names are the ones users see.
enum class ServingField : uint8_t { seqlens_q, seqlens_k, thd, page_size, window, alibi, softcap };
constexpr std::array<ServingField, 7> kServingFields{ServingField::seqlens_q, ServingField::seqlens_k,
                                                     ServingField::thd,       ServingField::page_size,
                                                     ServingField::window,    ServingField::alibi,
                                                     ServingField::softcap};
constexpr const char* serving_field_name(ServingField f) {
  constexpr const char* kNames[] = {"seqlens_q", "seqlens_k", "layout thd", "page_size", "window", "alibi", "softcap"};
  return kNames[int(f)];
}

// A set of serving fields: what a problem sets, or what a path takes.
class ServingSet {
 public:
  constexpr ServingSet() = default;
  constexpr ServingSet(std::initializer_list<ServingField> fs) {
    for (ServingField f : fs) bits_ |= bit(f);
  }
  static constexpr ServingSet every() { return ServingSet((1u << kServingFields.size()) - 1); }
  constexpr bool has(ServingField f) const { return bits_ & bit(f); }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr ServingSet& add(ServingField f) {
    bits_ |= bit(f);
    return *this;
  }
  constexpr ServingSet without(ServingSet o) const { return ServingSet(bits_ & ~o.bits_); }
  constexpr bool operator==(const ServingSet& o) const { return bits_ == o.bits_; }
  std::vector<std::string> names() const;
  std::string str() const;  // "seqlens_q, window"; "none" when empty

 private:
  constexpr explicit ServingSet(uint32_t bits) : bits_(bits) {}
  static constexpr uint32_t bit(ServingField f) { return 1u << int(f); }
  uint32_t bits_ = 0;
};

// What resolve_serving reads of a problem (Problem::serving_spec()).
struct ServingSpec {
  int64_t B = 1, H = 1, S = 1, Sk = 1;
  uint64_t seed = 1;
  std::string seqlens_q, seqlens_k, alibi = "0";
  int64_t page_size = 0;
  bool operator==(const ServingSpec& o) const {
    return B == o.B && H == o.H && S == o.S && Sk == o.Sk && seed == o.seed && seqlens_q == o.seqlens_q &&
           seqlens_k == o.seqlens_k && alibi == o.alibi && page_size == o.page_size;
  }
};

struct ServingShape {
  std::vector<int64_t> q_len, k_len;  // per sequence, B each
  std::vector<int64_t> cu_q, cu_k;    // B + 1 prefix sums: the first packed row of each sequence
  int64_t page_size = 0;              // 0: K and V are not paged
  int64_t pages_per_seq = 0;          // the page table's row length (the longest sequence's pages)
  int64_t pages = 0;                  // pages in the pool: every sequence's, none shared
  std::vector<int64_t> table;         // [B][pages_per_seq] pool page of each logical page; -1 past the end
  std::vector<double> slopes;         // ALiBi slope per query head (empty: no ALiBi)
};

ServingShape resolve_serving(const ServingSpec& p);

// A `seqlens_q`/`seqlens_k` cell: `a|b|c` (one length a sequence) or `uniform:lo:hi` (each length
// drawn from [lo, hi] under the problem's seed). Returns why the text is neither.
std::optional<std::string> check_seqlens_spec(const std::string& text);
// An `alibi` cell: `0` (none), `1` (the standard slopes 2^(-8i/H), i = 1..H, with the paper's
// interleaving where H is not a power of two), or `s1|s2|...` (one slope a query head).
std::optional<std::string> check_alibi_spec(const std::string& text);
// The standard ALiBi slopes for `heads` query heads (Press et al.; FlashAttention's tests).
std::vector<double> standard_alibi_slopes(int64_t heads);

}  // namespace fa
