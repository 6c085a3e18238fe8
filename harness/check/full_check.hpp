// The full-output check: every query row of a GPU record against a GPU reference (O, LSE and a
// per-row error bound; kernels/runtime/gpu_reference.hip computes them), with the CPU fp64 oracle
// kept on its sampled rows as the check of the checker. The GPU reference registers itself in GPU
// builds (set_gpu_reference); without one (FABENCH_GPU=none) records keep the sampled check.
// Rule: |o - g| <= tol + eps_o(row) and |lse - g_lse| <= lse_tol + eps_lse(row), tol and lse_tol the
// verdict's (harness/check/tolerance.hpp), taken from the sampled rows; with FP8 scores added as the
// path declares (GpuReference::lse_acc), a row's LSE bound is also at least the LSE rule on its own
// gap, k |lse_acc - g_lse| + lse_atol; see full_check.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/path.hpp"
#include "harness/reference_result.hpp"

namespace fa {

struct GpuReference {
  std::vector<float> o;        // [B][H][S][D], rows in lse order ((b*H + h)*S + s)
  std::vector<float> lse;      // [B][H][S], natural log; -inf for fully masked rows
  std::vector<float> eps_o;    // [B][H][S]: bound on |o - exact| of every element of the row
  std::vector<float> eps_lse;  // [B][H][S]: bound on |lse - exact|
  // [B][H][S], where asked for (FP8, s_acc_bits > 0): the LSE of scores added as those tensor cores
  // add them (harness/fp8_accumulate.hpp's model), what the low-precision reference's LSE is on
  // the sampled rows; empty otherwise.
  std::vector<float> lse_acc;
};

// Computes the GPU reference of p from in, or says why it cannot (then the caller falls back to the
// sampled CPU check and logs the reason).
struct GpuReferenceResult {
  std::optional<GpuReference> ref;
  std::string not_taken;  // why there is none
};
// s_acc_bits > 0 (FP8 problems): lse_acc too, for a path that declares that accumulation.
using GpuReferenceFn = GpuReferenceResult (*)(const Problem& p, const HostInputs& in, const GateContext& ctx,
                                              int s_acc_bits);
GpuReferenceFn gpu_reference_fn();           // null in a build without GPUs
bool set_gpu_reference(GpuReferenceFn fn);   // called once, by the GPU build's static registration

// The check of the checker: the GPU reference agrees with the fp64 oracle on the oracle's rows
// within its own bound (plus the oracle's fp64 error, 1e-9 relative). Empty, or the first
// disagreeing element named by (b, h, s, d).
std::string gpu_reference_disagreement(const Problem& p, const GpuReference& g, const Reference& ref);

// Every query row of out against g: empty, or the number of failing rows and the worst one named
// by (b, h, s) with its error and bound. With lse_acc (a GpuReference::lse_acc of the record's
// declared accumulation), a row's LSE bound is at least the LSE rule (tolerance.hpp's lse_rule) on
// that row's own gap |lse_acc - g_lse|.
std::string full_output_failure(const Problem& p, const GpuReference& g, const RunOutputs& out, double tol,
                                double lse_tol, const std::vector<float>& lse_acc = {});

}  // namespace fa
