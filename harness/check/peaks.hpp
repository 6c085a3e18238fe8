// Peaks for %peak, per SKU, computed from the device: units (SMs/CUs) x clock x the arch's dense
// matrix FLOP per clock per unit for the record's dtype class (16-bit, FP8), and DRAM bus width x
// memory clock x the transfers per reported clock. Datasheet rows cross-check the rates (tests
// re-derive each row's figures from its units and clocks) and name the SKU and its rated clock.
// The roofline of a timed record: max(flops / peak, bytes / bandwidth) over the measured time.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/dtype.hpp"
#include "harness/path.hpp"

namespace fa {

// The matrix rate a problem's dtype runs at: FP8 inputs the FP8 rate where the arch has one; the
// rest (fp16, bf16, and fp32, which no path here puts through a matrix unit) the 16-bit rate.
enum class PeakClass { bit16, fp8 };
PeakClass peak_class(DType t);
const char* peak_class_name(PeakClass c);  // "16-bit", "FP8"

struct ArchRate {
  const char* arch;  // before any ':' feature suffix
  int flop16;        // dense fp16/bf16 matrix FLOP per clock per SM/CU (no sparsity)
  int flop8;         // dense FP8; 0: the arch has no FP8 matrix rate
  int mem_factor;    // DRAM transfers per clock the runtime reports (memoryClockRate)
};
const ArchRate* arch_rate(const std::string& arch);

// A product's published figures and the units and clocks they are rated at.
struct DatasheetRow {
  const char* arch;
  const char* part;
  int units, clock_mhz;     // SMs/CUs and the engine clock the FLOP figures assume
  double tflops16, tflops8; // dense; tflops8 0 where the part has no FP8 rate
  int bus_bits, mem_clock_mhz;  // mem_clock_mhz: as the runtime reports it
  double gbps;
};
const std::vector<DatasheetRow>& datasheet_rows();
// The row of the device's SKU: same arch, units and (where known) bus width, the closest memory clock.
const DatasheetRow* datasheet_row(const DeviceFacts& d);

double tflops_at(int units, int clock_mhz, int flop_per_clock);
double gbps_at(int bus_bits, int mem_clock_mhz, int transfers_per_clock);

struct Peak {
  double tflops = 0;        // of the class asked for
  double gbps = 0;
  std::string tflops_from;  // "computed: 132 SMs x 1830 MHz (H100 SXM datasheet clock; ...) x 4096 FLOP/clk/SM"
  std::string gbps_from;    // "computed: 5120-bit x 2619 MHz x 2" or "datasheet row: ..."
};

// The device's peak for a dtype class; none for a CPU, an arch without a rate, or a device that
// reports no clock and matches no row.
std::optional<Peak> device_peak(const DeviceFacts& d, PeakClass c);

// What `fa-bench info` prints of the peaks: a line a figure (16-bit, FP8 where the arch has it,
// memory), each with where it came from, then the matching datasheet row and how far the computed
// figures fall from it. Empty where device_peak has nothing.
std::vector<std::string> peak_report(const DeviceFacts& d);

struct Roofline {
  std::string bound;  // "compute" or "memory"
  double pct_peak;    // 100 * roofline time / measured time
};

std::optional<Roofline> roofline(double flops, double bytes, double measured_ms, const std::optional<Peak>& peak);

}  // namespace fa
