// NVML through dlopen: the SM clock (nvmlDeviceGetClockInfo, NVML_CLOCK_SM), board power
// (nvmlDeviceGetPowerUsage, mW) and the active clock-event reasons
// (nvmlDeviceGetCurrentClocksEventReasons, named ...ThrottleReasons before driver 535), mapped to
// harness/timing.hpp's ThrottleBits. Signatures and constants from NVML's public API reference
// (docs.nvidia.com/deploy/nvml-api); nvml.h itself is not needed.
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

#include "harness/run/clock_source.hpp"

namespace fa {
namespace {

using nvmlReturn_t = int;  // NVML_SUCCESS = 0
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr int kNvmlClockSm = 1;  // nvmlClockType_t NVML_CLOCK_SM

// nvmlClocksEventReasons bits and the ThrottleBit each means; idle (0x1), application clocks (0x2),
// sync boost (0x10) and display clocks (0x100) are not throttling.
constexpr std::pair<unsigned long long, unsigned> kNvmlReasons[] = {
    {0x4, kThrottlePowerCap}, {0x8, kThrottleHwSlowdown}, {0x20, kThrottleSwThermal},
    {0x40, kThrottleHwThermal}, {0x80, kThrottlePowerBrake}};

class NvmlSource : public ClockSource {
 public:
  ~NvmlSource() override {
    if (shutdown_) shutdown_();
    if (lib_) dlclose(lib_);
  }
  std::string name() const override { return "nvml"; }
  std::optional<ClockReading> read() override {
    ClockReading r;
    unsigned mhz = 0, mw = 0;
    unsigned long long reasons = 0;
    if (clock_(dev_, kNvmlClockSm, &mhz) != 0) return std::nullopt;
    r.mhz = mhz;
    if (power_ && power_(dev_, &mw) == 0) r.power_w = mw * 1e-3;
    if (reasons_ && reasons_(dev_, &reasons) == 0)
      for (const auto& [bit, ours] : kNvmlReasons)
        if (reasons & bit) r.reasons |= ours;
    return r;
  }

  // Loads the library and finds the device; false with *why on any failure.
  bool open(const DeviceFacts::Pci& pci, std::string* why) {
    const char* env = std::getenv("FABENCH_NVML_LIB");
    const std::string file = env && *env ? env : "libnvidia-ml.so.1";
    lib_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return fail(why, fmt::format("{} does not load ({})", file, dlerror()));
    auto init = sym<nvmlReturn_t (*)()>("nvmlInit_v2");
    auto by_bus = sym<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>("nvmlDeviceGetHandleByPciBusId_v2");
    clock_ = sym<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetClockInfo");
    power_ = sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetPowerUsage");
    reasons_ = sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>("nvmlDeviceGetCurrentClocksEventReasons");
    if (!reasons_)
      reasons_ = sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>("nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !by_bus || !clock_) return fail(why, file + " lacks nvmlInit_v2, a device lookup or the clock query");
    if (const nvmlReturn_t rc = init(); rc != 0) return fail(why, fmt::format("nvmlInit_v2 returned {}", rc));
    shutdown_ = sym<nvmlReturn_t (*)()>("nvmlShutdown");
    const std::string bus = fmt::format("{:08x}:{:02x}:{:02x}.0", pci.domain, pci.bus, pci.device);
    if (const nvmlReturn_t rc = by_bus(bus.c_str(), &dev_); rc != 0)
      return fail(why, fmt::format("NVML has no device at PCI {} (error {})", bus, rc));
    unsigned mhz = 0;
    if (const nvmlReturn_t rc = clock_(dev_, kNvmlClockSm, &mhz); rc != 0)
      return fail(why, fmt::format("NVML reads no SM clock at PCI {} (error {})", bus, rc));
    return true;
  }

 private:
  template <class F>
  F sym(const char* name) {
    return library_symbol<F>(lib_, name);
  }
  static bool fail(std::string* why, std::string s) { return open_failed(why, std::move(s)); }
  void* lib_ = nullptr;
  nvmlDevice_t dev_ = nullptr;
  nvmlReturn_t (*shutdown_)() = nullptr;
  nvmlReturn_t (*clock_)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*reasons_)(nvmlDevice_t, unsigned long long*) = nullptr;
};

}  // namespace

std::shared_ptr<ClockSource> open_nvml(const DeviceFacts::Pci& pci, std::string* why) {
  auto s = std::make_shared<NvmlSource>();
  if (!s->open(pci, why)) return nullptr;
  return s;
}

}  // namespace fa
