// What a path takes, as data: the dtypes, head dims, split counts, serving fields, kv_cache and the
// device it needs, declared once in its registry row. The shared gate (capability_gate) applies it,
// and every other view is derived from the same struct: the skip reasons, `fa-bench list` and
// `list --markdown` (the README's path table), and the GPU tests' expectations. A path's own gate
// adds only what the table cannot state (grid limits, S == 1, budgets), after it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/dtype.hpp"
#include "harness/serving.hpp"
#include "harness/split_set.hpp"

namespace fa {

struct Problem;
struct DeviceFacts;

// What a path's kernels need of the device (DeviceFacts' named capability predicates).
enum class DeviceNeed : uint8_t { cpu, gpu, mma_sm80, mfma_gfx9, wmma };
std::string device_need_words(DeviceNeed n);  // "an NVIDIA GPU with mma.sync (sm_80 or newer)"
bool device_meets(DeviceNeed n, const DeviceFacts& d);

// Head dims: an explicit list (a traits table's rows), or every D in [min, max] with D % multiple == 0.
struct HeadDims {
  std::vector<int> list;
  int min = 1, max = 256, multiple = 1;
  static HeadDims of(std::vector<int> dims) { return HeadDims{std::move(dims), 0, 0, 1}; }
  static HeadDims range(int min, int max, int multiple = 1) { return HeadDims{{}, min, max, multiple}; }
  bool takes(int64_t D) const;
  std::string str() const;  // "64, 80, 128" or "64..256, D % 32 == 0" or "1..256"
};

// The head dims a traits table has a row for (`has(D)` over the multiples of 8 up to 256).
template <typename Has>
HeadDims head_dims_where(Has&& has) {
  std::vector<int> dims;
  for (int D = 8; D <= 256; D += 8)
    if (has(D)) dims.push_back(D);
  return HeadDims::of(std::move(dims));
}

// kv_cache problems (append, then attend): refused, taken, or the only ones taken (kv-cache).
enum class KvCache : uint8_t { refuses, takes, needs };

struct Capabilities {
  std::vector<DType> dtypes;  // empty: an undeclared row (placeholders, plugins): nothing derived
  HeadDims head_dims;
  SplitSet splits;
  ServingSet serving;
  KvCache kv_cache = KvCache::refuses;
  DeviceNeed device = DeviceNeed::gpu;
  // The FP8 dtypes run on the device's matrix cores, so each only where they multiply its format
  // (DeviceFacts::matrix_fp8_*: gfx94x MFMA FNUZ, gfx12 WMMA OCP); the gate names what the arch has.
  bool fp8_on_matrix_cores = false;

  bool declared() const { return !dtypes.empty(); }
  bool takes_dtype(DType t) const;
};

// Why path `name` with capabilities `c` does not take (p, G) on `d`, or nothing. In order: the
// device, the dtype (and an FP8 format the device's matrix cores lack), D, the serving fields (naming each one it refuses), kv_cache, G.
std::optional<std::string> capability_gate(const std::string& name, const Capabilities& c, const Problem& p, int G,
                                           const DeviceFacts& d);

// The row in words ("fp16, bf16; D in 64, 128; G in 0, 2; serving fields window; ...") and as the
// cells of `list --markdown`.
std::string describe(const Capabilities& c);
struct CapabilityCells {
  std::string device, dtypes, head_dims, splits, serving, kv_cache;
};
CapabilityCells capability_cells(const Capabilities& c);

}  // namespace fa
