// Host inputs of a problem: Q, K, V drawn from the counter-based normal generator under the
// problem's seed (streams 1, 2, 3; element index in logical BSHD order, so every layout holds the
// same values), rounded to the dtype and stored as float in the problem's layout. FP8 inputs are
// the same normals quantised per tensor (x / descale rounded to FP8, descale = amax / dtype_max).
// Also TypedBuffer: raw output bits in the dtype, as paths hand them back.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "harness/problem.hpp"

namespace fa {

// Per-tensor descale factors: element e of Q means q[e] * q. 1 except for FP8 inputs, which are
// quantised as FP8 kernels expect them (per-tensor amax scaling: descale = amax / dtype_max).
struct Descales {
  float q = 1.f, k = 1.f, v = 1.f;
};

struct HostInputs {
  std::vector<float> q, k, v;  // k, v hold all Sk keys (for kv_cache: cache + appended tokens)
  Descales descale;
  // Drawn from the problem's seed by make_inputs (not loaded): a GPU execution may then draw the
  // same bits on the device instead of converting and uploading these (kernels/runtime/device_inputs.hpp).
  bool seeded = false;
  // Empty: q holds every query row, in the problem's layout. Else only these positions s (ascending)
  // were drawn, for every b and h, and q holds them compactly as [B][q_rows][H][D]: the rows the CPU
  // oracle checks, on a row whose paths all draw their inputs on the device (RowData::oracle_rows_only).
  std::vector<int64_t> q_rows;
  Strides q_compact{0, 0, 0};  // with q_rows: [B][q_rows][H][D], indexed by a row's place in q_rows
  // Where query row (b, s, h)'s D values start in q; qs is q_strides(p). With q_rows, s must be one of them.
  int64_t q_offset(const Strides& qs, int64_t b, int64_t s, int64_t h) const;
  bool has_q_row(int64_t s) const;
  // Throws naming `who` where q holds only some rows (a reader of every element was handed them).
  void require_every_q_row(const char* who) const;
};
// Every element of Q, K and V; or, with q_rows (ascending, within [0, S); 16-bit or fp32 dtypes on
// a problem the device can draw), Q at those positions alone: an FP8 descale needs the whole tensor.
HostInputs make_inputs(const Problem& p, std::vector<int64_t> q_rows = {});

// Whether a GPU execution draws p's seeded inputs on the device rather than uploading the host's:
// dense layouts (bshd, bhsd) without a kv cache, where every logical element has a storage slot.
bool drawn_on_device(const Problem& p);

// kv_cache problems: the slots the appended tokens fill. Token t, counted sequence by sequence
// (keys [cache_begin(b), k_len(b)) of sequence b), puts kv head h, element d at
// row[t] + h * head + d in K and V (in any layout, a page pool's included) and reads it from
// (t * Hk + h) * D + d of the compact new-token buffers a path appends from ([tokens][Hk][D]; for a
// dense problem that is the plugin ABI's [B][S][Hk][D]).
struct AppendedSlots {
  std::vector<int64_t> row;  // per token: the element offset of its kv head 0 in K and V
  int64_t head = 0, Hk = 0, D = 0;
  int64_t tokens() const { return int64_t(row.size()); }
  // f(offset in K/V, offset in the compact buffers) for every appended element.
  template <typename F>
  void each(F&& f) const {
    for (int64_t t = 0; t < tokens(); ++t)
      for (int64_t h = 0; h < Hk; ++h)
        for (int64_t d = 0; d < D; ++d) f(row[size_t(t)] + h * head + d, (t * Hk + h) * D + d);
  }
  // The compact new tokens, gathered from a K or V that holds every key.
  std::vector<float> gather(const std::vector<float>& kv) const {
    std::vector<float> out(size_t(tokens() * Hk * D));
    each([&](int64_t at, int64_t i) { out[size_t(i)] = kv[size_t(at)]; });
    return out;
  }
};
AppendedSlots appended_slots(const Problem& p);  // empty without kv_cache

// A tensor as stored in its dtype: 1, 2 or 4 bytes per element (host byte order: little-endian).
struct TypedBuffer {
  DType dtype = DType::fp16;
  std::vector<uint8_t> bytes;

  TypedBuffer() = default;
  TypedBuffer(DType t, int64_t n) : dtype(t), bytes(size_t(n) * dtype_bytes(t)) {}
  int64_t size() const { return int64_t(bytes.size()) / dtype_bytes(dtype); }
  uint32_t bits(int64_t i) const {
    uint32_t b = 0;  // little-endian: the low bytes of b
    std::memcpy(&b, bytes.data() + size_t(i) * size_t(dtype_bytes(dtype)), size_t(dtype_bytes(dtype)));
    return b;
  }
  void set_bits(int64_t i, uint32_t b) {
    std::memcpy(bytes.data() + size_t(i) * size_t(dtype_bytes(dtype)), &b, size_t(dtype_bytes(dtype)));
  }
  float at(int64_t i) const { return from_bits(dtype, bits(i)); }
  void set(int64_t i, float x) { set_bits(i, to_bits(dtype, x)); }
  void poison() { std::memset(bytes.data(), 0xff, bytes.size()); }
};
TypedBuffer to_typed(DType t, const std::vector<float>& values);

}  // namespace fa
