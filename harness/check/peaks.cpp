// The peak table. Datasheet numbers, not what a kernel can reach: on sm_90 only mma's wgmma kernel
// (90a builds, D 64 and 128) uses the instructions the 989 assumes; the mma.sync paths' realistic
// ceiling is well under it (FA2 on H100 reaches ~35-40%).
// scripts/plot.py reads the rows of kPeaks from this file for its ridge point: keep one row a line.
#include "harness/check/peaks.hpp"

#include <algorithm>

namespace fa {
namespace {

const Peak kPeaks[] = {
    {"sm_90", "H100 SXM", 989.0, 3350.0},
    {"sm_80", "A100 SXM", 312.0, 2039.0},
    {"gfx942", "MI300X", 1307.0, 5300.0},
    {"gfx90a", "MI250X (one GCD)", 191.5, 1638.0},
    {"gfx1100", "RX 7900 XTX", 123.0, 960.0},
};

}  // namespace

std::optional<Peak> peak_for(const std::string& arch) {
  const std::string base = arch.substr(0, arch.find(':'));
  for (const Peak& p : kPeaks)
    if (base == p.arch) return p;
  return std::nullopt;
}

std::optional<Roofline> roofline(double flops, double bytes, double measured_ms, const std::optional<Peak>& peak) {
  if (!peak || !(measured_ms > 0)) return std::nullopt;
  const double compute_s = flops / (peak->tflops * 1e12), memory_s = bytes / (peak->gbps * 1e9);
  return Roofline{compute_s >= memory_s ? "compute" : "memory",
                  100.0 * std::max(compute_s, memory_s) / (measured_ms * 1e-3)};
}

}  // namespace fa
