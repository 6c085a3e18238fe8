// Noise-driven timing: warm-up, then samples until the relative spread (stddev / mean) is at or
// under the target, with at least min_samples whatever the cap says (the floor), or until the time
// cap (measured time only: cache flushes and launch overhead sit outside it) or max_samples; and,
// whatever the floor, at the wall-clock limit (flushes, launches and sync included, as nvbench's
// --timeout): without it a fast call whose samples stay noisy paid max_samples cold flushes (the
// CPU's 256 MB memset each: 20-30 s a record, most of the 2-core main job's minutes).
// Reports median, min, max, spread, the sample count, the mode (cold: caches flushed before each
// sample; hot: not), launches per sample (batch), what stopped the loop, and a note when the
// samples stayed noisier than the target or (max_samples under min_samples) fewer than min_samples.
// With a ClockSource (NVML, AMD SMI: harness/run/clock_source.hpp) a thread reads the device's clock,
// power and clock-event reasons every 10 ms while the samples run; each sample is joined to the
// readings taken during it (else the nearest one), which gives its clock, its cycles (ms x MHz)
// and whether it ran throttled (ClockStats).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fa {

enum class TimingMode { cold, hot };
inline const char* timing_mode_name(TimingMode m) { return m == TimingMode::cold ? "cold" : "hot"; }

// Why the clock was held down, as fa-bench names it on every vendor (NVML's clock-event reasons,
// AMD SMI's throttle status). Idle, application clocks, sync boost and display are not throttling.
enum ThrottleBit : unsigned {
  kThrottlePowerCap = 1,     // NVML SW power cap; AMD PPT (package power)
  kThrottleHwSlowdown = 2,   // NVML HW slowdown; AMD PROCHOT
  kThrottleSwThermal = 4,    // NVML SW thermal; AMD thermal limits (edge, hotspot, memory, VR)
  kThrottleHwThermal = 8,    // NVML HW thermal
  kThrottlePowerBrake = 16,  // NVML HW power brake
  kThrottleCurrent = 32,     // AMD TDC (current limit)
};
// "sw_power_cap|hw_slowdown" (the order of ThrottleBit); empty for 0.
std::string throttle_names(unsigned bits);

// One reading of the device: its SM (NVIDIA) / GFX (AMD) clock, board power (< 0: not read) and
// the ThrottleBits active, at steady-clock second `t`.
struct ClockReading {
  double t = 0;
  double mhz = 0;
  double power_w = -1;
  unsigned reasons = 0;
};

// A live clock reader for one device. read() may be called from several threads (one poller a
// timed record, the retry wait; under --devices each worker has its own device's reader), so a
// reader with state guards it.
class ClockSource {
 public:
  virtual ~ClockSource() = default;
  virtual std::string name() const = 0;  // "nvml", "amdsmi"
  virtual std::optional<ClockReading> read() = 0;  // t is filled by the caller; nullopt: no reading
};

// Clock columns of a record (schema 10): over the samples, each sample's clock being the mean of
// the readings taken during it, or the nearest reading when none was.
struct ClockStats {
  double mhz_min = 0, mhz_median = 0;
  double power_w_max = -1;       // < 0: the source reads no power
  double cycles_median = 0;      // median of each sample's ms x its MHz x 1e3
  int throttled_samples = 0;     // samples joined to a reading with a ThrottleBit
  std::string throttle_reasons;  // throttle_names of their union
  std::string source;            // the ClockSource's name
  int readings = 0;
};

// Joins samples (host windows [t0, t1] in steady seconds, and their ms) to readings (sorted by t).
// nullopt when there is no reading.
std::optional<ClockStats> clock_stats(const std::vector<std::pair<double, double>>& windows,
                                      const std::vector<double>& ms, const std::vector<ClockReading>& readings,
                                      const std::string& source);

struct TimingPolicy {
  int warmup = 1;
  int min_samples = 10;  // a floor: the cap never stops the loop below it
  int max_samples = 1000;
  double target_spread = 0.005;
  double time_cap_s = 0.5;  // measured seconds of samples for one record, once min_samples are in
  TimingMode mode = TimingMode::cold;
  double time_limit_s = 1.0;  // wall seconds of the sampling loop (warm-up excluded), floor or not
  // Test only (--plant-slowdown, FABENCH_TEST_PATHS=1): every timed call is made this fraction
  // slower by a real delay (harness/run/timed_run.hpp); 0: off.
  double planted_slowdown = 0;
  // Read during the samples when set (harness/run/clock_source.hpp picks one for a GPU record).
  std::shared_ptr<ClockSource> clocks;
  double clock_poll_ms = 10;  // the "one reading per sample or per 10 ms, whichever is rarer"
};

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0, spread = 0;
  int samples = 0;
  int batch = 1;  // launches per sample; each sample is the batch's time divided by it
  double total_ms = 0;  // every timed launch's time added up (retries included): the log's harness share
  std::string mode, stopped_by;  // stopped_by: spread | cap | max-samples | time-limit
  std::string note;              // "noisy: spread 3.1% > 0.5% after 10 samples (cap)"; empty when quiet
  std::optional<ClockStats> clocks;  // with a ClockSource that answered
};

// `sample` runs one timed sample and returns its milliseconds.
TimingStats measure_time(const TimingPolicy& policy, const std::function<double()>& sample);

}  // namespace fa
