// The handler only records the signal (async-signal-safe); the runner polls it between records.
#include "cli/interrupt.hpp"

#include <signal.h>

namespace fa::cli {
namespace {

volatile sig_atomic_t g_signal = 0;
struct sigaction g_old_int, g_old_term;

void on_signal(int sig) {
  if (g_signal != 0) {  // the second one: leave now, with the signal's own status
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  g_signal = sig;
}

}  // namespace

StopOnSignals::StopOnSignals() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // file writes in flight complete; poll() in --isolate still wakes
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopOnSignals::~StopOnSignals() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int StopOnSignals::received() { return g_signal; }

}  // namespace fa::cli
