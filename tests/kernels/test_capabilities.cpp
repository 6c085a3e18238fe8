// Every path row's capabilities against its whole gate, on described devices (no GPU needed): what
// a row declares it takes (dtypes, head dims, split counts, serving fields, kv_cache, device) its
// gate admits, and what it does not declare its gate refuses, naming it. A row that claims a field
// its kernel's own limits refuse is a disagreement: a planted one must be found. CPU builds check
// the CPU rows (GPU rows are placeholders there); GPU builds (scripts/test.sh runs this binary of
// the cuda build) check every kernel's row. Run: ctest -R Capabilities, or build/cuda/test_capabilities.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "paths/builtin.hpp"

using namespace fa;

namespace {

// A device that meets `need`, and one that does not, as the runtime would describe them.
DeviceFacts device_meeting(DeviceNeed need) {
  DeviceFacts d;
  d.cpu_threads = 2;
  if (need == DeviceNeed::cpu) return d;
  d.gpu = true, d.units = 132, d.l2_bytes = size_t(50) << 20, d.memory_bytes = size_t(80) << 30;
  switch (need) {
    case DeviceNeed::mfma_gfx9:
      d.arch = "gfx942", d.wave_size = 64, d.has_mfma_gfx9 = true, d.matrix_fp8_fnuz = true, d.units = 304;
      break;
    case DeviceNeed::wmma: d.arch = "gfx1201", d.has_wmma_gfx12 = true, d.matrix_fp8_ocp = true, d.units = 64; break;
    default: d.arch = "sm_90", d.has_mma_sm80 = true, d.has_wgmma_sm90a = true; break;  // also meets `gpu`
  }
  return d;
}
DeviceFacts device_missing(DeviceNeed need) {
  if (need == DeviceNeed::mfma_gfx9 || need == DeviceNeed::wmma) return device_meeting(DeviceNeed::mma_sm80);
  if (need == DeviceNeed::mma_sm80) return device_meeting(DeviceNeed::mfma_gfx9);
  DeviceFacts none;  // `gpu`: no GPU answered
  none.gpu_absent_why = "no GPU (described)";
  return none;
}

std::vector<DType> named_dtypes() {
  std::vector<DType> out;
  for (const char* n : {"fp16", "bf16", "fp32", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz", "fp8_e5m2fnuz"})
    if (auto t = parse_dtype(n)) out.push_back(*t);
  return out;
}

// One serving field set on a problem the way a sweep row would (seqlens_q needs thd's packed rows).
void set_field(Problem& p, ServingField f) {
  switch (f) {
    case ServingField::seqlens_q: p.layout = Layout::thd, p.seqlens_q = std::to_string(p.S); break;
    case ServingField::seqlens_k: p.seqlens_k = std::to_string(p.Sk); break;
    case ServingField::thd: p.layout = Layout::thd; break;
    case ServingField::page_size: p.page_size = 16; break;
    case ServingField::window: p.window_left = 8; break;
    case ServingField::alibi: p.alibi = "1"; break;
    case ServingField::softcap: p.softcap = 20; break;
  }
}

// Where row's gate and its capabilities disagree, in words; empty when they agree.
std::vector<std::string> disagreements(const PathRow& row) {
  std::vector<std::string> out;
  const Capabilities& c = row.caps;
  GateContext ctx;
  ctx.device = device_meeting(c.device);
  ctx.cpu_budget_flops = 1e12;
  auto gate = [&](const Problem& p, int G) { return row.supports(p, G, ctx); };
  auto say = [&](const std::string& what, const Problem& p, int G, const std::optional<std::string>& no) {
    out.push_back(fmt::format("{}: {} ({} D={} S={} G={}): {}", row.name, what, dtype_name(p.dtype), p.D, p.S, G,
                              no ? *no : std::string("admitted")));
  };

  // A base problem the row takes: its first split count, a D and dtype it declares, prefill or decode.
  int G0 = -1;
  for (int g : kSplitChoices)
    if (c.splits.has(g) && G0 < 0) G0 = g;
  int D0 = 0;
  for (int d : {64, 128, 256, 96, 80, 32, 16})
    if (!D0 && c.head_dims.takes(d)) D0 = d;
  std::optional<Problem> base;
  for (int64_t S : {128, 1}) {
    Problem p;
    p.B = 1, p.H = p.Hk = 2, p.S = S, p.Sk = 128, p.D = D0;
    p.dtype = c.takes_dtype(DType::fp16) ? DType::fp16 : c.dtypes.front();
    p.kv_cache = c.kv_cache == KvCache::needs;
    if (!base && !gate(p, G0)) base = p;
  }
  if (!base || G0 < 0 || !D0) {
    out.push_back(row.name + ": admits none of the problems its capabilities describe");
    return out;
  }

  for (int g : kSplitChoices) {  // split counts
    const auto no = gate(*base, g);
    if (c.splits.has(g) && no) say("declares G but refuses it", *base, g, no);
    if (!c.splits.has(g) && (!no || no->find("G") == std::string::npos)) say("takes an undeclared G", *base, g, no);
  }
  for (int d = 8; d <= 256; d += 8) {  // head dims
    Problem p = *base;
    p.D = d;
    const auto no = gate(p, G0);
    if (c.head_dims.takes(d) && no) say("declares D but refuses it", p, G0, no);
    if (!c.head_dims.takes(d) && (!no || no->find("D") == std::string::npos)) say("takes an undeclared D", p, G0, no);
  }
  for (DType t : named_dtypes()) {  // dtypes; a declared one may have conditions of its own, named
    Problem p = *base;
    p.dtype = t;
    const auto no = gate(p, G0);
    const bool named = no && no->find(dtype_name(t)) != std::string::npos;
    if (c.takes_dtype(t) && no && !named) say("declares the dtype but refuses it", p, G0, no);
    if (!c.takes_dtype(t) && !named) say("takes an undeclared dtype, or refuses it without naming it", p, G0, no);
  }
  for (ServingField f : kServingFields) {  // serving fields, each on its own
    Problem p = *base;
    set_field(p, f);
    const ServingSet refused = p.serving_set().without(c.serving);
    const auto no = gate(p, G0);
    if (refused.empty() && no) say(fmt::format("declares {} but refuses it", serving_field_name(f)), p, G0, no);
    for (const auto& name : refused.names())
      if (!no || no->find(name) == std::string::npos)
        say(fmt::format("takes the undeclared {}, or refuses it without naming it", name), p, G0, no);
  }
  {  // kv_cache
    Problem p = *base;
    p.kv_cache = c.kv_cache != KvCache::needs;
    const auto no = gate(p, G0);
    if (c.kv_cache == KvCache::takes && no) say("declares kv_cache but refuses it", p, G0, no);
    if (c.kv_cache != KvCache::takes && (!no || no->find("kv_cache") == std::string::npos))
      say("kv_cache as it does not declare", p, G0, no);
  }
  if (c.device != DeviceNeed::cpu) {  // the device
    GateContext other = ctx;
    other.device = device_missing(c.device);
    const auto no = row.supports(*base, G0, other);
    if (!no) say("runs on a device it does not declare", *base, G0, no);
  }
  return out;
}

const Registry& registry() {
  static const Registry reg = builtin_registry(DeviceFacts{});
  return reg;
}

}  // namespace

TEST(Capabilities, EveryDeclaredRowsGateAgreesWithWhatItDeclares) {
  std::string checked;
  for (const auto& row : registry().rows()) {
    if (!row.caps.declared()) continue;
    checked += " " + row.name;
    for (const auto& d : disagreements(row)) ADD_FAILURE() << d;
  }
  std::cout << "[ note ] rows checked:" << checked << "\n";
  EXPECT_NE(checked.find(" cpu-flash"), std::string::npos) << "cpu-ref and cpu-flash declare theirs in every build";
}

TEST(Capabilities, EveryBuiltKernelRowDeclaresWhatItTakes) {
#ifndef FABENCH_HAS_GPU
  GTEST_SKIP() << "a build without a GPU backend holds placeholder GPU rows; the cuda and hip builds hold the kernels";
#else
  for (const auto& row : registry().rows())
    if (row.kind == "gpu" && row.name != "auto" && row.plugin_file.empty())
      EXPECT_TRUE(row.caps.declared()) << row.name << " registers a kernel row without capabilities";
#endif
}

// The planted disagreement: a row that claims the window while its own gate refuses windows, and
// one that refuses D=96 though its head dims range takes it.
TEST(Capabilities, ARowClaimingAFieldItsKernelRefusesIsFound) {
  const PathRow* flash = registry().find("cpu-flash");
  ASSERT_NE(flash, nullptr);
  PathRow liar = *flash;
  liar.name = "planted";
  Capabilities c = flash->caps;
  c.serving = {ServingField::window};
  liar.declare(c, [](const Problem& p, int, const GateContext&) -> std::optional<std::string> {
    if (p.windowed()) return std::string("its kernel has no window mask");
    if (p.D == 96) return std::string("no kernel instance for this head size");
    return std::nullopt;
  });
  const auto found = disagreements(liar);
  auto names = [&](const std::string& what) {
    for (const auto& d : found)
      if (d.find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(names("declares window but refuses it")) << fmt::format("{}", fmt::join(found, "\n"));
  EXPECT_TRUE(names("declares D but refuses it")) << fmt::format("{}", fmt::join(found, "\n"));
  EXPECT_TRUE(disagreements(*flash).empty()) << "the honest row it was planted in agrees";
}

// The matrix-core paths declare FP8 dtypes that only some archs multiply: the gate takes each where
// the arch table says the matrix cores have that format, and names the arch and the dtype elsewhere.
TEST(Capabilities, AnFp8FormatTheArchsMatrixCoresLackIsRefusedByName) {
  Capabilities c;
  c.dtypes = {DType::fp16, DType::fp8_e4m3, DType::fp8_e4m3fnuz};
  c.fp8_on_matrix_cores = true;
  c.device = DeviceNeed::gpu;
  c.splits = SplitSet::none_split();
  DeviceFacts gfx90a = device_meeting(DeviceNeed::mfma_gfx9), gfx942 = gfx90a, gfx1100 = device_meeting(DeviceNeed::wmma);
  gfx90a.arch = "gfx90a", gfx90a.matrix_fp8_fnuz = false;
  gfx1100.arch = "gfx1100", gfx1100.has_wmma_gfx12 = false, gfx1100.has_wmma_gfx11 = true, gfx1100.matrix_fp8_ocp = false;
  const DeviceFacts gfx1201 = device_meeting(DeviceNeed::wmma);
  Problem p;
  p.B = 1, p.H = p.Hk = 2, p.S = p.Sk = 128, p.D = 64;
  auto gate = [&](DType t, const DeviceFacts& d) {
    p.dtype = t;
    return capability_gate("mc", c, p, 0, d);
  };
  EXPECT_EQ(gate(DType::fp8_e4m3fnuz, gfx942), std::nullopt);
  EXPECT_EQ(gate(DType::fp8_e4m3, gfx1201), std::nullopt);
  EXPECT_EQ(gate(DType::fp16, gfx90a), std::nullopt) << "16-bit needs no FP8 instruction";
  const auto on90a = gate(DType::fp8_e4m3fnuz, gfx90a);
  ASSERT_TRUE(on90a);
  EXPECT_NE(on90a->find("gfx90a has no FP8 matrix instruction"), std::string::npos) << *on90a;
  EXPECT_NE(on90a->find("fp8_e4m3fnuz"), std::string::npos) << *on90a;
  const auto ocp_on942 = gate(DType::fp8_e4m3, gfx942);
  ASSERT_TRUE(ocp_on942);
  EXPECT_NE(ocp_on942->find("gfx942 has FNUZ FP8 only"), std::string::npos) << *ocp_on942;
  const auto fnuz_on1201 = gate(DType::fp8_e4m3fnuz, gfx1201);
  ASSERT_TRUE(fnuz_on1201);
  EXPECT_NE(fnuz_on1201->find("gfx1201 has OCP FP8 only"), std::string::npos) << *fnuz_on1201;
  EXPECT_TRUE(gate(DType::fp8_e4m3, gfx1100)) << "RDNA3's WMMA has no FP8 form";
  c.fp8_on_matrix_cores = false;
  EXPECT_EQ(gate(DType::fp8_e4m3fnuz, gfx90a), std::nullopt) << "a path decoding FP8 itself runs it anywhere";
}

// A path that takes FP8 of one family says so: in its dtypes cell (`list`, the README's path table)
// and in the refusal of the other family's dtypes, where FNUZ is named as MI300's.
TEST(Capabilities, APathTakingOneFp8FamilySaysWhichAndRefusesTheOtherByName) {
  Capabilities c;
  c.dtypes = {DType::fp16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2};  // mma's: Hopper's OCP FP8
  c.device = DeviceNeed::gpu;
  c.splits = SplitSet::none_split();
  EXPECT_EQ(capability_cells(c).dtypes,
            "fp16, bf16, fp8_e4m3, fp8_e5m2 (OCP FP8 only, not MI300's FNUZ fp8_e4m3fnuz, fp8_e5m2fnuz)");
  Problem p;
  p.B = 1, p.H = p.Hk = 2, p.S = p.Sk = 128, p.D = 64, p.dtype = DType::fp8_e5m2fnuz;
  const auto no = capability_gate("mma", c, p, 0, device_meeting(DeviceNeed::mma_sm80));
  ASSERT_TRUE(no);
  EXPECT_NE(no->find("not fp8_e5m2fnuz (OCP FP8 only, not MI300's FNUZ"), std::string::npos) << *no;
  EXPECT_NE(no->find("MI300's"), std::string::npos) << *no;
  p.dtype = DType::fp32;  // not FP8: no family note
  const auto fp32 = capability_gate("mma", c, p, 0, device_meeting(DeviceNeed::mma_sm80));
  ASSERT_TRUE(fp32);
  EXPECT_EQ(fp32->find("OCP"), std::string::npos) << *fp32;

  c.dtypes = {DType::fp16, DType::fp8_e4m3fnuz, DType::fp8_e5m2fnuz};  // mfma's
  c.fp8_on_matrix_cores = true;
  EXPECT_EQ(capability_cells(c).dtypes, "fp16, fp8_e4m3fnuz, fp8_e5m2fnuz (FNUZ FP8 only, MI300's: not OCP fp8_e4m3, fp8_e5m2; "
                                        "FP8 where the arch's matrix cores multiply it)");
  c.dtypes = {DType::fp16, DType::fp8_e4m3, DType::fp8_e4m3fnuz};  // both families, or none: no note
  EXPECT_EQ(capability_cells(c).dtypes, "fp16, fp8_e4m3, fp8_e4m3fnuz (FP8 where the arch's matrix cores multiply it)");
  c.dtypes = {DType::fp16, DType::bf16}, c.fp8_on_matrix_cores = false;
  EXPECT_EQ(capability_cells(c).dtypes, "fp16, bf16");
}
