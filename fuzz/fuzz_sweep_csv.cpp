// libFuzzer target: the CSV sweep loader. Any input may be rejected, but only with InputError
// (file:line, field); any other exception, crash or sanitizer report is a finding.
#include "fuzz_input_file.hpp"
#include "harness/sweep/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    fa::load_csv_sweep(fa::fuzz::write_input(data, size, ".csv"), fa::Overrides{});
  } catch (const fa::InputError&) {
  }
  return 0;
}
