// The live clock reader of a GPU record's device (harness/timing.hpp's ClockSource): NVML on NVIDIA,
// AMD SMI on AMD, each loaded at run time with dlopen, so no build depends on either library. The
// device is found by its PCI address (DeviceFacts::pci), not by index: NVML and AMD SMI number
// devices differently from a runtime under CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES.
// FABENCH_NVML_LIB / FABENCH_AMDSMI_LIB name another library file (the tests' fakes);
// FABENCH_CLOCKS=off reads none. Where no reader opens, records carry no clock columns and the
// log says why, once.
#pragma once
#include <dlfcn.h>

#include <memory>
#include <string>

#include "harness/path.hpp"
#include "harness/timing.hpp"

namespace fa {

// The readers' shared pieces: a library symbol as a typed function pointer (nullptr if absent), and
// a failed open that sets *why and returns false.
template <class F>
F library_symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}
inline bool open_failed(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

// nullptr, with *why set, when the library or the device cannot be opened.
std::shared_ptr<ClockSource> open_nvml(const DeviceFacts::Pci& pci, std::string* why);
std::shared_ptr<ClockSource> open_amdsmi(const DeviceFacts::Pci& pci, std::string* why);

// The reader for `d` (NVML for sm_* archs, AMD SMI for gfx*), opened once per device and process;
// nullptr without a GPU, and where none opens (logged once with the reason).
std::shared_ptr<ClockSource> clock_source_for(const DeviceFacts& d);
// From now on in this process, why no reader opened is logged at debug level, not as a warning: an
// --isolate child's parent has opened the same device's reader first and warned (runner.cpp), so
// a sweep of N isolated records says it once, not N + 1 times.
void clock_reasons_logged_elsewhere();

}  // namespace fa
