// Reads machine facts for the results' metadata.
#include "harness/results/metadata.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "harness/build_info.hpp"

namespace fa {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

RunMeta collect_meta(const DeviceFacts& d, TimingMode mode) {
  RunMeta m;
  m.started = utc_now();
  std::random_device rd;
  m.run_id = fmt::format("{}-{:06x}", m.started, rd() & 0xffffff);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  m.host = host;
  m.cpu = cpu_model();
  m.cpu_threads = d.cpu_threads;
  m.device = d.gpu ? d.name : "cpu: " + m.cpu;
  m.arch = d.gpu ? d.arch : "host";
  m.units = d.gpu ? d.units : d.cpu_threads;
  m.runtime = d.runtime;
  m.device_memory = d.memory_bytes;
  m.sm_clock_mhz = d.sm_clock_mhz;
  m.mem_clock_mhz = d.mem_clock_mhz;
  m.backend = FABENCH_BACKEND;
  m.git_commit = build_git_commit();
#ifdef __VERSION__
  m.compiler = __VERSION__;
#endif
  m.timing_mode = timing_mode_name(mode);
  return m;
}

}  // namespace fa
