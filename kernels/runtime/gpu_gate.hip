// The gate every GPU path shares (a device, fp16/bf16, D <= 256, rows that fit the grid, and the
// serving fields but those the path takes) and its words, the start of every GPU row's gate_doc.
// Each path's own gate adds its limits after it.
#include <fmt/format.h>

#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {

namespace {
constexpr int64_t kMaxD = 256;  // the largest head dimension any GPU path specialises for
}  // namespace

std::optional<std::string> common_gpu_gate(const Problem& p, const GateContext& ctx, const ServingTaken& takes_serving,
                                           bool takes_fp8) {
  if (!ctx.device.gpu) return ctx.device.gpu_absent_why;
  if (p.dtype == DType::fp32) return std::string("GPU paths take fp16/bf16 inputs");
  if (is_fp8(p.dtype) && !takes_fp8) return fmt::format("its kernels take fp16/bf16, not {} inputs", dtype_name(p.dtype));
  if (p.D > kMaxD) return fmt::format("D={} > {}", p.D, kMaxD);
  if (p.B * p.H * p.S > (int64_t(1) << 31) - 1) return std::string("B*H*S exceeds 2^31 rows");
  std::vector<std::string> refused;
  for (const auto& f : p.serving_fields())
    if (!takes_serving.takes(f)) refused.push_back(f);
  if (!refused.empty()) return serving_refusal(refused, "its kernels");
  return std::nullopt;
}

std::string common_gpu_gate_doc() { return fmt::format("fp16/bf16; D <= {}", kMaxD); }

}  // namespace fa::gpu
