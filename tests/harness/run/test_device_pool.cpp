// --devices on any build: one worker per listed device, each selecting its device on its own
// thread before it runs; problem k on the (k % n)-th device; every record written once to the
// shared sinks, tagged with its device. Ordinal lists are checked.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "harness/registry.hpp"
#include "harness/run/device_pool.hpp"
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

struct Capture : RecordSink {
  std::vector<Record> seen;
  void write(const Record& r) override { seen.push_back(r); }  // the pool serialises writes
};

}  // namespace

TEST(DevicePool, EachDeviceGetsItsWorkerAndItsShareOfProblems) {
  Sweep sweep;
  for (int64_t S : {3, 5, 7, 9, 11}) {
    SweepRow r;
    r.problem.H = r.problem.Hk = 2, r.problem.S = S, r.problem.Sk = 16, r.problem.D = 16;
    r.where = SourceLoc{"t.csv", int(S)};
    sweep.rows.push_back(r);
  }
  GateContext ctx;
  ctx.device.cpu_threads = 1;
  const Registry reg = builtin_registry(ctx.device);
  RunOptions opt;
  opt.paths = {"cpu-flash"};
  opt.time_paths = false;
  opt.reference = compute_reference;
  std::mutex mu;
  std::map<int, std::thread::id> selected_on;
  Capture sink;
  const auto records = run_on_devices(sweep, opt, reg, ctx, {&sink}, {3, 1}, [&](int d) {
    const std::lock_guard<std::mutex> lock(mu);
    selected_on[d] = std::this_thread::get_id();
    return DeviceFacts::Pci{0, 0x10 + d, 0};
  });
  ASSERT_EQ(selected_on.size(), 2u);
  EXPECT_NE(selected_on[3], selected_on[1]) << "one worker thread per device";
  EXPECT_NE(selected_on[3], std::this_thread::get_id());
  ASSERT_EQ(records.size(), 5u);
  ASSERT_EQ(sink.seen.size(), 5u);
  std::set<int64_t> on3, on1;
  for (const auto& r : sink.seen) {
    EXPECT_EQ(r.status, Status::pass) << r.reason;
    (r.device_index == 3 ? on3 : on1).insert(r.problem.S);
  }
  EXPECT_EQ(on3, (std::set<int64_t>{3, 7, 11})) << "problems 0, 2, 4 on the first listed device";
  EXPECT_EQ(on1, (std::set<int64_t>{5, 9}));
  for (const auto& r : records) EXPECT_TRUE(r.device_index == 3 || r.device_index == 1);
}

TEST(DevicePool, DeviceListsMustBeDistinctNonNegativeOrdinals) {
  EXPECT_EQ(parse_devices("0,1,3", "--devices"), (std::vector<int>{0, 1, 3}));
  EXPECT_THROW(parse_devices("0,0", "--devices"), InputError);
  EXPECT_THROW(parse_devices("0,x", "--devices"), InputError);
  EXPECT_THROW(parse_devices("-1", "--devices"), InputError);
  EXPECT_THROW(parse_devices("", "--devices"), InputError);
}

// The listed ordinals against the probe's device count: every one present, or an input error naming
// the flag and what the runtime sees.
TEST(DevicePool, ListedDevicesMustBeOnTheHost) {
  auto message = [](const std::vector<int>& devices, const DeviceFacts& d) -> std::string {
    try {
      check_devices_present(devices, d, "--devices");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  DeviceFacts two;
  two.gpu = true, two.device_count = 2;
  EXPECT_EQ(message({0, 1}, two), "");
  EXPECT_EQ(message({1}, two), "");
  const std::string third = message({0, 2}, two);
  EXPECT_NE(third.find("--devices"), std::string::npos) << third;
  EXPECT_NE(third.find("device 2 is not on this host: the runtime sees 2 devices (ordinals 0-1)"), std::string::npos)
      << third;
  DeviceFacts one = two;
  one.device_count = 1;
  EXPECT_NE(message({1}, one).find("sees 1 device (ordinals 0-0)"), std::string::npos) << message({1}, one);
  DeviceFacts none;
  none.gpu_absent_why = "no GPU device found (cuda backend built in)";
  EXPECT_NE(message({0}, none).find("no GPU on this host: no GPU device found (cuda backend built in)"), std::string::npos)
      << message({0}, none);
  EXPECT_EQ(message({}, none), "") << "no --devices: nothing to check";
}
