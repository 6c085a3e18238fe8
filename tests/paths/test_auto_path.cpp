// `auto` over rows of made-up paths: with a fitted table it runs the fastest admitted path of the
// nearest timed problem (where the rank order would run a slower one), skips paths whose gate says
// no, falls back to rank order where no timed problem took an admitted path or there is no table,
// and records the path that ran.
#include <gtest/gtest.h>

#include "paths/auto_path.hpp"

using namespace fa;

namespace {

struct Stub : Execution {
  void poison() override {}
  void run() override {}
  RunOutputs read_back() override { return {}; }
  double timed_sample_ms(TimingMode) override { return 0; }
};

// A row that admits decode problems (S == 1) only, or every problem.
PathRow row(const std::string& name, int rank, bool decode_only) {
  PathRow r{name, "gpu", "", "", false,
            [decode_only](const Problem& p, int, const GateContext&) -> std::optional<std::string> {
              if (decode_only && p.S != 1) return std::string("S must be 1");
              return std::nullopt;
            },
            [](const Problem&, const HostInputs&, int, const GateContext&) -> std::unique_ptr<Execution> {
              return std::make_unique<Stub>();
            }};
  r.auto_rank = rank;
  return r;
}

// The README's order: mma-decode above mma, tiled last.
std::vector<PathRow> rows() { return {row("mma", 20, false), row("mma-decode", 40, true), row("tiled", 10, false)}; }

Problem decode(int64_t Sk) {
  Problem p;
  p.B = 1, p.H = p.Hk = 16, p.S = 1, p.Sk = Sk, p.D = 128;
  return p;
}

std::string ran(const PathRow& a, const Problem& p, int G = 0) {
  GateContext ctx;
  HostInputs in;
  return a.prepare(p, in, G, ctx)->read_back().ran_path;
}

DispatchChoice fitted(std::vector<DispatchEntry> problems) {
  auto t = std::make_shared<DispatchTable>();
  t->problems = std::move(problems);
  return DispatchChoice{t, "sm_test", "test"};
}

DispatchEntry timed(const Problem& p, std::map<std::string, double> ms) { return {p.label(), dispatch_key(p, 0), std::move(ms)}; }

}  // namespace

TEST(AutoPath, WithoutATableRunsTheHighestRankedAdmittedPath) {
  const PathRow a = auto_row(rows(), DeviceFacts{}, DispatchChoice{});
  EXPECT_EQ(a.gate_doc, "mma-decode > mma > tiled");
  EXPECT_EQ(ran(a, decode(512)), "mma-decode");
  Problem prefill = decode(512);
  prefill.S = 448;
  EXPECT_EQ(ran(a, prefill), "mma");
}

TEST(AutoPath, WithATableRunsTheFastestPathOfTheNearestTimedProblem) {
  // Short keys: mma beats the higher-ranked mma-decode (whisper-dec-self-448 on the H100: 305 vs
  // 232 GB/s); long keys: mma-decode wins.
  const PathRow a = auto_row(rows(), DeviceFacts{},
                             fitted({timed(decode(448), {{"mma", 0.010}, {"mma-decode", 0.013}, {"tiled", 0.2}}),
                                     timed(decode(32768), {{"mma", 0.30}, {"mma-decode", 0.12}, {"tiled", 9.0}})}));
  EXPECT_EQ(ran(a, decode(448)), "mma");
  EXPECT_EQ(ran(a, decode(512)), "mma");
  EXPECT_EQ(ran(a, decode(16384)), "mma-decode");
  // A prefill: mma-decode's gate says no; of the rest, the nearest problem's fastest.
  Problem prefill = decode(448);
  prefill.S = 448;
  EXPECT_EQ(ran(a, prefill), "mma");
  EXPECT_FALSE(a.supports(prefill, 0, GateContext{}));
}

TEST(AutoPath, FallsBackToRankOrderWhereNoTimedProblemTookAnAdmittedPath) {
  // The table timed only mma-decode; a prefill cannot run it, so the rank order decides.
  const PathRow a = auto_row(rows(), DeviceFacts{}, fitted({timed(decode(448), {{"mma-decode", 0.013}})}));
  Problem prefill = decode(448);
  prefill.S = 448;
  EXPECT_EQ(ran(a, prefill), "mma");
  // A path in the table that this binary lacks is never picked.
  const PathRow b = auto_row(rows(), DeviceFacts{}, fitted({timed(decode(448), {{"wgmma", 0.001}, {"tiled", 0.2}})}));
  EXPECT_EQ(ran(b, decode(448)), "tiled");
}

TEST(AutoPath, ARunCarriesTheAccumulationOfThePathThatRanForTheValidator) {
  // The runner's reference and bias check take these from the outputs where `auto` ran.
  std::vector<PathRow> r = rows();
  r[0].rz_accumulate_keys = 16, r[0].fp8_accumulate_bits = 13;  // mma: wgmma's k16 PV, FP8 e8m13 scores
  r[1].fp8_p = DType::bf16;                                       // a path that keeps P in bf16
  const PathRow a = auto_row(r, DeviceFacts{}, DispatchChoice{});
  GateContext ctx;
  HostInputs in;
  Problem prefill = decode(512);
  prefill.S = 448;
  const RunOutputs m = a.prepare(prefill, in, 0, ctx)->read_back();
  EXPECT_EQ(m.ran_path, "mma");
  EXPECT_EQ(m.rz_accumulate_keys, 16);
  EXPECT_EQ(m.fp8_accumulate_bits, 13);
  EXPECT_EQ(m.fp8_p, DType::fp8_e4m3);
  const RunOutputs d = a.prepare(decode(512), in, 0, ctx)->read_back();
  EXPECT_EQ(d.ran_path, "mma-decode");
  EXPECT_EQ(d.rz_accumulate_keys, 0);
  EXPECT_EQ(d.fp8_accumulate_bits, 0) << "the path that ran declares fp32 accumulation, not the row's -1";
  EXPECT_EQ(d.fp8_p, DType::bf16);
}
