// An Execution around another that forwards every call: wrappers (auto's dispatch, the test-only
// paths) override only what they change, so a call added to Execution reaches the wrapped one.
#pragma once
#include <memory>

#include "harness/path.hpp"

namespace fa {

class WrappedExecution : public Execution {
 public:
  explicit WrappedExecution(std::unique_ptr<Execution> inner) : inner_(std::move(inner)) {}
  void poison() override { inner_->poison(); }
  void run() override { inner_->run(); }
  RunOutputs read_back() override { return inner_->read_back(); }
  double timed_sample_ms(TimingMode m) override { return inner_->timed_sample_ms(m); }
  double timed_batch_ms(TimingMode m, int n) override { return inner_->timed_batch_ms(m, n); }
  bool add_timed_delay(double ms_per_call) override { return inner_->add_timed_delay(ms_per_call); }

 protected:
  std::unique_ptr<Execution> inner_;
};

}  // namespace fa
