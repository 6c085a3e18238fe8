// splitk: G tiled producers per query tile, each over one split of the tile's causally live key
// range (conventions.hpp: split_range), write fp32 partial O_g and LSE_g; the combine kernel
// folds them. G in {2, 4, 8, 16}.
#include <fmt/format.h>

#include "kernels/gpu_execution.hpp"
#include "kernels/gpu_paths.hpp"
#include "kernels/launchers.hpp"

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
    launch_combine(args_, p_.dtype, stream_);
  }
};

}  // namespace

std::optional<std::string> splitk_supports(const Problem& p, int G, const GateContext& ctx) {
  if (auto no = common_gpu_gate(p, ctx)) return no;
  if (G < 2 || G > 16 || (G & (G - 1))) return fmt::format("splitk needs G in 2, 4, 8, 16 (got {})", G);
  if (p.kv_cache) return std::string("kv_cache problems run on the kv-cache path");
  if (p.B * G > 65535 || p.H > 65535) return std::string("B*G or H exceeds the grid");
  return std::nullopt;
}

std::unique_ptr<Execution> splitk_prepare(const Problem& p, const HostInputs& in, int G, const GateContext& ctx) {
  return std::make_unique<SplitkExecution>(p, in, G, ctx);
}

}  // namespace fa::gpu
