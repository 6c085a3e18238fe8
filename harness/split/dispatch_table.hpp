// `auto`'s fitted choice of path: a table of timed training problems (each path's median ms on it,
// at its requested G) and the nearest-neighbour rule that reads it. A query takes, among the paths
// its gate admits, the one fastest on the nearest training problem that timed any of them; none:
// rank order. `fa-bench fit` writes the table as the `dispatch` section of results/heuristics/<arch>.json
// (version 2); harness/split/split_rules.cpp reads that file and hands the section to parse_dispatch_json.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/problem.hpp"

namespace fa {

// What the distance reads of a problem at a G.
struct DispatchKey {
  int64_t B = 1, H = 1, Hk = 1, S = 1, Sk = 1, D = 64;
  bool causal = false;
  DType dtype = DType::fp16;  // counts by its class (its size: FP8, 16-bit, fp32), then itself
  bool kv_cache = false;
  // The serving fields set, with their values ("page_size=16;seqlens_k=100|128"); empty: none. Two
  // problems that differ here run different kernel work (paged gathers, windows, softcap), so they
  // are of different classes.
  std::string serving;
  int G = 0;             // the G the paths ran at
};
DispatchKey dispatch_key(const Problem& p, int G);

// The distance between two problems (see dispatch_table.cpp for why this one).
double dispatch_distance(const DispatchKey& a, const DispatchKey& b);

struct DispatchEntry {
  std::string name;  // the problem's label, for the reader of the file
  DispatchKey key;
  std::map<std::string, double> ms;  // path -> median ms at key.G
};

struct DispatchTable {
  static constexpr const char* kModel = "nearest-neighbour";
  std::vector<DispatchEntry> problems;
};

struct DispatchPick {
  std::string path;
  size_t neighbour = 0;  // index into the table of the (first) nearest problem that decided
  double distance = 0;
};
// The pick for `q` among the paths `admitted` says yes to; nullopt where no training problem timed
// an admitted path (the caller falls back to rank order). `left_out`: table indices to ignore
// (held-out scoring). Problems at the same nearest distance decide together: the admitted path,
// timed on all of them, with the smallest geomean time; where none is timed on all, the first.
std::optional<DispatchPick> dispatch_pick(const DispatchTable& t, const DispatchKey& q,
                                          const std::function<bool(const std::string&)>& admitted,
                                          const std::function<bool(size_t)>& left_out = nullptr);
// The same problem but for its dtype: held out together, so that a twin cannot answer for it.
bool same_shape(const DispatchKey& a, const DispatchKey& b);

// The `dispatch` section's JSON: InputError naming `source` and the field ("dispatch.problems[3].ms.mma").
DispatchTable parse_dispatch_json(const nlohmann::json& j, const std::string& source);
// The section's text, indented to sit at `indent` spaces in the file, one problem a line.
std::string dispatch_json_text(const DispatchTable& t, int indent);

// What `auto` dispatches by on this run, and where it came from.
struct DispatchChoice {
  std::shared_ptr<const DispatchTable> table;  // null: rank order
  std::string arch;    // the table's arch
  std::string source;  // "built-in sm_90", "file results/heuristics/sm_90.json", or why rank order
  // "fitted sm_90, 57 problems (built-in sm_90)" or "rank order: no fitted table for gfx942".
  std::string describe() const;
};

}  // namespace fa
