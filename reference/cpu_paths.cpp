// The CPU paths' rows: cpu-ref (the oracle, timed only) and cpu-flash (tiled online softmax with
// split-K), both within the CPU work budget. Executions poison outputs before each run, time with
// the host clock, and in cold mode evict the caches by streaming a buffer twice this machine's
// last-level cache through them.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

#include "harness/path_registry.hpp"
#include "reference/cpu_flash.hpp"
#include "reference/cpu_flush.hpp"
#include "reference/cpu_ref.hpp"

namespace fa {
namespace {

// Twice this machine's last-level cache (sysfs), 8-256 MB; 256 MB where sysfs does not say. A fixed
// 256 MB memset was 20-30 ms a sample on the 2-core CI machine (32 MB L3), 10x its 64 MB.
size_t flush_bytes() {
  size_t llc = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", i));
    std::string text;
    if (!(f >> text) || text.empty()) continue;
    const char unit = text.back();
    size_t n = size_t(std::strtoull(text.c_str(), nullptr, 10));
    n <<= unit == 'K' ? 10 : unit == 'M' ? 20 : 0;
    llc = std::max(llc, n);
  }
  const size_t mb = size_t(1) << 20;
  return llc ? std::clamp(2 * llc, 8 * mb, 256 * mb) : 256 * mb;
}

}  // namespace

// Reads the buffer a byte a 64-byte line, and writes nothing: a written buffer leaves the caches
// full of dirty lines, and their write-back then falls inside the timed call (on the H100 the
// same mistake in the GPU flush cost every timed decode kernel ~10 us: kernels/runtime/gpu_execution.hip).
void flush_cpu_caches() {
  static const std::vector<uint8_t> junk(flush_bytes(), 1);
  static volatile uint64_t sink = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < junk.size(); i += 64) sum += junk[i];
  sink = sink + sum;
}

namespace {

float poison_float() {
  const uint32_t b = 0xffffffffu;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

std::optional<std::string> within_budget(const Problem& p, int, const GateContext& ctx) {
  if (p.flops() <= ctx.cpu_budget_flops) return std::nullopt;
  return fmt::format("needs {:.1f} GFLOP, over the CPU budget of {:.1f} GFLOP (--cpu-budget)", p.flops() / 1e9,
                     ctx.cpu_budget_flops / 1e9);
}

class CpuExecution : public Execution {
 public:
  CpuExecution(const Problem& p, const HostInputs& in) : p_(p), in_(in), o_(out_dtype(p.dtype), p.q_elements()) {
    in.require_every_q_row("a CPU path");
    lse_.resize(size_t(p.B * p.H * p.S));
  }
  void poison() override {
    o_.poison();
    std::fill(lse_.begin(), lse_.end(), poison_float());
  }
  RunOutputs read_back() override {
    RunOutputs out;
    out.o = o_;
    out.lse = lse_;
    return out;
  }
  double timed_sample_ms(TimingMode mode) override { return host_timed_sample_ms(mode, [this] { run(); }); }

 protected:
  Problem p_;
  const HostInputs& in_;
  TypedBuffer o_;
  std::vector<float> lse_;
};

class CpuRefExecution : public CpuExecution {
 public:
  using CpuExecution::CpuExecution;
  void run() override {
    std::vector<int64_t> rows(size_t(p_.S));
    for (int64_t i = 0; i < p_.S; ++i) rows[size_t(i)] = i;
    const Reference ref = compute_reference(p_, in_, std::move(rows), false);
    const Strides qs = q_strides(p_);
    for (int64_t b = 0; b < p_.B; ++b)
      for (int64_t h = 0; h < p_.H; ++h)
        for (int64_t s = 0; s < p_.q_len(b); ++s) {
          const size_t ri = ref.row_index(b, h, size_t(s));
          for (int64_t d = 0; d < p_.D; ++d) o_.set(qs.at(b, s, h) + d, float(ref.o[ri * size_t(p_.D) + size_t(d)]));
          lse_[size_t(lse_index(p_, b, h, s))] = float(ref.lse[ri]);
        }
  }
};

// kv_cache problems: the cache holds keys [0, offset) from the start; run() appends the new
// tokens' K/V at [offset, Sk) of each sequence (in its pages, when paged) and then attends over
// the whole cache.
class CpuFlashExecution : public CpuExecution {
 public:
  CpuFlashExecution(const Problem& p, const HostInputs& in, int G)
      : CpuExecution(p, in), G_(G), appended_(appended_slots(p)) {
    if (p.kv_cache) {
      k_cache_ = in.k;
      v_cache_ = in.v;
    }
  }
  void poison() override {
    CpuExecution::poison();
    appended_.each([&](int64_t at, int64_t) { k_cache_[size_t(at)] = v_cache_[size_t(at)] = poison_float(); });
  }
  void run() override {
    if (p_.kv_cache) {
      appended_.each([&](int64_t at, int64_t) {
        k_cache_[size_t(at)] = in_.k[size_t(at)];
        v_cache_[size_t(at)] = in_.v[size_t(at)];
      });
      cpu_flash_forward(p_, in_.q.data(), k_cache_.data(), v_cache_.data(), G_, o_, lse_, partials_, in_.descale);
    } else {
      cpu_flash_forward(p_, in_.q.data(), in_.k.data(), in_.v.data(), G_, o_, lse_, partials_, in_.descale);
    }
  }
  RunOutputs read_back() override {
    RunOutputs out = CpuExecution::read_back();
    out.g_used = G_;
    if (p_.kv_cache) {
      out.k_cache = typed_cache(k_cache_);
      out.v_cache = typed_cache(v_cache_);
    }
    return out;
  }

 private:
  TypedBuffer typed_cache(const std::vector<float>& c) const {
    TypedBuffer t(p_.dtype, int64_t(c.size()));
    for (size_t i = 0; i < c.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &c[i], 4);
      if (bits == 0xffffffffu) t.set_bits(int64_t(i), poison_bits(p_.dtype));
      else t.set(int64_t(i), c[i]);
    }
    return t;
  }
  int G_;
  AppendedSlots appended_;  // kv_cache: the new tokens' slots (none otherwise)
  SplitPartials partials_;
  std::vector<float> k_cache_, v_cache_;
};

// Both take every problem the harness can state (within --cpu-budget): every dtype, D, serving
// field and kv_cache; the oracle runs unsplit.
Capabilities cpu_caps(SplitSet splits) {
  Capabilities c;
  c.dtypes = every_dtype();
  c.head_dims = HeadDims::range(1, 256);
  c.splits = splits;
  c.serving = ServingSet::every();
  c.kv_cache = KvCache::takes;
  c.device = DeviceNeed::cpu;
  return c;
}

PathRow cpu_ref_row(const DeviceFacts&) {
  PathRow r{"cpu-ref", "cpu", "Eigen reference, fp64 accumulation; the oracle (timed, not validated)",
            "within --cpu-budget", true, nullptr,
            [](const Problem& p, const HostInputs& in, int, const GateContext&) -> std::unique_ptr<Execution> {
              return std::make_unique<CpuRefExecution>(p, in);
            }};
  r.auto_rank = 0;  // the oracle is timed, never dispatched to
  r.declare(cpu_caps(SplitSet::none_split()), within_budget);
  return r;
}
FA_REGISTER_PATH(cpu_ref_row);

PathRow cpu_flash_row(const DeviceFacts&) {
  PathRow r{"cpu-flash", "cpu", "tiled online softmax on the CPU (fp32), split-K + combine",
            "within --cpu-budget; FP8: P to e4m3", false, nullptr,
            [](const Problem& p, const HostInputs& in, int G, const GateContext&) -> std::unique_ptr<Execution> {
              return std::make_unique<CpuFlashExecution>(p, in, G);
            }};
  r.auto_rank = 10;  // the last resort: any GPU path that admits a problem is preferred
  r.tiles = {kCpuBlockM, kCpuBlockN};
  r.declare(cpu_caps(SplitSet::all()), within_budget);
  return r;
}
FA_REGISTER_PATH(cpu_flash_row);

}  // namespace
}  // namespace fa
