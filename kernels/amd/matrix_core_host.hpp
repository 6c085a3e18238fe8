// The host half of the AMD matrix-core paths (mfma, wmma): what their kernels take, as capabilities
// (16-bit dtypes, the FP8 format of the arch's matrix cores; every serving field: per-sequence lengths, thd and the window through the shared tile loop, paged
// K/V, ALiBi and softcap in the kernels' SERVE instances; kv_cache, whose append runs first; every
// split count, whose fp32 partials launch_combine folds), the grid limits beyond them, and their
// execution (the append, the producer kernel, then the combine when G > 1). The device half is kernels/amd/matrix_core.hpp.
#pragma once
#include <optional>
#include <string>

#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu::mc {

// fp8: the FP8 formats the path's matrix instructions multiply on some of its archs (the gate takes
// each only where the device's arch has it: Capabilities::fp8_on_matrix_cores).
inline Capabilities caps(DeviceNeed device, HeadDims dims, Fp8Formats fp8) {
  Capabilities c = gpu_caps();
  c.device = device;
  c.dtypes = gpu_dtypes(fp8);
  c.fp8_on_matrix_cores = fp8 != Fp8Formats::none;
  c.head_dims = std::move(dims);
  c.splits = SplitSet::all();
  c.serving = {ServingField::seqlens_q, ServingField::seqlens_k, ServingField::thd,  ServingField::page_size,
               ServingField::window,    ServingField::alibi,     ServingField::softcap};
  c.kv_cache = KvCache::takes;
  return c;
}

inline std::optional<std::string> grid_limits(const Problem& p, int G, const GateContext&) {
  if (p.B * (G > 1 ? G : 1) > 65535 || p.H > 65535) return std::string("B*G or H exceeds the grid");
  return std::nullopt;
}

using Launcher = void (*)(const AttnArgs&, DType, Stream);

class Execution : public GpuExecution {
 public:
  Execution(const Problem& p, const HostInputs& in, int G, const GateContext& ctx, Launcher l)
      : GpuExecution(p, in, ctx, G), launcher_(l) {
    args_.G = G > 1 ? G : 0;
  }

 protected:
  void launch() override {
    append_kv();  // kv_cache: the new tokens into their slots (pages, per-sequence offsets) first
    launcher_(args_, p_.dtype, stream_);
    if (args_.G > 1) launch_combine(args_, p_.dtype, stream_);
  }

 private:
  Launcher launcher_;
};

}  // namespace fa::gpu::mc
