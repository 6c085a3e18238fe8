// The GPU side of an Execution: device buffers for one problem, inputs uploaded in the dtype,
// outputs poisoned (all-ones bits) before each run, timing with device events around the launch
// only, cold mode clearing L2 and any last-level cache by reading a buffer twice their size between samples. A planted test
// delay (--plant-slowdown) is one spin kernel enqueued after the launches, inside the events.
// A path derives from GpuExecution and implements launch(); all else is shared.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/path.hpp"
#include "kernels/device/device_common.hpp"

namespace fa::gpu {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  template <typename T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return n_; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

class GpuExecution : public Execution {
 public:
  // partial_splits > 1 allocates fp32 partial O/LSE for that many splits. guard_bytes: spare bytes
  // before and after O and LSE that poison and read-back leave alone (plugin paths' guards,
  // kernels/runtime/plugin_gpu.hpp); O's and LSE's own bytes then start guard_bytes in (o_at()).
  GpuExecution(const Problem& p, const HostInputs& in, const GateContext& ctx, int partial_splits,
               size_t guard_bytes = 0);
  ~GpuExecution() override;
  void poison() override;
  void run() override;
  RunOutputs read_back() override;
  double timed_sample_ms(TimingMode mode) override;
  double timed_batch_ms(TimingMode mode, int n) override;  // n launches between one pair of events
  bool add_timed_delay(double ms_per_call) override;       // a spin kernel after the launches

 protected:
  virtual void launch() = 0;   // enqueue the path's kernels on stream_
  virtual int g_used() const { return args_.G > 1 ? args_.G : 0; }
  char* o_at() const { return o_.as<char>() + guard_bytes_; }
  char* lse_at() const { return lse_.as<char>() + guard_bytes_; }
  // kv_cache problems: enqueues the append of the new tokens into the cache's slots (every layout,
  // varlen and pages included), the first step of a kv_cache path's launch(); nothing otherwise.
  void append_kv() { write_kv_slots(/*poison=*/false); }

  Problem p_;
  AttnArgs args_{};
  Stream stream_ = nullptr;
  DeviceBuffer q_, k_, v_, o_, lse_, o_part_, lse_part_, flush_;
  DeviceBuffer k_new_, v_new_;  // kv_cache problems: the tokens to append, compact [tokens][Hk][D]
  // Serving problems: cu_seqlens, lengths, the page table and ALiBi slopes (AttnArgs points at them).
  DeviceBuffer cu_q_, cu_k_, q_len_, k_len_, table_, slopes_, serving_view_;
  size_t o_bytes_ = 0, lse_bytes_ = 0;  // O's and LSE's own bytes (the buffers may hold guards around them)
  size_t guard_bytes_ = 0;
  size_t flush_bytes_ = 0;  // harness/device_model.hpp's cold_flush_bytes: 2 x (L2 + LLC), 64 MB at least

 private:
  Event start_ = nullptr, stop_ = nullptr;
  double delay_ticks_per_call_ = 0;  // test only (--plant-slowdown): wall_ticks() to spin per call
  DeviceBuffer kv_rows_;              // kv_cache: each new token's kv head 0 in K/V (AppendedSlots::row)
  int64_t kv_tokens_ = 0, kv_head_ = 0;
  void write_kv_slots(bool poison);   // the new tokens' K/V rows, or the poison pattern there
  // What the path only reads, checksummed on the device after the upload and again at every
  // read_back (kernels/runtime/gpu_execution.hip says why that way).
  struct Watched {
    const char* name;
    const DeviceBuffer* buffer;
    size_t elem_bytes;
    uint64_t sum;
    std::vector<uint8_t> host;  // the bytes uploaded: the first changed element is found against them
    uint32_t drawn = 0;         // Q/K/V drawn on the device (stream 1-3): no host bytes; drawn again to compare
  };
  std::vector<Watched> watched_;
  DeviceBuffer sum_;                  // the checksum kernel's 8-byte result
  std::vector<uint8_t> kv_slot_;      // kv_cache: 1 for each K/V element an appended token owns
  void watch(const char* name, const DeviceBuffer& b, size_t elem_bytes, std::vector<uint8_t> host, uint32_t drawn = 0);
  uint64_t device_checksum(const DeviceBuffer& b);
  std::string inputs_fault();
};

}  // namespace fa::gpu
