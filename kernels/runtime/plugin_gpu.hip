// GpuPluginExecution: a plugin's run() timed and validated like a built-in GPU path. Guards before
// and after O, LSE and the workspace are filled once, after the buffers are made (poison() writes
// the outputs' logical bytes only), and read back with the outputs: a write outside an output in
// the validated run or a timed one shows. The inputs' checksums are GpuExecution's.
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/plugin_gpu.hpp"

namespace fa::gpu {
namespace {

class GpuPluginExecution : public GpuExecution {
 public:
  GpuPluginExecution(const PluginPathRef& ref, const Problem& p, const HostInputs& in, int G, const GateContext& ctx)
      : GpuExecution(p, in, ctx, 0, kGuardBytes), ref_(ref), facts_(ctx.device), problem_(plugin_problem(p_, G)),
        device_(plugin_device(facts_)) {
    uint64_t ws_bytes = 0;
    if (ref_.path->prepare) {
      char msg[512] = {0};
      const PluginCall call(ref_.path->name, "prepare");
      if (const int32_t st = ref_.path->prepare(&problem_, &device_, &plan_, &ws_bytes, msg, sizeof msg);
          st != FA_STATUS_OK)
        throw std::runtime_error(
            fmt::format("plugin path {}: prepare() failed: {}", ref_.path->name, plugin_status_reason(st, msg, sizeof msg)));
    }
    // Checked before the sum with the guards, which would wrap for sizes near 2^64.
    const uint64_t cap = facts_.memory_bytes ? uint64_t(facts_.memory_bytes) : std::numeric_limits<uint64_t>::max();
    if (ws_bytes >= cap || cap - ws_bytes < 2 * kGuardBytes) {
      if (ref_.path->release) ref_.path->release(plan_);  // no destructor runs for a half-built object
      throw OutOfMemory(fmt::format("plugin path {}: a workspace of {} bytes exceeds the device's memory ({} bytes)",
                                    ref_.path->name, ws_bytes, facts_.memory_bytes));
    }
    ws_bytes_ = size_t(ws_bytes);
    ws_ = DeviceBuffer(ws_bytes_ + 2 * kGuardBytes);
    for (char* at : {o_.as<char>(), o_at() + o_bytes_, lse_.as<char>(), lse_at() + lse_bytes_, ws_.as<char>(),
                     ws_.as<char>() + kGuardBytes + ws_bytes_})
      FA_GPU_CHECK(memset_async(at, kGuardByte, kGuardBytes, stream_));
    FA_GPU_CHECK(stream_sync(stream_));
  }
  ~GpuPluginExecution() override {
    if (ref_.path->release) ref_.path->release(plan_);
  }
  RunOutputs read_back() override {
    RunOutputs out = GpuExecution::read_back();
    out.g_used = problem_.G;
    struct Guards {
      const char* what;
      const char *before, *after;
    };
    const Guards guards[] = {{"O", o_.as<char>(), o_at() + o_bytes_},
                             {"LSE", lse_.as<char>(), lse_at() + lse_bytes_},
                             {"the workspace", ws_.as<char>(), ws_.as<char>() + kGuardBytes + ws_bytes_}};
    std::vector<uint8_t> host(kGuardBytes);
    for (const Guards& g : guards) {
      FA_GPU_CHECK(copy_to_host(host.data(), g.before, kGuardBytes));
      std::string b = guard_breach_before(g.what, host.data(), kGuardBytes);
      if (!b.empty()) out.fault += (out.fault.empty() ? "" : "; ") + b;
      FA_GPU_CHECK(copy_to_host(host.data(), g.after, kGuardBytes));
      b = guard_breach(g.what, host.data(), kGuardBytes);
      if (!b.empty()) out.fault += (out.fault.empty() ? "" : "; ") + b;
    }
    return out;
  }

 protected:
  void launch() override {
    fa_buffers buf;
    std::memset(&buf, 0, sizeof buf);
    buf.struct_size = sizeof buf;
    buf.q = q_.as<void>(), buf.k = k_.as<void>(), buf.v = v_.as<void>();
    buf.o = o_at(), buf.lse = reinterpret_cast<float*>(lse_at());
    if (p_.kv_cache) buf.k_new = k_new_.as<void>(), buf.v_new = v_new_.as<void>();
    buf.workspace = ws_bytes_ ? ws_.as<char>() + kGuardBytes : nullptr;
    buf.workspace_bytes = ws_bytes_;
    char msg[512] = {0};
    const PluginCall call(ref_.path->name, "run");
    if (const int32_t st = ref_.path->run(plan_, &problem_, &buf, reinterpret_cast<void*>(stream_), msg, sizeof msg);
        st != FA_STATUS_OK)
      throw std::runtime_error(fmt::format("plugin path {} ({}) {}{}", ref_.path->name, ref_.file,
                                           st == FA_STATUS_ERROR ? "reported an error: " : "run() ",
                                           plugin_status_reason(st, msg, sizeof msg)));
  }
  int g_used() const override { return problem_.G; }

 private:
  PluginPathRef ref_;
  DeviceFacts facts_;  // device_'s strings point into it
  fa_problem problem_;
  fa_device device_;
  DeviceBuffer ws_;
  size_t ws_bytes_ = 0;
  void* plan_ = nullptr;
};

}  // namespace

std::unique_ptr<Execution> make_gpu_plugin_execution(const PluginPathRef& ref, const Problem& p, const HostInputs& in,
                                                     int G, const GateContext& ctx) {
  return std::make_unique<GpuPluginExecution>(ref, p, in, G, ctx);
}

}  // namespace fa::gpu
