// Interrupting a sweep: SIGINT/SIGTERM finish the record in flight and exit 130/143 with every
// finished record in the file; under --isolate the record in flight is marked interrupted; a
// SIGKILL at 20 seeded random instants always leaves a file of complete lines with the header
// once, and --resume then completes the sweep with every record passing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <sstream>
#include <thread>

#include "cli_helpers.hpp"
#include "helpers.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

// Starts fa-bench with `args` (output to /dev/null) and returns its pid.
pid_t spawn(std::vector<std::string> args) {
  args.insert(args.begin(), FABENCH_BINARY);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, FABENCH_BINARY, &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

int wait_status(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Waits until the results file holds at least n records (lines after the header).
void wait_for_records(const std::string& csv, size_t n) {
  const auto until = Clock::now() + std::chrono::seconds(30);
  while (fa::test::read_csv(csv).size() < n && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// Rows of Sk = 24, 40, ... (each with G 0|2|4 and fp16|bf16: 6 records a row).
std::string sweep_of(int rows) {
  std::string text = "B,H,S,Sk,D,G,dtype\n";
  for (int i = 0; i < rows; ++i) text += "1,2,16," + std::to_string(24 + 16 * i) + ",32,0|2|4,fp16|bf16\n";
  return fa::test::temp_file(".csv", text);
}

}  // namespace

TEST(Interrupt, SigintAndSigtermKeepFinishedRecordsAndExitWith128PlusTheSignal) {
  for (const auto& [sig, code] : {std::pair{SIGINT, 130}, std::pair{SIGTERM, 143}}) {
    const auto csv = fa::test::temp_file(".csv", "");
    const pid_t pid = spawn({"sweep", sweep_of(4), "--paths", "cpu-flash", "--timing", "hot", "--time-cap", "0.03",
                             "--min-samples", "2", "--max-samples", "10000000", "--spread", "0", "-o", csv});
    wait_for_records(csv, 2);
    kill(pid, sig);
    EXPECT_EQ(wait_status(pid), code) << "signal " << sig;
    const auto rows = fa::test::read_csv(csv);
    EXPECT_GE(rows.size(), 2u);
    EXPECT_LT(rows.size(), 24u) << "the sweep stopped early";  // 24 records of ~30 ms
    for (const auto& r : rows) EXPECT_EQ(r.at("status"), "pass");
    const std::string text = slurp(csv);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
  }
}

TEST(Interrupt, UnderIsolateTheRecordInFlightIsMarkedInterrupted) {
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D\nfirst,1,1,8,16\nhang,1,1,8,16\nlast,1,1,8,16\n");
  const auto csv = fa::test::temp_file(".csv", "");
  setenv("FABENCH_TEST_PATHS", "1", 1);
  const pid_t pid = spawn({"sweep", sweep, "--paths", "test-crash", "--isolate", "--no-timing", "-o", csv});
  unsetenv("FABENCH_TEST_PATHS");
  wait_for_records(csv, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the hang child is running
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_status(pid), 143);
  const auto rows = fa::test::read_csv(csv);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("status"), "pass");
  EXPECT_EQ(rows[1].at("status"), "error");
  EXPECT_NE(rows[1].at("reason").find("interrupted by SIGTERM"), std::string::npos) << rows[1].at("reason");
}

// Records here take their time cap each: --spread 0 never stops the loop, and --min-samples is a
// floor the cap cannot undercut, so it stays low (at 100000 every record took max-samples: minutes).
TEST(Interrupt, SigkillAtRandomInstantsLeavesCompleteRecordsThatResumeFinishes) {
  const std::vector<std::string> args = {"sweep", sweep_of(2), "--paths", "cpu-flash", "--timing", "hot", "--time-cap",
                                         "0.02", "--min-samples", "2", "--max-samples", "10000000", "--spread", "0",
                                         "--no-table", "-o"};
  const size_t total = 12;
  // The full run's length sets the range of kill instants (a little past its end).
  const auto full = fa::test::temp_file(".csv", "");
  auto with = [&](const std::string& csv, bool resume) {
    auto a = args;
    a.push_back(csv);
    if (resume) a.push_back("--resume");
    return a;
  };
  const auto t0 = Clock::now();
  ASSERT_EQ(wait_status(spawn(with(full, false))), 0);
  const double span_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() * 1.1;
  const std::string header = slurp(full).substr(0, slurp(full).find('\n') + 1);

  std::mt19937 rng(20240601);
  for (int round = 0; round < 20; ++round) {
    const auto csv = fa::test::temp_file(".csv", "");
    const double delay_ms = std::uniform_real_distribution<double>(0, span_ms)(rng);
    const pid_t pid = spawn(with(csv, false));
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms));
    kill(pid, SIGKILL);
    wait_status(pid);
    const std::string text = slurp(csv);
    SCOPED_TRACE(testing::Message() << "round " << round << ", killed at " << delay_ms << " ms");
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "a line was cut";
    if (!text.empty()) {
      EXPECT_EQ(text.substr(0, header.size()), header);
    }
    EXPECT_EQ(text.find(header, 1), std::string::npos) << "header twice";
    const size_t ncols = fa::test::csv_fields(header.substr(0, header.size() - 1)).size();
    std::istringstream lines(text);
    for (std::string l; std::getline(lines, l);) EXPECT_EQ(fa::test::csv_fields(l).size(), ncols) << l;

    EXPECT_EQ(wait_status(spawn(with(csv, true))), 0);
    const std::string done = slurp(csv);
    EXPECT_EQ(done.find(header, 1), std::string::npos) << "header twice after --resume";
    const auto rows = fa::test::read_csv(csv);
    EXPECT_EQ(rows.size(), total);
    for (const auto& r : rows) EXPECT_EQ(r.at("status"), "pass");
  }
}
