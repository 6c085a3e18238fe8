// splitk: G tiled producers per query tile, each over one split of the tile's causally live key
// range (conventions.hpp: split_range), write fp32 partial O_g and LSE_g; the combine kernel
// folds them. G in {2, 4, 8, 16}.
#include <fmt/format.h>

#include "harness/path_registry.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {
namespace {

class SplitkExecution : public GpuExecution {
 public:
  SplitkExecution(const Problem& p, const HostInputs& in, int G, const GateContext& ctx) : GpuExecution(p, in, ctx, G) {
    args_.G = G;
  }

 protected:
  void launch() override {
    launch_tiled(args_, p_.dtype, stream_);
    launch_combine(args_, out_dtype(p_.dtype), stream_);  // FP8 inputs: O in bf16
  }
};

std::optional<std::string> splitk_limits(const Problem& p, int G, const GateContext&) {
  if (p.B * G > 65535 || p.H > 65535) return std::string("B*G or H exceeds the grid");
  return std::nullopt;
}

Capabilities splitk_caps() {
  Capabilities c = gpu_caps();
  c.dtypes = gpu_dtypes(Fp8Formats::all);
  c.splits = SplitSet::splits_only();
  c.serving = ServingSet::every();
  return c;
}

PathRow splitk_row(const DeviceFacts&) {
  PathRow r{"splitk", "gpu", "G tiled producers write fp32 partial O/LSE; a combine kernel folds them",
            "B*G, H <= 65535; FP8: P fp32, judged as bf16", false, nullptr,
            [](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<SplitkExecution>(p, in, G, ctx);
            }};
  r.auto_rank = 40;  // its gate admits only G > 1, where tiled and naive cannot run
  r.fp8_p = DType::bf16;  // tiled producers: P stays fp32
  r.tiles = kTiledTile;
  r.declare(splitk_caps(), splitk_limits);
  return r;
}
FA_REGISTER_PATH(splitk_row);

}  // namespace
}  // namespace fa::gpu
