// The CPU paths as the registry sees them: gates and preparers for cpu-ref (the oracle, timed
// only) and cpu-flash (tiled online softmax with split-K). Both honour the CPU work budget.
#pragma once
#include "harness/path.hpp"

namespace fa {

std::optional<std::string> cpu_ref_supports(const Problem& p, int G, const GateContext& ctx);
std::unique_ptr<Execution> cpu_ref_prepare(const Problem& p, const HostInputs& in, int G, const GateContext& ctx);

std::optional<std::string> cpu_flash_supports(const Problem& p, int G, const GateContext& ctx);
std::unique_ptr<Execution> cpu_flash_prepare(const Problem& p, const HostInputs& in, int G, const GateContext& ctx);

}  // namespace fa
