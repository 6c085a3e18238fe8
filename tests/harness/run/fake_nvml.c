/* A stand-in for libnvidia-ml.so.1 (harness/run/clock_nvml.cpp loads it through FABENCH_NVML_LIB):
 * the NVML calls the reader makes, answering for one GPU at PCI 00000000:3b:00.0 only, with the
 * clock, power and clock-event reasons the test sets through fake_nvml_set (test_clock_source.cpp
 * dlopens the same file, so it shares this library's state). FAKE_NO_CLOCK builds it without
 * nvmlDeviceGetClockInfo (the missing-symbol case). Built by tests/CMakeLists.txt with FABENCH_TESTS. */
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t; /* NVML_SUCCESS 0, NVML_ERROR_INVALID_ARGUMENT 2, NVML_ERROR_NOT_FOUND 6 */
static int device; /* the handle points here */
static int initialised;
static unsigned sm_mhz = 1410, power_mw = 300000;
static unsigned long long reasons;

EXPORT void fake_nvml_set(unsigned mhz, unsigned mw, unsigned long long why) {
  sm_mhz = mhz;
  power_mw = mw;
  reasons = why;
}
EXPORT int fake_nvml_initialised(void) { return initialised; }

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  initialised = 1;
  return 0;
}
EXPORT nvmlReturn_t nvmlShutdown(void) {
  initialised = 0;
  return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** dev) {
  if (!initialised) return 1; /* NVML_ERROR_UNINITIALIZED */
  if (strcmp(bus, "00000000:3b:00.0") != 0) return 6;
  *dev = &device;
  return 0;
}
#ifndef FAKE_NO_CLOCK
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(void* dev, int type, unsigned* mhz) {
  if (dev != &device || type != 1) return 2; /* NVML_CLOCK_SM is 1 */
  *mhz = sm_mhz;
  return 0;
}
#endif
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(void* dev, unsigned* mw) {
  if (dev != &device) return 2;
  *mw = power_mw;
  return 0;
}
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void* dev, unsigned long long* why) {
  if (dev != &device) return 2;
  *why = reasons;
  return 0;
}
