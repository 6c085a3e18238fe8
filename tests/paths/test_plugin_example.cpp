// The example CPU plugin (examples/plugins/cpu), built out of the tree against this build's
// installed package by the example_plugin fixture (tests/build_example_plugin.cmake), loaded by
// fa-bench: sweeps/edge.csv and sweeps/whisper.csv with 0 fail, timed, under --isolate, in `info`.
#include <gtest/gtest.h>

#include "cli_helpers.hpp"
#include "helpers.hpp"

using fa::test::read_csv;
using fa::test::run_cli;

namespace {

const std::string kPlugin = std::string(" --plugin ") + EXAMPLE_PLUGIN;

// Every record passes or skips; at least `min_pass` pass.
void expect_no_failures(const std::string& csv, size_t min_pass) {
  size_t pass = 0;
  for (const auto& row : read_csv(csv)) {
    EXPECT_TRUE(row.at("status") == "pass" || row.at("status") == "skip")
        << row.at("name") << " " << row.at("dtype") << " G=" << row.at("G_req") << ": " << row.at("status") << ": "
        << row.at("reason");
    pass += row.at("status") == "pass";
    EXPECT_EQ(row.at("plugin"), EXAMPLE_PLUGIN);
    EXPECT_EQ(row.at("plugin_version"), "1.0.0");
  }
  EXPECT_GE(pass, min_pass);
}

}  // namespace

TEST(ExamplePlugin, PassesEveryRowOfEdgeCsv) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + fa::test::source_dir() + "/sweeps/edge.csv --paths example-cpu --no-timing --no-table -o " +
                         csv + kPlugin);
  EXPECT_EQ(r.status, 0) << r.output;
  expect_no_failures(csv, 50);
}

TEST(ExamplePlugin, PassesEveryRowOfWhisperCsv) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + fa::test::source_dir() + "/sweeps/whisper.csv --paths example-cpu --no-timing --no-table -o " +
                         csv + kPlugin);
  EXPECT_EQ(r.status, 0) << r.output;
  expect_no_failures(csv, 20);
}

TEST(ExamplePlugin, IsTimedLikeABuiltInPathAndPassesTheTimedLaunchCheck) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("run --B 1 --H 4 --Hk 2 --S 33 --Sk 70 --D 64 --causal --layout bhsd --paths example-cpu,cpu-flash "
                         "--min-samples 3 --max-samples 5 --no-table -o " + csv + kPlugin);
  EXPECT_EQ(r.status, 0) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "pass") << rows[0].at("reason");
  EXPECT_FALSE(rows[0].at("median_ms").empty());
  EXPECT_EQ(rows[0].at("timed_check"), "same");
  EXPECT_EQ(rows[1].at("plugin"), "") << "a built-in row names no plugin";
}

TEST(ExamplePlugin, PassesUnderIsolateFromFabenchPluginsAlone) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("run --B 1 --H 2 --S 1 --Sk 50 --D 64 --kv-cache --isolate --paths example-cpu --no-timing --no-table -o " + csv,
                         std::string("FABENCH_PLUGINS=") + EXAMPLE_PLUGIN);
  EXPECT_EQ(r.status, 0) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 1u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "pass") << rows[0].at("reason");
}

TEST(ExamplePlugin, InfoNamesThePluginPathAndItsFile) {
  const auto r = run_cli("info" + kPlugin);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("example-cpu (cpu) from ") + EXAMPLE_PLUGIN + " (version 1.0.0)"), std::string::npos)
      << r.output;
}
