// --isolate end to end: a record whose process segfaults, aborts or hangs past --row-timeout
// becomes an `error` record naming the signal or the timeout while the other records pass; an
// isolated record carries the same metrics as one run in-process; the outcome wire format keeps
// inf and NaN; the job carries every option the runner consumes (tensor folders included).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "cli_helpers.hpp"
#include "harness/results/tensors/npy.hpp"
#include "harness/run/isolate.hpp"
#include "helpers.hpp"

using namespace fa;
using test::read_csv;
using test::run_cli;

namespace {

const char* kEnv = "FABENCH_TEST_PATHS=1";
const char* kFast = " --paths test-crash --no-timing --no-table";

std::string sweep_named(const std::vector<std::string>& names) {
  std::string text = "name,B,H,S,Sk,D\n";
  for (const auto& n : names) text += n + ",1,2,20,30,32\n";
  return test::temp_file(".csv", text);
}

}  // namespace

TEST(Isolate, ACrashingRecordBecomesAnErrorRecordAndTheOthersPass) {
  const auto csv = test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + sweep_named({"first", "crash", "last"}) + " --isolate -o " + csv + kFast, kEnv);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "pass");
  EXPECT_EQ(rows[1].at("status"), "error");
  EXPECT_NE(rows[1].at("reason").find("SIGSEGV"), std::string::npos) << rows[1].at("reason");
  EXPECT_EQ(rows[2].at("status"), "pass");
}

TEST(Isolate, AnAbortIsRecordedWithItsSignal) {
  const auto csv = test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + sweep_named({"abort", "after"}) + " --isolate -o " + csv + kFast, kEnv);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  EXPECT_NE(rows[0].at("reason").find("SIGABRT"), std::string::npos) << rows[0].at("reason");
  EXPECT_EQ(rows[1].at("status"), "pass");
}

TEST(Isolate, AHangIsKilledAtTheRowTimeoutAndRecordedAsTimeout) {
  const auto csv = test::temp_file(".csv", "");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_cli("sweep " + sweep_named({"hang", "after"}) + " --row-timeout 1 -o " + csv + kFast, kEnv);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "error");
  EXPECT_NE(rows[0].at("reason").find("timeout"), std::string::npos) << rows[0].at("reason");
  EXPECT_EQ(rows[1].at("status"), "pass");
  EXPECT_LT(s, 10.0) << "--row-timeout implies --isolate and kills the hung child";
}

TEST(Isolate, AnIsolatedRecordCarriesTheSameMetricsAsAnInProcessOne) {
  const auto sweep = test::temp_file(".csv", "B,H,Hk,S,Sk,D,causal,G,dtype\n1,4,2,40,70,32,1,0|4,fp16|bf16\n");
  const auto a = test::temp_file(".csv", ""), b = test::temp_file(".csv", "");
  const std::string common = " --paths cpu-flash,cpu-ref --time-cap 0.01 --min-samples 1 --no-table";
  ASSERT_EQ(run_cli("sweep " + sweep + " -o " + a + common).status, 0);
  ASSERT_EQ(run_cli("sweep " + sweep + " --isolate -o " + b + common).status, 0);
  const auto ra = read_csv(a), rb = read_csv(b);
  ASSERT_EQ(ra.size(), 8u);
  ASSERT_EQ(rb.size(), ra.size());
  for (size_t i = 0; i < ra.size(); ++i)
    for (const char* col : {"status", "reason", "ran_path", "G_used", "max_abs_err", "rel_l2", "cosine", "bias_ulp",
                            "bias_bound", "rows_checked", "tol", "timing_mode"})
      EXPECT_EQ(ra[i].at(col), rb[i].at(col)) << "record " << i << " column " << col;
  EXPECT_FALSE(rb[0].at("median_ms").empty()) << "timing comes back from the child";
}

TEST(Isolate, TheOutcomeFormatKeepsInfinitiesAndNaN) {
  Record r;
  r.status = Status::fail;
  r.reason = "max |err| inf, \"quoted\"";
  r.metrics.emplace();
  r.metrics->max_abs = std::numeric_limits<double>::infinity();
  r.metrics->lse_max_err = std::nan("");
  r.metrics->bias.mean_ulp = -0.5;
  r.metrics->rows_checked = 7;
  Record back;
  decode_outcome(encode_outcome(r), back);
  EXPECT_EQ(back.status, Status::fail);
  EXPECT_EQ(back.reason, r.reason);
  ASSERT_TRUE(back.metrics);
  EXPECT_TRUE(std::isinf(back.metrics->max_abs));
  EXPECT_TRUE(std::isnan(back.metrics->lse_max_err));
  EXPECT_EQ(back.metrics->bias.mean_ulp, -0.5);
  EXPECT_EQ(back.metrics->rows_checked, 7);
  EXPECT_FALSE(back.timing);
}

TEST(Isolate, TheOutcomeCarriesTheClocksTheChildRead) {
  Record r;
  r.status = Status::pass;
  r.timing.emplace();
  r.timing->median_ms = 1.5;
  r.timing->clocks.emplace();
  r.timing->clocks->mhz_median = 1755, r.timing->clocks->power_w_max = -1, r.timing->clocks->throttled_samples = 4;
  r.timing->clocks->throttle_reasons = "sw_thermal", r.timing->clocks->source = "amdsmi";
  Record back;
  decode_outcome(encode_outcome(r), back);
  ASSERT_TRUE(back.timing && back.timing->clocks);
  EXPECT_EQ(back.timing->clocks->mhz_median, 1755);
  EXPECT_EQ(back.timing->clocks->power_w_max, -1);
  EXPECT_EQ(back.timing->clocks->throttled_samples, 4);
  EXPECT_EQ(back.timing->clocks->throttle_reasons, "sw_thermal");
  EXPECT_EQ(back.timing->clocks->source, "amdsmi");
  r.timing->clocks.reset();
  decode_outcome(encode_outcome(r), back = Record{});
  ASSERT_TRUE(back.timing);
  EXPECT_FALSE(back.timing->clocks);
}

TEST(Isolate, TheOutcomeCarriesTheColdFlushSize) {
  Record r;
  r.status = Status::pass;
  r.flush_bytes = size_t(100) << 20;
  Record back;
  decode_outcome(encode_outcome(r), back);
  EXPECT_EQ(back.flush_bytes, size_t(100) << 20);
}

TEST(Isolate, AChildReceivesEveryOptionTheRunnerConsumes) {
  Record r;
  r.problem.name = "odd \xff name\nline two";
  r.path = "cpu-flash";
  r.g_req = SplitRequest{true, 0};
  r.where = SourceLoc{"sweeps/x.csv", 7};
  RunOptions o;
  o.timing = {3, 4, 5, 0.25, 1.5, TimingMode::hot};
  o.timing.time_limit_s = 2.5;
  o.timing.planted_slowdown = 0.1;
  o.check_timed = false;
  o.time_paths = false;
  o.thresholds.max_err = 0.125;
  o.thresholds.cosine = 0.5;
  o.check_rows = 9;
  o.repeat_check = 2;
  o.load_tensors = "/tmp/in";
  o.save_tensors = "/tmp/out";
  o.throttle = {ThrottlePolicy::retry, 3, 7.5};
  GateContext ctx;
  ctx.cpu_budget_flops = 3e9;
  const IsolatedJob back = decode_job(encode_job(r, 4, o, ctx));
  const RunOptions& b = back.options;
  EXPECT_EQ(back.record.problem.name, r.problem.name) << "a name that is not UTF-8 travels escaped";
  EXPECT_EQ(back.record.path, r.path);
  EXPECT_TRUE(back.record.g_req.is_auto);
  EXPECT_EQ(back.record.where.str(), "sweeps/x.csv:7");
  EXPECT_EQ(back.G, 4);
  EXPECT_EQ(back.cpu_budget_flops, 3e9);
  EXPECT_EQ(b.timing.warmup, 3);
  EXPECT_EQ(b.timing.min_samples, 4);
  EXPECT_EQ(b.timing.max_samples, 5);
  EXPECT_EQ(b.timing.target_spread, 0.25);
  EXPECT_EQ(b.timing.time_cap_s, 1.5);
  EXPECT_EQ(b.timing.mode, TimingMode::hot);
  EXPECT_EQ(b.timing.planted_slowdown, 0.1);
  EXPECT_EQ(b.timing.time_limit_s, 2.5);
  EXPECT_FALSE(b.check_timed);
  EXPECT_FALSE(b.time_paths);
  EXPECT_EQ(b.thresholds.max_err, 0.125);
  EXPECT_EQ(b.thresholds.cosine, 0.5);
  EXPECT_EQ(b.check_rows, 9);
  EXPECT_EQ(b.repeat_check, 2);
  EXPECT_EQ(b.load_tensors, "/tmp/in");
  EXPECT_EQ(b.save_tensors, "/tmp/out");
  EXPECT_EQ(b.throttle.policy, ThrottlePolicy::retry);
  EXPECT_EQ(b.throttle.retries, 3);
  EXPECT_EQ(b.throttle.wait_s, 7.5);
}

TEST(Isolate, AnIsolatedChildSavesTensorsAndRunsOnLoadedOnes) {
  const test::TempDir dir;
  const auto csv = test::temp_file(".csv", "");
  const std::string shape = "run --B 1 --H 2 --S 4 --D 16 --dtype fp32 --paths cpu-flash --no-timing --no-table --isolate";
  const auto saved = run_cli(shape + " --save-tensors " + dir.path + " -o " + csv);
  ASSERT_EQ(saved.status, 0) << saved.output;
  const std::string rec = dir.path + "/B1_H2_S4_Sk4_D16-fp32-bshd-seed1-cpu-flash-G0";
  ASSERT_TRUE(std::filesystem::exists(rec + "/q.npy")) << "the child wrote the record's tensors\n" << saved.output;
  NpyArray q = read_npy(rec + "/q.npy");
  const float nan = std::nanf("");
  for (size_t i = 0; i < q.data.size(); i += 4) std::memcpy(&q.data[i], &nan, 4);
  write_npy(rec + "/q.npy", q);
  const auto loaded = run_cli(shape + " --load-tensors " + rec + " -o " + csv);
  EXPECT_EQ(loaded.status, 1) << "NaN inputs reach the child, so its output is NaN and fails\n" << loaded.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("status"), "fail");
}
