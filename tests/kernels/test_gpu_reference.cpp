// The GPU reference (kernels/runtime/gpu_reference.hip) against the CPU fp64 oracle on every row of
// small problems (dense causal/GQA/layouts/head dims, serving views, ALiBi, softcap, FP8), its LSE of
// FP8 scores added on 13 bits against the CPU's low-precision reference that adds them so, and the
// full-output check in run_record catching one wrong row that the CPU sample does not hold. Labelled
// `gpu`; skips with the reason where no GPU answers (or no GPU backend is built).
// Run: ctest --test-dir build/cuda90 -R GpuReference --output-on-failure
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/check/full_check.hpp"
#include "harness/check/row_sample.hpp"
#include "harness/check/tolerance.hpp"
#include "harness/run/run_record.hpp"
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

const GateContext& context() {
  static const GateContext ctx = [] {
    GateContext c;
    c.device = probe_device();
    c.cpu_budget_flops = 1e12;
    return c;
  }();
  return ctx;
}

#define REQUIRE_GPU()                                                                                  \
  if (!context().device.gpu) GTEST_SKIP() << "no GPU: " << context().device.gpu_absent_why;          \
  if (!gpu_reference_fn()) GTEST_SKIP() << "this build has no GPU reference"

Problem dense(int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D, bool causal, DType t) {
  Problem p;
  p.B = B, p.H = H, p.Hk = Hk, p.S = S, p.Sk = Sk, p.D = D, p.causal = causal, p.dtype = t;
  return p;
}

std::vector<int64_t> every_row(const Problem& p) {
  std::vector<int64_t> rows(size_t(p.S));
  for (int64_t s = 0; s < p.S; ++s) rows[size_t(s)] = s;
  return rows;
}

}  // namespace

TEST(GpuReference, AgreesWithTheCpuOracleOnEveryRowWithinItsBound) {
  REQUIRE_GPU();
  std::vector<Problem> ps = {
      dense(2, 4, 2, 70, 90, 64, true, DType::fp16),     // causal, GQA 2, S < Sk
      dense(1, 2, 2, 70, 20, 64, true, DType::bf16),     // rows that see no key: LSE -inf
      dense(1, 3, 1, 33, 257, 128, false, DType::bf16),  // MQA, a partial last key tile
      dense(1, 2, 2, 17, 40, 256, true, DType::bf16),    // 16-key tiles
      dense(2, 2, 2, 9, 33, 40, false, DType::fp16),     // D not a multiple of 32
      dense(1, 4, 2, 31, 64, 64, true, DType::fp8_e4m3),
      dense(1, 2, 1, 12, 50, 128, false, DType::fp8_e5m2),
  };
  ps[2].layout = Layout::bhsd;
  Problem serving = dense(3, 4, 2, 24, 80, 64, true, DType::fp16);  // varlen, paged, kv cache, thd
  serving.layout = Layout::thd, serving.seqlens_q = "24|1|7", serving.seqlens_k = "40|80|7";
  serving.page_size = 16, serving.kv_cache = true;
  ps.push_back(serving);
  Problem window = dense(1, 4, 4, 40, 100, 64, true, DType::bf16);
  window.window_left = 16, window.window_right = 0, window.alibi = "1";
  ps.push_back(window);
  Problem softcap = dense(2, 2, 1, 20, 60, 128, false, DType::fp16);
  softcap.softcap = 2;  // below the largest scores of unit-variance inputs, so that the cap matters
  ps.push_back(softcap);
  for (const Problem& p : ps) {
    SCOPED_TRACE(p.label() + " " + std::string(dtype_name(p.dtype)));
    const HostInputs in = make_inputs(p);
    const GpuReferenceResult g = gpu_reference_fn()(p, in, context(), 0);
    ASSERT_TRUE(g.ref) << g.not_taken;
    const Reference all = compute_reference(p, in, every_row(p), false);
    EXPECT_EQ(gpu_reference_disagreement(p, *g.ref, all), "");
    // The bound is a small fraction of the tolerance floor it widens (fp32's is 1e-5; scores stay in
    // fp64 but where ALiBi/softcap pass through fp32), so it costs the rule next to nothing.
    const double limit = p.has_alibi() || p.softcap > 0 ? 0.1 * rule_constants(p.dtype).atol : 1e-6;
    for (float e : g.ref->eps_o) EXPECT_LT(e, limit);
  }
}

// FP8 scores added as Hopper's tensor cores add them (13 bits, harness/fp8_accumulate.hpp): the GPU
// reference's lse_acc (its online softmax in fp64, over K's rotated rows) and the CPU's low-precision
// LSE (fp32 scores and softmax over the row) agree to fp32's rounding on every row, far inside the
// gap the model opens to the exact LSE. Without a declaration there is no lse_acc.
TEST(GpuReference, ItsThirteenBitLseMatchesTheCpuLowPrecisionReferenceOnEveryRow) {
  REQUIRE_GPU();
  std::vector<Problem> ps = {dense(1, 4, 2, 96, 300, 128, false, DType::fp8_e4m3),
                             dense(1, 2, 2, 64, 200, 256, true, DType::fp8_e4m3),
                             dense(1, 2, 1, 40, 130, 64, false, DType::fp8_e5m2)};
  for (Problem& p : ps) {
    p.scale = 0.6;  // scores large enough that 13 bits move the LSE well past fp32's rounding
    SCOPED_TRACE(p.label() + " " + std::string(dtype_name(p.dtype)));
    const HostInputs in = make_inputs(p);
    const GpuReferenceResult g = gpu_reference_fn()(p, in, context(), 13);
    ASSERT_TRUE(g.ref) << g.not_taken;
    ASSERT_EQ(g.ref->lse_acc.size(), g.ref->lse.size());
    const Reference cpu = compute_reference(p, in, every_row(p), LowPrecision(DType::fp8_e4m3, 13));
    double gap = 0;
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t s = 0; s < p.S; ++s) {
        const size_t gi = size_t(lse_index(p, 0, h, s)), ri = cpu.row_index(0, h, size_t(s));
        const double x = g.ref->lse_acc[gi], y = cpu.lse_lp[ri];
        EXPECT_NEAR(x, y, 2e-6 * (1 + std::fabs(y))) << "h " << h << " s " << s;
        gap = std::max(gap, std::fabs(x - g.ref->lse[gi]));
      }
    EXPECT_GT(gap, 1e-3) << "the model moves the LSE, or this test compares nothing";
    const GpuReferenceResult plain = gpu_reference_fn()(p, in, context(), 0);
    ASSERT_TRUE(plain.ref) << plain.not_taken;
    EXPECT_TRUE(plain.ref->lse_acc.empty());
  }
}

// A path that is tiled's output with one element of one row moved by 0.25: the planted wrong row.
class OneWrongRow : public Execution {
 public:
  OneWrongRow(std::unique_ptr<Execution> e, int64_t at) : e_(std::move(e)), at_(at) {}
  void poison() override { e_->poison(); }
  void run() override { e_->run(); }
  RunOutputs read_back() override {
    RunOutputs out = e_->read_back();
    out.o.set(at_, out.o.at(at_) + 0.25f);
    return out;
  }
  double timed_sample_ms(TimingMode m) override { return e_->timed_sample_ms(m); }

 private:
  std::unique_ptr<Execution> e_;
  int64_t at_;
};

TEST(GpuReference, AWrongRowOutsideTheCpuSampleFailsTheRecordNamingTheRow) {
  REQUIRE_GPU();
  const Registry reg = builtin_registry(context().device);
  const PathRow* tiled = reg.find("tiled");
  ASSERT_NE(tiled, nullptr);
  Problem p = dense(2, 4, 2, 300, 300, 64, true, DType::fp16);
  RunOptions opt;
  opt.time_paths = false, opt.reference = compute_reference, opt.check_rows = 8;
  const std::vector<int64_t> sample = sample_rows(p, opt.check_rows, p.seed);
  int64_t s = 1;
  while (std::find(sample.begin(), sample.end(), s) != sample.end()) ++s;
  const int64_t at = q_strides(p).at(1, s, 3) + 17;
  PathRow planted = *tiled;
  planted.name = "tiled-one-wrong-row";
  planted.prepare = [tiled, at](const Problem& q, const HostInputs& in, int G, const GateContext& ctx) {
    return std::unique_ptr<Execution>(std::make_unique<OneWrongRow>(tiled->prepare(q, in, G, ctx), at));
  };
  for (bool full : {false, true}) {
    opt.gpu_reference = full;
    Record r;
    r.problem = p, r.path = planted.name;
    RowData data;
    run_record(r, planted, 0, opt, context(), data);
    if (!full) {
      EXPECT_EQ(r.status, Status::pass) << "the sample holds row " << s << ": " << r.reason;
      continue;
    }
    EXPECT_EQ(r.status, Status::fail) << r.reason;
    EXPECT_NE(r.reason.find("1 of 2400 rows"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("(b=1, h=3, s=" + std::to_string(s) + ")"), std::string::npos) << r.reason;
  }
}

TEST(GpuReference, TheCorrectPathPassesAndAProblemItDoesNotTakeIsSaid) {
  REQUIRE_GPU();
  const Registry reg = builtin_registry(context().device);
  RunOptions opt;
  opt.time_paths = false, opt.reference = compute_reference, opt.check_rows = 8;
  Record r;
  r.problem = dense(2, 4, 2, 300, 300, 64, true, DType::fp16), r.path = "tiled";
  RowData data;
  run_record(r, *reg.find("tiled"), 0, opt, context(), data);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  ASSERT_TRUE(data.gpu_ref);
  // B * H past the grid's y: a refusal, which leaves the record to the sampled check.
  const Problem wide = dense(1, 65536, 1, 1, 2, 8, false, DType::fp16);
  const GpuReferenceResult g = gpu_reference_fn()(wide, make_inputs(wide), context(), 0);
  EXPECT_FALSE(g.ref);
  EXPECT_NE(g.not_taken.find("B * H"), std::string::npos) << g.not_taken;
  // fp32 inputs: read by no loader of the reference (nor of a built-in GPU path).
  const Problem f32 = dense(1, 2, 2, 17, 40, 64, false, DType::fp32);
  const GpuReferenceResult h = gpu_reference_fn()(f32, make_inputs(f32), context(), 0);
  EXPECT_FALSE(h.ref);
  EXPECT_NE(h.not_taken.find("fp32"), std::string::npos) << h.not_taken;
}
