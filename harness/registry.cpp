// The table of paths. Each row: name, kind, what it is, what its gate admits, gate, preparer.
// CPU rows live in reference/cpu_paths.cpp; GPU rows in kernels/<path>.hip; `auto` is defined
// here over the other rows.
#include "harness/registry.hpp"

#include <fmt/format.h>
#include <omp.h>

#include "reference/cpu_paths.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/gpu_paths.hpp"
#endif

namespace fa {
namespace {

// `auto` tries these in order and runs the first whose gate says yes.
const char* const kAutoOrder[] = {"kv-cache", "mma-decode", "decode", "mma", "splitk", "tiled", "naive", "cpu-flash"};

class AutoExecution : public Execution {
 public:
  AutoExecution(std::unique_ptr<Execution> inner, std::string ran) : inner_(std::move(inner)), ran_(std::move(ran)) {}
  void poison() override { inner_->poison(); }
  void run() override { inner_->run(); }
  double timed_sample_ms(TimingMode m) override { return inner_->timed_sample_ms(m); }
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    out.ran_path = ran_;
    return out;
  }

 private:
  std::unique_ptr<Execution> inner_;
  std::string ran_;
};

PathRow gpu_row(const char* name, const char* summary, const char* gate_doc,
                decltype(PathRow::supports) supports, decltype(PathRow::prepare) prepare) {
  PathRow r{name, "gpu", summary, gate_doc, false, std::move(supports), std::move(prepare)};
  return r;
}

}  // namespace

Registry Registry::builtin(const DeviceFacts& device) {
  Registry reg;
  reg.rows_.push_back(PathRow{"cpu-ref", "cpu", "Eigen reference, fp64 accumulation; the oracle (timed, not validated)",
                              "any problem within --cpu-budget; G = 0", true, cpu_ref_supports, cpu_ref_prepare});
  reg.rows_.push_back(PathRow{"cpu-flash", "cpu", "tiled online softmax on the CPU (fp32), split-K + combine",
                              "any problem within --cpu-budget; G in 0,2,4,8,16; kv_cache", false, cpu_flash_supports,
                              cpu_flash_prepare});
#ifdef FABENCH_HAS_GPU
  reg.rows_.push_back(gpu_row("naive", "3-pass GPU oracle: QK^T to fp32 scores, softmax, PV",
                              "fp16/bf16; D <= 256; any Sk; G = 0; scores (B*H*S*Sk*4 bytes) must fit",
                              gpu::naive_supports, gpu::naive_prepare));
  reg.rows_.push_back(gpu_row("tiled", "scalar FlashAttention-2: Q in registers, K/V tiles in shared memory",
                              "fp16/bf16; D <= 256 (64/80/128 specialised); G = 0", gpu::tiled_supports,
                              gpu::tiled_prepare));
  reg.rows_.push_back(gpu_row("decode", "S == 1: a block per (batch, kv head, key chunk), split over Sk + combine",
                              "fp16/bf16; S == 1; D <= 256; any Sk; G = 0", gpu::decode_supports, gpu::decode_prepare));
  reg.rows_.push_back(gpu_row("kv-cache", "append the new token's K/V at the cache offset, then decode",
                              "fp16/bf16; kv_cache = 1; S == 1; D <= 256; G = 0", gpu::kv_cache_supports,
                              gpu::kv_cache_prepare));
  reg.rows_.push_back(gpu_row("splitk", "G tiled producers write fp32 partial O/LSE; a combine kernel folds them",
                              "fp16/bf16; D <= 256; G in 2,4,8,16", gpu::splitk_supports, gpu::splitk_prepare));
  reg.rows_.push_back(gpu_row("mma", "tensor-core FlashAttention-2 (mma.sync m16n8k16), cp.async K/V ring, split-K",
                              "sm_80+; fp16/bf16; D in 64,80,96,128,256; G in 0,2,4,8,16", gpu::mma_supports,
                              gpu::mma_prepare));
  reg.rows_.push_back(gpu_row("mma-decode", "flash-decoding on tensor cores: GQA heads x S packed in one 16-row tile",
                              "sm_80+; fp16/bf16; D in 64,128; S*H/Hk <= 16; G = 0 (own chunks)",
                              gpu::mma_decode_supports, gpu::mma_decode_prepare));
#else
  const std::string why = device.gpu_absent_why;
  for (const char* name : {"naive", "tiled", "decode", "kv-cache", "splitk", "mma", "mma-decode"}) {
    reg.rows_.push_back(gpu_row(name, "GPU path (not in this build)", "needs a GPU backend",
                                [why](const Problem&, int, const GateContext&) { return std::optional<std::string>(why); },
                                nullptr));
  }
#endif
  // auto: the first row of kAutoOrder whose gate admits the problem.
  auto rows = std::make_shared<std::vector<PathRow>>(reg.rows_);
  auto pick = [rows](const Problem& p, int G, const GateContext& ctx, std::string* why) -> const PathRow* {
    for (const char* name : kAutoOrder)
      for (const auto& r : *rows)
        if (r.name == name && r.prepare && !r.supports(p, G, ctx)) return &r;
    if (why) *why = "no path's gate admits this problem";
    return nullptr;
  };
  reg.rows_.push_back(PathRow{
      "auto", device.gpu ? "gpu" : "cpu", "dispatcher: the first path in a fixed preference order whose gate says yes",
      "kv-cache > mma-decode > decode > mma > splitk > tiled > naive > cpu-flash", false,
      [pick](const Problem& p, int G, const GateContext& ctx) -> std::optional<std::string> {
        std::string why;
        if (pick(p, G, ctx, &why)) return std::nullopt;
        return why;
      },
      [pick](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
        const PathRow* r = pick(p, G, ctx, nullptr);
        return std::make_unique<AutoExecution>(r->prepare(p, in, G, ctx), r->name);
      }});
  return reg;
}

const PathRow* Registry::find(const std::string& name) const {
  for (const auto& r : rows_)
    if (r.name == name) return &r;
  return nullptr;
}

std::optional<std::string> Registry::unavailable(const PathRow& row, const DeviceFacts& device) const {
  if (!row.prepare) return device.gpu_absent_why.empty() ? "not built" : device.gpu_absent_why;
  if (row.kind == "gpu" && row.name != "auto" && !device.gpu) return device.gpu_absent_why;
  return std::nullopt;
}

std::vector<std::string> Registry::available_names(const DeviceFacts& device) const {
  std::vector<std::string> out;
  for (const auto& r : rows_)
    if (!unavailable(r, device)) out.push_back(r.name);
  return out;
}

DeviceFacts probe_device() {
#ifdef FABENCH_HAS_GPU
  DeviceFacts f = gpu::query_device();
#else
  DeviceFacts f;
  f.gpu_absent_why = "built without a GPU backend (FABENCH_GPU=none)";
#endif
  f.cpu_threads = omp_get_max_threads();
  return f;
}

}  // namespace fa
