// Plugin loading and containment end to end, with the planted plugins of tests/plugins/planted.c:
// a wrong result fails, a crash is an `error` under --isolate, a write past O fails saying so, an
// error status is an `error`; another ABI version, a clash with a built-in name, a missing entry
// symbol and a file that is no library are input errors (exit 2) naming the file.
#include <gtest/gtest.h>

#include "cli_helpers.hpp"
#include "helpers.hpp"

using fa::test::read_csv;
using fa::test::run_cli;

namespace {

const char* kFast = " --no-timing --no-table";

std::string small_sweep() {
  return fa::test::temp_file(".csv", "name,B,H,Hk,S,Sk,D,causal,dtype\nfirst,1,2,2,20,30,32,1,fp16\nsecond,1,4,2,9,17,64,0,bf16\n");
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(PluginLoading, ListShowsAPluginPathWithTheFileItCameFromAndItsDeclaredVersion) {
  const auto r = run_cli(std::string("list --plugin ") + PLANTED_WRONG);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| planted-wrong | cpu | yes |")) << r.output;
  EXPECT_TRUE(has(r.output, std::string("plugin ") + PLANTED_WRONG + " (version 0.0-planted-wrong)")) << r.output;
  EXPECT_TRUE(has(r.output, "| cpu-flash | cpu | yes |")) << "built-ins stay\n" << r.output;
}

TEST(PluginContainment, AWrongResultWithStatusOkFailsByValidationAndTheRecordNamesThePlugin) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + small_sweep() + " --plugin " + PLANTED_WRONG + " --paths planted-wrong -o " + csv + kFast);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "fail");
    EXPECT_TRUE(has(row.at("reason"), "max |err|")) << row.at("reason");
    EXPECT_EQ(row.at("plugin"), PLANTED_WRONG);
    EXPECT_EQ(row.at("plugin_version"), "0.0-planted-wrong");
    EXPECT_EQ(row.at("schema"), std::to_string(fa::kSchemaVersion));
  }
}

TEST(PluginContainment, ACrashingPluginIsAnErrorRecordUnderIsolateAndTheSweepGoesOn) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + small_sweep() + " --isolate --plugin " + PLANTED_CRASH + " --plugin " + PLANTED_WRONG +
                         " --paths planted-crash,planted-wrong -o " + csv + kFast);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 4u) << r.output;
  for (const auto& row : rows) {
    if (row.at("path") == "planted-crash") {
      EXPECT_EQ(row.at("status"), "error");
      EXPECT_TRUE(has(row.at("reason"), "SIGSEGV")) << row.at("reason");
    } else {  // the child loaded the plugins too: the wrong one ran there and was judged
      EXPECT_EQ(row.at("status"), "fail") << row.at("reason");
      EXPECT_TRUE(has(row.at("reason"), "max |err|")) << row.at("reason");
    }
  }
}

TEST(PluginContainment, AWritePastOFailsTheRecordWithAReasonThatSaysSo) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + small_sweep() + " --plugin " + PLANTED_OVERRUN + " --paths planted-overrun -o " + csv + kFast);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "fail");
    EXPECT_TRUE(has(row.at("reason"), "wrote past O's end")) << row.at("reason");
  }
}

TEST(PluginContainment, AWritePastOInATimedLaunchFailsToo) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("run --B 1 --H 2 --S 8 --D 32 --plugin " + std::string(PLANTED_OVERRUN) +
                         " --paths planted-overrun --max-samples 3 --min-samples 1 --no-table -o " + csv);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 1u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "fail");
  EXPECT_TRUE(has(rows[0].at("reason"), "wrote past O's end")) << rows[0].at("reason");
}

TEST(PluginContainment, AnErrorStatusIsAnErrorRecordCarryingThePluginsMessage) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + small_sweep() + " --plugin " + PLANTED_ERROR + " --paths planted-error -o " + csv + kFast);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "error");
  EXPECT_TRUE(has(rows[0].at("reason"), "planted failure: the plan was lost")) << rows[0].at("reason");
}

TEST(PluginContainment, APluginsSkipReasonBecomesASkipRecord) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("run --B 1 --H 2 --S 1 --Sk 40 --D 32 --kv-cache --plugin " + std::string(PLANTED_WRONG) +
                         " --paths planted-wrong -o " + csv + kFast);
  EXPECT_EQ(r.status, 0) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 1u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "skip");
  EXPECT_EQ(rows[0].at("reason"), "planted plugins skip kv-cache rows");
}

TEST(PluginContainment, AnExplicitSplitCountSkipsAPathThatDoesNotDeclareSplits) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("run --B 1 --H 2 --S 8 --D 32 --G 2 --plugin " + std::string(PLANTED_WRONG) +
                         " --paths planted-wrong -o " + csv + kFast);
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 1u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "skip");
  EXPECT_TRUE(has(rows[0].at("reason"), "FA_PATH_SPLITS")) << rows[0].at("reason");
}

TEST(PluginLoading, AnotherAbiVersionIsAnInputErrorNamingTheFile) {
  const auto r = run_cli("sweep " + small_sweep() + " --plugin " + PLANTED_ABI + kFast);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, PLANTED_ABI)) << r.output;
  EXPECT_TRUE(has(r.output, "declares plugin ABI version 2, and this fa-bench speaks version 1")) << r.output;
}

TEST(PluginLoading, ANameClashWithABuiltInPathIsAnInputErrorNamingTheFile) {
  const auto r = run_cli(std::string("list --plugin ") + PLANTED_CLASH);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, PLANTED_CLASH)) << r.output;
  EXPECT_TRUE(has(r.output, "path 'cpu-flash' clashes with the built-in path")) << r.output;
}

TEST(PluginLoading, AMissingEntrySymbolIsAnInputErrorNamingTheFile) {
  const auto r = run_cli(std::string("info --plugin ") + PLANTED_NO_ENTRY);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, PLANTED_NO_ENTRY)) << r.output;
  EXPECT_TRUE(has(r.output, "no entry symbol 'fa_bench_plugin'")) << r.output;
}

TEST(PluginLoading, AFileThatIsNoLibraryIsAnInputErrorNamingTheFile) {
  const auto fake = fa::test::temp_file(".so", "not an ELF file\n");
  const auto r = run_cli("run --B 1 --H 1 --S 4 --D 16 --plugin " + fake + kFast);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, fake)) << r.output;
  EXPECT_TRUE(has(r.output, "the library does not load")) << r.output;
}

TEST(PluginLoading, FabenchPluginsLoadsLikePluginAndAFileNamedInBothLoadsOnce) {
  const auto env = std::string("FABENCH_PLUGINS=/nonexistent-dir-is-not-read-first:") + PLANTED_WRONG;
  const auto bad = run_cli("list", env);
  EXPECT_EQ(bad.status, 2) << "a missing FABENCH_PLUGINS entry is an input error\n" << bad.output;
  EXPECT_TRUE(has(bad.output, "named in FABENCH_PLUGINS")) << bad.output;
  const auto r = run_cli(std::string("list --plugin ") + PLANTED_WRONG, std::string("FABENCH_PLUGINS=") + PLANTED_WRONG);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| planted-wrong | cpu | yes |")) << r.output;
}
