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
