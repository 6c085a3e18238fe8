// AMD SMI through dlopen (libamd_smi.so, or $FABENCH_AMDSMI_LIB): the GFX clock, socket power and
// throttling of one GPU from a single amdsmi_get_gpu_metrics_info call per reading, mapped to
// harness/timing.hpp's ThrottleBits. No amdsmi.h: the few types are restated below, each checked
// against ROCm/amdsmi's include/amd_smi/amdsmi.h at rocm-6.0.0, 6.1.0, 6.2.0 and amd-staging (lib
// 24.7, ROCm 6.3), and at ROCm/rocm-systems' projects/amdsmi (lib 26.1, ROCm 7.1). Refuses, with the
// reason, a library version outside those layouts. Test: tests/harness/run/test_clock_source.cpp.
#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "harness/run/clock_source.hpp"

namespace fa {
namespace {

// amdsmi.h, identical in every version read: amdsmi_status_t (0 = AMDSMI_STATUS_SUCCESS), the opaque
// amdsmi_processor_handle, AMDSMI_INIT_AMD_GPUS = 1 << 1 (amdsmi_init(uint64_t init_flags)), and
// amdsmi_bdf_t, a union of the 64-bit word with the bit fields function 3, device 5, bus 8, domain 48.
using amdsmi_status_t = int;
using amdsmi_processor_handle = void*;
constexpr uint64_t kInitAmdGpus = 1u << 1;
union AmdsmiBdf {
  struct {
    uint64_t function_number : 3;
    uint64_t device_number : 5;
    uint64_t bus_number : 8;
    uint64_t domain_number : 48;
  } f;
  uint64_t as_uint;
};
static_assert(sizeof(AmdsmiBdf) == 8, "amdsmi_bdf_t is one 64-bit word, passed by value");

// amdsmi_version_t lost its first field in lib 25 (ROCm 6.4's changelog: "Removed year from AMD SMI
// library version number", 25.3.0): {year, major, minor, release, build*} through 24.x,
// {major, minor, release, build*} from 25. Years were 23 (lib 23.4, ROCm 6.0) and 24 (24.5-24.7,
// ROCm 6.1-6.3); majors since are 25 and up, so a first word of 23 or 24 means the old layout.
// Read as words into a buffer larger than either layout (24 bytes each); the build string is not used.
struct VersionWords {
  uint32_t w[16];
};

// The head of amdsmi_gpu_metrics_t that this reader uses. Offsets measured with offsetof on the
// x86-64 headers above; the struct only ever grew at its end (v1.5-v1.9 additions), so they are
// the same in all of them. The residency counters exist from lib 24.7 (metrics v1.6) on: before
// that the struct ends at byte 424 (sizeof 352 in 23.4, 424 in 24.5/24.6) and they must not be read.
// Unsupported fields are set to their type's maximum by the library (init_max_uint_types in
// rocm_smi_gpu_metrics.cc).
constexpr size_t kOffAverageSocketPower = 22;   // uint16_t, W (Navi, MI200)
constexpr size_t kOffAverageGfxclk = 40;        // uint16_t, MHz
constexpr size_t kOffCurrentGfxclk = 54;        // uint16_t, MHz; MI300 (v1.4+): current_gfxclks[0]
constexpr size_t kOffIndepThrottle = 112;       // uint64_t, ASIC-independent SMU_THROTTLER_* bits (v1.3)
constexpr size_t kOffCurrentSocketPower = 120;  // uint16_t, W (MI300, v1.4+)
constexpr size_t kOffAccumulationCounter = 424;  // uint64_t, then 5 residencies (v1.6+, lib >= 24.7)
constexpr size_t kOffResidency[5] = {432, 440, 448, 456, 464};  // prochot, ppt, socket, vr, hbm thermal
// sizeof(amdsmi_gpu_metrics_t) is 4544 in lib 26.1 and grows with each metrics version (the xcp_stats
// array gained v1.9 fields since): the library writes its whole struct, so the buffer leaves room.
constexpr size_t kMetricsBufferBytes = 64 << 10;

// Which layouts were read, by the library's major version (old layout: year.major).
struct SmiLayout {
  bool ok = false;
  bool residency = false;
  std::string version;
};
SmiLayout smi_layout_of(const VersionWords& v) {
  SmiLayout l;
  const bool old_layout = v.w[0] == 23 || v.w[0] == 24;
  const uint32_t major = old_layout ? v.w[1] : v.w[0];
  l.version = fmt::format("{}.{}.{}", v.w[0], v.w[1], v.w[2]);  // year.major.minor or major.minor.release
  if (old_layout) {
    l.ok = (v.w[0] == 23 && major == 4) || (v.w[0] == 24 && major >= 5 && major <= 7);
    l.residency = v.w[0] == 24 && major == 7;
  } else {
    // 26: ROCm 7.x (header read at 26.1). 25 (ROCm 6.4) sits between two read layouts with the same
    // head; its header was not read, but rocm.docs.amd.com's docs-6.4.2 amdsmi_gpu_metrics_t reference
    // lists the same fields in the same order and 6.4.0's changelog only appends metrics v1.7.
    l.ok = major == 25 || major == 26;
    l.residency = l.ok;
  }
  return l;
}

// indep_throttle_status bits (linux drivers/gpu/drm/amd/pm/swsmu/inc/amdgpu_smu.h, SMU_THROTTLER_*):
// power 0-7 (PPT0-3, SPL, FPPT, SPPT, SPPT_APU), current 16-23 (TDC_GFX/SOC/MEM/VDD/CVIP, EDC_CPU/GFX,
// APCC), temperature 32-45 (GPU, core, mem, edge, hotspot, SoC, VR GFX/SoC/MEM0/MEM1, liquid 0/1,
// VRHOT0/1), PROCHOT CPU/GFX 46-47, PPM 56 and FIT 57. FIT (a reliability limit) has no ThrottleBit
// and is left out; PPM (peak power management) is a power limit. The older throttle_status word is
// ASIC-specific (its bits differ between Navi, MI200 and MI300) and is not decoded: on MI300 with
// metrics v1.4/v1.5, which carry neither indep_throttle_status nor the residencies, readings have
// clock and power but no reasons.
unsigned map_indep_throttle(uint64_t s) {
  unsigned r = 0;
  if (s & 0xffull) r |= kThrottlePowerCap;
  if (s & (1ull << 56)) r |= kThrottlePowerCap;
  if (s & (0xffull << 16)) r |= kThrottleCurrent;
  if (s & (0x3fffull << 32)) r |= kThrottleSwThermal;
  if (s & (3ull << 46)) r |= kThrottleHwSlowdown;
  return r;
}

// The library is not reference counted (amdsmi_init returns at once when initialised, amdsmi_shut_down
// tears down for everyone): shut it down when the last reader in this process closes.
std::mutex g_amdsmi_mu;
int g_amdsmi_open = 0;

class AmdSmiSource : public ClockSource {
 public:
  ~AmdSmiSource() override {
    if (initialised_) {
      std::lock_guard<std::mutex> lock(g_amdsmi_mu);
      if (--g_amdsmi_open == 0 && shutdown_) shutdown_();
    }
    if (lib_) dlclose(lib_);
  }
  std::string name() const override { return "amdsmi"; }

  std::optional<ClockReading> read() override {
    std::lock_guard<std::mutex> lock(read_mu_);  // buf_ and the residency state are this reader's own
    if (metrics_(dev_, buf_.data()) != 0) return std::nullopt;
    ClockReading r;
    uint16_t mhz = u16(kOffCurrentGfxclk);
    if (mhz == 0 || mhz == kNa16) mhz = u16(kOffAverageGfxclk);
    if (mhz == 0 || mhz == kNa16) return std::nullopt;
    r.mhz = mhz;
    uint16_t w = u16(kOffCurrentSocketPower);
    if (w == kNa16) w = u16(kOffAverageSocketPower);
    if (w != kNa16) r.power_w = w;
    if (const uint64_t indep = u64(kOffIndepThrottle); indep != kNa64) r.reasons |= map_indep_throttle(indep);
    if (layout_.residency) r.reasons |= residency_reasons();
    return r;
  }

  bool open(const DeviceFacts::Pci& pci, std::string* why) {
    const char* env = std::getenv("FABENCH_AMDSMI_LIB");
    std::string file = env && *env ? env : "libamd_smi.so";
    lib_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_ && !(env && *env)) {  // ROCm installs it under $ROCM_PATH/lib, often outside the loader's path
      const char* rocm = std::getenv("ROCM_PATH");
      const std::string first_error = dlerror();
      file = std::string(rocm && *rocm ? rocm : "/opt/rocm") + "/lib/libamd_smi.so";
      lib_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib_) return fail(why, fmt::format("libamd_smi.so does not load ({}), nor {}", first_error, file));
    }
    if (!lib_) return fail(why, fmt::format("{} does not load ({})", file, dlerror()));
    auto init = sym<amdsmi_status_t (*)(uint64_t)>("amdsmi_init");
    auto version = sym<amdsmi_status_t (*)(VersionWords*)>("amdsmi_get_lib_version");
    auto by_bdf = sym<amdsmi_status_t (*)(AmdsmiBdf, amdsmi_processor_handle*)>("amdsmi_get_processor_handle_from_bdf");
    metrics_ = sym<amdsmi_status_t (*)(amdsmi_processor_handle, void*)>("amdsmi_get_gpu_metrics_info");
    shutdown_ = sym<amdsmi_status_t (*)()>("amdsmi_shut_down");
    for (const auto& [p, n] : {std::pair<bool, const char*>{init != nullptr, "amdsmi_init"},
                               {version != nullptr, "amdsmi_get_lib_version"},
                               {by_bdf != nullptr, "amdsmi_get_processor_handle_from_bdf"},
                               {metrics_ != nullptr, "amdsmi_get_gpu_metrics_info"},
                               {shutdown_ != nullptr, "amdsmi_shut_down"}})
      if (!p) return fail(why, fmt::format("{} lacks {}", file, n));
    {
      std::lock_guard<std::mutex> lock(g_amdsmi_mu);
      if (const amdsmi_status_t rc = init(kInitAmdGpus); rc != 0)
        return fail(why, fmt::format("amdsmi_init(AMDSMI_INIT_AMD_GPUS) returned {}", rc));
      ++g_amdsmi_open;
      initialised_ = true;
    }
    VersionWords v{};
    if (const amdsmi_status_t rc = version(&v); rc != 0)
      return fail(why, fmt::format("amdsmi_get_lib_version returned {}", rc));
    layout_ = smi_layout_of(v);
    if (!layout_.ok)
      return fail(why, fmt::format("AMD SMI library {} has a struct layout this reader was not checked against "
                                   "(checked: 23.4, 24.5-24.7, 25.x, 26.x)", layout_.version));
    AmdsmiBdf bdf{};
    bdf.f.domain_number = uint64_t(pci.domain);
    bdf.f.bus_number = uint64_t(pci.bus);
    bdf.f.device_number = uint64_t(pci.device);
    const std::string where = fmt::format("{:04x}:{:02x}:{:02x}.0", pci.domain, pci.bus, pci.device);
    if (const amdsmi_status_t rc = by_bdf(bdf, &dev_); rc != 0)
      return fail(why, fmt::format("AMD SMI has no GPU at PCI {} (error {})", where, rc));
    buf_.assign(kMetricsBufferBytes / sizeof(uint64_t), 0);
    if (const amdsmi_status_t rc = metrics_(dev_, buf_.data()); rc != 0)
      return fail(why, fmt::format("AMD SMI reads no GPU metrics at PCI {} (error {})", where, rc));
    if (layout_.residency) residency_reasons();  // the baseline the first reading's deltas start from
    const uint16_t gfx = u16(kOffCurrentGfxclk), avg = u16(kOffAverageGfxclk);
    if ((gfx == 0 || gfx == kNa16) && (avg == 0 || avg == kNa16))  // read() would never answer: say so now
      return fail(why, fmt::format("AMD SMI's metrics give no GFX clock at PCI {}", where));
    return true;
  }

 private:
  std::mutex read_mu_;
  static constexpr uint16_t kNa16 = std::numeric_limits<uint16_t>::max();
  static constexpr uint64_t kNa64 = std::numeric_limits<uint64_t>::max();
  static constexpr std::chrono::milliseconds kStaleBaseline{500};  // 50 polls of 10 ms

  // MI300-class metrics (v1.6+) report throttling only as counters: accumulation_counter counts the
  // firmware's samples, each *_residency_acc the samples spent under that limit; amdsmi's own
  // amdsmi_get_violation_status takes two metrics 100 ms apart ("fastest SMU FW sample time") and
  // divides the deltas. A single value says nothing about now, so a reading is throttled by the
  // limits whose residency grew since the last firmware sample seen: while accumulation_counter
  // stands still the readings repeat the last sample's verdict; a counter going backwards (reset)
  // starts a new baseline, and so does one older than kStaleBaseline: the reader lives as long as
  // the process and is idle between records, and growth over that gap belongs to whatever the GPU
  // did in between, not to the reading now (which then says "not throttled" until the firmware's
  // next sample).
  unsigned residency_reasons() {
    static constexpr unsigned kBit[5] = {kThrottleHwSlowdown, kThrottlePowerCap, kThrottleSwThermal,
                                         kThrottleSwThermal, kThrottleSwThermal};
    const uint64_t acc = u64(kOffAccumulationCounter);
    if (acc == kNa64) return 0;
    uint64_t res[5];
    for (int i = 0; i < 5; ++i) res[i] = u64(kOffResidency[i]);
    const auto now = std::chrono::steady_clock::now();
    const bool stale = now - seen_ > kStaleBaseline;
    seen_ = now;
    if (!have_base_ || acc < acc_ || stale) {
      have_base_ = true, acc_ = acc, last_ = 0;
      std::memcpy(res_, res, sizeof res);
      return 0;
    }
    if (acc == acc_) return last_;
    last_ = 0;
    for (int i = 0; i < 5; ++i)
      if (res[i] != kNa64 && res_[i] != kNa64 && res[i] > res_[i]) last_ |= kBit[i];
    acc_ = acc;
    std::memcpy(res_, res, sizeof res);
    return last_;
  }
  uint16_t u16(size_t off) const {
    uint16_t x;
    std::memcpy(&x, reinterpret_cast<const char*>(buf_.data()) + off, sizeof x);
    return x;
  }
  uint64_t u64(size_t off) const {
    uint64_t x;
    std::memcpy(&x, reinterpret_cast<const char*>(buf_.data()) + off, sizeof x);
    return x;
  }
  template <class F>
  F sym(const char* name) {
    return library_symbol<F>(lib_, name);
  }
  static bool fail(std::string* why, std::string s) { return open_failed(why, std::move(s)); }

  void* lib_ = nullptr;
  bool initialised_ = false;
  amdsmi_processor_handle dev_ = nullptr;
  amdsmi_status_t (*metrics_)(amdsmi_processor_handle, void*) = nullptr;
  amdsmi_status_t (*shutdown_)() = nullptr;
  SmiLayout layout_;
  std::vector<uint64_t> buf_;  // 8-byte aligned, as the library's struct is
  bool have_base_ = false;
  std::chrono::steady_clock::time_point seen_;  // the last residency read
  uint64_t acc_ = 0, res_[5] = {};
  unsigned last_ = 0;
};

}  // namespace

std::shared_ptr<ClockSource> open_amdsmi(const DeviceFacts::Pci& pci, std::string* why) {
  auto s = std::make_shared<AmdSmiSource>();
  if (!s->open(pci, why)) return nullptr;
  return s;
}

}  // namespace fa
