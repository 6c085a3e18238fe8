// libFuzzer target: the --filter expression parser and evaluator. An expression may be rejected,
// but only with InputError; one that parses is evaluated on two problems.
#include <cstdint>
#include <string>

#include "harness/sweep/filter.hpp"
#include "harness/sweep/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fa::Filter keep(std::string(reinterpret_cast<const char*>(data), size));
    fa::Problem p;
    p.name = "enc";
    keep(p);
    p.causal = true, p.dtype = fa::DType::bf16, p.S = 4096, p.scale = 0.125;
    keep(p);
  } catch (const fa::InputError&) {
  }
  return 0;
}
