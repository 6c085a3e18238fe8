// GpuPluginExecution: a plugin's run() timed and validated like a built-in GPU path. Guards are
// filled once, after the buffers are made (poison() writes the outputs' logical bytes only), and
// read back with the outputs: a write past an end in the validated run or a timed one shows.
#include <fmt/format.h>

#include <cstring>
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
      if (ref_.path->prepare(&problem_, &device_, &plan_, &ws_bytes, msg, sizeof msg) != FA_STATUS_OK)
        throw std::runtime_error(fmt::format("plugin path {}: prepare() failed: {}", ref_.path->name,
                                             plugin_message(msg, sizeof msg)));
    }
    ws_bytes_ = size_t(ws_bytes);
    ws_ = DeviceBuffer(ws_bytes_ + kGuardBytes);
    FA_GPU_CHECK(memset_async(o_.as<char>() + o_bytes_, kGuardByte, kGuardBytes, stream_));
    FA_GPU_CHECK(memset_async(lse_.as<char>() + lse_bytes_, kGuardByte, kGuardBytes, stream_));
    FA_GPU_CHECK(memset_async(ws_.as<char>() + ws_bytes_, kGuardByte, kGuardBytes, stream_));
    FA_GPU_CHECK(stream_sync(stream_));
  }
  ~GpuPluginExecution() override {
    if (ref_.path->release) ref_.path->release(plan_);
  }
  RunOutputs read_back() override {
    RunOutputs out = GpuExecution::read_back();
    out.g_used = problem_.G;
    const std::pair<const char*, const char*> guards[] = {{"O", o_.as<char>() + o_bytes_},
                                                          {"LSE", lse_.as<char>() + lse_bytes_},
                                                          {"the workspace", ws_.as<char>() + ws_bytes_}};
    std::vector<uint8_t> host(kGuardBytes);
    for (const auto& [what, at] : guards) {
      FA_GPU_CHECK(copy_to_host(host.data(), at, kGuardBytes));
      const std::string b = guard_breach(what, host.data(), kGuardBytes);
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
    buf.o = o_.as<void>(), buf.lse = lse_.as<float>();
    if (p_.kv_cache) buf.k_new = k_new_.as<void>(), buf.v_new = v_new_.as<void>();
    buf.workspace = ws_bytes_ ? ws_.as<void>() : nullptr;
    buf.workspace_bytes = ws_bytes_;
    char msg[512] = {0};
    if (ref_.path->run(plan_, &problem_, &buf, reinterpret_cast<void*>(stream_), msg, sizeof msg) != FA_STATUS_OK)
      throw std::runtime_error(fmt::format("plugin path {} ({}) reported an error: {}", ref_.path->name, ref_.file,
                                           plugin_message(msg, sizeof msg)));
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
