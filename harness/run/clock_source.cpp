// One clock reader per device and process, chosen by the arch's vendor; the reason none opened is
// logged once a device.
#include "harness/run/clock_source.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

namespace fa {
namespace {
std::atomic<bool> reasons_logged_elsewhere{false};
}  // namespace

void clock_reasons_logged_elsewhere() { reasons_logged_elsewhere = true; }

std::shared_ptr<ClockSource> clock_source_for(const DeviceFacts& d) {
  if (!d.gpu) return nullptr;
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<ClockSource>> opened;
  const std::string key = fmt::format("{}:{}:{}:{}", d.arch, d.pci.domain, d.pci.bus, d.pci.device);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = opened.find(key); it != opened.end()) return it->second;
  std::string why;
  std::shared_ptr<ClockSource> src;
  const char* off = std::getenv("FABENCH_CLOCKS");
  const bool amd = d.arch.rfind("gfx", 0) == 0;
  if (off && std::string(off) == "off")
    why = "FABENCH_CLOCKS=off";
  else if (d.pci.bus < 0)
    why = "the runtime gave no PCI address";
  else
    src = amd ? open_amdsmi(d.pci, &why) : open_nvml(d.pci, &why);
  if (!src)
    spdlog::log(reasons_logged_elsewhere ? spdlog::level::debug : spdlog::level::warn,
                "clocks: not read on {} ({}): records have no clock, power or throttling columns", d.name, why);
  opened[key] = src;
  return src;
}

}  // namespace fa
