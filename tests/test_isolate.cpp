// --isolate end to end: a record whose process segfaults, aborts or hangs past --row-timeout
// becomes an `error` record naming the signal or the timeout while the other records pass; an
// isolated record carries the same metrics as one run in-process; the outcome wire format keeps
// inf and NaN.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "cli_helpers.hpp"
#include "harness/isolate.hpp"
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
