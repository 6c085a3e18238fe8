// SIGINT and SIGTERM during a sweep. The first signal asks the runner to stop: the record in
// flight finishes (an --isolate child is killed and recorded as interrupted), every finished
// record is already flushed, the table prints, and the exit status is 128 + signal (130, 143).
// A second signal kills the process at once. Results lines are single write()s, so even SIGKILL
// leaves only complete records; --resume continues.
#pragma once

namespace fa::cli {

class StopOnSignals {
 public:
  StopOnSignals();   // installs the handlers for SIGINT and SIGTERM
  ~StopOnSignals();  // restores the previous ones
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
  static int received();  // the first signal received, 0 if none
};

}  // namespace fa::cli
