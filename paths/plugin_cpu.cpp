// CpuPluginExecution: the plugin's run() on host buffers fa-bench owns. Guards before and after
// each written buffer are filled once, when the buffers are made, and never rewritten; Q, K, V
// (and the kv_cache's new tokens) are checksummed then. read_back() sees any write outside an
// output, or into an input, since then: in the validated run or in a timed one.
#include "paths/plugin_cpu.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <stdexcept>

#include "harness/run/input_watch.hpp"
#include "reference/cpu_flush.hpp"

namespace fa {
namespace {

// The host's memory in bytes: a buffer asked for beyond it is `oom` before anything is allocated.
uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : std::numeric_limits<uint64_t>::max();
}

// kGuardBytes of guard, the bytes, kGuardBytes of guard. A size over the host's memory throws
// OutOfMemory naming it, so `n + 2 * kGuardBytes` cannot wrap (n = 2^64 - 16 once gave 4080 bytes).
struct GuardedBytes {
  std::vector<uint8_t> all;
  size_t size = 0;
  explicit GuardedBytes(uint64_t n, const std::string& what = "") {
    if (n > host_memory_bytes() - 2 * kGuardBytes)
      throw OutOfMemory(fmt::format("{} of {} bytes exceeds the host's memory ({} bytes)", what, n, host_memory_bytes()));
    all.assign(size_t(n) + 2 * kGuardBytes, kGuardByte);
    size = size_t(n);
  }
  uint8_t* data() { return all.data() + kGuardBytes; }
  std::string breach(const std::string& what) const {
    std::string before = guard_breach_before(what, all.data(), kGuardBytes);
    const std::string after = guard_breach(what, all.data() + kGuardBytes + size, kGuardBytes);
    return before.empty() ? after : after.empty() ? before : before + "; " + after;
  }
};

class CpuPluginExecution : public Execution {
 public:
  CpuPluginExecution(const PluginPathRef& ref, const Problem& p, const HostInputs& in, int G, const GateContext& ctx)
      : ref_(ref), p_(p), facts_(ctx.device), problem_(plugin_problem(p_, G)), device_(plugin_device(facts_)),
        q_((in.require_every_q_row("a CPU plugin path"), to_typed(p.dtype, in.q))), k_(to_typed(p.dtype, in.k)), v_(to_typed(p.dtype, in.v)),
        o_(uint64_t(p.B * p.S * p.H * p.D) * uint64_t(dtype_bytes(p.dtype)), "O"),
        lse_(uint64_t(p.B * p.H * p.S) * 4, "LSE"), ws_(0), appended_(appended_slots(p)) {
    if (p.kv_cache) {  // the appended tokens, compact [B][S][Hk][D], as the ABI's kv_new strides say
      k_new_ = to_typed(p.dtype, appended_.gather(in.k));
      v_new_ = to_typed(p.dtype, appended_.gather(in.v));
    }
    watch_inputs(in);
    uint64_t ws_bytes = 0;
    if (ref_.path->prepare) {
      char msg[512] = {0};
      const PluginCall call(ref_.path->name, "prepare");
      if (const int32_t st = ref_.path->prepare(&problem_, &device_, &plan_, &ws_bytes, msg, sizeof msg);
          st != FA_STATUS_OK)
        throw std::runtime_error(
            fmt::format("plugin path {}: prepare() failed: {}", ref_.path->name, plugin_status_reason(st, msg, sizeof msg)));
    }
    try {
      ws_ = GuardedBytes(ws_bytes, fmt::format("plugin path {}: a workspace", ref_.path->name));
    } catch (...) {  // no destructor runs for a half-built object: release the plan here
      if (ref_.path->release) ref_.path->release(plan_);
      throw;
    }
  }
  ~CpuPluginExecution() override {
    if (ref_.path->release) ref_.path->release(plan_);
  }
  void poison() override {
    std::memset(o_.data(), 0xff, o_.size);
    std::memset(lse_.data(), 0xff, lse_.size);
    appended_.each([&](int64_t at, int64_t) {
      k_.set_bits(at, poison_bits(p_.dtype));
      v_.set_bits(at, poison_bits(p_.dtype));
    });
  }
  void run() override {
    fa_buffers buf;
    std::memset(&buf, 0, sizeof buf);
    buf.struct_size = sizeof buf;
    buf.q = q_.bytes.data(), buf.k = k_.bytes.data(), buf.v = v_.bytes.data();
    buf.o = o_.data(), buf.lse = reinterpret_cast<float*>(lse_.data());
    if (p_.kv_cache) buf.k_new = k_new_.bytes.data(), buf.v_new = v_new_.bytes.data();
    buf.workspace = ws_.size ? ws_.data() : nullptr;
    buf.workspace_bytes = ws_.size;
    char msg[512] = {0};
    const PluginCall call(ref_.path->name, "run");
    if (const int32_t st = ref_.path->run(plan_, &problem_, &buf, nullptr, msg, sizeof msg); st != FA_STATUS_OK)
      throw std::runtime_error(fmt::format("plugin path {} ({}) {}{}", ref_.path->name, ref_.file,
                                           st == FA_STATUS_ERROR ? "reported an error: " : "run() ",
                                           plugin_status_reason(st, msg, sizeof msg)));
  }
  RunOutputs read_back() override {
    RunOutputs out;
    out.o = TypedBuffer(p_.dtype, p_.B * p_.S * p_.H * p_.D);
    std::memcpy(out.o.bytes.data(), o_.data(), o_.size);
    out.lse.resize(size_t(p_.B * p_.H * p_.S));
    std::memcpy(out.lse.data(), lse_.data(), lse_.size);
    if (p_.kv_cache) out.k_cache = k_, out.v_cache = v_;
    out.g_used = problem_.G;
    for (const std::string& b : {inputs_.check(), o_.breach("O"), lse_.breach("LSE"), ws_.breach("the workspace")})
      if (!b.empty()) out.fault += (out.fault.empty() ? "" : "; ") + b;
    return out;
  }
  double timed_sample_ms(TimingMode mode) override { return host_timed_sample_ms(mode, [this] { run(); }); }

 private:
  // Checksums of what the plugin only reads. K and V's appended slots (kv_cache) are the path's to
  // write: they start with the new tokens' values, which a correct append restores, and a wrong
  // one is the cache check's to judge. The first element that changed is found against `in`'s
  // values, rounded again (HostInputs outlive the execution: the runner's RowData owns them).
  void watch_inputs(const HostInputs& in) {
    const size_t eb = size_t(dtype_bytes(p_.dtype));
    const DType t = p_.dtype;
    auto again = [t](const std::vector<float>* v) { return [t, v] { return to_typed(t, *v).bytes; }; };
    std::vector<uint8_t> appended(p_.kv_cache ? k_.bytes.size() / eb : 0, 0);
    appended_.each([&](int64_t at, int64_t) { appended[size_t(at)] = 1; });
    auto owned = [slots = std::make_shared<std::vector<uint8_t>>(std::move(appended))](size_t e) {
      return e < slots->size() && (*slots)[e];
    };
    inputs_.add("Q", q_.bytes.data(), q_.bytes.size(), eb, again(&in.q));
    inputs_.add("K", k_.bytes.data(), k_.bytes.size(), eb, again(&in.k), owned);
    inputs_.add("V", v_.bytes.data(), v_.bytes.size(), eb, again(&in.v), owned);
    if (p_.kv_cache) {
      inputs_.add("the new keys", k_new_.bytes.data(), k_new_.bytes.size(), eb);
      inputs_.add("the new values", v_new_.bytes.data(), v_new_.bytes.size(), eb);
    }
  }

  PluginPathRef ref_;
  Problem p_;
  DeviceFacts facts_;  // device_'s strings point into it
  fa_problem problem_;
  fa_device device_;
  TypedBuffer q_, k_, v_, k_new_, v_new_;
  GuardedBytes o_, lse_, ws_;
  AppendedSlots appended_;  // kv_cache: the new tokens' slots (none otherwise)
  InputWatch inputs_;
  void* plan_ = nullptr;
};

}  // namespace

std::unique_ptr<Execution> make_cpu_plugin_execution(const PluginPathRef& ref, const Problem& p, const HostInputs& in,
                                                     int G, const GateContext& ctx) {
  return std::make_unique<CpuPluginExecution>(ref, p, in, G, ctx);
}

}  // namespace fa
