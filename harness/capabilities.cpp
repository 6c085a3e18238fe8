// The shared capability gate and the words and cells derived from a Capabilities row.
#include "harness/capabilities.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "harness/path.hpp"
#include "harness/problem.hpp"

namespace fa {

std::string device_need_words(DeviceNeed n) {
  switch (n) {
    case DeviceNeed::cpu: return "the host CPU";
    case DeviceNeed::gpu: return "a GPU";
    case DeviceNeed::mma_sm80: return "an NVIDIA GPU with mma.sync (sm_80 or newer)";
    case DeviceNeed::mfma_gfx9: return "an AMD CDNA GPU with MFMA (gfx90a, gfx94x)";
    case DeviceNeed::wmma: return "an AMD RDNA GPU with WMMA (gfx11, gfx12)";
  }
  return "?";
}

bool device_meets(DeviceNeed n, const DeviceFacts& d) {
  switch (n) {
    case DeviceNeed::cpu: return true;
    case DeviceNeed::gpu: return d.gpu;
    case DeviceNeed::mma_sm80: return d.gpu && d.has_mma_sm80;
    case DeviceNeed::mfma_gfx9: return d.gpu && d.has_mfma_gfx9;
    case DeviceNeed::wmma: return d.gpu && (d.has_wmma_gfx11 || d.has_wmma_gfx12);
  }
  return false;
}

bool HeadDims::takes(int64_t D) const {
  if (!list.empty()) return std::find(list.begin(), list.end(), D) != list.end();
  return D >= min && D <= max && D % multiple == 0;
}

std::string HeadDims::str() const {
  if (!list.empty()) {
    std::string out;
    for (int d : list) out += (out.empty() ? "" : ", ") + std::to_string(d);
    return out;
  }
  return multiple > 1 ? fmt::format("{}..{}, D % {} == 0", min, max, multiple) : fmt::format("{}..{}", min, max);
}

bool Capabilities::takes_dtype(DType t) const { return std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end(); }

namespace {

std::string dtype_list(const std::vector<DType>& ts) {
  std::string out;
  for (DType t : ts) out += (out.empty() ? "" : ", ") + std::string(dtype_name(t));
  return out;
}

// The FP8 family a dtype list keeps to, where it takes FP8 of one family only: said beside the list
// and in the refusal of the other family's dtypes, so `list` and the skip reason state what a path's
// kernels were not built for (Hopper's tensor cores and RDNA4's WMMA multiply OCP FP8; MI300's MFMA
// the FNUZ encodings, which differ in bias and in NaN/zero).
std::string fp8_family_note(const std::vector<DType>& ts) {
  bool ocp = false, fnuz = false;
  for (DType t : ts) (is_fnuz(t) ? fnuz : ocp) |= is_fp8(t);
  if (ocp == fnuz) return "";
  return ocp ? "OCP FP8 only, not MI300's FNUZ fp8_e4m3fnuz, fp8_e5m2fnuz"
             : "FNUZ FP8 only, MI300's: not OCP fp8_e4m3, fp8_e5m2";
}

std::string split_words(const SplitSet& s) { return s == SplitSet::none_split() ? "G = 0" : "G in " + s.str(); }

// Why the device's matrix cores cannot multiply FP8 dtype t, or nothing.
std::optional<std::string> matrix_fp8_refusal(const std::string& name, DType t, const DeviceFacts& d) {
  if (is_fnuz(t) ? d.matrix_fp8_fnuz : d.matrix_fp8_ocp) return std::nullopt;
  const char* has = d.matrix_fp8_fnuz ? "FNUZ FP8 only (fp8_e4m3fnuz, fp8_e5m2fnuz)"
                    : d.matrix_fp8_ocp ? "OCP FP8 only (fp8_e4m3, fp8_e5m2)"
                                       : "no FP8 matrix instruction";
  return fmt::format("{} multiplies FP8 on the matrix cores, and {} has {}: not {}", name, d.arch, has, dtype_name(t));
}

// GPU kernels index rows (batch x heads x queries) in int32.
constexpr int64_t kMaxGpuRows = (int64_t(1) << 31) - 1;

}  // namespace

std::optional<std::string> capability_gate(const std::string& name, const Capabilities& c, const Problem& p, int G,
                                           const DeviceFacts& d) {
  if (c.device != DeviceNeed::cpu && !d.gpu) return d.gpu_absent_why.empty() ? "no GPU" : d.gpu_absent_why;
  if (!device_meets(c.device, d))
    return fmt::format("{} needs {} (this device: {})", name, device_need_words(c.device), d.arch);
  if (!c.takes_dtype(p.dtype)) {
    const std::string family = is_fp8(p.dtype) ? fp8_family_note(c.dtypes) : "";
    return fmt::format("{} takes {} inputs, not {}{}", name, dtype_list(c.dtypes), dtype_name(p.dtype),
                       family.empty() ? "" : " (" + family + ")");
  }
  if (c.fp8_on_matrix_cores && is_fp8(p.dtype))
    if (auto no = matrix_fp8_refusal(name, p.dtype, d)) return no;
  if (!c.head_dims.takes(p.D)) return fmt::format("{} has kernels for D in {} (got D={})", name, c.head_dims.str(), p.D);
  if (c.device != DeviceNeed::cpu && p.B * p.H * p.S > kMaxGpuRows) return std::string("B*H*S exceeds 2^31 rows");
  if (const ServingSet refused = p.serving_set().without(c.serving); !refused.empty())
    return serving_refusal(refused.names(), name + "'s kernels");
  if (c.kv_cache == KvCache::refuses && p.kv_cache) return fmt::format("{} takes no kv_cache problems", name);
  if (c.kv_cache == KvCache::needs && !p.kv_cache) return fmt::format("{} needs a kv_cache problem (kv_cache = 1)", name);
  if (!c.splits.has(G)) return fmt::format("{} needs {} (got G={})", name, split_words(c.splits), G);
  return std::nullopt;
}

Gate gated(const std::string& name, const Capabilities& caps, Gate own) {
  return [name, caps, own = std::move(own)](const Problem& p, int G, const GateContext& ctx) -> std::optional<std::string> {
    if (auto no = capability_gate(name, caps, p, G, ctx.device)) return no;
    return own ? own(p, G, ctx) : std::nullopt;
  };
}

void PathRow::declare(Capabilities c, Gate own) {
  caps = std::move(c);
  supports = gated(name, caps, std::move(own));
}

std::string PathRow::gate_words() const {
  const std::string d = describe(caps);
  return d.empty() ? gate_doc : gate_doc.empty() ? d : d + "; " + gate_doc;
}

CapabilityCells capability_cells(const Capabilities& c) {
  if (!c.declared()) return {"-", "-", "-", "-", "-", "-"};
  constexpr const char* kKv[] = {"no", "yes", "only"};
  std::string notes = fp8_family_note(c.dtypes);
  if (c.fp8_on_matrix_cores) notes += std::string(notes.empty() ? "" : "; ") + "FP8 where the arch's matrix cores multiply it";
  return {device_need_words(c.device), dtype_list(c.dtypes) + (notes.empty() ? "" : " (" + notes + ")"), c.head_dims.str(), c.splits.str(), c.serving.str(),
          kKv[int(c.kv_cache)]};
}

std::string describe(const Capabilities& c) {
  if (!c.declared()) return "";
  const CapabilityCells x = capability_cells(c);
  return fmt::format("{}; {}; D in {}; {}; serving fields {}; kv_cache {}", x.device, x.dtypes, x.head_dims,
                     split_words(c.splits), x.serving, x.kv_cache);
}

}  // namespace fa
