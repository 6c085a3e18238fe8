// Results files: checked writes, one writer per file (flock), inputs refused by identity, and no
// truncation until the caller asks for it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "harness/output_file.hpp"
#include "helpers.hpp"

using namespace fa;

static std::string slurp(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

static std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const WriteError& e) {
    return e.what();
  }
  return "";
}

TEST(OutputFile, AWriteToAFullDeviceThrowsNamingTheFile) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full on this machine";
  OutputFile out("/dev/full", {});
  const std::string e = error_of([&] { out.write("schema,run_id\n"); });
  EXPECT_NE(e.find("'/dev/full'"), std::string::npos) << e;
}

TEST(OutputFile, ASecondWriterOfTheSameFileIsRefusedWhileTheFirstHoldsIt) {
  const auto path = test::temp_file(".csv", "");
  {
    OutputFile first(path, {});
    const std::string e = error_of([&] { OutputFile second(path, {}); });
    EXPECT_NE(e.find("'" + path + "' is locked"), std::string::npos) << e;
  }
  EXPECT_EQ(error_of([&] { OutputFile again(path, {}); }), "") << "the lock ends with the first writer";
}

TEST(OutputFile, AnInputIsRefusedUnderAnyNameAndKeepsItsContent) {
  const auto input = test::temp_file(".csv", "B,H,S,D\n");
  const std::string alias = input + ".link";
  ASSERT_EQ(link(input.c_str(), alias.c_str()), 0);
  EXPECT_TRUE(same_file(input, alias));
  EXPECT_FALSE(same_file(input, "/nonexistent"));
  const std::string e = error_of([&] { OutputFile out(alias, {input}); });
  EXPECT_NE(e.find("is the input"), std::string::npos) << e;
  EXPECT_EQ(slurp(input), "B,H,S,D\n");
}

TEST(OutputFile, OpeningNeverTruncatesOnlyTruncateDoes) {
  const auto path = test::temp_file(".csv", "earlier\n");
  OutputFile out(path, {});
  EXPECT_FALSE(out.empty());
  EXPECT_EQ(slurp(path), "earlier\n");
  out.truncate();
  EXPECT_TRUE(out.empty());
  out.write("new\n");
  EXPECT_EQ(slurp(path), "new\n");
  EXPECT_NE(error_of([] { OutputFile bad("/nonexistent/dir/r.csv", {}); }).find("/nonexistent/dir/r.csv"),
            std::string::npos);
}
