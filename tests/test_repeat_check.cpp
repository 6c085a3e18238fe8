// --repeat-check: cpu-flash is bit-identical over 10 reruns at G=0 and G=4 (OpenMP threads do
// not change its results); a path whose output changes between runs fails with the count of
// differing reruns; a poisoned (unwritten) element in a rerun is a difference.
#include <gtest/gtest.h>

#include "harness/repeat_check.hpp"
#include "harness/runner.hpp"
#include "helpers.hpp"
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

// cpu-flash whose O element 0 has its low bit flipped on every third run (runs 2, 5, 8, ...).
class Flaky : public Execution {
 public:
  explicit Flaky(std::unique_ptr<Execution> inner) : inner_(std::move(inner)) {}
  void poison() override { inner_->poison(); }
  void run() override { inner_->run(); }
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    if (runs_++ % 3 == 2) out.o.set_bits(0, out.o.bits(0) ^ 1u);
    return out;
  }
  double timed_sample_ms(TimingMode m) override { return inner_->timed_sample_ms(m); }

 private:
  std::unique_ptr<Execution> inner_;
  int runs_ = 0;
};

Sweep one_row(std::vector<SplitRequest> g) {
  Sweep s;
  SweepRow r;
  r.problem.B = 2, r.problem.H = 8, r.problem.Hk = 2, r.problem.S = 130, r.problem.Sk = 300, r.problem.D = 64;
  r.problem.causal = true;
  r.splits = std::move(g);
  s.rows = {r};
  return s;
}

GateContext ctx() {
  GateContext c;
  c.device.cpu_threads = 2;
  c.device.gpu_absent_why = "no GPU in this test";
  return c;
}

RunOptions repeat(const char* path, int n) {
  RunOptions o;
  o.paths = {path};
  o.time_paths = false;
  o.repeat_check = n;
  o.reference = compute_reference;
  return o;
}

}  // namespace

TEST(RepeatCheck, CpuFlashIsBitIdenticalOverTenRerunsAtG0AndG4) {
  const GateContext c = ctx();
  const auto recs = run_sweep(one_row({SplitRequest{false, 0}, SplitRequest{false, 4}}), repeat("cpu-flash", 10),
                              builtin_registry(c.device), c, {});
  ASSERT_EQ(recs.size(), 2u);
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::pass) << "G=" << r.g_used << ": " << r.reason;
    EXPECT_EQ(r.repeat_runs, 10);
    EXPECT_EQ(r.repeat_diffs, 0) << "G=" << r.g_used;
  }
}

TEST(RepeatCheck, APathWhoseOutputChangesFailsWithTheCountOfDifferingReruns) {
  const GateContext c = ctx();
  Registry reg = builtin_registry(c.device);
  const PathRow& flash = test::cpu_row("cpu-flash");
  reg.add(PathRow{"flaky", "cpu", "", "", false, flash.supports,
                  [&flash](const Problem& p, const HostInputs& in, int G, const GateContext& g) -> std::unique_ptr<Execution> {
                    return std::make_unique<Flaky>(flash.prepare(p, in, G, g));
                  }});
  const auto recs = run_sweep(one_row({SplitRequest{}}), repeat("flaky", 6), reg, c, {});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].status, Status::fail);
  EXPECT_EQ(recs[0].repeat_diffs, 2) << "reruns 2 and 5 of 6 differ";
  EXPECT_NE(recs[0].reason.find("2 of 6 reruns differ"), std::string::npos) << recs[0].reason;
}

TEST(RepeatCheck, AnElementLeftPoisonedInARerunIsADifference) {
  RunOutputs a;
  a.o = TypedBuffer(DType::bf16, 4);
  a.lse = {0.f, 1.f};
  for (int i = 0; i < 4; ++i) a.o.set(i, float(i));
  RunOutputs b = a;
  EXPECT_TRUE(bit_identical(a, b));
  b.o.set_bits(3, poison_bits(DType::bf16));
  EXPECT_FALSE(bit_identical(a, b));
  b = a;
  b.lse[0] = -0.f;
  EXPECT_FALSE(bit_identical(a, b)) << "-0 and +0 differ in bits";
}
