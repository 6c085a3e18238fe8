// The shipped serving sweeps pass on cpu-flash, every row, through the binary as a user runs them:
// sweeps/serving.yaml, sweeps/fa-ck.yaml (under --repeat-check 3, its deterministic reruns) and
// sweeps/fp8.yaml (FP8 inputs, OCP and FNUZ). Native and portable CI builds run this; the ASan
// step leaves it out (minutes there).
#include <gtest/gtest.h>

#include "cli_helpers.hpp"
#include "harness/results/results_reader.hpp"
#include "helpers.hpp"

namespace {

// Every row passes; `all_serving`: and every row is a serving problem (lengths, pages, masks...).
void every_row_passes(const std::string& sweep, const std::string& extra, bool all_serving = true) {
  fa::test::TempDir dir;
  const std::string csv = dir.path + "/out.csv";
  const auto r = fa::test::run_cli("sweep " + fa::test::source_dir() + "/sweeps/" + sweep +
                                   " --paths cpu-flash --no-timing --table compact -o " + csv + " " + extra);
  ASSERT_EQ(r.status, 0) << r.output;
  const fa::ResultsFile f = fa::read_results_csv(csv);
  ASSERT_FALSE(f.records.empty()) << sweep;
  size_t serving = 0;
  for (const auto& rec : f.records) {
    EXPECT_EQ(rec.record.status, fa::Status::pass) << sweep << " " << rec.record.problem.label() << ": " << rec.record.reason;
    serving += !rec.record.problem.serving_fields().empty();
  }
  if (all_serving) EXPECT_EQ(serving, f.records.size()) << sweep << ": every row is a serving problem";
}

}  // namespace

TEST(ShippedSweeps, ServingYamlPassesOnCpuFlash) { every_row_passes("serving.yaml", ""); }

TEST(ShippedSweeps, FaCkYamlPassesOnCpuFlashWithDeterministicReruns) { every_row_passes("fa-ck.yaml", "--repeat-check 3"); }

TEST(ShippedSweeps, Fp8YamlPassesOnCpuFlashInTheOcpAndFnuzFormats) {
  every_row_passes("fp8.yaml", "", /*all_serving=*/false);
  const auto r = fa::test::run_cli("expand " + fa::test::source_dir() + "/sweeps/fp8.yaml");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* t : {"fp8_e4m3,", "fp8_e5m2,", "fp8_e4m3fnuz,", "fp8_e5m2fnuz,"})
    EXPECT_NE(r.output.find(t), std::string::npos) << t;
  EXPECT_EQ(r.output.find("bf16"), std::string::npos) << "every row's inputs are FP8";
}
