/* A stand-in for libamd_smi.so (harness/run/clock_amdsmi.cpp loads it through FABENCH_AMDSMI_LIB): the
 * AMD SMI calls the reader makes, answering for one GPU at PCI 0000:c1:00.0 only, with the library
 * version, GFX clock, socket power, indep_throttle_status and MI300-style residency counters the test
 * sets through the fake_amdsmi_* setters (test_clock_source.cpp dlopens the same file and shares this
 * state). The metrics struct is transcribed from amdsmi.h (lib 26.1) field by field, its offsets checked
 * against those offsetof gives on the real headers. FAKE_NO_METRICS leaves out amdsmi_get_gpu_metrics_info. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int amdsmi_status_t; /* SUCCESS 0, INVAL 1, NOT_FOUND 31, NOT_INIT 32 */
typedef union {
  struct {
    uint64_t function_number : 3;
    uint64_t device_number : 5;
    uint64_t bus_number : 8;
    uint64_t domain_number : 48;
  } f;
  uint64_t as_uint;
} amdsmi_bdf_t;

/* amdsmi_gpu_metrics_t of lib 26.1: the fields up to the residencies, then the rest as bytes. */
typedef struct {
  uint16_t structure_size;
  uint8_t format_revision, content_revision;
  uint16_t temperature_edge, temperature_hotspot, temperature_mem, temperature_vrgfx, temperature_vrsoc,
      temperature_vrmem;
  uint16_t average_gfx_activity, average_umc_activity, average_mm_activity;
  uint16_t average_socket_power;
  uint64_t energy_accumulator;
  uint64_t system_clock_counter;
  uint16_t average_gfxclk_frequency, average_socclk_frequency, average_uclk_frequency, average_vclk0_frequency,
      average_dclk0_frequency, average_vclk1_frequency, average_dclk1_frequency;
  uint16_t current_gfxclk, current_socclk, current_uclk, current_vclk0, current_dclk0, current_vclk1, current_dclk1;
  uint32_t throttle_status;
  uint16_t current_fan_speed, pcie_link_width, pcie_link_speed;
  uint32_t gfx_activity_acc, mem_activity_acc;
  uint16_t temperature_hbm[4];
  uint64_t firmware_timestamp;
  uint16_t voltage_soc, voltage_gfx, voltage_mem;
  uint64_t indep_throttle_status;
  uint16_t current_socket_power;
  uint16_t vcn_activity[4];
  uint32_t gfxclk_lock_status;
  uint16_t xgmi_link_width, xgmi_link_speed;
  uint64_t pcie_bandwidth_acc, pcie_bandwidth_inst, pcie_l0_to_recov_count_acc, pcie_replay_count_acc,
      pcie_replay_rover_count_acc;
  uint64_t xgmi_read_data_acc[8], xgmi_write_data_acc[8];
  uint16_t current_gfxclks[8], current_socclks[4], current_vclk0s[4], current_dclk0s[4];
  uint16_t jpeg_activity[32];
  uint32_t pcie_nak_sent_count_acc, pcie_nak_rcvd_count_acc;
  uint64_t accumulation_counter, prochot_residency_acc, ppt_residency_acc, socket_thm_residency_acc,
      vr_thm_residency_acc, hbm_thm_residency_acc;
  unsigned char rest[4544 - 472]; /* num_partition, xcp_stats[8], ...: sizeof is 4544 in lib 26.1 */
} metrics_t;
_Static_assert(offsetof(metrics_t, average_socket_power) == 22, "amdsmi.h layout");
_Static_assert(offsetof(metrics_t, average_gfxclk_frequency) == 40, "amdsmi.h layout");
_Static_assert(offsetof(metrics_t, current_gfxclk) == 54, "amdsmi.h layout");
_Static_assert(offsetof(metrics_t, indep_throttle_status) == 112, "amdsmi.h layout");
_Static_assert(offsetof(metrics_t, current_socket_power) == 120, "amdsmi.h layout");
_Static_assert(offsetof(metrics_t, accumulation_counter) == 424, "amdsmi.h layout");
_Static_assert(offsetof(metrics_t, hbm_thm_residency_acc) == 464, "amdsmi.h layout");
_Static_assert(sizeof(metrics_t) == 4544, "amdsmi.h layout");

static int device; /* the handle points here */
static int initialised;
static uint64_t init_flags;
static uint32_t version_words[3] = {26, 1, 0};
static int version_has_year;
static metrics_t state;

EXPORT void fake_amdsmi_set_version(uint32_t a, uint32_t b, uint32_t c, int has_year) {
  version_words[0] = a, version_words[1] = b, version_words[2] = c;
  version_has_year = has_year;
}
/* Fields set to their type's maximum read as "not supported", as the real library reports them. */
EXPORT void fake_amdsmi_set(uint16_t gfxclk, uint16_t average_gfxclk, uint16_t average_w, uint16_t current_w,
                            uint64_t indep) {
  state.current_gfxclk = gfxclk;
  state.average_gfxclk_frequency = average_gfxclk;
  state.average_socket_power = average_w;
  state.current_socket_power = current_w;
  state.indep_throttle_status = indep;
}
EXPORT void fake_amdsmi_set_residency(uint64_t acc, uint64_t prochot, uint64_t ppt, uint64_t socket, uint64_t vr,
                                      uint64_t hbm) {
  state.accumulation_counter = acc;
  state.prochot_residency_acc = prochot;
  state.ppt_residency_acc = ppt;
  state.socket_thm_residency_acc = socket;
  state.vr_thm_residency_acc = vr;
  state.hbm_thm_residency_acc = hbm;
}
EXPORT uint64_t fake_amdsmi_init_flags(void) { return init_flags; }
EXPORT int fake_amdsmi_initialised(void) { return initialised; }

EXPORT amdsmi_status_t amdsmi_init(uint64_t flags) {
  init_flags = flags;
  initialised = 1;
  return 0;
}
EXPORT amdsmi_status_t amdsmi_shut_down(void) {
  initialised = 0;
  return 0;
}
/* amdsmi_version_t: {year, major, minor, release, build} through lib 24.x, {major, minor, release,
 * build} from 25. */
EXPORT amdsmi_status_t amdsmi_get_lib_version(void* out) {
  if (!initialised) return 32;
  uint32_t* w = (uint32_t*)out;
  if (version_has_year) {
    w[0] = version_words[0], w[1] = version_words[1], w[2] = version_words[2], w[3] = 0;
    *(const char**)(w + 4) = "fake";
  } else {
    w[0] = version_words[0], w[1] = version_words[1], w[2] = version_words[2];
    *(const char**)(w + 4) = "fake"; /* after 4 bytes of padding, as in the real struct */
  }
  return 0;
}
EXPORT amdsmi_status_t amdsmi_get_processor_handle_from_bdf(amdsmi_bdf_t bdf, void** handle) {
  if (!initialised) return 32;
  if (bdf.f.domain_number != 0 || bdf.f.bus_number != 0xc1 || bdf.f.device_number != 0 || bdf.f.function_number != 0)
    return 31;
  *handle = &device;
  return 0;
}
#ifndef FAKE_NO_METRICS
EXPORT amdsmi_status_t amdsmi_get_gpu_metrics_info(void* handle, metrics_t* out) {
  if (!initialised) return 32;
  if (handle != &device) return 1;
  memcpy(out, &state, sizeof state);
  return 0;
}
#endif

/* Every field starts unsupported, as on a device that reports none of them. */
__attribute__((constructor)) static void start_unsupported(void) { memset(&state, 0xff, sizeof state); }
