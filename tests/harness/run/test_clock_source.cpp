// The NVML and AMD SMI clock readers against fake libraries (fake_nvml.c, fake_amdsmi.c, loaded through
// FABENCH_NVML_LIB / FABENCH_AMDSMI_LIB): readings and the ThrottleBits each vendor's reasons map to,
// AMD's library-version layouts and MI300's residency counters; a wrong PCI address, a missing
// library and a missing symbol give no reader and a reason naming it; and measure_time with the fake
// NVML reader records the fake's clock, its throttled samples and cycles = median(ms x MHz x 1e3).
// Run: ctest --test-dir build/cpu -R ClockSource
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "harness/run/clock_source.hpp"
#include "harness/timing.hpp"

using namespace fa;

namespace {

constexpr uint16_t kNa16 = std::numeric_limits<uint16_t>::max();
constexpr uint64_t kNa64 = std::numeric_limits<uint64_t>::max();

// The fake's state is shared with the reader's copy (dlopen of one file gives one handle).
template <class F>
F fake_sym(const char* file, const char* name) {
  void* lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  auto f = reinterpret_cast<F>(lib ? dlsym(lib, name) : nullptr);
  EXPECT_NE(f, nullptr) << name;
  return f;
}

}  // namespace

struct NvmlClockSource : ::testing::Test {
  void (*set)(unsigned, unsigned, unsigned long long) = nullptr;
  const DeviceFacts::Pci pci{0, 0x3b, 0};
  void SetUp() override {
    setenv("FABENCH_NVML_LIB", FAKE_NVML, 1);
    set = fake_sym<decltype(set)>(FAKE_NVML, "fake_nvml_set");
    set(1410, 300000, 0);
  }
  void TearDown() override { unsetenv("FABENCH_NVML_LIB"); }
};

struct AmdSmiClockSource : ::testing::Test {
  void (*set_version)(uint32_t, uint32_t, uint32_t, int) = nullptr;
  void (*set)(uint16_t, uint16_t, uint16_t, uint16_t, uint64_t) = nullptr;
  void (*residency)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t) = nullptr;
  const DeviceFacts::Pci pci{0, 0xc1, 0};
  void SetUp() override {
    setenv("FABENCH_AMDSMI_LIB", FAKE_AMDSMI, 1);
    set_version = fake_sym<decltype(set_version)>(FAKE_AMDSMI, "fake_amdsmi_set_version");
    set = fake_sym<decltype(set)>(FAKE_AMDSMI, "fake_amdsmi_set");
    residency = fake_sym<decltype(residency)>(FAKE_AMDSMI, "fake_amdsmi_set_residency");
    set_version(26, 1, 0, 0);
    set(2100, kNa16, 750, kNa16, 0);
    residency(kNa64, kNa64, kNa64, kNa64, kNa64, kNa64);
  }
  void TearDown() override { unsetenv("FABENCH_AMDSMI_LIB"); }
  std::shared_ptr<ClockSource> open() {
    std::string why;
    auto s = open_amdsmi(pci, &why);
    EXPECT_TRUE(s) << why;
    return s;
  }
};

TEST_F(NvmlClockSource, ReadsTheSmClockBoardPowerAndClockEventReasons) {
  std::string why;
  auto s = open_nvml(pci, &why);
  ASSERT_TRUE(s) << why;
  EXPECT_EQ(s->name(), "nvml");
  set(1755, 612500, 0);
  auto r = s->read();
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->mhz, 1755);
  EXPECT_DOUBLE_EQ(r->power_w, 612.5);
  EXPECT_EQ(r->reasons, 0u);
}

// NVML's nvmlClocksEventReasons bits (nvml.h): idle 0x1, application clocks 0x2, SW power cap 0x4,
// HW slowdown 0x8, sync boost 0x10, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80, display 0x100.
TEST_F(NvmlClockSource, MapsThrottlingReasonsAndIgnoresTheOthers) {
  auto s = open_nvml(pci, nullptr);
  ASSERT_TRUE(s);
  const std::pair<unsigned long long, unsigned> cases[] = {
      {0x4, kThrottlePowerCap},   {0x8, kThrottleHwSlowdown},  {0x20, kThrottleSwThermal},
      {0x40, kThrottleHwThermal}, {0x80, kThrottlePowerBrake}, {0x1 | 0x2 | 0x10 | 0x100, 0},
      {0x4 | 0x20 | 0x1, kThrottlePowerCap | kThrottleSwThermal}};
  for (const auto& [nvml, ours] : cases) {
    set(1200, 700000, nvml);
    auto r = s->read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->reasons, ours) << std::hex << "NVML reasons 0x" << nvml;
  }
}

TEST_F(NvmlClockSource, AnotherPciAddressGivesNoReaderAndSaysWhichAddress) {
  std::string why;
  EXPECT_FALSE(open_nvml({0, 0x3c, 0}, &why));
  EXPECT_NE(why.find("00000000:3c:00.0"), std::string::npos) << why;
}

TEST_F(NvmlClockSource, AMissingLibraryOrClockSymbolGivesNoReaderAndSaysWhy) {
  std::string why;
  setenv("FABENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  EXPECT_FALSE(open_nvml(pci, &why));
  EXPECT_NE(why.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << why;
  why.clear();
  setenv("FABENCH_NVML_LIB", FAKE_NVML_NO_CLOCK, 1);
  EXPECT_FALSE(open_nvml(pci, &why));
  EXPECT_NE(why.find(FAKE_NVML_NO_CLOCK), std::string::npos) << why;
  EXPECT_NE(why.find("clock query"), std::string::npos) << why;
}

TEST_F(AmdSmiClockSource, ReadsTheGfxClockAndSocketPowerAndInitialisesForGpusOnly) {
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name(), "amdsmi");
  auto init_flags = fake_sym<uint64_t (*)()>(FAKE_AMDSMI, "fake_amdsmi_init_flags");
  EXPECT_EQ(init_flags(), 2u) << "AMDSMI_INIT_AMD_GPUS";
  set(1650, kNa16, 280, kNa16, 0);  // Navi / MI200: average_socket_power only
  auto r = s->read();
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->mhz, 1650);
  EXPECT_DOUBLE_EQ(r->power_w, 280);
  EXPECT_EQ(r->reasons, 0u);
  set(2100, kNa16, kNa16, 690, kNa64);  // MI300: current_socket_power, no indep_throttle_status
  r = s->read();
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->power_w, 690);
  EXPECT_EQ(r->reasons, 0u);
  set(2100, kNa16, kNa16, kNa16, 0);
  r = s->read();
  ASSERT_TRUE(r);
  EXPECT_LT(r->power_w, 0) << "no power field: not read";
  set(kNa16, 1980, kNa16, kNa16, 0);
  r = s->read();
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->mhz, 1980) << "no current clock: the average one";
  set(kNa16, kNa16, 300, kNa16, 0);
  EXPECT_FALSE(s->read()) << "no clock at all: no reading";
}

// indep_throttle_status bits, from linux's amdgpu_smu.h SMU_THROTTLER_*_BIT (an independent copy of
// the numbers: PPT0 0, SPL 4, TDC_GFX 16, EDC_GFX 22, TEMP_EDGE 35, TEMP_HOTSPOT 36, TEMP_VR_GFX 38,
// VRHOT0 44, PROCHOT_CPU 46, PROCHOT_GFX 47, PPM 56, FIT 57).
TEST_F(AmdSmiClockSource, MapsIndependentThrottleBitsToFaBenchReasons) {
  auto s = open();
  ASSERT_TRUE(s);
  const std::pair<uint64_t, unsigned> cases[] = {{1ull << 0, kThrottlePowerCap},
                                                 {1ull << 4, kThrottlePowerCap},
                                                 {1ull << 56, kThrottlePowerCap},
                                                 {1ull << 16, kThrottleCurrent},
                                                 {1ull << 22, kThrottleCurrent},
                                                 {1ull << 35, kThrottleSwThermal},
                                                 {1ull << 36, kThrottleSwThermal},
                                                 {1ull << 38, kThrottleSwThermal},
                                                 {1ull << 44, kThrottleSwThermal},
                                                 {1ull << 46, kThrottleHwSlowdown},
                                                 {1ull << 47, kThrottleHwSlowdown},
                                                 {1ull << 57, 0},
                                                 {(1ull << 1) | (1ull << 17) | (1ull << 34) | (1ull << 47),
                                                  kThrottlePowerCap | kThrottleCurrent | kThrottleSwThermal |
                                                      kThrottleHwSlowdown}};
  for (const auto& [indep, ours] : cases) {
    set(1500, kNa16, 300, kNa16, indep);
    auto r = s->read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->reasons, ours) << std::hex << "indep_throttle_status 0x" << indep;
  }
}

// MI300 (metrics v1.6+): accumulation_counter counts firmware samples and each residency counts those
// under its limit; a reading is throttled by the limits whose residency grew since the last firmware
// sample, the baseline being the one read when the reader opened.
TEST_F(AmdSmiClockSource, Mi300ResidencyCountersThrottleTheReadingsWhereTheyGrew) {
  residency(1000, 7, 40, 3, 0, 2);
  auto s = open();
  ASSERT_TRUE(s);
  set(2100, kNa16, kNa16, 700, kNa64);
  auto r = s->read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reasons, 0u) << "nothing grew since the baseline";
  residency(1100, 7, 90, 3, 0, 2);  // ppt (PVIOL) grew
  EXPECT_EQ(s->read()->reasons, unsigned(kThrottlePowerCap));
  EXPECT_EQ(s->read()->reasons, unsigned(kThrottlePowerCap)) << "same firmware sample: same verdict";
  residency(1200, 8, 90, 3, 1, 2);  // prochot and VR thermal grew, ppt did not
  EXPECT_EQ(s->read()->reasons, unsigned(kThrottleHwSlowdown | kThrottleSwThermal));
  residency(1300, 8, 90, 4, 1, 5);  // socket and HBM thermal
  EXPECT_EQ(s->read()->reasons, unsigned(kThrottleSwThermal));
  residency(1400, 8, 90, 4, 1, 5);
  EXPECT_EQ(s->read()->reasons, 0u);
  residency(10, 0, 0, 0, 0, 0);  // counters reset: a new baseline, not a throttle
  EXPECT_EQ(s->read()->reasons, 0u);
  residency(20, 0, 5, 0, 0, 0);
  EXPECT_EQ(s->read()->reasons, unsigned(kThrottlePowerCap));
}

// The reader outlives a record: growth over an idle gap (here 0.6 s, past the reader's 0.5 s) is not
// blamed on the next reading, which takes a new baseline; the firmware's next sample is judged again.
TEST_F(AmdSmiClockSource, Mi300ResidencyGrowthOverAnIdleGapIsNotBlamedOnTheNextReading) {
  residency(1000, 0, 0, 0, 0, 0);
  auto s = open();
  ASSERT_TRUE(s);
  set(2100, kNa16, kNa16, 700, kNa64);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  residency(5000, 0, 900, 0, 0, 0);
  EXPECT_EQ(s->read()->reasons, 0u);
  residency(5100, 0, 950, 0, 0, 0);
  EXPECT_EQ(s->read()->reasons, unsigned(kThrottlePowerCap));
}

// Lib 24.6 (ROCm 6.2) has no residency counters in its struct: bytes past its end are never read,
// whatever they hold; 24.7 (ROCm 6.3, the old {year, major, ...} version layout) has them.
TEST_F(AmdSmiClockSource, ResidencyCountersAreReadOnlyFromLibrariesWhoseStructHasThem) {
  for (const auto& [major, has] : {std::pair<uint32_t, bool>{6, false}, {7, true}}) {
    set_version(24, major, 0, 1);
    residency(1000, 0, 0, 0, 0, 0);
    auto s = open();
    ASSERT_TRUE(s);
    residency(1100, 0, 50, 0, 0, 0);
    EXPECT_EQ(s->read()->reasons, has ? unsigned(kThrottlePowerCap) : 0u) << "lib 24." << major;
  }
}

TEST_F(AmdSmiClockSource, LibraryVersionsWhoseLayoutWasNotCheckedAreRefusedByName) {
  for (const auto& [a, b, has_year, ok] : {std::tuple<uint32_t, uint32_t, int, bool>{23, 4, 1, true},
                                           {24, 5, 1, true},
                                           {25, 3, 0, true},
                                           {26, 2, 0, true},
                                           {24, 8, 1, false},
                                           {23, 3, 1, false},
                                           {27, 0, 0, false},
                                           {22, 9, 1, false}}) {
    set_version(a, b, 0, has_year);
    std::string why;
    auto s = open_amdsmi(pci, &why);
    EXPECT_EQ(bool(s), ok) << a << "." << b << ": " << why;
    if (!ok) {
      EXPECT_NE(why.find(std::to_string(a) + "." + std::to_string(b) + ".0"), std::string::npos) << why;
    }
  }
}

TEST_F(AmdSmiClockSource, AnotherPciAddressGivesNoReaderAndSaysWhichAddress) {
  std::string why;
  EXPECT_FALSE(open_amdsmi({0, 0xc2, 0}, &why));
  EXPECT_NE(why.find("0000:c2:00.0"), std::string::npos) << why;
  EXPECT_FALSE(open_amdsmi({1, 0xc1, 0}, &why));
  EXPECT_NE(why.find("0001:c1:00.0"), std::string::npos) << why;
}

TEST_F(AmdSmiClockSource, AMissingLibraryOrSymbolGivesNoReaderAndNamesIt) {
  std::string why;
  setenv("FABENCH_AMDSMI_LIB", "/nonexistent/libamd_smi.so", 1);
  EXPECT_FALSE(open_amdsmi(pci, &why));
  EXPECT_NE(why.find("/nonexistent/libamd_smi.so"), std::string::npos) << why;
  setenv("FABENCH_AMDSMI_LIB", FAKE_AMDSMI_NO_METRICS, 1);
  EXPECT_FALSE(open_amdsmi(pci, &why));
  EXPECT_NE(why.find("amdsmi_get_gpu_metrics_info"), std::string::npos) << why;
}

// amdsmi_shut_down is not reference counted in the library: it runs when the last reader closes.
TEST_F(AmdSmiClockSource, TheLibraryIsShutDownWhenTheLastReaderCloses) {
  auto initialised = fake_sym<int (*)()>(FAKE_AMDSMI, "fake_amdsmi_initialised");
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  a.reset();
  EXPECT_EQ(initialised(), 1);
  ASSERT_TRUE(b->read());
  b.reset();
  EXPECT_EQ(initialised(), 0);
}

// The whole loop: the fake NVML device runs at 1350 MHz under the SW power cap; each sample sleeps
// past a poll so that readings fall inside the samples.
TEST_F(NvmlClockSource, MeasureTimeRecordsTheFakesClockThrottlingAndCycles) {
  set(1350, 450000, 0x4);
  TimingPolicy pol;
  pol.warmup = 0;
  pol.min_samples = pol.max_samples = 5;
  pol.time_cap_s = 10;
  pol.time_limit_s = 10;
  pol.clock_poll_ms = 2;
  pol.clocks = open_nvml(pci, nullptr);
  ASSERT_TRUE(pol.clocks);
  const std::vector<double> ms = {1.0, 1.4, 0.9, 1.1, 1.3};
  size_t i = 0;
  const TimingStats st = measure_time(pol, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(6));
    return ms[i++ % ms.size()];
  });
  ASSERT_EQ(st.samples, 5);
  ASSERT_TRUE(st.clocks);
  EXPECT_EQ(st.clocks->source, "nvml");
  EXPECT_GE(st.clocks->readings, 5);
  EXPECT_DOUBLE_EQ(st.clocks->mhz_min, 1350);
  EXPECT_DOUBLE_EQ(st.clocks->mhz_median, 1350);
  EXPECT_DOUBLE_EQ(st.clocks->power_w_max, 450);
  EXPECT_EQ(st.clocks->throttled_samples, 5);
  EXPECT_EQ(st.clocks->throttle_reasons, "sw_power_cap");
  EXPECT_NEAR(st.clocks->cycles_median, 1.1 * 1350 * 1e3, 1e-6);  // median ms 1.1
}

// --isolate: the parent opens the device's reader first and warns why none opens; its children, told
// so, log the same reason at debug level. A device without a PCI address opens no reader anywhere.
TEST(ClockSourceFor, WarnsOnceADeviceAndOnlyAtDebugLevelWhereTheParentWarned) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("ring", ring));
  spdlog::set_level(spdlog::level::debug);
  auto facts = [](int bus) {
    DeviceFacts d;
    d.gpu = true, d.arch = "sm_90", d.name = "GPU " + std::to_string(bus), d.pci.bus = -1, d.pci.device = bus;
    return d;
  };
  auto levels = [&ring] {
    std::vector<spdlog::level::level_enum> out;
    for (const auto& m : ring->last_raw()) out.push_back(m.level);
    return out;
  };
  EXPECT_FALSE(clock_source_for(facts(1)));
  EXPECT_FALSE(clock_source_for(facts(1)));  // cached: no second line
  ASSERT_EQ(levels(), std::vector<spdlog::level::level_enum>{spdlog::level::warn});
  EXPECT_NE(ring->last_formatted().back().find("the runtime gave no PCI address"), std::string::npos);
  clock_reasons_logged_elsewhere();
  EXPECT_FALSE(clock_source_for(facts(2)));
  EXPECT_EQ(levels(), (std::vector<spdlog::level::level_enum>{spdlog::level::warn, spdlog::level::debug}));
  spdlog::set_default_logger(previous);
}
