// Datasheet peaks per arch (dense bf16/fp16 matrix TFLOP/s, HBM GB/s) and the roofline bound of
// a timed record: roofline time = max(flops / peak_flops, bytes / peak_bw), the larger term names
// the bound (compute | memory), and %peak = roofline time / measured time. Unknown arch or a CPU
// path: no peak, the columns stay empty.
#pragma once
#include <optional>
#include <string>

namespace fa {

struct Peak {
  const char* arch;   // as DeviceFacts::arch reports it, before any ':' feature suffix
  const char* part;   // the product the numbers are from
  double tflops;      // dense fp16/bf16 matrix peak, no sparsity
  double gbps;        // memory bandwidth
};

// The row for an arch ("sm_90", "gfx942:sramecc+:xnack-"), if the table has one.
std::optional<Peak> peak_for(const std::string& arch);

struct Roofline {
  std::string bound;  // "compute" or "memory"
  double pct_peak;    // 100 * roofline time / measured time
};

std::optional<Roofline> roofline(double flops, double bytes, double measured_ms, const std::optional<Peak>& peak);

}  // namespace fa
