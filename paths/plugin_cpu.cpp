// CpuPluginExecution: the plugin's run() on host buffers fa-bench owns. Guards are filled once,
// when the buffers are made, and never rewritten: read_back() sees any write past an end since
// then, in the validated run or in a timed one.
#include "paths/plugin_cpu.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "reference/cpu_flush.hpp"

namespace fa {
namespace {

// Bytes followed by kGuardBytes of guard.
struct GuardedBytes {
  std::vector<uint8_t> all;
  size_t size = 0;
  explicit GuardedBytes(size_t n) : all(n + kGuardBytes, kGuardByte), size(n) {}
  uint8_t* data() { return all.data(); }
  std::string breach(const std::string& what) const { return guard_breach(what, all.data() + size, kGuardBytes); }
};

class CpuPluginExecution : public Execution {
 public:
  CpuPluginExecution(const PluginPathRef& ref, const Problem& p, const HostInputs& in, int G, const GateContext& ctx)
      : ref_(ref), p_(p), facts_(ctx.device), problem_(plugin_problem(p_, G)), device_(plugin_device(facts_)),
        q_(to_typed(p.dtype, in.q)), k_(to_typed(p.dtype, in.k)), v_(to_typed(p.dtype, in.v)),
        o_(size_t(p.B * p.S * p.H * p.D) * size_t(dtype_bytes(p.dtype))), lse_(size_t(p.B * p.H * p.S) * 4), ws_(0),
        appended_(appended_slots(p)) {
    if (p.kv_cache) {  // the appended tokens, compact [B][S][Hk][D], as the ABI's kv_new strides say
      k_new_ = to_typed(p.dtype, appended_.gather(in.k));
      v_new_ = to_typed(p.dtype, appended_.gather(in.v));
    }
    uint64_t ws_bytes = 0;
    if (ref_.path->prepare) {
      char msg[512] = {0};
      if (ref_.path->prepare(&problem_, &device_, &plan_, &ws_bytes, msg, sizeof msg) != FA_STATUS_OK)
        throw std::runtime_error(fmt::format("plugin path {}: prepare() failed: {}", ref_.path->name,
                                             plugin_message(msg, sizeof msg)));
    }
    ws_ = GuardedBytes(size_t(ws_bytes));
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
    if (ref_.path->run(plan_, &problem_, &buf, nullptr, msg, sizeof msg) != FA_STATUS_OK)
      throw std::runtime_error(fmt::format("plugin path {} ({}) reported an error: {}", ref_.path->name, ref_.file,
                                           plugin_message(msg, sizeof msg)));
  }
  RunOutputs read_back() override {
    RunOutputs out;
    out.o = TypedBuffer(p_.dtype, p_.B * p_.S * p_.H * p_.D);
    std::memcpy(out.o.bytes.data(), o_.data(), o_.size);
    out.lse.resize(size_t(p_.B * p_.H * p_.S));
    std::memcpy(out.lse.data(), lse_.data(), lse_.size);
    if (p_.kv_cache) out.k_cache = k_, out.v_cache = v_;
    out.g_used = problem_.G;
    for (const std::string& b : {o_.breach("O"), lse_.breach("LSE"), ws_.breach("the workspace")})
      if (!b.empty()) out.fault += (out.fault.empty() ? "" : "; ") + b;
    return out;
  }
  double timed_sample_ms(TimingMode mode) override { return host_timed_sample_ms(mode, [this] { run(); }); }

 private:
  PluginPathRef ref_;
  Problem p_;
  DeviceFacts facts_;  // device_'s strings point into it
  fa_problem problem_;
  fa_device device_;
  TypedBuffer q_, k_, v_, k_new_, v_new_;
  GuardedBytes o_, lse_, ws_;
  AppendedSlots appended_;  // kv_cache: the new tokens' slots (none otherwise)
  void* plan_ = nullptr;
};

}  // namespace

std::unique_ptr<Execution> make_cpu_plugin_execution(const PluginPathRef& ref, const Problem& p, const HostInputs& in,
                                                     int G, const GateContext& ctx) {
  return std::make_unique<CpuPluginExecution>(ref, p, in, G, ctx);
}

}  // namespace fa
