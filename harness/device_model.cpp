// The last-level cache table and the cold flush size (harness/device_model.hpp).
// Sources, one per family of rows (checked 2026-11):
//   CDNA3 (MI300X, MI300A, MI325X: 256 MB Infinity Cache in the IODs, in front of 8 HBM stacks):
//     https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/amd-cdna-3-white-paper.pdf
//     https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi300.html
//   CDNA4 (MI350X, MI355X: 256 MB Infinity Cache):
//     https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/amd-cdna-4-architecture-whitepaper.pdf
//   RDNA3 and RDNA4 (the "AMD Infinity Cache" line of each product page's specifications):
//     https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xtx.html (96 CUs, 96 MB)
//     https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xt.html (84 CUs, 80 MB)
//     https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900-gre.html (80 CUs, 64 MB)
//     https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7800-xt.html (gfx1101, 60 CUs, 64 MB)
//     https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7700-xt.html (gfx1101, 54 CUs, 48 MB)
//     https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7600.html (gfx1102, 32 CUs, 32 MB)
//     https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070xt.html (gfx1201, 64 CUs, 64 MB; the 9070's 56 CUs too)
//     https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9060xt.html (gfx1200, 32 CUs, 32 MB)
// A new row is one line of kLlc; keep rows one a line.
#include "harness/device_model.hpp"

#include <algorithm>

namespace fa {
namespace {

struct LlcRow {
  const char* arch;  // before any ':' feature suffix
  int units;         // CUs; 0: every part of the arch
  int mib;
};

constexpr size_t kMiB = size_t(1) << 20;

const LlcRow kLlc[] = {
    {"gfx942", 0, 256},    // MI300X (304 CUs), MI300A (228), MI325X (304)
    {"gfx950", 0, 256},    // MI350X, MI355X (256 CUs)
    {"gfx1100", 96, 96},   // RX 7900 XTX, PRO W7900
    {"gfx1100", 84, 80},   // RX 7900 XT
    {"gfx1100", 80, 64},   // RX 7900 GRE
    {"gfx1101", 60, 64},   // RX 7800 XT
    {"gfx1101", 54, 48},   // RX 7700 XT
    {"gfx1102", 32, 32},   // RX 7600
    {"gfx1200", 32, 32},   // RX 9060 XT
    {"gfx1201", 64, 64},   // RX 9070 XT
    {"gfx1201", 56, 64},   // RX 9070
};

}  // namespace

size_t llc_table_bytes(const std::string& arch, int units) {
  const std::string base = arch.substr(0, arch.find(':'));
  int exact = -1, largest = 0;
  for (const LlcRow& r : kLlc) {
    if (base != r.arch) continue;
    if (r.units == 0 || r.units == units) exact = r.mib;
    largest = std::max(largest, r.mib);
  }
  // A CU count the table does not list (a PRO or a cut-down part): the arch's largest row. A flush
  // too large costs a little time; one too small leaves K and V warm in the cache.
  return size_t(exact >= 0 ? exact : largest) * kMiB;
}

size_t llc_bytes(const DeviceFacts& d) { return d.llc_bytes ? d.llc_bytes : llc_table_bytes(d.arch, d.units); }

// Twice what the caches hold, so that a read stream leaves none of the timed problem's lines:
// LRU-like replacement needs more than one cache's worth of new lines to evict every old one.
// The 64 MB floor is the flush before this table existed; it covers a device that reports no L2
// and has no row (an unknown arch) with more than any NVIDIA L2 up to Hopper (H100: 50 MB) holds.
size_t cold_flush_bytes(const DeviceFacts& d) {
  return std::max(2 * (d.l2_bytes + llc_bytes(d)), kFlushFloorBytes);
}

}  // namespace fa
