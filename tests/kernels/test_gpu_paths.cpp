// GPU paths against the CPU reference: every GPU row of the registry (auto included) on the edge
// sweep, on randomized small problems and on short-query GQA (speculative decoding) shapes, with
// every G its gate admits, and mma on every head dim of its sm_90 (ws) kernel; the record's verdict must be pass. Labelled `gpu`; skips with the
// reason where no GPU answers (or no GPU backend is built).
#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "harness/check/row_sample.hpp"
#include "harness/check/tolerance.hpp"
#include "harness/run/runner.hpp"
#include "helpers.hpp"
#include "kernels/mma/ws_tile_traits.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/runtime/gpu_device.hpp"
#endif
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

using namespace fa;

namespace {

struct Fixture {
  GateContext ctx;
  Registry reg;
  std::vector<std::string> paths;  // every row of kind gpu: a new path is tested without a new line
};

Fixture& gpus() {
  static Fixture f = [] {
    GateContext ctx;
    ctx.device = probe_device();
    Fixture x{ctx, builtin_registry(ctx.device), {}};
    for (const auto& r : x.reg.rows())
      if (r.kind == "gpu") x.paths.push_back(r.name);
    return x;
  }();
  return f;
}

RunOptions validate_only() {
  RunOptions o;
  o.paths = gpus().paths;
  o.time_paths = false;
  o.reference = compute_reference;
  return o;
}

struct NullSink : RecordSink {
  void write(const Record&) override {}
};

// The kept-max tests' keys: scaled by 1, 4, 16 and 64 in turn, 97 keys a step (powers of two keep
// them exact), so that a stream meets scores far above and far below its running max.
void scale_keys_in_steps(const Problem& p, HostInputs& in) {
  const Strides ks = kv_strides(p);
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t j = 0; j < p.Sk; ++j)
      for (int64_t h = 0; h < p.Hk; ++h)
        for (int64_t d = 0; d < p.D; ++d) in.k[size_t(ks.at(b, j, h) + d)] *= float(1 << 2 * ((j / 97) % 4));
  in.seeded = false;  // no longer the seed's draw: the execution uploads these rather than drawing its own
}

// One launch of `path` at split count G on poisoned outputs, read back.
RunOutputs run_once(const char* path, const Problem& p, const HostInputs& in, int G) {
  auto exec = gpus().reg.find(path)->prepare(p, in, G, gpus().ctx);
  exec->poison();
  exec->run();
  return exec->read_back();
}

}  // namespace

#define REQUIRE_GPU()                                                                          \
  if (!gpus().ctx.device.gpu) GTEST_SKIP() << "no GPU: " << gpus().ctx.device.gpu_absent_why

TEST(GpuPaths, EveryPathPassesTheEdgeSweep) {
  REQUIRE_GPU();
  Sweep s = load_sweep(test::source_dir() + "/sweeps/edge.csv", Overrides{});
  for (auto& r : s.rows) r.splits = {SplitRequest{}, SplitRequest{false, 2}, SplitRequest{false, 4},
                                     SplitRequest{false, 16}, SplitRequest{true, 0}};
  NullSink sink;
  const auto recs = run_sweep(s, validate_only(), gpus().reg, gpus().ctx, {&sink});
  std::map<std::string, int> ran;
  for (const auto& r : recs) {
    EXPECT_TRUE(r.status == Status::pass || r.status == Status::skip)
        << r.problem.label() << " " << dtype_name(r.problem.dtype) << " " << r.path << " G=" << r.g_req.str() << ": "
        << status_name(r.status) << ": " << r.reason;
    if (r.status == Status::skip) {
      EXPECT_FALSE(r.reason.empty());
    }
    if (r.status == Status::pass) ++ran[r.path];
  }
  for (const auto& p : gpus().paths) {
    // A path whose capabilities need another device (mfma, wmma on NVIDIA; mma on AMD) must be
    // refused by its gate naming this device's arch, and never run: the only excuse for never running.
    const PathRow& row = *gpus().reg.find(p);
    if (row.caps.declared() && !device_meets(row.caps.device, gpus().ctx.device)) {
      Problem plain;
      plain.S = plain.Sk = 128;
      const auto no = gpus().reg.find(p)->supports(plain, 0, gpus().ctx);
      ASSERT_TRUE(no.has_value()) << p << " lacks its capability on " << gpus().ctx.device.arch << " yet its gate says yes";
      EXPECT_NE(no->find(gpus().ctx.device.arch), std::string::npos) << p << ": " << *no;
      EXPECT_EQ(ran[p], 0) << p << " ran without its capability";
      std::cout << "[ note ] " << p << " is not for this device: " << *no << "\n";
      continue;
    }
    EXPECT_GT(ran[p], 0) << p << " never ran on the edge sweep";
  }
}

TEST(GpuPaths, EveryPathPassesRandomizedSmallProblems) {
  REQUIRE_GPU();
  Sweep s;
  int line = 0;
  for (Problem p : test::edge_and_random_problems(60, 2024)) {
    if (p.dtype == DType::fp32) p.dtype = DType::bf16;
    SweepRow r;
    r.problem = p;
    r.where = SourceLoc{"random", ++line};
    r.splits = {SplitRequest{}, SplitRequest{false, 2}, SplitRequest{false, 8}};
    s.rows.push_back(r);
    if (p.S > 1 && line % 3 == 0) {  // a decode twin of every third problem
      r.problem.S = 1;
      r.problem.kv_cache = line % 2 == 0;
      s.rows.push_back(r);
    }
  }
  NullSink sink;
  const auto recs = run_sweep(s, validate_only(), gpus().reg, gpus().ctx, {&sink});
  int passes = 0;
  for (const auto& r : recs) {
    EXPECT_TRUE(r.status == Status::pass || r.status == Status::skip)
        << r.problem.label() << " " << dtype_name(r.problem.dtype) << " " << layout_name(r.problem.layout) << " "
        << r.path << " G=" << r.g_req.str() << ": " << status_name(r.status) << ": " << r.reason;
    passes += r.status == Status::pass;
  }
  EXPECT_GT(passes, 200);
}

// Speculative decoding and multi-token prediction: S = 2..8 query rows of a GQA group of 1..8 heads,
// causal and not, Sk on and off the 64/128-key tiles, D 64, 128 and 256, fp16 and bf16. Where
// S x group <= 16, mma-decode packs the group's rows into one tile (<= 8: its narrow instances,
// whose padding columns the small groups exercise); where its gate admits a problem it must run it.
TEST(GpuPaths, ShortQueryGqaRowsPassOnEveryPathAndMmaDecodeRunsThePackedOnes) {
  REQUIRE_GPU();
  Sweep s;
  int line = 0;
  for (int64_t S : {2, 3, 4, 8})
    for (int64_t group : {1, 2, 4, 5, 8})
      for (int64_t Sk : {128, 1024, 77, 1000})
        for (bool causal : {false, true})
          for (DType t : {DType::fp16, DType::bf16}) {
            SweepRow r;
            r.problem.H = 2 * group, r.problem.Hk = 2, r.problem.S = S, r.problem.Sk = Sk;
            r.problem.D = 64 << (line % 3), r.problem.causal = causal, r.problem.dtype = t;
            r.where = SourceLoc{"spec-decode", ++line};
            r.splits = {SplitRequest{}, SplitRequest{false, 4}};
            s.rows.push_back(r);
          }
  NullSink sink;
  const auto recs = run_sweep(s, validate_only(), gpus().reg, gpus().ctx, {&sink});
  int packable = 0, packed = 0;
  for (const auto& row : s.rows) packable += row.problem.S * row.problem.group_size() <= 16;
  for (const auto& r : recs) {
    EXPECT_TRUE(r.status == Status::pass || r.status == Status::skip)
        << r.problem.label() << " " << dtype_name(r.problem.dtype) << (r.problem.causal ? " causal " : " ") << r.path
        << " G=" << r.g_req.str() << ": " << status_name(r.status) << ": " << r.reason;
    if (r.path == "mma-decode" && r.g_req.value == 0 && r.status == Status::pass) ++packed;
  }
  if (gpus().ctx.device.has_mma_sm80) {
    EXPECT_EQ(packed, packable) << "mma-decode runs and passes every row that packs into one 16-row tile";
  }
}

// Both decode paths cut 20000 keys into chunks; mma-decode's last block of each (batch, kv head)
// folds them with arrival counters that must be back at zero for the next launch, so each path
// runs three times on one prepared execution: every run passes and matches the first bit for bit.
TEST(GpuPaths, DecodeSplitsLongKeySetsOverBlocksAndReportsIt) {
  REQUIRE_GPU();
  Problem p;
  p.H = 32, p.Hk = 8, p.S = 1, p.Sk = 20000, p.D = 128, p.dtype = DType::bf16;
  const HostInputs in = make_inputs(p);
  const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
  for (const char* path : {"decode", "mma-decode"}) {
    if (auto no = gpus().reg.find(path)->supports(p, 0, gpus().ctx)) {
      std::cout << path << " skipped: " << *no << "\n";
      continue;
    }
    auto exec = gpus().reg.find(path)->prepare(p, in, 0, gpus().ctx);
    RunOutputs first;
    for (int run = 0; run < 3; ++run) {
      exec->poison();
      exec->run();
      RunOutputs out = exec->read_back();
      EXPECT_GT(out.g_used, 1) << path;
      const Verdict v = judge(measure(p, in, ref, out), p.dtype, {});
      EXPECT_TRUE(v.pass) << path << " run " << run << ": " << v.reason;
      if (run == 0) {
        first = std::move(out);
      } else {
        EXPECT_TRUE(out.o.bytes == first.o.bytes) << path << " run " << run << ": O differs from run 0";
        EXPECT_TRUE(out.lse == first.lse) << path << " run " << run << ": LSE differs from run 0";
      }
    }
  }
}

// mma-decode's narrow instances keep a column's running max while no score of a tile passes it by
// more than 2^8 in the exp2 domain (softmax_cols_lazy). Keys scaled by 1, 4, 16 and 64 in turn, 97
// keys a step, make every warp's stream meet scores far above its max (the full rescale must run
// mid-stream, or the exponentials overflow fp32) and far below it (the kept max): at D 64 and 128, fp16
// and bf16, over 136 (batch, kv head) pairs (one chunk each: 23-24 tiles a warp) and over 16 (key
// chunks, folded in the launch). Powers of two keep the scaled keys exact.
TEST(GpuPaths, MmaDecodeNarrowRescalesWhenAScorePassesTheKeptMax) {
  REQUIRE_GPU();
  for (int64_t D : {64, 128})
    for (DType t : {DType::fp16, DType::bf16})
      for (int64_t B : {34, 4}) {
        Problem p;
        p.B = B, p.H = 16, p.Hk = 4, p.S = 1, p.Sk = 3001, p.D = D, p.dtype = t;  // group 4: narrow
        if (auto no = gpus().reg.find("mma-decode")->supports(p, 0, gpus().ctx)) GTEST_SKIP() << *no;
        HostInputs in = make_inputs(p);
        scale_keys_in_steps(p, in);
        const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
        const RunOutputs out = run_once("mma-decode", p, in, 0);
        const Verdict v = judge(measure(p, in, ref, out), p.dtype, {});
        EXPECT_TRUE(v.pass) << "D=" << D << " " << dtype_name(t) << " B=" << B << " G_used=" << out.g_used << ": "
                            << v.reason;
        if (B == 4) EXPECT_GT(out.g_used, 1) << "the chunked case folds chunks";
      }
}

// mma's sm_90 kernel (issue 18: TMA producer, mbarrier ring, consumer warpgroups) on every head dim
// of its tile table, both dtypes, causal and not, BSHD and BHSD, GQA, at G = 0, 2 and 16, with S and
// Sk off the tiles; and key ranges long enough (up to 19 tiles) that the K/V ring wraps its stages
// several times, so a wrong mbarrier phase parity shows as a stale tile. FP8 takes a fourth shape,
// 4800 query rows a kv head in BHSD, past every FP8 row's V^T pre-pass threshold (the other shapes
// take the pre-pass at D = 256 and the producer's transposer at D = 64 and 128). Dense problems at
// these D run the ws kernel on sm_90a; elsewhere the kernel is not there and the test skips.
TEST(GpuPaths, MmaPassesEveryWsHeadDimOnLongAndRaggedKeyRanges) {
  REQUIRE_GPU();
  if (!gpus().ctx.device.has_wgmma_sm90a)
    GTEST_SKIP() << "mma's ws kernel needs an NVIDIA sm_90 GPU with 90a built; this device is " << gpus().ctx.device.arch;
  Sweep s;
  int line = 0;
  // The tile table's head dims (ws_run_d: a row's own, or a padded one's): 16-bit, then FP8 (wgmma's
  // 8-bit path). A row switched on in the table (kWsPadOn, kWsFp8D256On) is run here from then on.
  std::vector<std::pair<int64_t, DType>> kinds;
  for (int D = 8; D <= 256; D += 8)
    if (fa::ws::ws_run_d(D, 2) > 0)
      for (DType t : {DType::fp16, DType::bf16}) kinds.push_back({D, t});
  for (int D = 8; D <= 256; D += 8)
    if (fa::ws::ws_run_d(D, 1) > 0)
      for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2}) kinds.push_back({D, t});
  int rows = 0;
  for (const auto& [D, t] : kinds)
    for (bool causal : {false, true})
      for (int shape = 0; shape < (is_fp8(t) ? 4 : 3); ++shape) {
        SweepRow r;
        Problem& p = r.problem;
        p.D = D, p.dtype = t, p.causal = causal;
        if (shape == 0) p.B = 2, p.H = 4, p.Hk = 2, p.S = 200, p.Sk = 333;            // GQA, ragged
        else if (shape == 1) p.B = 1, p.H = 2, p.Hk = 2, p.S = 130, p.Sk = 2431;      // long: the ring wraps
        else if (shape == 2) p.B = 1, p.H = 8, p.Hk = 1, p.S = 77, p.Sk = 61, p.layout = Layout::bhsd;  // MQA, S > Sk, BHSD
        else p.B = 1, p.H = 32, p.Hk = 2, p.S = 300, p.Sk = 700, p.layout = Layout::bhsd;  // FP8: 4800 rows a kv head, V^T by the pre-pass at D 64 and 128 too
        if (shape == 3) {  // the pre-pass's instance, at every FP8 head dim
          EXPECT_TRUE(fa::ws::ws_run_row(int(D), 1, causal, p.S, p.Sk, p.H, p.Hk).prepass)
              << "D " << D << ": shape 3 must take the V^T pre-pass";
        }
        p.seed = uint64_t(1000 + line);
        r.where = SourceLoc{"ws-head-dims", ++line};
        r.splits = {SplitRequest{}, SplitRequest{false, 2}, SplitRequest{false, 16}};
        s.rows.push_back(r);
        ++rows;
      }
  RunOptions o = validate_only();
  o.paths = {"mma"};
  NullSink sink;
  const auto recs = run_sweep(s, o, gpus().reg, gpus().ctx, {&sink});
  int passes = 0;
  for (const auto& r : recs) {
    EXPECT_EQ(r.status, Status::pass) << r.problem.label() << " " << dtype_name(r.problem.dtype) << " "
                                      << layout_name(r.problem.layout) << (r.problem.causal ? " causal " : " ") << r.path
                                      << " G=" << r.g_req.str() << ": " << status_name(r.status) << ": " << r.reason;
    passes += r.path == "mma" && r.status == Status::pass;
  }
  EXPECT_EQ(passes, rows * 3);
}

// mma's sm_90 kernel keeps a row's running max while no score passes it by more than 2^8 in the
// exp2 domain (the 16-bit rows' lazy_rescale_log2: softmax_rows). Keys scaled by 1, 4, 16 and 64 in
// turn, 97 keys a step, make every warp meet scores far above its kept max (the rescale must run
// mid-stream, or P overflows) and far below it (the kept max), at each 16-bit head dim of the ws
// kernel, causal and not, G 0 and 2, over 3001 keys (18-38 key tiles, non-causal, unsplit); at D =
// 128 on each of its rows and launches too: a short non-causal problem run as a wave (the 128-key
// short row, 16 tiles an item, items past the SMs) and a long causal one (the 176-key row); D = 64's
// short row (128 query rows) on a short causal problem. The reference checks a sample of rows (tile
// boundaries included). Powers of two keep the scaled keys exact.
TEST(GpuPaths, MmaWsRescalesWhenAScorePassesTheKeptMax) {
  REQUIRE_GPU();
  if (!gpus().ctx.device.has_wgmma_sm90a)
    GTEST_SKIP() << "mma's ws kernel needs an NVIDIA sm_90 GPU with 90a built; this device is " << gpus().ctx.device.arch;
  std::vector<Problem> ps;
  for (int D = 8; D <= 256; D += 8) {
    if (fa::ws::ws_run_d(D, 2) == 0) continue;
    for (bool causal : {false, true}) {
      Problem p;
      p.B = 1, p.H = 4, p.Hk = 2, p.S = 300, p.Sk = 3001, p.D = D, p.causal = causal;
      p.dtype = ps.size() % 4 < 2 ? DType::fp16 : DType::bf16;
      ps.push_back(p);
    }
  }
  Problem wave;  // 2 x 32 heads x 4 q tiles = 256 items of 16 key tiles
  wave.B = 2, wave.H = 32, wave.Hk = 8, wave.S = 512, wave.Sk = 1999, wave.D = 128, wave.dtype = DType::bf16;
  Problem long_causal;
  long_causal.B = 1, long_causal.H = 2, long_causal.Hk = 1, long_causal.S = 4096, long_causal.Sk = 4096;
  long_causal.D = 128, long_causal.causal = true, long_causal.dtype = DType::fp16;
  Problem short_d64;  // 16 items: a one-item grid on D = 64's short row (128 x 128, two warpgroups)
  short_d64.B = 1, short_d64.H = 4, short_d64.Hk = 2, short_d64.S = 512, short_d64.Sk = 512, short_d64.D = 64;
  short_d64.causal = true, short_d64.dtype = DType::bf16;
  ASSERT_TRUE(fa::ws::ws_short_row(false, wave.S, wave.Sk) && !fa::ws::ws_short_row(true, 4096, 4096));
  ASSERT_TRUE(fa::ws::ws_takes_short_row(64, 2, true, short_d64.S, short_d64.Sk));
  ps.push_back(wave);
  ps.push_back(long_causal);
  ps.push_back(short_d64);
  for (const Problem& p : ps) {
    HostInputs in = make_inputs(p);
    scale_keys_in_steps(p, in);
    const Reference ref = compute_reference(p, in, sample_rows(p, 48, 7), true);
    for (int G : {0, 2}) {
      if (auto no = gpus().reg.find("mma")->supports(p, G, gpus().ctx)) {
        ADD_FAILURE() << p.label() << " G=" << G << ": " << *no;
        continue;
      }
      const RunOutputs out = run_once("mma", p, in, G);
      const Verdict v = judge(measure(p, in, ref, out), p.dtype, {});
      EXPECT_TRUE(v.pass) << p.label() << " " << dtype_name(p.dtype) << (p.causal ? " causal" : "") << " G=" << G
                          << ": " << v.reason;
    }
  }
}

// mma's sm_90 kernel runs problems of many short items as one wave of blocks (ws_tile_traits.hpp's
// ws_wave); causal ones, and long non-causal ones (ws_dense_wave), take their items from an atomic
// counter that a launch's last block zeroes for the next launch (ws_produce_sm90.hpp's ws_produce_wave).
// Each problem is such a wave (asserted from the tile table and the device's SMs), run by one
// execution three times on poisoned outputs, every row checked each time: a counter left where a
// launch ended would hand the next launch's blocks no item past their first, and those rows would keep
// the poison.
namespace {
struct WaveCase {
  int64_t B, H, Hk, S, Sk, D;
  DType t;
  int G;
  int vt_bn = 0;  // FP8: the V^T pre-pass instance's key tile the case is there for; 0: no pre-pass
};
void expect_counter_waves_run_every_item(const std::vector<WaveCase>& cases, bool causal) {
  for (const WaveCase& k : cases) {
    Problem p;
    p.B = k.B, p.H = k.H, p.Hk = k.Hk, p.S = k.S, p.Sk = k.Sk, p.D = k.D, p.dtype = k.t, p.causal = causal;
    p.seed = uint64_t(7000 + k.D + k.S);
    const fa::ws::WsRunRow rr = fa::ws::ws_run_row(int(k.D), is_fp8(k.t) ? 1 : 2, causal, k.S, k.Sk, k.H, k.Hk);
    const fa::ws::WsTileRow& run = rr.row;
    ASSERT_EQ(rr.prepass ? run.BN : 0, k.vt_bn) << p.label() << ": not the instance the case is there for";
    ASSERT_TRUE(fa::ws::ws_wave_from_counter(run, k.S, k.Sk, k.H, k.B, k.G, causal, gpus().ctx.device.units))
        << p.label() << ": not a wave with a counter on " << gpus().ctx.device.units << " SMs";
    if (auto no = gpus().reg.find("mma")->supports(p, k.G, gpus().ctx)) {
      ADD_FAILURE() << p.label() << " G=" << k.G << ": " << *no;
      continue;
    }
    const HostInputs in = make_inputs(p);
    const Reference ref = compute_reference(p, in, sample_rows(p, 0, 7), true);  // every row
    auto exec = gpus().reg.find("mma")->prepare(p, in, k.G, gpus().ctx);
    for (int launch = 0; launch < 3; ++launch) {
      exec->poison();
      exec->run();
      const Verdict v = judge(measure(p, in, ref, exec->read_back()), p.dtype, {});
      EXPECT_TRUE(v.pass) << p.label() << " " << dtype_name(p.dtype) << " G=" << k.G << ", launch " << launch << ": "
                          << v.reason;
    }
  }
}
}  // namespace

// The causal problems: each ws head dim, 16-bit and FP8 (the transposing instances and D = 64's and
// D = 128's pre-pass ones), items that see no key (S > Sk: the first 400 rows), splits, and long items on the rows
// that run them as a wave.
TEST(GpuPaths, MmaWsCausalWavesRunEveryItemLaunchAfterLaunch) {
  REQUIRE_GPU();
  if (!gpus().ctx.device.has_wgmma_sm90a)
    GTEST_SKIP() << "mma's ws kernel needs an NVIDIA sm_90 GPU with 90a built; this device is " << gpus().ctx.device.arch;
  expect_counter_waves_run_every_item(
      {
          {8, 4, 2, 520, 520, 128, DType::bf16, 0},     {16, 4, 4, 520, 520, 64, DType::fp16, 0},
          {8, 4, 4, 520, 520, 96, DType::fp16, 0},      {8, 4, 2, 700, 300, 128, DType::fp16, 0},
          {16, 4, 4, 300, 520, 256, DType::bf16, 0},    {4, 8, 8, 520, 520, 64, DType::bf16, 2},
          {8, 4, 4, 520, 520, 128, DType::fp8_e5m2, 0}, {8, 8, 4, 400, 400, 64, DType::fp8_e4m3, 0},
          {48, 4, 4, 100, 300, 256, DType::fp8_e4m3, 0}, {4, 16, 4, 512, 512, 128, DType::fp8_e4m3, 0, 224},
          {4, 16, 4, 1100, 1100, 64, DType::fp8_e4m3, 0, 160},  // D = 64's pre-pass row: 4400 rows a kv head
          // D = 64's short row (128 x 128 on two warpgroups; 520 above takes its 192-row one), split.
          {16, 4, 4, 512, 512, 64, DType::bf16, 2},
          // Long items (more than 16 key tiles) on the rows with long_causal_wave: D = 128's short row
          // (18 tiles of 128 keys), D = 64's, FP8 D = 128's pre-pass row (18 of 224), a split.
          {2, 8, 8, 2200, 2200, 128, DType::bf16, 0},  {2, 8, 8, 2300, 2300, 64, DType::fp16, 0},
          {1, 8, 2, 4000, 4000, 128, DType::fp8_e4m3, 0, 224}, {2, 8, 4, 2200, 4400, 128, DType::bf16, 2},
      },
      true);
}

// The long non-causal problems (ws_tile_traits.hpp's dense_wave_tiles), one q tile a head and ragged
// key counts: D = 64's 16-bit and FP8 rows (18 tiles of 128 keys), D = 128's 16-bit long row (18 of
// 176, GQA), FP8 D = 128's pre-pass row (18 of 224: 2048 query rows a kv head), FP8 D = 64's (19 of
// 160: 4096) and FP8 D = 256's (17 of 128, e5m2), and a split (18 tiles a split).
TEST(GpuPaths, MmaWsLongDenseWavesRunEveryItemLaunchAfterLaunch) {
  REQUIRE_GPU();
  if (!gpus().ctx.device.has_wgmma_sm90a)
    GTEST_SKIP() << "mma's ws kernel needs an NVIDIA sm_90 GPU with 90a built; this device is " << gpus().ctx.device.arch;
  expect_counter_waves_run_every_item(
      {
          {17, 8, 8, 192, 2200, 64, DType::bf16, 0},
          {17, 8, 8, 150, 2200, 64, DType::fp8_e4m3, 0},
          {17, 8, 4, 128, 3000, 128, DType::fp16, 0},
          {9, 16, 1, 128, 4000, 128, DType::fp8_e4m3, 0, 224},
          {9, 32, 1, 128, 3000, 64, DType::fp8_e4m3, 0, 160},
          {67, 2, 1, 128, 2100, 256, DType::fp8_e5m2, 0, 128},
          {9, 8, 8, 192, 4400, 64, DType::bf16, 2},
      },
      false);
}

// mma's gate asked about a made-up H100 and A100: it reads DeviceFacts only, so this runs on any
// machine with a GPU build, device or not. Both admit the sync head-dim list (a superset of the ws
// kernel's: which kernel runs is the execution's choice, not the gate's).
TEST(GpuPaths, MmaGateAdmitsItsHeadDimsOnSm90AndSm80AndNamesWhatItRefuses) {
#ifndef FABENCH_HAS_GPU
  GTEST_SKIP() << "mma is a placeholder row without a GPU backend";
#else
  const PathRow* row = gpus().reg.find("mma");
  ASSERT_TRUE(row && row->prepare);
  GateContext h100;
  h100.device.gpu = true, h100.device.arch = "sm_90", h100.device.has_mma_sm80 = true, h100.device.has_wgmma_sm90a = true;
  GateContext a100 = h100;
  a100.device.arch = "sm_80", a100.device.has_wgmma_sm90a = false;
  Problem p;
  p.B = 2, p.H = 8, p.Hk = 2, p.S = 300, p.Sk = 500, p.causal = true, p.dtype = DType::bf16;
  for (const GateContext* ctx : {&h100, &a100})
    for (int64_t D : {64, 80, 96, 128, 256})
      for (Layout l : {Layout::bshd, Layout::bhsd})
        for (int G : {0, 2, 4, 8, 16}) {
          p.D = D, p.layout = l;
          const auto no = row->supports(p, G, *ctx);
          EXPECT_FALSE(no.has_value()) << ctx->device.arch << " D " << D << " " << layout_name(l) << " G " << G << ": "
                                       << *no;
        }
  p.layout = Layout::bshd;
  auto refusal = [&](const Problem& q, int G, const GateContext& ctx) { return row->supports(q, G, ctx).value_or("(admitted)"); };
  for (const GateContext* ctx : {&h100, &a100}) {
    Problem q = p;
    q.D = 32;
    EXPECT_NE(refusal(q, 0, *ctx).find("D in 64, 80, 96, 128, 256"), std::string::npos) << refusal(q, 0, *ctx);
  }
  p.D = 128;
  EXPECT_NE(refusal(p, 3, h100).find("G in 0, 2, 4, 8, 16"), std::string::npos);
  Problem f32 = p;
  f32.dtype = DType::fp32;
  EXPECT_NE(refusal(f32, 0, h100), "(admitted)") << "fp32: 16-bit and FP8 inputs only";
  // FP8 runs on the sm_90a kernel alone (dense, D in its FP8 rows): elsewhere refused by the dtype's name.
  for (DType t : {DType::fp8_e4m3fnuz, DType::fp8_e5m2fnuz}) {  // MI300's FP8: wgmma has no FNUZ
    Problem q = p;
    q.dtype = t;
    EXPECT_NE(refusal(q, 0, h100).find(dtype_name(t)), std::string::npos) << refusal(q, 0, h100);
  }
  for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    Problem q = p;
    q.dtype = t;
    EXPECT_NE(refusal(q, 0, a100).find(dtype_name(t)), std::string::npos) << refusal(q, 0, a100);
    Problem d256 = q, windowed = q;
    d256.D = 256, windowed.window_left = 7;
    if (fa::ws::kWsFp8D256On) EXPECT_EQ(refusal(d256, 0, h100), "(admitted)");
    else EXPECT_NE(refusal(d256, 0, h100).find(dtype_name(t)), std::string::npos) << refusal(d256, 0, h100);
    EXPECT_NE(refusal(windowed, 0, h100).find("serving fields"), std::string::npos) << refusal(windowed, 0, h100);
  }
#endif
}

// A failed runtime call's error is consumed where it throws: CUDA (and HIP from ROCm 7.0) would
// otherwise hand it to the next launch check, and the problem after an `oom` would fail its launch.
TEST(GpuPaths, AFailedAllocationIsNotBlamedOnTheNextLaunch) {
  REQUIRE_GPU();
#ifdef FABENCH_HAS_GPU
  const fa::gpu::AfterFailedCall r = fa::gpu::launch_after_failed_allocation_for_test();
  EXPECT_NE(r.allocation.find("malloc_device"), std::string::npos) << "the 4 PiB allocation must fail: " << r.allocation;
  EXPECT_EQ(r.launch, "") << "the launch after it";
#endif
}

TEST(GpuPaths, AnOutputThatIsNeverWrittenIsCaught) {
  REQUIRE_GPU();
  // Poison, then read back without running: the validator must see every element unwritten.
  Problem p;
  p.H = p.Hk = 2, p.S = 16, p.Sk = 16, p.D = 64;
  const HostInputs in = make_inputs(p);
  auto exec = gpus().reg.find("tiled")->prepare(p, in, 0, gpus().ctx);
  exec->poison();
  const RunOutputs out = exec->read_back();
  const Reference ref = compute_reference(p, in, sample_rows(p, 0, 0), true);
  const Metrics m = measure(p, in, ref, out);
  EXPECT_EQ(m.unwritten, p.B * p.H * p.S * p.D + p.B * p.H * p.S);
  EXPECT_FALSE(judge(m, p.dtype, {}).pass);
}

// The serving fields a GPU path takes: its capabilities row says (the path table of `fa-bench list`).
bool path_takes(const std::string& path, ServingField field) { return gpus().reg.find(path)->caps.serving.has(field); }

// Serving problems (issue 20) on the GPU paths that take them: randomized small problems with every
// serving field mixed in (per-sequence lengths with empty sequences, thd, shuffled pages of odd
// sizes, windows that empty rows, ALiBi on GQA, softcap), then problems of lengths, thd and windows
// alone over several query and key tiles (the matrix-core paths' share), each validated against the
// CPU oracle at every G the paths admit, and decode-shaped problems (S <= 2, the GQA group packed)
// over paged, windowed, per-sequence key sets of several chunks. A path that admits a problem's
// dense twin must pass every problem whose fields it takes, and skip the others with a reason naming
// the fields it refuses and none it takes: naive, tiled, splitk and (on sm_80+) mma run all of them;
// mma-decode the decode-shaped ones; mfma and wmma, on their GPUs, what their capabilities rows take.
TEST(GpuPaths, ServingProblemsPassOnThePathsThatTakeThemAndTheOthersNameWhatTheyRefuse) {
  REQUIRE_GPU();
  Sweep s;
  uint64_t state = 7;
  auto pick = [&](int64_t n) {  // a small LCG: the problem mix is fixed, not the inputs' seed
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return int64_t((state >> 33) % uint64_t(n));
  };
  constexpr int kMixed = 48, kLengthsAndWindows = 24, kDecodes = 16, kAll = kMixed + kLengthsAndWindows + kDecodes;
  for (int i = 0; i < kAll; ++i) {
    const bool mixed = i < kMixed;
    Problem p;
    if (i >= kMixed + kLengthsAndWindows) {  // decode-shaped: S * H / Hk <= 16, keys over several chunks
      p.B = 1 + pick(3), p.Hk = 1 + pick(2), p.H = p.Hk * (1 + pick(8));
      p.D = std::vector<int64_t>{64, 128, 256}[pick(3)], p.S = 1 + pick(2), p.Sk = p.S + pick(3000);
      p.causal = pick(4) != 0;
      p.dtype = pick(2) ? DType::fp16 : DType::bf16;
      p.seed = uint64_t(100 + i);
      std::string k;
      for (int64_t b = 0; b < p.B; ++b) k += (b ? "|" : "") + std::to_string(b == 1 ? 0 : p.S + pick(p.Sk - p.S + 1));
      if (pick(3)) p.seqlens_k = k;  // sequence 1 has no keys
      if (pick(3)) p.page_size = std::vector<int64_t>{1, 16, 256}[pick(3)];
      if (pick(2)) p.window_left = pick(600), p.window_right = p.causal ? -1 : pick(3) - 1;
      if (pick(3) == 0) p.alibi = "1";
      if (pick(3) == 0) p.softcap = 0.5 + double(pick(30));
      if (p.serving_fields().empty()) p.page_size = 16;
      SweepRow r;
      r.problem = p;
      r.where = SourceLoc{"serving", i + 1};
      r.splits = {SplitRequest{}, SplitRequest{false, 2}};
      ASSERT_FALSE(validate(p).has_value()) << p.label() << ": " << validate(p)->field << ": " << validate(p)->reason;
      s.rows.push_back(r);
      continue;
    }
    p.B = 1 + pick(4), p.Hk = 1 + pick(2), p.H = p.Hk * (1 + pick(4));
    p.D = mixed ? std::vector<int64_t>{32, 64, 80, 128, 256}[pick(5)] : std::vector<int64_t>{64, 128, 256}[pick(3)];
    p.S = 1 + pick(mixed ? 200 : 400), p.Sk = p.S + pick(mixed ? 300 : 700);
    p.causal = pick(2);
    p.dtype = pick(2) ? DType::fp16 : DType::bf16;
    p.seed = uint64_t(100 + i);
    std::string q, k;
    for (int64_t b = 0; b < p.B; ++b) {
      const int64_t lq = b == 1 ? 0 : pick(p.S + 1), lk = lq + pick(p.Sk - p.S + 1);  // sequence 1 is empty
      q += (b ? "|" : "") + std::to_string(lq), k += (b ? "|" : "") + std::to_string(lk);
    }
    switch (i % 4) {
      case 0: p.layout = Layout::thd, p.seqlens_q = q, p.seqlens_k = k; break;
      case 1: p.seqlens_k = k; break;  // padded bshd with per-sequence keys
      case 2: p.layout = Layout::thd, p.seqlens_q = "uniform:0:" + std::to_string(p.S); break;
      default: break;
    }
    if (mixed) {
      if (pick(2)) p.page_size = std::vector<int64_t>{1, 7, 16, 64}[pick(4)];
      if (pick(2)) p.window_left = pick(40), p.window_right = p.causal ? -1 : pick(3) - 1;
      if (pick(3) == 0) p.alibi = "1";
      if (pick(3) == 0) p.softcap = 0.5 + double(pick(30));
      if (p.serving_fields().empty()) p.softcap = 20;
    } else if (i % 4 == 3 || pick(2)) {  // windows of a few keys to a few tiles, so tiles are skipped
      p.window_left = pick(200), p.window_right = p.causal ? -1 : pick(80) - 1;
    }
    ASSERT_FALSE(p.serving_fields().empty()) << p.label();
    ASSERT_FALSE(validate(p).has_value()) << p.label() << ": " << validate(p)->field << ": " << validate(p)->reason;
    SweepRow r;
    r.problem = p;
    r.where = SourceLoc{"serving", i + 1};
    r.splits = {SplitRequest{}, SplitRequest{false, 2}, SplitRequest{false, 16}};
    s.rows.push_back(r);
  }
  NullSink sink;
  const auto recs = run_sweep(s, validate_only(), gpus().reg, gpus().ctx, {&sink});
  std::map<std::string, int> ran, takes;  // passes, and problems a path admits and takes, a path
  for (const auto& r : recs) {
    const std::string what = r.problem.label() + " " + std::string(dtype_name(r.problem.dtype)) + " " + r.path + " G=" +
                             r.g_req.str() + ": " + std::string(status_name(r.status)) + ": " + r.reason;
    EXPECT_TRUE(r.status == Status::pass || r.status == Status::skip) << what;
    if (r.status == Status::pass) ++ran[r.path];
    if (r.g_req.is_auto || r.path == "auto") continue;
    // A path that would take the problem's dense twin takes the serving one where it takes every
    // field, and otherwise refuses it naming the fields it refuses, none it takes.
    Problem dense = r.problem;
    dense.layout = Layout::bshd, dense.seqlens_q.clear(), dense.seqlens_k.clear(), dense.page_size = 0;
    dense.window_left = dense.window_right = -1, dense.alibi = "0", dense.softcap = 0;
    if (gpus().reg.find(r.path)->supports(dense, r.g_req.value, gpus().ctx)) continue;
    bool all = true;
    for (ServingField f : kServingFields) all = all && (!r.problem.serving_set().has(f) || path_takes(r.path, f));
    if (all) {
      ++takes[r.path];
      EXPECT_EQ(r.status, Status::pass) << what;
      continue;
    }
    EXPECT_EQ(r.status, Status::skip) << what;
    for (ServingField f : kServingFields)
      if (r.problem.serving_set().has(f))
        EXPECT_EQ(r.reason.find(serving_field_name(f)) != std::string::npos, !path_takes(r.path, f))
            << serving_field_name(f) << ": " << what;
  }
  EXPECT_EQ(ran["naive"], kAll) << "naive runs every serving problem at G = 0";
  EXPECT_EQ(ran["tiled"], kAll) << "tiled runs every serving problem at G = 0";
  EXPECT_EQ(ran["splitk"], 2 * (kMixed + kLengthsAndWindows) + kDecodes)
      << "splitk runs every serving problem at G = 2 and 16 (the decode-shaped ones at G = 2)";
  for (const char* path : {"mma", "mma-decode"}) {
    EXPECT_EQ(ran[path], takes[path]) << path << " passes every serving problem it takes";
    if (gpus().ctx.device.has_mma_sm80) {
      EXPECT_GE(takes[path], std::string(path) == "mma" ? 3 * kLengthsAndWindows : kDecodes)
          << path << " takes the serving problems of its shapes on sm_80+";
    }
  }
  for (const char* path : {"mfma", "wmma"}) {
    EXPECT_EQ(ran[path], takes[path]) << path << " passes every serving problem it takes, at G = 0, 2 and 16";
    if (device_meets(gpus().reg.find(path)->caps.device, gpus().ctx.device)) {
      EXPECT_GE(takes[path], 3 * kLengthsAndWindows) << path << " takes the lengths-and-windows problems on its GPU";
    }
  }
}

// kv_cache serving problems (issue 20's serving step): the new tokens are appended sequence by
// sequence (per-sequence lengths, thd, shuffled pages of odd sizes, bhsd) before attending, and
// every record checks the cache after the append as well as O and LSE. mma takes every problem at
// G = 0, 2 and 16; mma-decode the ones whose S x H/Hk fits its 16-row tile, except those with
// per-sequence query lengths; kv-cache only the dense decode, refusing the others by their fields.
TEST(GpuPaths, KvCacheProblemsAppendPerSequenceIntoPagesOnMmaAndMmaDecode) {
  REQUIRE_GPU();
  auto make = [](int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D) {
    Problem p;
    p.B = 4, p.H = H, p.Hk = Hk, p.S = S, p.Sk = Sk, p.D = D, p.causal = true, p.kv_cache = true, p.dtype = DType::bf16;
    return p;
  };
  std::vector<Problem> ps;
  ps.push_back(make(8, 2, 1, 333, 128));  // a dense decode: the kv-cache path's problem
  ps.push_back(make(8, 2, 5, 300, 64));   // a dense 5-token append (speculative decoding)
  {  // a serving step: a prefill chunk, decodes, an empty and a one-key sequence, over pages of 16
    Problem p = make(8, 2, 37, 300, 128);
    p.layout = Layout::thd, p.seqlens_q = "37|1|0|1", p.seqlens_k = "300|77|64|1", p.page_size = 16;
    ps.push_back(p);
  }
  {  // decodes over pages of 7 with drawn lengths, a window and ALiBi
    Problem p = make(8, 1, 1, 700, 64);
    p.seqlens_k = "uniform:1:700", p.page_size = 7, p.window_left = 100, p.alibi = "1";
    ps.push_back(p);
  }
  {  // bhsd, 3 new tokens of a group of 4 (12 rows: mma-decode's), per-sequence keys, softcap
    Problem p = make(8, 2, 3, 200, 256);
    p.layout = Layout::bhsd, p.seqlens_k = "200|3|150|64", p.softcap = 30;
    ps.push_back(p);
  }
  {  // BLOOM-style: MHA decode over pages with ALiBi, fp16
    Problem p = make(12, 12, 1, 260, 128);
    p.page_size = 16, p.alibi = "1", p.dtype = DType::fp16;
    ps.push_back(p);
  }
  Sweep s;
  int decode_shaped = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_FALSE(validate(ps[i]).has_value()) << ps[i].label() << ": " << validate(ps[i])->reason;
    decode_shaped += ps[i].S * ps[i].group_size() <= 16 && ps[i].seqlens_q.empty();
    SweepRow r;
    r.problem = ps[i];
    r.where = SourceLoc{"kv", int(i) + 1};
    r.splits = {SplitRequest{}, SplitRequest{false, 2}, SplitRequest{false, 16}, SplitRequest{true, 0}};
    s.rows.push_back(r);
  }
  NullSink sink;
  const auto recs = run_sweep(s, validate_only(), gpus().reg, gpus().ctx, {&sink});
  std::map<std::string, int> ran;
  for (const auto& r : recs) {
    const std::string what = r.problem.label() + " " + r.path + " G=" + r.g_req.str() + ": " +
                             std::string(status_name(r.status)) + ": " + r.reason;
    EXPECT_TRUE(r.status == Status::pass || r.status == Status::skip) << what;
    if (r.status == Status::pass && !r.g_req.is_auto) ++ran[r.path];
    if (r.path == "kv-cache" && r.status == Status::skip && !r.problem.serving_fields().empty())
      EXPECT_NE(r.reason.find(r.problem.serving_fields()[0]), std::string::npos) << what;
  }
  if (!gpus().ctx.device.has_mma_sm80) GTEST_SKIP() << "mma and mma-decode need sm_80+; the others were checked";
  EXPECT_EQ(ran["mma"], 3 * int(ps.size())) << "mma appends and attends every kv_cache problem at G = 0, 2, 16";
  EXPECT_EQ(ran["mma-decode"], decode_shaped) << "mma-decode takes the decode-shaped ones (G = 0 only)";
  EXPECT_GE(ran["kv-cache"], 1) << "the dense decode still runs on kv-cache";
}

// FP8 inputs (issues 20, 42) on the GPU paths that take them: edge and random problems in the four
// formats (OCP e4m3/e5m2, FNUZ e4m3fnuz/e5m2fnuz), some with serving fields, validated at G = 0 and
// 4 against the oracle with the paths' declared P rounding. naive, tiled and splitk pass every one; mma passes those its sm_90a kernel takes
// (MmaPassesEveryWsHeadDimOnLongAndRaggedKeyRanges has its own); every other GPU path, and mma
// elsewhere, refuses them by the dtype.
TEST(GpuPaths, Fp8InputsPassOnTheScalarPathsAndTheMatrixCorePathsRefuseThemByName) {
  REQUIRE_GPU();
  Sweep s;
  int i = 0;
  for (const Problem& base : test::edge_and_random_problems(12, 41)) {
    if (base.kv_cache) continue;  // the paths that append (kv-cache, mma, mma-decode) take fp16/bf16 only
    Problem p = base;
    const DType formats[] = {DType::fp8_e4m3, DType::fp8_e5m2, DType::fp8_e4m3fnuz, DType::fp8_e5m2fnuz};
    p.dtype = formats[i % 4];
    if (i % 3 == 0) p.window_left = 7, p.window_right = p.causal ? -1 : 3;
    if (i % 5 == 0) p.page_size = 16;
    SweepRow r;
    r.problem = p;
    r.where = SourceLoc{"fp8", ++i};
    r.splits = {SplitRequest{}, SplitRequest{false, 4}};
    s.rows.push_back(r);
  }
  NullSink sink;
  const auto recs = run_sweep(s, validate_only(), gpus().reg, gpus().ctx, {&sink});
  std::map<std::string, int> ran;
  for (const auto& r : recs) {
    const std::string what = r.problem.label() + " " + std::string(dtype_name(r.problem.dtype)) + " " + r.path + " G=" +
                             r.g_req.str() + ": " + std::string(status_name(r.status)) + ": " + r.reason;
    EXPECT_TRUE(r.status == Status::pass || r.status == Status::skip) << what;
    if (r.status == Status::pass) ++ran[r.path];
    const bool takes = r.path == "auto" || gpus().reg.find(r.path)->caps.takes_dtype(r.problem.dtype);
    if (!takes && r.status == Status::skip && !r.g_req.is_auto) {
      // A path that would take the problem's bf16 twin and does not declare its dtype refuses it by
      // the dtype's name (kv-cache, which takes only kv_cache problems, refuses this one for that first).
      Problem twin = r.problem;
      twin.dtype = DType::bf16;
      if (gpus().reg.find(r.path)->supports(twin, r.g_req.value, gpus().ctx)) continue;
      EXPECT_NE(r.reason.find(dtype_name(r.problem.dtype)), std::string::npos) << what;
    }
  }
  EXPECT_EQ(ran["naive"], i) << "naive runs every FP8 problem at G = 0";
  EXPECT_EQ(ran["tiled"], i) << "tiled runs every FP8 problem at G = 0";
  EXPECT_EQ(ran["splitk"], i) << "splitk runs every FP8 problem at G = 4";
}
