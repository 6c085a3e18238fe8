// Test-only rows (FABENCH_TEST_PATHS=1): `test-crash` (cpu-flash that faults in run() on the rows
// named for it), `test-gpu-fault` (mma, after a device fault on rows named `fault`),
// `test-rtz-<path>` (the path's output with round-toward-zero stores emulated: see below) and
// `test-carry-state` (cpu-flash right on its first launch only), `test-model-time` (cpu-flash timed
// by a model, not a clock: what the gate tests judge), `test-write-input` (cpu-flash that writes
// the host Q, or the page table, it was given to read, on rows named write-q or write-pages: what
// run_record's input checksums must fail); and the --plant-slowdown flag, refused unless
// FABENCH_TEST_PATHS=1.
#include "cli/test_paths.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include <stdexcept>

#include "harness/input_error.hpp"
#include "harness/rng.hpp"
#include "paths/wrapped_execution.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/runtime/gpu_device.hpp"
#endif

namespace fa::cli {
namespace {

bool test_switch_on() {
  const char* on = std::getenv("FABENCH_TEST_PATHS");
  return on && std::string(on) == "1";
}

class FaultingExecution : public WrappedExecution {
 public:
  FaultingExecution(std::unique_ptr<Execution> inner, std::string mode)
      : WrappedExecution(std::move(inner)), mode_(std::move(mode)) {}
  void run() override {
    if (mode_ == "crash") {
      signal(SIGSEGV, SIG_DFL);  // die as a faulting process does, also under ASan's SEGV handler
      raise(SIGSEGV);
    } else if (mode_ == "abort") {
      std::abort();
    } else if (mode_ == "hang") {
      for (;;) pause();
    }
    inner_->run();
  }

 private:
  std::string mode_;
};

// A built-in path that writes what it was given to read, after a correct run, through a const
// cast as a hostile kernel would: Q's first element, or the page table's first entry (swapped with
// the second, so the table still names valid pages). Plugins get copies of Q/K/V and are watched
// in paths/plugin_cpu.cpp; these host buffers are run_record's to watch.
class InputWritingExecution : public WrappedExecution {
 public:
  InputWritingExecution(std::unique_ptr<Execution> inner, const Problem& p, const HostInputs& in)
      : WrappedExecution(std::move(inner)), mode_(p.name), q_(const_cast<float*>(in.q.data())),
        table_(p.paged() ? const_cast<std::vector<int64_t>*>(&p.serving().table) : nullptr) {}
  void run() override {
    inner_->run();
    if (mode_ == "write-q") q_[0] = q_[0] + 1.0f;
    if (mode_ == "write-pages" && table_ && table_->size() > 1) std::swap((*table_)[0], (*table_)[1]);
  }

 private:
  std::string mode_;
  float* q_;
  std::vector<int64_t>* table_;
};

// Round-toward-zero stores, emulated on a correct (round-to-nearest) output: where RN rounded
// away from zero, RTZ would have stored the neighbour one ulp nearer zero. That happens for about
// half of the elements, so a seeded half of them moves one ulp toward zero: the mean signed error
// becomes -0.5 ulp, RTZ's, while max error grows by at most one ulp.
class RtzExecution : public WrappedExecution {
 public:
  explicit RtzExecution(std::unique_ptr<Execution> inner) : WrappedExecution(std::move(inner)) {}
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    const uint32_t magnitude = out.o.dtype == DType::fp32 ? 0x7fffffffu : 0x7fffu;
    for (int64_t i = 0; i < out.o.size(); ++i) {
      const uint32_t b = out.o.bits(i);
      const bool finite_nonzero = (b & magnitude) != 0 && std::isfinite(from_bits(out.o.dtype, b));
      const bool coin = philox4x32_10({uint32_t(i), uint32_t(uint64_t(i) >> 32), 0u, 0u}, {0x5eedu, 0u})[0] & 1u;
      if (finite_nonzero && coin) out.o.set_bits(i, b - 1);
    }
    return out;
  }
};

// A workspace not cleared between launches: each launch adds its output onto the last one's, so
// the first launch (the validated one) is right and launch k stores k * O. Every launch counts,
// timed ones included (a batch of n is n launches).
class CarryStateExecution : public WrappedExecution {
 public:
  explicit CarryStateExecution(std::unique_ptr<Execution> inner) : WrappedExecution(std::move(inner)) {}
  void run() override {
    ++launches_;
    inner_->run();
  }
  double timed_sample_ms(TimingMode m) override {
    ++launches_;
    return inner_->timed_sample_ms(m);
  }
  double timed_batch_ms(TimingMode m, int n) override {
    launches_ += n;
    return inner_->timed_batch_ms(m, n);
  }
  RunOutputs read_back() override {
    RunOutputs out = inner_->read_back();
    if (launches_ > 1)
      for (int64_t i = 0; i < out.o.size(); ++i) out.o.set(i, float(launches_) * from_bits(out.o.dtype, out.o.bits(i)));
    return out;
  }

 private:
  int64_t launches_ = 0;
};

// Timed samples that report a model time instead of reading a clock: the problem's FLOPs at
// 100 GFLOP/s, the same for every sample and every run. The work itself still runs. A planted
// slowdown stays real: add_timed_delay keeps the default (false), so time_execution adds a host
// busy-wait of at least the planted share to each sample. The gate is then judged on timings where
// a run without the plant matches its baseline exactly and a planted one is slower by at least the
// plant, on any machine load: what a test can assert (timings of real CPU work on a shared CI
// machine moved 2x between two consecutive unplanted runs).
class ModelTimeExecution : public WrappedExecution {
 public:
  ModelTimeExecution(std::unique_ptr<Execution> inner, double model_ms)
      : WrappedExecution(std::move(inner)), model_ms_(model_ms) {}
  double timed_sample_ms(TimingMode m) override {
    inner_->timed_sample_ms(m);
    return model_ms_;
  }
  double timed_batch_ms(TimingMode m, int n) override {
    inner_->timed_batch_ms(m, n);
    return n * model_ms_;
  }
  bool add_timed_delay(double) override { return false; }

 private:
  double model_ms_;
};

#ifdef FABENCH_HAS_GPU
class GpuFaultExecution : public WrappedExecution {
 public:
  GpuFaultExecution(std::unique_ptr<Execution> inner, bool fault) : WrappedExecution(std::move(inner)), fault_(fault) {}
  void run() override {
    if (fault_) gpu::fault_device_for_test();
    inner_->run();
  }

 private:
  bool fault_;
};
#endif

// A row that runs `base` through `wrap`.
template <typename Wrap>
void add_wrapped(Registry& reg, const std::string& base, const std::string& name, const std::string& summary, Wrap wrap) {
  const PathRow* b = reg.find(base);
  if (!b || !b->prepare) return;
  auto prepare = b->prepare;
  PathRow r{name, b->kind, summary, "as " + base, false, b->supports,
            [prepare, wrap](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) {
              return wrap(p, prepare(p, in, G, ctx));
            }};
  r.rz_accumulate_keys = b->rz_accumulate_keys;  // it rounds and accumulates as its base does
  r.fp8_p = b->fp8_p;
  r.fp8_accumulate_bits = b->fp8_accumulate_bits;
  r.deterministic = b->deterministic;
  reg.add(std::move(r));
}

}  // namespace

void add_test_paths(Registry& reg) {
  if (!test_switch_on()) return;
  const PathRow* flash = reg.find("cpu-flash");
  if (!flash) throw std::logic_error("test-crash wraps cpu-flash, which is not registered");
  auto prepare = flash->prepare;
  reg.add(PathRow{"test-crash", "cpu", "test only: cpu-flash that segfaults, aborts or hangs on rows so named",
                  "as cpu-flash; rows named crash, abort, hang fault", false, flash->supports,
                  [prepare](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) {
                    return std::unique_ptr<Execution>(
                        std::make_unique<FaultingExecution>(prepare(p, in, G, ctx), p.name));
                  }});
  reg.add(PathRow{"test-write-input", "cpu", "test only: cpu-flash that writes its host Q or page table on rows so named",
                  "as cpu-flash; rows named write-q, write-pages write an input", false, flash->supports,
                  [prepare](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) {
                    return std::unique_ptr<Execution>(std::make_unique<InputWritingExecution>(prepare(p, in, G, ctx), p, in));
                  }});
  for (const char* base : {"cpu-flash", "mma"})
    add_wrapped(reg, base, std::string("test-rtz-") + base, "test only: " + std::string(base) + " with RTZ stores",
                [](const Problem&, std::unique_ptr<Execution> e) -> std::unique_ptr<Execution> {
                  return std::make_unique<RtzExecution>(std::move(e));
                });
  add_wrapped(reg, "cpu-flash", "test-carry-state",
              "test only: cpu-flash with a workspace not cleared between launches (right on the first launch only)",
              [](const Problem&, std::unique_ptr<Execution> e) -> std::unique_ptr<Execution> {
                return std::make_unique<CarryStateExecution>(std::move(e));
              });
  add_wrapped(reg, "cpu-flash", "test-model-time",
              "test only: cpu-flash timed by a model (FLOPs at 100 GFLOP/s), not a clock; a planted slowdown is real",
              [](const Problem& p, std::unique_ptr<Execution> e) -> std::unique_ptr<Execution> {
                return std::make_unique<ModelTimeExecution>(std::move(e), p.flops() / 1e8);
              });
#ifdef FABENCH_HAS_GPU
  add_wrapped(reg, "mma", "test-gpu-fault", "test only: mma after a device fault on rows named fault",
              [](const Problem& p, std::unique_ptr<Execution> e) -> std::unique_ptr<Execution> {
                return std::make_unique<GpuFaultExecution>(std::move(e), p.name == "fault");
              });
#endif
}

void add_test_options(CLI::App& cmd, double& plant_slowdown) {
  cmd.add_option("--plant-slowdown", plant_slowdown,
                 "Test only (needs FABENCH_TEST_PATHS=1): make every timed sample this fraction slower (0.1 = 10%) "
                 "with a real delay sized from the path's own undelayed time (GPU paths: a spin kernel between the "
                 "events; elsewhere: a host busy-wait added to the sample), path names unchanged; each record's "
                 "timing_note says so")
      ->check(CLI::Range(0.0, 10.0))
      ->group("Test only");
}

double checked_plant_slowdown(double fraction) {
  if (fraction <= 0) return 0;
  const SourceLoc cli = command_line();
  if (!test_switch_on())
    throw InputError(cli, "--plant-slowdown", "test only: it plants a fake slowdown; set FABENCH_TEST_PATHS=1 to use it");
  spdlog::warn("--plant-slowdown {}: every timed sample is made {:g}% slower on purpose (test only; timing_note says so)",
               fraction, 100 * fraction);
  return fraction;
}

}  // namespace fa::cli
