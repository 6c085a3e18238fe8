// CPU reference (Eigen): attention from the dtype-rounded inputs with fp64 accumulation (the
// oracle), and the low-precision reference that rounds where kernels round (fp32 scores and sums,
// unnormalised P rounded to the dtype before PV (or, for FP8 inputs, to what the path declares; FP8
// scores added as the path's tensor cores add them where it declares that: harness/fp8_accumulate.hpp),
// O rounded to the output dtype) for the adaptive tolerance. FP8 inputs count at their descaled
// values: the scores' scale takes q and k's descales, O takes v's. Works on any subset of query rows, blocked so memory stays bounded at Sk = 65536;
// parallel over heads and row blocks with OpenMP.
#pragma once
#include <utility>

#include "harness/reference_result.hpp"

namespace fa {

// Has the signature of ReferenceFn (harness/reference_result.hpp): the runner's oracle.
Reference compute_reference(const Problem& p, const HostInputs& in, std::vector<int64_t> rows,
                            std::optional<LowPrecision> lp);
// Low precision or not, with P rounded as a path of the default declaration (kFp8PDefault) rounds it.
inline Reference compute_reference(const Problem& p, const HostInputs& in, std::vector<int64_t> rows, bool low_precision) {
  return compute_reference(p, in, std::move(rows),
                           low_precision ? std::optional<LowPrecision>(lowprec_p_dtype(p, kFp8PDefault)) : std::nullopt);
}

}  // namespace fa
