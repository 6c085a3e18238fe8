// The GPU reference of a problem: O, LSE and per-row error bounds of every query row
// (kernels/runtime/gpu_reference.hip derives the bound). Registered with set_gpu_reference
// (harness/check/full_check.hpp) in cuda and hip builds; run_record calls it through that hook.
#pragma once
#include "harness/check/full_check.hpp"

namespace fa::gpu {

GpuReferenceResult compute_gpu_reference(const Problem& p, const HostInputs& in, const GateContext& ctx,
                                         int s_acc_bits);

}  // namespace fa::gpu
