// --resume reading: the keys of final records (names included), earlier failures carried into the
// exit status, and files of another schema, column order, device or timing mode refused by name;
// end to end, the records fa-bench writes stay resumable and mergeable: torn tails are cut, re-runs
// replace, duplicated rows add no second key, and escaped names round-trip.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "harness/results/resume.hpp"
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

namespace {

std::string slurp_file(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

const char* kQuickRun = " --paths cpu-flash --no-timing --no-table";

}  // namespace

TEST(ResumeRecords, ATornOrUnterminatedLastLineIsCutOffWithAWarningAndTheRecordRunsAgain) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\na,1,2,4,16\nb,1,2,8,16\n");
  const auto csv = test::temp_file(".csv", "");
  ASSERT_EQ(test::run_cli("sweep " + sweep + kQuickRun + " -o " + csv).status, 0);
  const std::string whole = slurp_file(csv);
  for (size_t cut : {size_t(30), size_t(1)}) {  // half a line (a write cut short), or only the final newline missing
    std::ofstream(csv, std::ios::trunc) << whole.substr(0, whole.size() - cut);
    const auto r = test::run_cli("sweep " + sweep + kQuickRun + " --resume -o " + csv);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("ends in a torn line"), std::string::npos) << r.output;
    const ResultsFile back = read_results_csv(csv);
    ASSERT_EQ(back.records.size(), 2u) << slurp_file(csv);
    EXPECT_EQ(back.records[1].record.problem.name, "b") << "the torn record ran again on a line of its own";
  }
}

TEST(ResumeRecords, FilesAfterAResumeOfErrorRecordsOrADuplicatedRowMergeCleanly) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,Sk,D\ncrash,1,2,20,30,32\nok,1,2,20,30,32\nok,1,2,20,30,32\n");
  const auto csv = test::temp_file(".csv", "");
  const std::string run = "sweep " + sweep + " --paths test-crash --no-timing --no-table --isolate -o " + csv;
  EXPECT_EQ(test::run_cli(run, "FABENCH_TEST_PATHS=1").status, 1);
  EXPECT_EQ(read_results_csv(csv).records.size(), 2u) << "the duplicated row adds no second record under its key";
  EXPECT_EQ(test::run_cli(run + " --resume", "FABENCH_TEST_PATHS=1").status, 1) << "the error record runs again";
  ASSERT_EQ(read_results_csv(csv).records.size(), 3u) << slurp_file(csv);
  const auto merged = test::temp_file(".csv", "");
  const auto m = test::run_cli("merge " + csv + " -o " + merged);
  EXPECT_EQ(m.status, 0) << m.output;
  EXPECT_NE(m.output.find("1 re-run records replaced"), std::string::npos) << m.output;
  EXPECT_EQ(read_results_csv(merged).records.size(), 2u);
}

TEST(ResumeRecords, NamesWithNewlinesOrNonUtf8BytesRoundTripThroughCsvJsonAndResume) {
  const auto yaml = test::temp_file(".yaml", "problems:\n  - {name: \"two\\nlines\", B: 1, H: 2, S: 4, D: 16}\n");
  const auto latin1 = test::temp_file(".csv", "name,B,H,S,D\ncaf\xe9,1,2,8,16\n");
  const auto csv = test::temp_file(".csv", ""), jsonl = test::temp_file(".jsonl", "");
  const std::string run = "sweep " + yaml + " " + latin1 + kQuickRun + " -o " + csv + " --json " + jsonl;
  const auto first = test::run_cli(run);
  ASSERT_EQ(first.status, 0) << first.output;
  const ResultsFile back = read_results_csv(csv);
  ASSERT_EQ(back.records.size(), 2u) << slurp_file(csv);
  EXPECT_EQ(back.records[0].record.problem.name, "two\nlines");
  EXPECT_EQ(back.records[1].record.problem.name, "caf\xe9");
  std::ifstream j(jsonl);
  int objects = 0;
  for (std::string line; std::getline(j, line); ++objects) EXPECT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded()) << line;
  EXPECT_EQ(objects, 3) << "the meta line and both records";
  const auto again = test::run_cli(run + " --resume");
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("2 records were already in"), std::string::npos) << again.output;
  EXPECT_EQ(read_results_csv(csv).records.size(), 2u) << "nothing ran twice";
}

TEST(ResumeRecords, AResumeOverAnInvalidRecordSaysWhyItExitsTwo) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\nbad,1,2,4,300\n");
  const auto csv = test::temp_file(".csv", "");
  const std::string run = "sweep " + sweep + kQuickRun + " -o " + csv;
  ASSERT_EQ(test::run_cli(run).status, 2);
  const auto r = test::run_cli(run + " --resume");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("already holds a record that makes this run exit 2: " + csv + ":2: invalid"), std::string::npos)
      << r.output;
}

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

// The JSON Lines are as durable as the CSV: a line a file-size limit cut is repaired on --resume
// (the record the CSV holds is written again, exactly as the first run wrote it), and a --json new
// on a resumed run gets every record the CSV holds, not only its meta line.
TEST(ResumeRecords, ATornJsonLinesRecordIsWrittenAgainFromTheCsvOnResume) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\na,1,2,4,16\nb,1,2,8,16\nc,1,2,5,16\n");
  const auto csv = test::temp_file(".csv", ""), jsonl = test::temp_file(".jsonl", "");
  const std::string run = "sweep " + sweep + kQuickRun + " -o " + csv + " --json " + jsonl;
  ASSERT_EQ(test::run_cli(run).status, 0);
  const std::string whole = slurp_file(jsonl), whole_csv = slurp_file(csv);
  ASSERT_EQ(lines_of(whole).size(), 4u) << whole;
  for (size_t cut : {size_t(40), size_t(1)}) {
    std::ofstream(jsonl, std::ios::trunc) << whole.substr(0, whole.size() - cut);
    const auto r = test::run_cli(run + " --resume");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("ends in a torn line"), std::string::npos) << r.output;
    EXPECT_EQ(slurp_file(jsonl), whole) << "the cut record is the line the first run wrote";
    EXPECT_EQ(slurp_file(csv), whole_csv) << "nothing ran again";
  }
}

TEST(ResumeRecords, AJsonLinesFileNewOnAResumedRunGetsEveryRecordTheCsvHolds) {
  const auto sweep = test::temp_file(".csv", "name,B,H,S,D\na,1,2,4,16\nb,1,2,8,16\n");
  const auto csv = test::temp_file(".csv", ""), first_json = test::temp_file(".jsonl", "");
  ASSERT_EQ(test::run_cli("sweep " + sweep + kQuickRun + " -o " + csv + " --json " + first_json).status, 0);
  const auto record_lines = [](const std::string& file) {
    auto lines = lines_of(slurp_file(file));
    if (!lines.empty()) lines.erase(lines.begin());  // the meta line: this run's
    return lines;
  };
  const auto fresh = test::temp_file(".jsonl", "");
  std::filesystem::remove(fresh);
  const auto r = test::run_cli("sweep " + sweep + kQuickRun + " -o " + csv + " --json " + fresh + " --resume");
  EXPECT_EQ(r.status, 0) << r.output;
  const auto lines = lines_of(slurp_file(fresh));
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(nlohmann::json::parse(lines[0]).contains("meta"));
  EXPECT_EQ(record_lines(fresh), record_lines(first_json)) << "the records as the first run wrote them";
  // A resumed run that adds a record writes it once, after the ones carried over.
  std::ofstream(sweep, std::ios::app) << "c,1,2,5,16\n";
  const auto more = test::run_cli("sweep " + sweep + kQuickRun + " -o " + csv + " --json " + fresh + " --resume");
  EXPECT_EQ(more.status, 0) << more.output;
  const auto after = record_lines(fresh);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(after[2])["name"], "c");
}
