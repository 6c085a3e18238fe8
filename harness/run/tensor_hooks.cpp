// --load-tensors and --save-tensors as RunOptions hooks.
#include "harness/run/tensor_hooks.hpp"

#include "harness/results/tensors/tensor_files.hpp"

namespace fa {

void install_tensor_hooks(RunOptions& ro) {
  if (!ro.load_tensors.empty()) {
    const std::string dir = ro.load_tensors;
    ro.inputs = [dir](const Problem& p) { return load_inputs(dir, p); };
  }
  if (!ro.save_tensors.empty()) {
    const std::string dir = ro.save_tensors;
    const ReferenceFn reference = ro.reference;
    ro.keep_outputs = [dir, reference](const Record& r, const HostInputs& in, const RunOutputs& out) {
      std::vector<int64_t> rows(size_t(r.problem.S));
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t(i);
      save_record_tensors(dir, r, in, out, reference(r.problem, in, rows, std::nullopt).o);
    };
  }
}

}  // namespace fa
