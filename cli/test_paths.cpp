// The `test-crash` row: a cpu-flash execution that faults in run() on the rows named for it.
// Kept out of harness/ and reference/ so that it moves to its own registration unchanged.
#include "cli/test_paths.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include <stdexcept>

namespace fa::cli {
namespace {

class FaultingExecution : public Execution {
 public:
  FaultingExecution(std::unique_ptr<Execution> inner, std::string mode) : inner_(std::move(inner)), mode_(std::move(mode)) {}
  void poison() override { inner_->poison(); }
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
  RunOutputs read_back() override { return inner_->read_back(); }
  double timed_sample_ms(TimingMode m) override { return inner_->timed_sample_ms(m); }

 private:
  std::unique_ptr<Execution> inner_;
  std::string mode_;
};

}  // namespace

void add_test_paths(Registry& reg) {
  const char* on = std::getenv("FABENCH_TEST_PATHS");
  if (!on || std::string(on) != "1") return;
  const PathRow* flash = reg.find("cpu-flash");
  if (!flash) throw std::logic_error("test-crash wraps cpu-flash, which is not registered");
  auto prepare = flash->prepare;
  reg.add(PathRow{"test-crash", "cpu", "test only: cpu-flash that segfaults, aborts or hangs on rows so named",
                  "as cpu-flash; rows named crash, abort, hang fault", false, flash->supports,
                  [prepare](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) {
                    return std::unique_ptr<Execution>(
                        std::make_unique<FaultingExecution>(prepare(p, in, G, ctx), p.name));
                  }});
}

}  // namespace fa::cli
