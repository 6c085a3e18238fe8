// The output policy: checked writes, one writer per file (flock), inputs refused by identity, no
// truncation until the caller asks for it; and end to end, every writing command refuses an output
// that is an input or another output, and a failed write (a file or stdout) exits non-zero.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "cli_helpers.hpp"
#include "harness/results/output_file.hpp"
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

TEST(OutputPolicy, AnOutputIsCheckedAgainstInputsOtherOutputsAndItsDirectoryBeforeAnythingIsWritten) {
  const auto input = test::temp_file(".csv", "keep me\n");
  const std::string alias = input + ".alias";
  ASSERT_EQ(symlink(input.c_str(), alias.c_str()), 0);
  auto refusal = [&](const std::vector<OutputSpec>& outs) {
    try {
      check_outputs(outs, {input});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal({{"--csv", alias}}).find("--csv"), std::string::npos) << "an input under another name";
  const auto out = test::temp_file(".md", "");
  const std::string same_out = out.substr(0, out.rfind('/')) + "/./" + out.substr(out.rfind('/') + 1);
  EXPECT_NE(refusal({{"-o", out}, {"--markdown", same_out}}).find("also the file of -o"), std::string::npos);
  const std::string fresh = out + ".new";
  EXPECT_NE(refusal({{"-o", fresh}, {"--json", fresh}}).find("--json"), std::string::npos)
      << "two outputs that do not exist yet are still one file";
  EXPECT_NE(refusal({{"--report", "/nonexistent/dir/r.md"}}).find("directory '/nonexistent/dir' does not exist"),
            std::string::npos);
  EXPECT_NE(refusal({{"-o", "/tmp"}}).find("is a directory"), std::string::npos);
  EXPECT_EQ(refusal({{"-o", "/dev/null"}, {"--json", "/dev/null"}, {"--csv", ""}}), "") << "devices are shared, empty is unset";
  EXPECT_EQ(slurp(input), "keep me\n");
  std::remove(alias.c_str());
}

namespace {

// Runs fa-bench with stdout sent to `target` and stderr kept for the result (run_cli's own 2>&1
// would otherwise follow stdout there).
test::CliResult with_stdout_to(const std::string& args, const std::string& target) {
  return test::run_cli(args + " 2>&1 >" + target + "; exit $?)", "(");
}

// A results CSV of one timed cpu-flash record, written by the binary.
std::string one_record_results() {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const auto csv = test::temp_file(".csv", "");
  const auto r = test::run_cli("sweep " + sweep + " --paths cpu-flash --time-cap 0.001 --min-samples 2 --no-table -o " + csv);
  EXPECT_EQ(r.status, 0) << r.output;
  return csv;
}

}  // namespace

TEST(OutputPolicy, EveryWritingCommandRefusesToOverwriteItsInputsAndLeavesThemAsTheyWere) {
  const std::string a = one_record_results(), b = one_record_results();
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const std::string before_a = slurp(a), before_b = slurp(b), before_sweep = slurp(sweep);
  const std::string quick = " --paths cpu-flash --no-timing --no-table -o " + test::temp_file(".csv", "");
  const std::pair<std::string, std::string> cases[] = {
      {"sweep " + sweep + quick + " --markdown " + sweep, "--markdown"},
      {"compare " + a + " " + b + " --csv " + b, "--csv"},
      {"compare " + a + " " + b + " --json " + a, "--json"},
      {"gate --baseline " + a + " " + b + " --csv " + a, "--csv"},
      {"gate --baseline " + a + " " + b + " --json " + b, "--json"},
      {"fit " + a + " --params " + a, "--params"},
      {"fit " + a + " --no-params -o " + a, "-o"},
      {"fit " + a + " --no-params --report " + a, "--report"},
      {"merge " + a + " " + b + " -o " + b, "-o"},
      {"table " + a + " --csv " + a, "--csv"},
  };
  for (const auto& [cmd, flag] : cases) {
    const auto r = test::run_cli(cmd);
    EXPECT_EQ(r.status, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("field '" + flag + "'"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("refusing to overwrite"), std::string::npos) << cmd << "\n" << r.output;
  }
  EXPECT_EQ(slurp(a), before_a);
  EXPECT_EQ(slurp(b), before_b);
  EXPECT_EQ(slurp(sweep), before_sweep);
}

// A plugin library (--plugin or FABENCH_PLUGINS) and the --load-tensors folder's files are inputs
// too: an output over a loaded library truncated the code being run (SIGBUS, no record), and one
// over a loaded tensor replaced what the record was to run on.
TEST(OutputPolicy, PluginLibrariesAndLoadedTensorsAreInputsNoOutputMayOverwrite) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const auto lib = test::temp_file(".so", "a library's bytes: refused before it is loaded");
  test::TempDir lt;
  const std::string q = lt.path + "/q.npy";
  std::ofstream(q) << "the tensor the run would load";
  const std::string base = "sweep " + sweep + " --paths cpu-flash --no-timing --no-table ";
  const std::pair<std::string, std::string> cases[] = {
      {base + "--plugin " + lib + " -o " + lib, "-o"},
      {base + "--plugin " + lib + " -o " + test::temp_file(".csv", "") + " --json " + lib, "--json"},
      {base + "--load-tensors " + lt.path + " -o " + q, "-o"},
  };
  for (const auto& [cmd, flag] : cases) {
    const auto r = test::run_cli(cmd);
    EXPECT_EQ(r.status, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("field '" + flag + "'"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("refusing to overwrite"), std::string::npos) << cmd << "\n" << r.output;
  }
  const auto env = test::run_cli(base + "-o " + lib, "FABENCH_PLUGINS=" + lib);
  EXPECT_EQ(env.status, 2) << env.output;
  EXPECT_NE(env.output.find("refusing to overwrite"), std::string::npos) << env.output;
  EXPECT_EQ(slurp(lib), "a library's bytes: refused before it is loaded");
  EXPECT_EQ(slurp(q), "the tensor the run would load");
}

TEST(OutputPolicy, AFailedWriteToAFileOrToStdoutExitsNonZeroNamingIt) {
  const std::string a = one_record_results();
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const std::string files[] = {
      "compare " + a + " " + a + " --csv /dev/full",
      "gate --baseline " + a + " " + a + " --json /dev/full",
      "table " + a + " --csv /dev/full",
      "merge " + a + " -o /dev/full",
      "sweep " + sweep + " --paths cpu-flash --no-timing -o /dev/full",
  };
  for (const auto& cmd : files) {
    const auto r = with_stdout_to(cmd, "/dev/null");
    EXPECT_NE(r.status, 0) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("/dev/full"), std::string::npos) << cmd << "\n" << r.output;
  }
  const std::string to_stdout[] = {
      "compare " + a + " " + a,
      "gate --baseline " + a + " " + a,
      "table " + a,
      "expand " + sweep,
      "list",
      "sweep " + sweep + " --paths cpu-flash --no-timing -o /dev/null",
  };
  for (const auto& cmd : to_stdout) {
    const auto r = with_stdout_to(cmd, "/dev/full");
    EXPECT_NE(r.status, 0) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("writing stdout failed"), std::string::npos) << cmd << "\n" << r.output;
  }
}

TEST(OutputPolicy, OutputsOfOneRunAreDistinctFilesInExistingDirectoriesCheckedBeforeItRuns) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\nr,1,2,4,16\n");
  const auto csv = test::temp_file(".csv", "");
  const std::string run = "sweep " + sweep + " --paths cpu-flash --no-timing --no-table -o " + csv;
  const std::pair<std::string, std::string> cases[] = {
      {" --markdown " + csv, "--markdown"},
      {" --json " + csv, "--json"},
      {" --markdown /nonexistent/t.md", "--markdown"},
      {" --save-tensors " + sweep, "--save-tensors"},
  };
  for (const auto& [extra, flag] : cases) {
    const auto r = test::run_cli(run + extra);
    EXPECT_EQ(r.status, 2) << extra << "\n" << r.output;
    EXPECT_NE(r.output.find(flag), std::string::npos) << extra << "\n" << r.output;
    EXPECT_EQ(slurp(csv), "") << "refused before anything ran: " << extra;
  }
}
