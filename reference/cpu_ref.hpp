// CPU reference (Eigen): attention from the dtype-rounded inputs with fp64 accumulation (the
// oracle), and the low-precision reference that rounds where kernels round (fp32 scores and sums,
// unnormalised P rounded to the dtype before PV, O rounded to the dtype) for the adaptive
// tolerance. Works on any subset of query rows, blocked so memory stays bounded at Sk = 65536;
// parallel over heads and row blocks with OpenMP.
#pragma once
#include "harness/reference_result.hpp"

namespace fa {

// Has the signature of ReferenceFn (harness/reference_result.hpp): the runner's oracle.
Reference compute_reference(const Problem& p, const HostInputs& in, std::vector<int64_t> rows, bool low_precision);

}  // namespace fa
