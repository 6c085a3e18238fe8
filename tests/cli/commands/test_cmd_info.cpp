// `fa-bench info --plugin FILE`: plugins load before anything is printed, so a library that does
// not load, declares another ABI version or is named in FABENCH_PLUGINS but missing exits 2 with
// its error alone; a good plugin's paths follow the machine facts.
#include <gtest/gtest.h>

#include <regex>

#include "cli_helpers.hpp"
#include "helpers.hpp"

using fa::test::run_cli;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Any line of info's report (host, cpu, memory, build, gpu, ... at the start of a line).
const std::regex kReportLine("(^|\n)(host|cpu|memory|build|gpu|units|clocks|runtime|capability|plugin) +");

}  // namespace

TEST(InfoWithPlugins, AFileThatIsNoLibraryExitsTwoBeforeAnyFactIsPrinted) {
  const auto fake = fa::test::temp_file(".so", "not an ELF file\n");
  const auto r = run_cli("info --plugin " + fake);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, fake)) << r.output;
  EXPECT_TRUE(has(r.output, "the library does not load")) << r.output;
  EXPECT_FALSE(std::regex_search(r.output, kReportLine)) << "nothing of the report above the error\n" << r.output;
}

TEST(InfoWithPlugins, AnotherAbiVersionExitsTwoBeforeAnyFactIsPrinted) {
  const auto r = run_cli(std::string("info --plugin ") + PLANTED_ABI);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, PLANTED_ABI)) << r.output;
  EXPECT_TRUE(has(r.output, "declares plugin ABI version 2")) << r.output;
  EXPECT_FALSE(std::regex_search(r.output, kReportLine)) << r.output;
}

TEST(InfoWithPlugins, AMissingFileNamedInFabenchPluginsExitsTwoBeforeAnyFactIsPrinted) {
  const auto r = run_cli("info", "FABENCH_PLUGINS=/nonexistent/libnothing.so");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "/nonexistent/libnothing.so")) << r.output;
  EXPECT_FALSE(std::regex_search(r.output, kReportLine)) << r.output;
}

TEST(InfoWithPlugins, AGoodPluginsPathsFollowTheMachineFacts) {
  const auto r = run_cli(std::string("info --plugin ") + PLANTED_WRONG);
  EXPECT_EQ(r.status, 0) << r.output;
  const auto host = r.output.find("host ");
  const auto plugin = r.output.find(std::string("plugin      planted-wrong (cpu) from ") + PLANTED_WRONG +
                                    " (version 0.0-planted-wrong)\n");
  ASSERT_NE(host, std::string::npos) << r.output;
  ASSERT_NE(plugin, std::string::npos) << r.output;
  EXPECT_LT(host, plugin) << r.output;
}
