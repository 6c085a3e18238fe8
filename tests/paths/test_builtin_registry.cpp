// The registry this binary assembles: every self-registered row survives the link (CPU rows always,
// each listed GPU path in a GPU build), unbuilt GPU paths stay listed and skip with the reason,
// rows come in a fixed order, and `auto` prefers rows by rank and documents that order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "harness/path_registry.hpp"
#include "paths/auto_path.hpp"
#include "paths/builtin.hpp"

using namespace fa;

namespace {

std::vector<std::string> split_list(const char* list) {
  std::vector<std::string> names;
  std::istringstream in(list);
  for (std::string n; std::getline(in, n, ',');) names.push_back(n);
  return names;
}
std::vector<std::string> listed_gpu_paths() { return split_list(FABENCH_GPU_PATHS); }  // CMakeLists.txt's GPU path list
std::vector<std::string> listed_test_paths() { return split_list(FABENCH_GPU_TEST_PATHS); }  // its test_* names

// Sets FABENCH_TEST_PATHS for one scope.
struct TestSwitch {
  explicit TestSwitch(const char* v) {
    if (v) setenv("FABENCH_TEST_PATHS", v, 1);
    else unsetenv("FABENCH_TEST_PATHS");
  }
  ~TestSwitch() { unsetenv("FABENCH_TEST_PATHS"); }
};

DeviceFacts no_gpu() {
  DeviceFacts d;
  d.gpu_absent_why = "no GPU in this test";
  return d;
}

}  // namespace

TEST(BuiltinRegistry, EverySelfRegisteredRowSurvivesTheLink) {
  const Registry reg = builtin_registry(no_gpu());
  for (const char* name : {"cpu-ref", "cpu-flash", "auto"}) {
    const PathRow* r = reg.find(name);
    ASSERT_TRUE(r) << name << " is missing: its object was dropped at link time";
    EXPECT_TRUE(r->prepare) << name;
  }
  size_t expected = 2;  // cpu-ref and cpu-flash
#ifdef FABENCH_HAS_GPU
  expected += listed_gpu_paths().size() + listed_test_paths().size();  // test rows register too (shown only on the switch)
  // Every listed path is one auto may pick. A path no device session has validated yet would register
  // with auto_rank 0 and be named here as an exception (issue 18's ws kernel was, until an H100 passed
  // it and it folded into mma).
  for (const auto& name : listed_gpu_paths()) {
    const PathRow* r = reg.find(name);
    ASSERT_TRUE(r) << name;
    EXPECT_TRUE(r->prepare) << name << " is listed in CMakeLists.txt but its row did not register";
    EXPECT_GT(r->auto_rank, 0) << name;
  }
#endif
  EXPECT_EQ(registered_paths().size(), expected);
}

TEST(BuiltinRegistry, EveryListedGpuPathIsARowEvenWithoutAGpu) {
  const Registry reg = builtin_registry(no_gpu());
  Problem p;
  for (const auto& name : listed_gpu_paths()) {
    const PathRow* r = reg.find(name);
    ASSERT_TRUE(r) << name;
    EXPECT_EQ(r->kind, "gpu");
    EXPECT_EQ(reg.unavailable(*r, no_gpu()), std::optional<std::string>("no GPU in this test")) << name;
#ifndef FABENCH_HAS_GPU
    EXPECT_EQ(r->supports(p, 0, GateContext{no_gpu()}), std::optional<std::string>("no GPU in this test")) << name;
#endif
  }
}

TEST(BuiltinRegistry, RowsComeOracleFirstThenCpuThenTheGpuListThenAuto) {
  const Registry reg = builtin_registry(no_gpu());
  std::vector<std::string> want{"cpu-ref", "cpu-flash"};
  for (const auto& n : listed_gpu_paths()) want.push_back(n);
  want.push_back("auto");
  std::vector<std::string> got;
  for (const auto& r : reg.rows()) got.push_back(r.name);
  EXPECT_EQ(got, want);
}

TEST(BuiltinRegistry, AutoTriesRowsByRankAndSaysSoInItsGate) {
  const Registry reg = builtin_registry(no_gpu());
  const PathRow& a = *reg.find("auto");
#ifdef FABENCH_HAS_GPU
  // Today's order, as a subsequence: a new path slots in by its rank without editing this test.
  size_t at = 0;
  for (const char* name : {"kv-cache", "decode", "splitk", "tiled", "naive", "cpu-flash"}) {
    at = a.gate_doc.find(name, at);
    ASSERT_NE(at, std::string::npos) << name << " out of order in " << a.gate_doc;
  }
  EXPECT_EQ(a.gate_doc.substr(at), "cpu-flash") << "cpu-flash is auto's last resort";
#else
  EXPECT_EQ(a.gate_doc, "cpu-flash");  // the GPU rows are placeholders: never candidates
#endif
  Problem p;
  p.H = p.Hk = 2, p.S = 7, p.Sk = 9, p.D = 16;
  const GateContext ctx{no_gpu()};
  EXPECT_FALSE(a.supports(p, 0, ctx));
  EXPECT_FALSE(a.supports(p, 2, ctx)) << "cpu-flash admits G = 2";
  EXPECT_EQ(a.supports(p, 3, ctx), std::optional<std::string>("no path's gate admits this problem"));
}

TEST(BuiltinRegistry, AutoCountsGWithTheTileOfThePathItRunsAtThatG) {
  // A high-ranked row that admits only G = 0 and a lower one that admits every G: auto's tile at
  // G = 0 is the first's, at G = 4 the second's.
  auto row = [](const char* name, int rank, bool only_g0, TileShape t) {
    PathRow r{name, "gpu", "", "", false,
              [only_g0](const Problem&, int G, const GateContext&) -> std::optional<std::string> {
                if (only_g0 && G != 0) return std::string("G must be 0");
                return std::nullopt;
              },
              [](const Problem&, const HostInputs&, int, const GateContext&) -> std::unique_ptr<Execution> { return nullptr; }};
    r.auto_rank = rank;
    r.tiles = t;
    return r;
  };
  const PathRow a = auto_row({row("wide", 20, true, {128, 128, 2}), row("narrow", 10, false, {32, 16, 1})}, no_gpu(), DispatchChoice{});
  Problem p;
  const TileShape t0 = a.tile_for(p, 0, no_gpu()), t4 = a.tile_for(p, 4, no_gpu());
  EXPECT_EQ(t0.block_n, 128);
  EXPECT_EQ(t0.resident, 2);
  EXPECT_EQ(t4.block_m, 32);
  EXPECT_EQ(t4.block_n, 16);
}

TEST(BuiltinRegistry, AGpuPathIsItsKernelFileAndOneNameInTheBuildList) {
  // Every kernels/<family>/fa_<name>.hip is a path named <name> with '_' as '-', listed by
  // CMakeLists.txt.
  std::vector<std::string> listed = listed_gpu_paths();
  for (const auto& n : listed_test_paths()) listed.push_back(n);
  size_t files = 0;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(std::filesystem::path(FABENCH_SOURCE_DIR) / "kernels")) {
    const std::string f = e.path().filename().string();
    if (f.rfind("fa_", 0) != 0 || e.path().extension() != ".hip") continue;
    std::string name = f.substr(3, f.size() - 3 - 4);
    std::replace(name.begin(), name.end(), '_', '-');
    EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end()) << f << " is not in CMakeLists.txt's gpu_paths";
    ++files;
  }
  EXPECT_EQ(files, listed.size()) << "a listed GPU path has no kernels/<family>/fa_<name>.hip";
}

TEST(BuiltinRegistry, TheTestOnlyGpuPathIsARowOnlyWithTheTestSwitch) {
  // kernels/scalar/fa_test_rowwise.hip and its one name in the build list are all that make this row.
  ASSERT_EQ(listed_test_paths(), std::vector<std::string>{"test-rowwise"});
  {
    const TestSwitch off(nullptr);
    EXPECT_FALSE(builtin_registry(no_gpu()).find("test-rowwise"));
  }
  const TestSwitch on("1");
  const Registry reg = builtin_registry(no_gpu());
  const PathRow* r = reg.find("test-rowwise");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "gpu");
  EXPECT_EQ(r->auto_rank, 0) << "a test-only row is never a candidate for auto";
  EXPECT_EQ(reg.unavailable(*r, no_gpu()), std::optional<std::string>("no GPU in this test"));
#ifdef FABENCH_HAS_GPU
  EXPECT_TRUE(r->prepare) << "the row registered from its own file";
  EXPECT_NE(r->summary.find("test only"), std::string::npos) << r->summary;
#else
  EXPECT_EQ(r->supports(Problem{}, 0, GateContext{no_gpu()}), std::optional<std::string>("no GPU in this test"));
#endif
  EXPECT_EQ(reg.rows().back().name, "auto");
}
