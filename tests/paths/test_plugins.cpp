// Plugin loading and containment end to end, with the planted plugins of tests/plugins/planted.c:
// a wrong result fails, a crash is an `error` under --isolate, a write past O fails saying so, an
// error status is an `error`; another ABI version, a clash with a built-in name, a missing entry
// symbol and a file that is no library are input errors (exit 2) naming the file. The adversarial
// plants (issue 44): writes into Q, K or V, a write before O, a 2^64-16 byte workspace, a crash in
// supports(), exit(0) in run(), a status of 7, a ':' in the library's path, and a parent killed
// with SIGKILL while its isolated child hangs.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <thread>

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

namespace {

// One record of `run` on (B=1, H=2, Hk=2, S=8, Sk=12, D=32) fp16 with a planted path; its row.
fa::test::CsvRow run_planted(const std::string& lib, const std::string& path, const std::string& extra = kFast,
                             const std::string& env = "", int expect_status = 1) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("run --B 1 --H 2 --S 8 --Sk 12 --D 32 --plugin " + lib + " --paths " + path + " -o " + csv +
                             extra,
                         env);
  EXPECT_EQ(r.status, expect_status) << r.output;
  const auto rows = read_csv(csv);
  if (rows.size() != 1u) {
    ADD_FAILURE() << "expected one record\n" << r.output;
    return {};
  }
  return rows[0];
}

}  // namespace

TEST(PluginAdversary, AWriteIntoQKOrVFailsNamingTheTensorAndTheElement) {
  struct Plant {
    const char *lib, *path, *tensor;
    int64_t elements;  // B * S * H * D for Q, B * Sk * Hk * D for K and V
  };
  const Plant plants[] = {{PLANTED_WRITE_Q, "planted-write-q", "Q", 1 * 8 * 2 * 32},
                          {PLANTED_WRITE_K, "planted-write-k", "K", 1 * 12 * 2 * 32},
                          {PLANTED_WRITE_V, "planted-write-v", "V", 1 * 12 * 2 * 32}};
  for (const Plant& p : plants)
    for (const auto& [where, element] : {std::pair<std::string, int64_t>{"first", 0},
                                         {"middle", p.elements / 2},
                                         {"last", p.elements - 1}}) {
      const auto row = run_planted(p.lib, p.path, kFast, "PLANT_ELEMENT=" + where);
      EXPECT_EQ(row.at("status"), "fail") << p.tensor << " " << where;
      const std::string expected = std::string("the path wrote its inputs (") + p.tensor + ", element " +
                                   std::to_string(element) + ")";
      EXPECT_TRUE(has(row.at("reason"), expected)) << expected << "\n" << row.at("reason");
    }
}

TEST(PluginAdversary, AWriteIntoAnInputIsCaughtWithTimingAndUnderIsolateToo) {
  for (const std::string extra : {" --max-samples 3 --min-samples 1 --no-table", " --isolate --no-timing --no-table"}) {
    const auto row = run_planted(PLANTED_WRITE_K, "planted-write-k", extra, "PLANT_ELEMENT=last");
    EXPECT_EQ(row.at("status"), "fail") << extra;
    EXPECT_TRUE(has(row.at("reason"), "the path wrote its inputs (K, element 767)")) << extra << "\n" << row.at("reason");
  }
}

// Spoiled only in timed launches (PLANT_FROM_CALL=2): --no-check-timed skips the comparison with the
// validated run, not the checks of the inputs and guards after timing (it once skipped both, and
// such a plugin passed).
TEST(PluginAdversary, WritesOnlyTimedLaunchesMakeFailTheRecordUnderNoCheckTimedToo) {
  const std::string timed = " --max-samples 3 --min-samples 2 --no-table";
  for (const std::string flags : {timed, timed + " --no-check-timed"}) {
    const auto q = run_planted(PLANTED_WRITE_Q, "planted-write-q", flags, "PLANT_FROM_CALL=2");
    EXPECT_EQ(q.at("status"), "fail") << flags;
    EXPECT_TRUE(has(q.at("reason"), "the path wrote its inputs (Q, element 0)") && has(q.at("reason"), "in a timed launch"))
        << flags << "\n" << q.at("reason");
    const auto o = run_planted(PLANTED_BEFORE_O, "planted-before-o", flags, "PLANT_FROM_CALL=2");
    EXPECT_EQ(o.at("status"), "fail") << flags;
    EXPECT_TRUE(has(o.at("reason"), "wrote before O") && has(o.at("reason"), "in a timed launch"))
        << flags << "\n" << o.at("reason");
  }
}

TEST(PluginAdversary, AWriteBeforeOFailsTheRecordInsteadOfAbortingTheRun) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + small_sweep() + " --plugin " + PLANTED_BEFORE_O + " --paths planted-before-o -o " +
                         csv + kFast);
  EXPECT_EQ(r.status, 1) << "a fail, not an abort (exit 134)\n" << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "fail");
    EXPECT_TRUE(has(row.at("reason"), "wrote before O (8 of the 4096 guard bytes before it changed")) << row.at("reason");
  }
}

TEST(PluginAdversary, AWorkspaceOfTwoToThe64MinusSixteenBytesIsAnOomNamingTheSize) {
  const auto row = run_planted(PLANTED_HUGE_WS, "planted-huge-ws", kFast, "", 0);
  EXPECT_EQ(row.at("status"), "oom");
  EXPECT_TRUE(has(row.at("reason"), "a workspace of " + std::to_string(UINT64_MAX - 15) + " bytes exceeds the host's memory"))
      << row.at("reason");
}

TEST(PluginAdversary, ARunStatusOfSevenIsAnErrorWhoseReasonSaysSo) {
  const auto row = run_planted(PLANTED_STATUS7, "planted-status7");
  EXPECT_EQ(row.at("status"), "error");
  EXPECT_TRUE(has(row.at("reason"), "run() returned 7, which is no fa_status")) << row.at("reason");
}

TEST(PluginIsolation, ACrashInSupportsIsAnErrorRecordUnderIsolateAndTheParentLives) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + small_sweep() + " --isolate --plugin " + PLANTED_SUPPORTS_CRASH +
                         " --paths planted-supports-crash,cpu-flash -o " + csv + kFast);
  EXPECT_EQ(r.status, 1) << "the parent finishes the sweep (not exit 139)\n" << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 4u) << r.output;
  for (const auto& row : rows) {
    if (row.at("path") == "cpu-flash") {
      EXPECT_EQ(row.at("status"), "pass") << row.at("reason");
      continue;
    }
    EXPECT_EQ(row.at("status"), "error");
    EXPECT_TRUE(has(row.at("reason"), "SIGSEGV")) << row.at("reason");
  }
}

TEST(PluginIsolation, ASupportsThatSaysNoIsStillASkipUnderIsolate) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("run --B 1 --H 2 --S 1 --Sk 40 --D 32 --kv-cache --isolate --plugin " +
                         std::string(PLANTED_WRONG) + " --paths planted-wrong -o " + csv + kFast);
  EXPECT_EQ(r.status, 0) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 1u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "skip");
  EXPECT_EQ(rows[0].at("reason"), "planted plugins skip kv-cache rows");
  EXPECT_EQ(rows[0].at("tile_m"), "") << "nothing ran: no tile, as in an in-process skip";
}

TEST(PluginIsolation, AnExitInsideRunIsAnErrorRecordWithTheExitStatusAndTheStderrTail) {
  const auto row = run_planted(PLANTED_EXIT0, "planted-exit0", std::string(" --isolate") + kFast);
  EXPECT_EQ(row.at("status"), "error");
  EXPECT_TRUE(has(row.at("reason"), "exited with status 3 without writing its record")) << row.at("reason");
  EXPECT_TRUE(has(row.at("reason"), "planted: leaving from inside run()")) << row.at("reason");
  EXPECT_TRUE(has(row.at("reason"), "plugin path planted-exit0 called exit() inside run()")) << row.at("reason");
}

// Without --isolate the plugin's exit() ends fa-bench itself: not with status 0 and the record
// silently missing, but with status 3 and a message naming the path and the call, the records
// written before it kept.
TEST(PluginIsolation, AnExitInsideRunWithoutIsolateEndsTheRunWithStatus3NamingThePath) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + small_sweep() + " --plugin " + PLANTED_EXIT0 + " --paths cpu-flash,planted-exit0 -o " +
                         csv + kFast);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_TRUE(has(r.output, "plugin path planted-exit0 called exit() inside run()")) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_GE(rows.size(), 1u) << "the record before the exit is kept\n" << r.output;
  EXPECT_EQ(rows[0].at("path"), "cpu-flash");
  EXPECT_EQ(rows[0].at("status"), "pass");
  for (const auto& row : rows) EXPECT_NE(row.at("path"), "planted-exit0") << "no record claims the exited run";
}

TEST(PluginIsolation, APluginWhosePathHoldsAColonRunsInTheChildren) {
  const fa::test::TempDir dir;
  const std::string folder = dir.path + "/with:colon";
  std::filesystem::create_directory(folder);
  const std::string lib = folder + "/libplanted:none.so";
  std::filesystem::copy_file(PLANTED_NONE, lib);
  for (const std::string isolate : {"", " --isolate"}) {
    const auto csv = fa::test::temp_file(".csv", "");
    const auto r = run_cli("sweep " + small_sweep() + isolate + " --plugin '" + lib + "' --paths planted-none -o " +
                           csv + kFast);
    EXPECT_EQ(r.status, 0) << isolate << "\n" << r.output;
    const auto rows = read_csv(csv);
    ASSERT_EQ(rows.size(), 2u) << r.output;
    for (const auto& row : rows) {
      EXPECT_EQ(row.at("status"), "pass") << isolate << ": " << row.at("reason");
      EXPECT_EQ(row.at("plugin"), lib);
    }
  }
}

namespace {

// The process's state letter from /proc/PID/stat ('Z': a zombie; '\0': no such process) and its parent.
std::pair<char, long> proc_state(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 4 > text.size()) return {'\0', 0};
  return {text[close + 2], std::strtol(text.c_str() + close + 4, nullptr, 10)};
}

}  // namespace

TEST(PluginIsolation, AParentKilledWithSigkillLeavesNoChildBehind) {
  const fa::test::TempDir dir;
  const std::string pid_file = dir.path + "/child.pid", log = dir.path + "/log";
  const std::string cmd = "PLANT_PID_FILE=" + pid_file + " " + FABENCH_BINARY + " sweep " + small_sweep() +
                          " --isolate --plugin " + PLANTED_HANG + " --paths planted-hang -o " + dir.path +
                          "/out.csv" + kFast + " >" + log + " 2>&1 & echo $!";
  FILE* sh = popen(cmd.c_str(), "r");
  long parent = 0;
  ASSERT_EQ(fscanf(sh, "%ld", &parent), 1);
  pclose(sh);
  long child = 0;
  for (int i = 0; i < 300 && !child; ++i) {  // up to 30 s for the child to reach run()
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(pid_file);
    if (!(in >> child)) child = 0;
  }
  ASSERT_GT(child, 0) << "the hanging plugin never ran";
  ASSERT_EQ(proc_state(child).second, parent) << "the plugin runs in the parent's isolated child";
  ASSERT_EQ(kill(pid_t(parent), SIGKILL), 0);
  char state = 'R';
  for (int i = 0; i < 50 && state != '\0' && state != 'Z'; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    state = proc_state(child).first;
  }
  if (state != '\0' && state != 'Z') kill(pid_t(child), SIGKILL);  // leave no stray behind this test either
  EXPECT_TRUE(state == '\0' || state == 'Z') << "the child " << child << " outlived its parent by 5 s (state "
                                              << state << ")";
}
