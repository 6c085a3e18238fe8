// Per-arch rates, the datasheet rows, and the peaks computed from a device. Peaks are what the
// silicon issues, not what a kernel reaches: on sm_90 only mma's wgmma kernel (90a builds, D 64 and
// 128) uses the instructions the 4096 FLOP/clk/SM assume; mma.sync paths top out well under it.
// Clock: NVIDIA's runtime reports the max boost clock (H100 SXM: 1980 MHz) while NVIDIA rates the
// tensor peak at a lower one (989 TFLOP/s = 132 x 1830 MHz x 4096), so on a device that is a row's
// SKU the row's rated clock is used and %peak reads against the figure the vendor publishes; AMD
// reports its rated peak engine clock (MI300X: 2100 MHz), the same number.
// Memory: bytes/s = bus bits / 8 x reported memory clock x transfers per clock. NVIDIA reports half
// the pin rate for HBM and GDDR alike (H100 SXM: 2619 MHz, HBM3 at 5.24 Gb/s a pin): 2. AMD's HBM2e
// (MI250X: 1600 MHz, 3.2 Gb/s) 2; its HBM3/3E reports a quarter of the pin rate (MI300A's peak MCLK
// is 1300 MHz for 5.2 Gb/s: https://github.com/ROCm/rocm_smi_lib/issues/209): 4; its GDDR6 a
// sixteenth (7900 XTX: 1250 MHz, 20 Gb/s): 16. The rows below re-derive every published figure
// within 2% (FLOPs) and 2.5% (bytes: vendors round 8.19 TB/s down to "8 TB/s") in
// tests/harness/check/test_peaks.cpp. Bus widths are what the runtime reports, not stacks x 1024:
// a lent H200 reported 6016 bits (six HBM3E stacks are 6144), 3201 MHz and 132 SMs (2026-11-28,
// `fa-bench info`), and 6016 x 3201 x 2 is its datasheet's 4.8 TB/s. The MI325X's 1500 and the
// MI355X's 2000 MHz memory clocks are their HBM3E pin rates (6.0, 8.0 Gb/s) over 4.
// Sources: NVIDIA https://www.nvidia.com/en-us/data-center/h100/ (SXM),
// https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet (H100 PCIe: its
// 756 TFLOP/s is 114 SMs at 1620 MHz), https://www.nvidia.com/en-us/data-center/h200/,
// https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf;
// AMD https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (and mi300a.html,
// mi325x.html), https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html,
// https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html (220 CUs, 383 TFLOP/s:
// one GCD is half), the RX 7900 XTX and RX 9070 XT pages (harness/device_model.cpp; the 9070 XT's
// dense matrix figures are its "AI TOPS" (INT4, sparse) / 4 for FP8, / 8 for fp16).
// scripts/plot.py reads the rows of kDatasheet from this file for its ridge point: keep one row a line.
#include "harness/check/peaks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace fa {
namespace {

const ArchRate kRates[] = {
    {"sm_80", 2048, 0, 2},
    {"sm_89", 1024, 2048, 2},  // L40S-class (GeForce halves fp32-accumulate rates)
    {"sm_90", 4096, 8192, 2},
    {"gfx90a", 1024, 0, 2},
    {"gfx942", 2048, 4096, 4},
    {"gfx950", 4096, 8192, 4},
    {"gfx1100", 512, 0, 16},
    {"gfx1101", 512, 0, 16},
    {"gfx1102", 512, 0, 16},
    {"gfx1200", 1024, 2048, 16},
    {"gfx1201", 1024, 2048, 16},
};

// arch, part, units, clock MHz, dense 16-bit TFLOP/s, dense FP8 TFLOP/s, bus bits, memory clock MHz, GB/s
const std::vector<DatasheetRow> kDatasheet = {
    {"sm_90", "H100 SXM", 132, 1830, 989.0, 1979.0, 5120, 2619, 3350.0},
    {"sm_90", "H100 PCIe", 114, 1620, 756.0, 1513.0, 5120, 1593, 2000.0},
    {"sm_90", "H200", 132, 1830, 989.0, 1979.0, 6016, 3201, 4800.0},
    {"sm_80", "A100 SXM", 108, 1410, 312.0, 0.0, 5120, 1593, 2039.0},
    {"gfx942", "MI300X", 304, 2100, 1307.4, 2614.9, 8192, 1300, 5300.0},
    {"gfx942", "MI300A", 228, 2100, 980.6, 1961.2, 8192, 1300, 5300.0},
    {"gfx942", "MI325X", 304, 2100, 1307.4, 2614.9, 8192, 1500, 6000.0},
    {"gfx950", "MI355X", 256, 2400, 2516.6, 5033.2, 8192, 2000, 8000.0},
    {"gfx90a", "MI250X (one GCD)", 110, 1700, 191.5, 0.0, 4096, 1600, 1638.0},
    {"gfx1100", "RX 7900 XTX", 96, 2500, 122.8, 0.0, 384, 1250, 960.0},
    {"gfx1201", "RX 9070 XT", 64, 2970, 194.7, 389.3, 256, 1250, 640.0},
};

std::string base_arch(const std::string& arch) { return arch.substr(0, arch.find(':')); }
const char* unit_name(const std::string& arch) { return arch.rfind("sm_", 0) == 0 ? "SM" : "CU"; }

}  // namespace

PeakClass peak_class(DType t) { return is_fp8(t) ? PeakClass::fp8 : PeakClass::bit16; }
const char* peak_class_name(PeakClass c) { return c == PeakClass::fp8 ? "FP8" : "16-bit"; }

const ArchRate* arch_rate(const std::string& arch) {
  const std::string base = base_arch(arch);
  for (const ArchRate& r : kRates)
    if (base == r.arch) return &r;
  return nullptr;
}

const std::vector<DatasheetRow>& datasheet_rows() { return kDatasheet; }

const DatasheetRow* datasheet_row(const DeviceFacts& d) {
  const std::string base = base_arch(d.arch);
  const DatasheetRow* best = nullptr;
  for (const DatasheetRow& r : kDatasheet) {
    if (base != r.arch || d.units != r.units || (d.mem_bus_bits && d.mem_bus_bits != r.bus_bits)) continue;
    if (!best || std::abs(r.mem_clock_mhz - d.mem_clock_mhz) < std::abs(best->mem_clock_mhz - d.mem_clock_mhz)) best = &r;
  }
  return best;
}

double tflops_at(int units, int clock_mhz, int flop_per_clock) { return double(units) * clock_mhz * 1e6 * flop_per_clock / 1e12; }
double gbps_at(int bus_bits, int mem_clock_mhz, int transfers_per_clock) {
  return bus_bits / 8.0 * mem_clock_mhz * 1e6 * transfers_per_clock / 1e9;
}

std::optional<Peak> device_peak(const DeviceFacts& d, PeakClass c) {
  const ArchRate* rate = d.gpu ? arch_rate(d.arch) : nullptr;
  if (!rate || d.units <= 0) return std::nullopt;
  const DatasheetRow* row = datasheet_row(d);
  const int clock = row ? row->clock_mhz : d.sm_clock_mhz;
  if (clock <= 0) return std::nullopt;
  const bool fp8 = c == PeakClass::fp8 && rate->flop8 > 0;
  const int flop = fp8 ? rate->flop8 : rate->flop16;
  Peak p;
  p.tflops = tflops_at(d.units, clock, flop);
  const std::string clock_note =
      row ? fmt::format(" ({} datasheet clock; the device reports {} MHz)", row->part, d.sm_clock_mhz) : "";
  p.tflops_from = fmt::format("computed: {} {}s x {} MHz{} x {} {} FLOP/clk/{}{}", d.units, unit_name(rate->arch), clock,
                              clock_note, flop, fp8 ? "FP8" : "16-bit", unit_name(rate->arch),
                              c == PeakClass::fp8 && !fp8 ? fmt::format(" ({} has no FP8 rate: the 16-bit one)", rate->arch) : "");
  if (d.mem_bus_bits > 0 && d.mem_clock_mhz > 0) {
    p.gbps = gbps_at(d.mem_bus_bits, d.mem_clock_mhz, rate->mem_factor);
    p.gbps_from = fmt::format("computed: {}-bit x {} MHz x {}", d.mem_bus_bits, d.mem_clock_mhz, rate->mem_factor);
  } else if (row) {
    p.gbps = row->gbps;
    p.gbps_from = fmt::format("datasheet row: {}", row->part);
  } else {
    return std::nullopt;
  }
  return p;
}

std::vector<std::string> peak_report(const DeviceFacts& d) {
  std::vector<std::string> lines;
  const auto p16 = device_peak(d, PeakClass::bit16);
  if (!p16) return lines;
  const ArchRate* rate = arch_rate(d.arch);
  lines.push_back(fmt::format("16-bit {:.1f} TFLOP/s  {}", p16->tflops, p16->tflops_from));
  const auto p8 = device_peak(d, PeakClass::fp8);
  if (rate->flop8 > 0) lines.push_back(fmt::format("FP8    {:.1f} TFLOP/s  {}", p8->tflops, p8->tflops_from));
  lines.push_back(fmt::format("memory {:.0f} GB/s  {}", p16->gbps, p16->gbps_from));
  if (const DatasheetRow* row = datasheet_row(d)) {
    auto off = [](double got, double want) { return fmt::format("{:+.1f}%", 100.0 * (got / want - 1.0)); };
    lines.push_back(fmt::format("datasheet row: {}: {:g} TFLOP/s 16-bit ({}){}, {:g} GB/s ({})", row->part, row->tflops16,
                                off(p16->tflops, row->tflops16),
                                row->tflops8 > 0 ? fmt::format(", {:g} FP8 ({})", row->tflops8, off(p8->tflops, row->tflops8)) : "",
                                row->gbps, off(p16->gbps, row->gbps)));
  } else {
    lines.push_back(fmt::format("datasheet row: none for {} with {} units (computed from the device's own clocks)", d.arch, d.units));
  }
  return lines;
}

std::optional<Roofline> roofline(double flops, double bytes, double measured_ms, const std::optional<Peak>& peak) {
  if (!peak || !(measured_ms > 0) || !(peak->tflops > 0) || !(peak->gbps > 0)) return std::nullopt;
  const double compute_s = flops / (peak->tflops * 1e12), memory_s = bytes / (peak->gbps * 1e9);
  return Roofline{compute_s >= memory_s ? "compute" : "memory",
                  100.0 * std::max(compute_s, memory_s) / (measured_ms * 1e-3)};
}

}  // namespace fa
