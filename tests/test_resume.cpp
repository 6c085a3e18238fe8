// --resume reading: the keys of final records (names included), earlier failures carried into the
// exit status, and files of another schema, column order, device or timing mode refused by name.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness/resume.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

Record record(const std::string& name, const std::string& path, Status st) {
  Record r;
  r.problem.name = name;
  r.problem.B = 2, r.problem.H = 8, r.problem.Hk = 2, r.problem.S = 100, r.problem.Sk = 200, r.problem.D = 64;
  r.path = path;
  r.g_req = SplitRequest{false, 4};
  r.status = st;
  r.timing = TimingStats{};
  r.timing->mode = "cold";
  return r;
}

RunMeta meta_on(const std::string& device) {
  RunMeta m;
  m.device = device;
  m.timing_mode = "cold";
  return m;
}

std::string write_file(const std::vector<Record>& recs, const RunMeta& meta) {
  const auto path = test::temp_file(".csv", "");
  CsvWriter w(OutputFile(path, {}), meta, false);
  for (const auto& r : recs) w.write(r);
  return path;
}

std::string slurp(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

}  // namespace

TEST(Resume, FinalRecordsAreDoneByNameAndErrorsRunAgain) {
  const RunMeta meta = meta_on("cpu: test");
  const auto path = write_file({record("enc", "cpu-flash", Status::pass), record("enc", "tiled", Status::error),
                                record("enc", "naive", Status::skip), record("enc", "decode", Status::oom)},
                               meta);
  const ResumeState st = read_resume(path, meta);
  EXPECT_EQ(st.done.size(), 2u);
  EXPECT_TRUE(st.done.count(record("enc", "cpu-flash", Status::pass).resume_key()));
  EXPECT_FALSE(st.done.count(record("dec", "cpu-flash", Status::pass).resume_key())) << "another name is another row";
  EXPECT_FALSE(st.done.count(record("enc", "tiled", Status::pass).resume_key())) << "errors are retried";
  EXPECT_EQ(st.exit_status, 0);
}

TEST(Resume, EarlierFailuresAndInvalidRowsCarryIntoTheExitStatus) {
  const RunMeta meta = meta_on("cpu: test");
  EXPECT_EQ(read_resume(write_file({record("a", "x", Status::invalid)}, meta), meta).exit_status, 2);
  EXPECT_EQ(read_resume(write_file({record("a", "x", Status::invalid), record("a", "y", Status::fail)}, meta), meta)
                .exit_status,
            1);
  EXPECT_EQ(combined_exit_status(1, 0), 1);
  EXPECT_EQ(combined_exit_status(2, 1), 1);
  EXPECT_EQ(combined_exit_status(0, 2), 2);
  EXPECT_EQ(combined_exit_status(0, 0), 0);
}

TEST(Resume, AHeaderOnlyFileHasNothingDoneAndKeepsOneHeader) {
  const RunMeta meta = meta_on("cpu: test");
  const auto path = write_file({}, meta);
  EXPECT_TRUE(read_resume(path, meta).done.empty());
  { CsvWriter again(OutputFile(path, {}), meta, true); }
  EXPECT_EQ(slurp(path).find('\n'), slurp(path).size() - 1) << slurp(path);
  EXPECT_TRUE(read_resume("/nonexistent/r.csv", meta).done.empty());
}

TEST(Resume, AFileFromAnotherDeviceOrTimingModeIsRefusedNamingTheFile) {
  const auto path = write_file({record("a", "x", Status::pass)}, meta_on("cpu: test"));
  for (RunMeta other : {meta_on("AMD Instinct MI300X"), meta_on("cpu: test")}) {
    if (other.device == "cpu: test") other.timing_mode = "hot";
    try {
      read_resume(path, other);
      FAIL() << "appended to a file of another run kind";
    } catch (const InputError& e) {
      EXPECT_EQ(e.field, other.timing_mode == "hot" ? "timing_mode" : "device") << e.what();
      EXPECT_NE(std::string(e.what()).find("'" + path + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Resume, AJsonLinesMetaOfAnotherDeviceIsRefused) {
  const auto path = test::temp_file(".jsonl", "");
  { JsonLinesWriter w(OutputFile(path, {}), meta_on("cpu: test"), false); }
  EXPECT_NO_THROW(check_json_resume(path, meta_on("cpu: test")));
  EXPECT_THROW(check_json_resume(path, meta_on("NVIDIA H100")), InputError);
}
