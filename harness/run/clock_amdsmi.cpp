// AMD SMI through dlopen: not written yet (helper "amdsmi" replaces this file).
#include "harness/run/clock_source.hpp"

namespace fa {

std::shared_ptr<ClockSource> open_amdsmi(const DeviceFacts::Pci&, std::string* why) {
  if (why) *why = "AMD SMI reader not built";
  return nullptr;
}

}  // namespace fa
