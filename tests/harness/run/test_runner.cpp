// The runner: one record per (problem, path, G), invalid rows recorded without stopping the
// sweep, records handed to sinks as they finish, G=auto resolved and recorded, resume skips done
// records, G=auto counts with the path's own tiles, and path failures (error, oom) become records
// while the sweep goes on.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/check/full_check.hpp"
#include "harness/check/row_sample.hpp"
#include "harness/run/runner.hpp"
#include "paths/builtin.hpp"
#include "paths/wrapped_execution.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

struct Capture : RecordSink {
  std::vector<Record> seen;
  void write(const Record& r) override { seen.push_back(r); }
};

SweepRow row(int64_t S, int64_t Sk, std::vector<SplitRequest> g, int line) {
  SweepRow r;
  r.problem.H = r.problem.Hk = 2, r.problem.S = S, r.problem.Sk = Sk, r.problem.D = 32;
  r.splits = std::move(g);
  r.where = SourceLoc{"t.csv", line};
  r.invalid = validate(r.problem);
  return r;
}

GateContext cpu_ctx(int threads) {
  GateContext ctx;
  ctx.device.cpu_threads = threads;
  ctx.device.gpu_absent_why = "no GPU in this test";
  return ctx;
}

RunOptions opts(std::vector<std::string> paths) {
  RunOptions o;
  o.paths = std::move(paths);
  o.timing.min_samples = 2;
  o.timing.time_cap_s = 0.01;
  o.reference = compute_reference;
  return o;
}

}  // namespace

TEST(Runner, AnInvalidRowIsRecordedAndTheOtherRowsStillRun) {
  Sweep s;
  s.rows = {row(10, 20, {SplitRequest{}}, 2), row(0, 20, {SplitRequest{}}, 3), row(5, 5, {SplitRequest{false, 2}}, 4)};
  Capture sink;
  const GateContext ctx = cpu_ctx(2);
  const auto recs = run_sweep(s, opts({"cpu-flash"}), builtin_registry(ctx.device), ctx, {&sink});
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].status, Status::pass) << recs[0].reason;
  EXPECT_EQ(recs[1].status, Status::invalid);
  EXPECT_NE(recs[1].reason.find("t.csv:3: field 'S'"), std::string::npos) << recs[1].reason;
  EXPECT_EQ(recs[2].status, Status::pass) << recs[2].reason;
  EXPECT_EQ(recs[2].g_used, 2);
  EXPECT_EQ(sink.seen.size(), 3u);
  EXPECT_EQ(exit_status(recs), 2);
  ASSERT_TRUE(recs[0].timing);
  EXPECT_GT(recs[0].timing->median_ms, 0);
  EXPECT_GT(recs[0].tflops, 0);
}

TEST(Runner, GAutoIsResolvedByTheHeuristicAndRecorded) {
  Sweep s;
  s.rows = {row(1, 4096, {SplitRequest{true, 0}}, 2)};
  const GateContext ctx = cpu_ctx(8);  // 2 heads x 1 row block: 4 splits fill 8 threads
  Capture sink;
  const auto recs = run_sweep(s, opts({"cpu-flash", "cpu-ref"}), builtin_registry(ctx.device), ctx, {&sink});
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].g_used, 4);
  EXPECT_EQ(recs[0].status, Status::pass);
  EXPECT_EQ(recs[1].status, Status::skip);
  EXPECT_NE(recs[1].reason.find("G=auto (fa2) chose 4"), std::string::npos) << recs[1].reason;
  EXPECT_EQ(recs[0].split_rule, "fa2");  // no parameter file on a CPU: the fa2 rule
  EXPECT_EQ(recs[0].units, 8);
}

TEST(Runner, GAutoCountsKeyTilesWithThePathsOwnTileShape) {
  // fa2 on S=1, Sk=256, 2 heads, 8 threads (C = 16 slots): 64-key tiles give 4 key tiles, so at most
  // 4 splits (efficiency 8/16); 32-key tiles give 8, and 8 splits fill the 16 slots exactly.
  const GateContext ctx = cpu_ctx(8);
  Registry reg = builtin_registry(ctx.device);
  PathRow narrow = *reg.find("cpu-flash");
  narrow.name = "cpu-flash-32";
  narrow.tiles = TileShape{64, 32};
  reg.add(narrow);
  Sweep s;
  s.rows = {row(1, 256, {SplitRequest{true, 0}}, 2)};
  Capture sink;
  const auto recs = run_sweep(s, opts({"cpu-flash", "cpu-flash-32"}), reg, ctx, {&sink});
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].g_used, 4);
  EXPECT_EQ(recs[1].g_used, 8);
  EXPECT_EQ(recs[1].tile.block_n, 32);  // the record carries the tile the rule counted
  EXPECT_EQ(recs[1].status, Status::pass) << recs[1].reason;
}

TEST(Runner, WithoutAReferenceFunctionItRefusesToRun) {
  const GateContext ctx = cpu_ctx(2);
  RunOptions o = opts({"cpu-flash"});
  o.reference = nullptr;
  Sweep s;
  s.rows = {row(7, 9, {SplitRequest{}}, 2)};
  Capture sink;
  EXPECT_THROW(run_sweep(s, o, builtin_registry(ctx.device), ctx, {&sink}), std::invalid_argument);
}

TEST(Runner, AutoRecordsThePathItRan) {
  Sweep s;
  s.rows = {row(7, 9, {SplitRequest{}}, 2)};
  const GateContext ctx = cpu_ctx(2);
  Capture sink;
  const auto recs = run_sweep(s, opts({"auto"}), builtin_registry(ctx.device), ctx, {&sink});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].status, Status::pass);
  EXPECT_EQ(recs[0].ran_path, "cpu-flash");
}

TEST(Runner, ResumeSkipsRecordsAlreadyDone) {
  Sweep s;
  s.rows = {row(7, 9, {SplitRequest{}, SplitRequest{false, 2}}, 2)};
  const GateContext ctx = cpu_ctx(2);
  RunOptions o = opts({"cpu-flash"});
  Record done{s.rows[0].problem, {}, "cpu-flash", "", SplitRequest{}};
  o.done.insert(done.resume_key());
  Capture sink;
  const auto recs = run_sweep(s, o, builtin_registry(ctx.device), ctx, {&sink});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].g_req.value, 2);
}

TEST(Runner, ErrorsAndOutOfMemoryBecomeRecordsAndTheSweepGoesOn) {
  const GateContext ctx = cpu_ctx(2);
  Registry reg = builtin_registry(ctx.device);
  auto ok = [](const Problem&, int, const GateContext&) { return std::optional<std::string>(); };
  reg.add(PathRow{"throws", "cpu", "", "", false, ok,
                  [](const Problem&, const HostInputs&, int, const GateContext&) -> std::unique_ptr<Execution> {
                    throw std::runtime_error("launch failed: boom");
                  }});
  reg.add(PathRow{"oom", "cpu", "", "", false, ok,
                  [](const Problem&, const HostInputs&, int, const GateContext&) -> std::unique_ptr<Execution> {
                    throw OutOfMemory("out of memory allocating 9 GiB");
                  }});
  Sweep s;
  s.rows = {row(7, 9, {SplitRequest{}}, 2)};
  Capture sink;
  const auto recs = run_sweep(s, opts({"throws", "oom", "cpu-flash"}), reg, ctx, {&sink});
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].status, Status::error);
  EXPECT_NE(recs[0].reason.find("boom"), std::string::npos);
  EXPECT_EQ(recs[1].status, Status::oom);
  EXPECT_EQ(recs[2].status, Status::pass);
  EXPECT_EQ(exit_status(recs), 1);
}

TEST(Runner, UnavailableGpuPathsAreSkippedWithTheReason) {
  Sweep s;
  s.rows = {row(7, 9, {SplitRequest{}}, 2)};
  GateContext ctx = cpu_ctx(2);
  Capture sink;
  const Registry reg = builtin_registry(ctx.device);
  const auto recs = run_sweep(s, opts({"tiled"}), reg, ctx, {&sink});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].status, Status::skip);
  EXPECT_FALSE(recs[0].reason.empty());
  EXPECT_EQ(exit_status(recs), 0);
}

TEST(Runner, AHostAllocationThatFailsIsAnOomRecordAndTheSweepGoesOn) {
  const GateContext ctx = cpu_ctx(2);
  Registry reg = builtin_registry(ctx.device);
  auto ok = [](const Problem&, int, const GateContext&) { return std::optional<std::string>(); };
  reg.add(PathRow{"too-long", "cpu", "", "", false, ok,
                  [](const Problem&, const HostInputs&, int, const GateContext&) -> std::unique_ptr<Execution> {
                    std::vector<double>().reserve(size_t(-1) / 2);  // throws std::length_error
                    return nullptr;
                  }});
  Sweep s;
  // Causal S = 2^44, Sk = 1: one visible pair (within every budget) but 2^50 elements of Q, more
  // than any address space: the host inputs cannot be allocated.
  s.rows = {row(int64_t(1) << 44, 1, {SplitRequest{}}, 2), row(7, 9, {SplitRequest{}}, 3)};
  s.rows[0].problem.causal = true;
  ASSERT_FALSE(s.rows[0].invalid);
  Capture sink;
  const auto recs = run_sweep(s, opts({"cpu-flash", "too-long"}), reg, ctx, {&sink});
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[0].status, Status::oom) << recs[0].reason;
  EXPECT_EQ(recs[1].status, Status::oom) << recs[1].reason;
  EXPECT_EQ(recs[2].status, Status::pass) << recs[2].reason;
  EXPECT_EQ(recs[3].status, Status::oom) << recs[3].reason;
  EXPECT_EQ(exit_status(recs), 0) << "oom is not a wrong result";
}

TEST(Runner, ResumeDoesNotRecordAnInvalidRowTwice) {
  Sweep s;
  s.rows = {row(0, 9, {SplitRequest{}}, 2)};
  const GateContext ctx = cpu_ctx(2);
  Capture first;
  const auto recs = run_sweep(s, opts({"cpu-flash"}), builtin_registry(ctx.device), ctx, {&first});
  ASSERT_EQ(recs.size(), 1u);
  RunOptions o = opts({"cpu-flash"});
  o.done.insert(recs[0].resume_key());
  Capture again;
  EXPECT_TRUE(run_sweep(s, o, builtin_registry(ctx.device), ctx, {&again}).empty());
}

TEST(Runner, ResumeKeysTellApartRowsThatDifferOnlyByName) {
  Record a, b;
  a.problem.name = "enc", b.problem.name = "dec";
  EXPECT_NE(a.resume_key(), b.resume_key());
}

namespace {
// A device held at a power cap for its first `hot_reads` readings, then cool.
struct CappedClock : ClockSource {
  int hot_reads = 1 << 30;
  int reads = 0;
  std::string name() const override { return "fake"; }
  std::optional<ClockReading> read() override {
    ClockReading r;
    const bool hot = reads++ < hot_reads;
    r.mhz = hot ? 1400 : 1980;
    r.reasons = hot ? unsigned(kThrottlePowerCap) : 0u;
    return r;
  }
};

std::vector<Record> run_capped(ThrottlePolicy policy, const std::shared_ptr<CappedClock>& clock) {
  Sweep s;
  s.rows = {row(7, 9, {SplitRequest{}}, 2), row(5, 6, {SplitRequest{}}, 3)};
  const GateContext ctx = cpu_ctx(2);
  RunOptions o = opts({"cpu-flash"});
  o.timing.clocks = clock;
  o.throttle.policy = policy;
  o.throttle.wait_s = 0.2;
  Capture sink;
  return run_sweep(s, o, builtin_registry(ctx.device), ctx, {&sink});
}
}  // namespace

// --throttle-policy: warn keeps the number and says so; fail makes the record an error (a resumed
// sweep times it again) and the sweep goes on; retry waits for the clock and times again.
TEST(Runner, ThrottledSamplesAreNotedFailedOrRetimedAsThePolicySays) {
  const auto warn = run_capped(ThrottlePolicy::warn, std::make_shared<CappedClock>());
  ASSERT_EQ(warn.size(), 2u);
  EXPECT_EQ(warn[0].status, Status::pass) << warn[0].reason;
  ASSERT_TRUE(warn[0].timing && warn[0].timing->clocks);
  EXPECT_EQ(warn[0].timing->clocks->throttled_samples, warn[0].timing->samples);
  EXPECT_NE(warn[0].timing->note.find("throttled: "), std::string::npos) << warn[0].timing->note;
  EXPECT_NE(warn[0].timing->note.find("(sw_power_cap)"), std::string::npos) << warn[0].timing->note;

  const auto fail = run_capped(ThrottlePolicy::fail, std::make_shared<CappedClock>());
  ASSERT_EQ(fail.size(), 2u);
  for (const Record& r : fail) {
    EXPECT_EQ(r.status, Status::error);
    EXPECT_NE(r.reason.find("throttled: "), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("--throttle-policy fail"), std::string::npos) << r.reason;
  }
  EXPECT_EQ(exit_status(fail), 1);

  auto cools = std::make_shared<CappedClock>();
  cools->hot_reads = 2;  // the first record's first two readings (the loop's first and last)
  const auto retry = run_capped(ThrottlePolicy::retry, cools);
  ASSERT_EQ(retry.size(), 2u);
  ASSERT_TRUE(retry[0].timing && retry[0].timing->clocks);
  EXPECT_EQ(retry[0].status, Status::pass) << retry[0].reason;
  EXPECT_EQ(retry[0].timing->clocks->throttled_samples, 0) << retry[0].timing->note;
  EXPECT_NE(retry[0].timing->note.find("retimed 1 time after waiting"), std::string::npos) << retry[0].timing->note;

  const auto stays = run_capped(ThrottlePolicy::retry, std::make_shared<CappedClock>());
  ASSERT_TRUE(stays[0].timing && stays[0].timing->clocks);
  EXPECT_GT(stays[0].timing->clocks->throttled_samples, 0);
  EXPECT_NE(stays[0].timing->note.find("retimed 2 times"), std::string::npos) << "bounded: " << stays[0].timing->note;
}

// The reference is computed once a problem: a row that repeats the previous row's problem under
// another name reuses it, a different problem (here: another seed) does not.
TEST(Runner, ARowRepeatingThePreviousProblemReusesItsInputsAndReference) {
  Sweep s;
  s.rows = {row(7, 9, {SplitRequest{}, SplitRequest{false, 2}}, 2), row(7, 9, {SplitRequest{}}, 3),
            row(7, 9, {SplitRequest{}}, 4)};
  s.rows[1].problem.name = "again";
  s.rows[2].problem.seed = 5;
  const GateContext ctx = cpu_ctx(2);
  RunOptions o = opts({"cpu-flash"});
  o.time_paths = false;
  static int calls;  // ReferenceFn is a plain function pointer
  calls = 0;
  o.reference = [](const Problem& p, const HostInputs& in, std::vector<int64_t> rows, std::optional<LowPrecision> lp) {
    ++calls;
    return compute_reference(p, in, std::move(rows), lp);
  };
  Capture sink;
  const auto recs = run_sweep(s, o, builtin_registry(ctx.device), ctx, {&sink});
  ASSERT_EQ(recs.size(), 4u);
  for (const Record& r : recs) EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_EQ(calls, 2) << "rows 1-2 share one reference (three records), row 3 has its own";
}

// The reference a record is judged by follows its path's declarations: on an FP8 row a path that
// says its tensor cores add Q K^T on 13 bits gets a reference that adds so, computed once beside the
// fp32 one; on a 16-bit row the declaration changes nothing and one reference serves both.
TEST(Runner, AnFp8PathsAccumulationPicksItsOwnReferenceOnFp8RowsAlone) {
  const GateContext ctx = cpu_ctx(2);
  Registry reg = builtin_registry(ctx.device);
  PathRow h13 = *reg.find("cpu-flash");
  h13.name = "flash-13", h13.fp8_accumulate_bits = 13;
  reg.add(h13);
  Sweep s;
  s.rows = {row(40, 96, {SplitRequest{}}, 2), row(40, 96, {SplitRequest{}}, 3)};
  s.rows[0].problem.dtype = DType::fp8_e4m3;
  s.rows[1].problem.dtype = DType::bf16;
  RunOptions o = opts({"cpu-flash", "flash-13"});
  o.time_paths = false;
  static std::vector<std::pair<DType, int>> seen;  // ReferenceFn is a plain function pointer
  seen.clear();
  o.reference = [](const Problem& p, const HostInputs& in, std::vector<int64_t> rows, std::optional<LowPrecision> lp) {
    seen.emplace_back(p.dtype, lp ? lp->s_acc_bits : -1);
    return compute_reference(p, in, std::move(rows), lp);
  };
  Capture sink;
  const auto recs = run_sweep(s, o, reg, ctx, {&sink});
  ASSERT_EQ(recs.size(), 4u);
  for (const Record& r : recs) EXPECT_EQ(r.status, Status::pass) << r.path << ": " << r.reason;
  const std::vector<std::pair<DType, int>> want = {{DType::fp8_e4m3, 0}, {DType::fp8_e4m3, 13}, {DType::bf16, 0}};
  EXPECT_EQ(seen, want);
}

namespace {

// A stand-in GPU reference for the full-output check: the CPU oracle on every row (in fp32), and
// with bits the 13-bit low-precision reference's LSE as lse_acc. It notes the widths asked for.
std::vector<int> gpu_ref_asked;
GpuReferenceResult oracle_as_gpu_reference(const Problem& p, const HostInputs& in, const GateContext&, int bits) {
  gpu_ref_asked.push_back(bits);
  const LowPrecision lp(lowprec_p_dtype(p, kFp8PDefault), bits);
  const Reference all = compute_reference(p, in, sample_rows(p, 0, 0), lp);  // every row
  GpuReference g;
  g.o.assign(all.o.begin(), all.o.end()), g.lse.assign(all.lse.begin(), all.lse.end());
  g.eps_o.assign(g.lse.size(), 1e-6f), g.eps_lse.assign(g.lse.size(), 1e-5f);  // fp32's rounding of the oracle
  if (bits > 0) g.lse_acc = all.lse_lp;
  return {std::move(g), ""};
}

// cpu-flash's O with the 13-bit model's LSE on every row (what an FP8 kernel on Hopper leaves), one
// row of it moved by `shift`.
class ModelLse : public WrappedExecution {
 public:
  ModelLse(std::unique_ptr<Execution> e, std::vector<float> lse, size_t at, float shift)
      : WrappedExecution(std::move(e)), lse_(std::move(lse)) {
    lse_[at] += shift;
  }
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    out.lse = lse_;
    return out;
  }

 private:
  std::vector<float> lse_;
};

}  // namespace

// The full-output check of FP8 records through the runner, with a declared accumulation: the GPU
// reference runs for the row's first GPU record and again for a second width; a path whose LSE is
// the 13-bit model's on every row passes (each row held to its own gap); one row of it 0.05 past
// that fails, named. Paths: g0 (cpu-flash's output, fp32 scores) and g13 (declares 13 bits).
TEST(Runner, Fp8RecordsAreCheckedOnEveryRowUnderTheirOwnDeclaredAccumulation) {
  const GpuReferenceFn real = gpu_reference_fn();
  set_gpu_reference(oracle_as_gpu_reference);
  GateContext ctx = cpu_ctx(2);
  ctx.device.gpu = true, ctx.device.units = 8;  // the full check runs for kind-gpu paths on a GPU
  Registry reg = builtin_registry(ctx.device);
  const PathRow flash = *reg.find("cpu-flash");
  SweepRow sr = row(96, 160, {SplitRequest{}}, 2);
  Problem& p = sr.problem;
  p.D = 128, p.dtype = DType::fp8_e4m3, p.scale = 0.6;
  const HostInputs in = make_inputs(p);
  const Reference h13 = compute_reference(p, in, sample_rows(p, 0, 0), LowPrecision(DType::fp8_e4m3, 13));
  const std::vector<int64_t> sample = sample_rows(p, 4, p.seed);
  int64_t unsampled = 0;
  while (std::find(sample.begin(), sample.end(), unsampled) != sample.end()) ++unsampled;
  auto gpu_row = [&](const std::string& name, int bits, float shift) {
    PathRow r = flash;
    r.name = name, r.kind = "gpu", r.fp8_accumulate_bits = bits;
    auto inner = flash.prepare;
    const size_t at = size_t(lse_index(p, 0, 1, unsampled));
    r.prepare = [inner, lse = h13.lse_lp, at, shift, bits](const Problem& q, const HostInputs& i, int G,
                                                            const GateContext& c) -> std::unique_ptr<Execution> {
      if (bits == 0) return inner(q, i, G, c);
      return std::make_unique<ModelLse>(inner(q, i, G, c), lse, at, shift);
    };
    return r;
  };
  reg.add(gpu_row("g0", 0, 0.f));
  reg.add(gpu_row("g13", 13, 0.f));
  reg.add(gpu_row("g13-off", 13, 0.05f));
  auto run = [&](std::vector<std::string> paths) {
    RunOptions o = opts(std::move(paths));
    o.time_paths = false, o.check_rows = 4;
    Sweep s;
    s.rows = {sr};
    Capture sink;
    gpu_ref_asked.clear();
    return run_sweep(s, o, reg, ctx, {&sink});
  };
  std::vector<Record> recs = run({"g0", "g13", "g13-off"});
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].status, Status::pass) << recs[0].reason;
  EXPECT_EQ(recs[1].status, Status::pass) << recs[1].reason;
  EXPECT_EQ(recs[2].status, Status::fail);
  EXPECT_NE(recs[2].reason.find("(b=0, h=1, s=" + std::to_string(unsampled) + "): LSE"), std::string::npos)
      << recs[2].reason;
  EXPECT_EQ(gpu_ref_asked, std::vector<int>({0, 13})) << "once for the row, once more for the 13-bit LSE";
  recs = run({"g13", "g0"});
  EXPECT_EQ(recs.at(0).status, Status::pass) << recs[0].reason;
  EXPECT_EQ(recs.at(1).status, Status::pass) << recs[1].reason;
  EXPECT_EQ(gpu_ref_asked, std::vector<int>({13})) << "the first run brought the 13-bit LSE with it";
  set_gpu_reference(real);
}

// A path that writes its host inputs fails naming them, and the row's next path is judged on inputs
// made again and a reference made from those: whether the writer validated first (the reference is
// then built from written inputs and must go) or threw before anything checked.
TEST(Runner, APathThatWritesItsInputsFailsAloneAndTheNextPathIsJudgedOnCleanOnes) {
  const GateContext ctx = cpu_ctx(2);
  Registry reg = builtin_registry(ctx.device);
  const PathRow flash = *reg.find("cpu-flash");
  auto ok = [](const Problem&, int, const GateContext&) { return std::optional<std::string>(); };
  reg.add(PathRow{"writes-q", "cpu", "", "", false, ok,
                  [flash](const Problem& p, const HostInputs& in, int G, const GateContext& c) {
                    const_cast<HostInputs&>(in).q[0] += 8.f;  // the adversary: a write to an input
                    return flash.prepare(p, in, G, c);
                  }});
  reg.add(PathRow{"writes-then-throws", "cpu", "", "", false, ok,
                  [](const Problem&, const HostInputs& in, int, const GateContext&) -> std::unique_ptr<Execution> {
                    const_cast<HostInputs&>(in).k[3] = 100.f;
                    throw std::runtime_error("launch failed after a stray write");
                  }});
  Sweep s;
  s.rows = {row(7, 9, {SplitRequest{}}, 2)};
  RunOptions o = opts({"writes-q", "cpu-flash", "writes-then-throws", "cpu-flash"});
  o.time_paths = false;
  Capture sink;
  const auto recs = run_sweep(s, o, reg, ctx, {&sink});
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[0].status, Status::fail);
  EXPECT_NE(recs[0].reason.find("the path wrote its inputs (Q"), std::string::npos) << recs[0].reason;
  EXPECT_EQ(recs[1].status, Status::pass) << "cpu-flash after the writer: " << recs[1].reason;
  EXPECT_EQ(recs[2].status, Status::error);
  EXPECT_EQ(recs[3].status, Status::pass) << "cpu-flash after the throwing writer: " << recs[3].reason;
}

namespace {

// A path of kind gpu that runs on inputs of its own, as a device that draws the seed's inputs does
// (cpu-flash on make_inputs' whole draw), and keeps how many query rows the host inputs it was handed hold.
struct DrawsItsOwn : Execution {
  HostInputs own;
  std::unique_ptr<Execution> inner;
  DrawsItsOwn(const Problem& p, const PathRow& flash, const GateContext& ctx) : own(make_inputs(p)), inner(flash.prepare(p, own, 0, ctx)) {}
  void poison() override { inner->poison(); }
  void run() override { inner->run(); }
  RunOutputs read_back() override { return inner->read_back(); }
  double timed_sample_ms(TimingMode m) override { return inner->timed_sample_ms(m); }
};

struct DeviceDrawRig {
  GateContext ctx = cpu_ctx(2);
  Registry reg;
  std::vector<size_t> handed;  // q_rows.size() of each prepare's host inputs
  DeviceDrawRig() {
    ctx.device.gpu = true;  // a pretend GPU: the path below runs on the CPU
    reg = builtin_registry(ctx.device);
    PathRow g = *reg.find("cpu-flash");
    g.name = "drawn", g.kind = "gpu";
    g.prepare = [this, flash = g](const Problem& p, const HostInputs& in, int, const GateContext& c) -> std::unique_ptr<Execution> {
      handed.push_back(in.q_rows.size());
      return std::make_unique<DrawsItsOwn>(p, flash, c);
    };
    reg.add(std::move(g));
  }
  RunOptions opt(std::vector<std::string> paths) {
    RunOptions o = opts(std::move(paths));
    o.time_paths = false;
    o.gpu_reference = false;  // a GPU build's reference would run this pretend GPU problem on the real one
    o.check_rows = 16;
    return o;
  }
};

}  // namespace

TEST(Runner, ARowOnlyDevicePathsRunDrawsOnlyTheOraclesQueryRowsOnTheHostAndIsValidatedAsBefore) {
  DeviceDrawRig rig;
  Sweep s;
  s.rows = {row(300, 64, {SplitRequest{}}, 2)};
  Capture sink;
  RunOptions o = rig.opt({"drawn"});
  const auto recs = run_sweep(s, o, rig.reg, rig.ctx, {&sink});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].status, Status::pass) << recs[0].reason;
  const size_t rows = oracle_rows(s.rows[0].problem, o, rig.ctx).size();
  ASSERT_LT(rows, 300u);
  EXPECT_EQ(rig.handed, std::vector<size_t>{rows});
  ASSERT_TRUE(recs[0].metrics.has_value());
  EXPECT_EQ(recs[0].metrics->rows_checked, int64_t(rows));
  // Beside a CPU path (which reads every element) the row's host inputs are whole, for both.
  rig.handed.clear();
  const auto mixed = run_sweep(s, rig.opt({"drawn", "cpu-flash"}), rig.reg, rig.ctx, {&sink});
  ASSERT_EQ(mixed.size(), 2u);
  EXPECT_EQ(mixed[0].status, Status::pass) << mixed[0].reason;
  EXPECT_EQ(mixed[1].status, Status::pass) << mixed[1].reason;
  EXPECT_EQ(rig.handed, std::vector<size_t>{0});
}

TEST(Runner, OnlyASeededDenseNonFp8RowOfGpuPathsOnAGpuDrawsSomeQueryRows) {
  DeviceDrawRig rig;
  const Problem p = row(300, 64, {SplitRequest{}}, 2).problem;
  RunOptions o = rig.opt({"drawn"});
  EXPECT_TRUE(row_draws_on_device(p, o, rig.reg, rig.ctx));
  EXPECT_FALSE(row_draws_on_device(p, rig.opt({"drawn", "cpu-flash"}), rig.reg, rig.ctx));
  EXPECT_FALSE(row_draws_on_device(p, rig.opt({"drawn", "no-such-path"}), rig.reg, rig.ctx));
  Problem fp8 = p, thd = p, cache = p;
  fp8.dtype = DType::fp8_e4m3;
  thd.layout = Layout::thd;
  cache.S = 1, cache.kv_cache = true;
  for (const Problem& q : {fp8, thd, cache}) EXPECT_FALSE(row_draws_on_device(q, o, rig.reg, rig.ctx)) << q.label();
  RunOptions saved = o, loaded = o, isolated = o;
  saved.keep_outputs = [](const Record&, const HostInputs&, const RunOutputs&) {};
  loaded.inputs = [](const Problem& q) { return make_inputs(q); };
  isolated.isolate = true;
  for (const RunOptions& x : {saved, loaded, isolated}) EXPECT_FALSE(row_draws_on_device(p, x, rig.reg, rig.ctx));
  GateContext cpu = rig.ctx;
  cpu.device.gpu = false;
  EXPECT_FALSE(row_draws_on_device(p, o, rig.reg, cpu));
}
