// `fa-bench probe-layout` end to end without a GPU: raw dumps emulated from the vendors' documented
// layouts (tests/probe_emulation.hpp) analysed with --raw (exit 0, the map and the summary; JSON),
// a dump with two D lanes swapped (exit 1 naming them), and each usage error (exit 2 naming the flag).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "helpers.hpp"
#include "kernels/runtime/probe_layout.hpp"
#include "probe_emulation.hpp"

using fa::test::run_cli;

namespace {

fa::probe::Instr instr(const std::string& name) {
  for (const auto& in : fa::gpu::probe_instructions())
    if (in.name == name) return in;
  throw std::invalid_argument(name);
}

std::string write_dump(const fa::test::TempDir& dir, const std::string& name, const std::vector<float>& dump) {
  const std::string file = dir.path + "/" + name;
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(dump.data()), dump.size() * sizeof(float));
  return file;
}

}  // namespace

TEST(CmdProbeLayout, ADumpOfTheDocumentedLayoutHasNoDifference) {
  const fa::test::TempDir dir;
  const auto in = instr("mfma_32x32x8_f16");
  const std::string raw = write_dump(dir, "mfma_ok.f32", fa::test::emulate_probe(in, fa::test::documented_layout(in.name)));
  const std::string json = dir.path + "/mfma_ok.json";
  const auto r = run_cli("probe-layout --instr mfma_32x32x8_f16 --raw " + raw + " --arch gfx942 --json " + json);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("mfma_32x32x8_f16: no difference from frag::mfma_32x32x8_{a,b,c} (A 256 slots, B 256, C 1024)"),
            std::string::npos) << r.output;
  // C's lane 32 register 0 holds D row 4, column 0 (the calculator's D[i][j] in lane 32 ((i / 4) % 2) + j).
  EXPECT_NE(r.output.find("C/D (row,col) as probed, lane x slot 0..15:"), std::string::npos) << r.output;
  std::ifstream jf(json);
  const nlohmann::json j = nlohmann::json::parse(jf);
  EXPECT_EQ(j["arch"], "gfx942");
  ASSERT_EQ(j["instructions"].size(), 1u);
  EXPECT_TRUE(j["instructions"][0]["differences"].empty());
  EXPECT_EQ(j["instructions"][0]["C"]["map"][32][0]["probed"], nlohmann::json({4, 0}));
}

TEST(CmdProbeLayout, ADumpWithTwoDLanesSwappedExitsOneNamingThem) {
  const fa::test::TempDir dir;
  const auto in = instr("wmma_16x16x16_f16");
  std::vector<float> dump = fa::test::emulate_probe(in, fa::test::documented_layout(in.name));
  const int regs = in.c.slots, nc = in.c.count();
  for (size_t it = 0; it < dump.size() / nc; ++it)
    for (int v = 0; v < regs; ++v) std::swap(dump[it * nc + 1 * regs + v], dump[it * nc + 2 * regs + v]);
  const std::string raw = write_dump(dir, "wmma_swapped.f32", dump);
  const auto r = run_cli("probe-layout --instr wmma_16x16x16_f16 --raw " + raw + " --no-map");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("C lane 1 register 0: cell: table 0,1, probed 0,2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("C lane 2 register 7: cell: table 14,2, probed 14,1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wmma_16x16x16_f16: 16 differences"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("lane x slot"), std::string::npos) << "--no-map printed a map";
}

TEST(CmdProbeLayout, UsageErrorsExitTwoNamingTheFlag) {
  const fa::test::TempDir dir;
  const auto in = instr("mma_m16n8k16_f16");
  const std::string raw = write_dump(dir, "mma_ok.f32", fa::test::emulate_probe(in, fa::test::documented_layout(in.name)));
  struct Case {
    std::string args, flag;
  };
  const Case cases[] = {
      {"--raw " + raw, "'--raw': needs --instr"},
      {"--instr nope --raw " + raw, "'--instr': unknown instruction 'nope'"},
      {"--instr mma_m16n8k16_f16 --raw " + raw + " --arch gfx942", "'--arch': gfx942 has no mma_m16n8k16_f16"},
      {"--instr mma_m16n8k16_f16 --raw " + raw + " --arch sm_x", "'--arch': unknown arch 'sm_x'"},
      {"--instr mma_m16n8k16_f16 --arch sm_80", "'--arch': goes with --raw"},
      {"--instr mfma_32x32x8_f16 --raw " + raw, "'--raw': 393216 bytes; a raw dump of mfma_32x32x8_f16 is 1048576"},
      {"--instr mma_m16n8k16_f16 --raw " + raw + " --json " + raw, "'--json'"},
      {"--instr mma_m16n8k16_f16 --raw " + raw + " --save-raw /dev/null", "'--save-raw': goes with --instr and a launch"},
      {"--instr mma_m16n8k16_f16 --raw " + dir.path, "'--raw': not a regular file"},
      {"--instr '' --raw " + raw, "--instr: an empty value is not allowed"},
  };
  for (const Case& c : cases) {
    const auto r = run_cli("probe-layout " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.flag), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_EQ(run_cli("probe-layout --instr mma_m16n8k16_f16 --raw " + raw + " --arch sm_80").status, 0);
}

#ifndef FABENCH_HAS_GPU
TEST(CmdProbeLayout, WithoutAGpuALaunchIsRefusedPointingAtRaw) {
  const auto r = run_cli("probe-layout");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("'--raw': no GPU to launch on"), std::string::npos) << r.output;
}
#endif
