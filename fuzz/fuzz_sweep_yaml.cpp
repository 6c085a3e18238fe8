// libFuzzer target: the YAML sweep loader (rows, grid, zip, defaults, thresholds). Any input may
// be rejected, but only with InputError; any other exception, crash or sanitizer report is a finding.
#include "fuzz_input_file.hpp"
#include "harness/sweep/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    fa::load_yaml_sweep(fa::fuzz::write_input(data, size, ".yaml"), fa::Overrides{});
  } catch (const fa::InputError&) {
  }
  return 0;
}
