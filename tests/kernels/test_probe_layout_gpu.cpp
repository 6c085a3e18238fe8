// probe-layout on the GPU: every matrix instruction of this device (kernels/runtime/probe_layout.hpp),
// launched once, holds A, B and C where the kernels' fragment tables say, with no value the probe
// passes cannot write; and the command's --save-raw dump read back with --raw gives the same verdict.
// Skips without a GPU, or on a device with no instruction probe-layout knows. Run: ctest -L gpu -R ProbeLayoutGpu
#include <gtest/gtest.h>

#include "cli_helpers.hpp"
#include "harness/probe/probe_print.hpp"
#include "helpers.hpp"
#include "kernels/runtime/probe_layout.hpp"
#include "paths/builtin.hpp"

TEST(ProbeLayoutGpu, EveryInstructionOfTheDeviceAgreesWithTheKernelsTables) {
  const fa::DeviceFacts d = fa::probe_device();
  if (!d.gpu) GTEST_SKIP() << "no GPU: " << d.gpu_absent_why;
  const auto todo = fa::gpu::probe_instructions_on(d.arch, d.has_wgmma_sm90a);
  if (todo.empty()) GTEST_SKIP() << "probe-layout knows no matrix instruction of " << d.arch;
#ifdef FABENCH_HAS_GPU
  for (const auto& in : todo) {
    SCOPED_TRACE(in.name + " on " + d.arch);
    const fa::probe::Report r = fa::probe::analyse(in, fa::gpu::probe_launch(in));
    EXPECT_TRUE(r.diffs.empty()) << fa::probe::format_differences(in, r);
    EXPECT_EQ(r.odd_values, 0) << r.first_odd;
  }
#endif
}

TEST(ProbeLayoutGpu, TheCommandsSavedDumpReadsBackWithTheSameVerdict) {
  const fa::DeviceFacts d = fa::probe_device();
  if (!d.gpu) GTEST_SKIP() << "no GPU: " << d.gpu_absent_why;
  const auto todo = fa::gpu::probe_instructions_on(d.arch, d.has_wgmma_sm90a);
  if (todo.empty()) GTEST_SKIP() << "probe-layout knows no matrix instruction of " << d.arch;
  const fa::test::TempDir dir;
  const std::string raw = dir.path + "/dump.f32", name = todo.front().name;
  const auto launched = fa::test::run_cli("probe-layout --no-map --instr " + name + " --save-raw " + raw);
  EXPECT_EQ(launched.status, 0) << launched.output;
  const auto read = fa::test::run_cli("probe-layout --no-map --instr " + name + " --raw " + raw + " --arch " + d.arch.substr(0, d.arch.find(':')));
  EXPECT_EQ(read.status, 0) << read.output;
  EXPECT_NE(read.output.find(name + ": no difference"), std::string::npos) << read.output;
  const auto all = fa::test::run_cli("probe-layout --no-map");
  EXPECT_EQ(all.status, 0) << all.output;
  for (const auto& in : todo) EXPECT_NE(all.output.find(in.name + ": no difference"), std::string::npos) << all.output;
}
