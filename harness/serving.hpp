// The serving fields of a problem, resolved: per-sequence query and key lengths (explicit lists or a
// seeded generator), the packed-row offsets of the `thd` layout (cu_seqlens), the shuffled page table
// of a paged KV pool, and the ALiBi slopes. Problem::serving() computes it once per problem.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fa {

struct Problem;

struct ServingShape {
  std::vector<int64_t> q_len, k_len;  // per sequence, B each
  std::vector<int64_t> cu_q, cu_k;    // B + 1 prefix sums: the first packed row of each sequence
  int64_t page_size = 0;              // 0: K and V are not paged
  int64_t pages_per_seq = 0;          // the page table's row length (the longest sequence's pages)
  int64_t pages = 0;                  // pages in the pool: every sequence's, none shared
  std::vector<int64_t> table;         // [B][pages_per_seq] pool page of each logical page; -1 past the end
  std::vector<double> slopes;         // ALiBi slope per query head (empty: no ALiBi)
};

ServingShape resolve_serving(const Problem& p);

// A `seqlens_q`/`seqlens_k` cell: `a|b|c` (one length a sequence) or `uniform:lo:hi` (each length
// drawn from [lo, hi] under the problem's seed). Returns why the text is neither.
std::optional<std::string> check_seqlens_spec(const std::string& text);
// An `alibi` cell: `0` (none), `1` (the standard slopes 2^(-8i/H), i = 1..H, with the paper's
// interleaving where H is not a power of two), or `s1|s2|...` (one slope a query head).
std::optional<std::string> check_alibi_spec(const std::string& text);
// The standard ALiBi slopes for `heads` query heads (Press et al.; FlashAttention's tests).
std::vector<double> standard_alibi_slopes(int64_t heads);

}  // namespace fa
