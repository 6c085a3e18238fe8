// The run's tensor folders as hooks: --load-tensors reads a record's inputs from .npy files and
// --save-tensors writes its inputs, outputs and fp64 reference (harness/results/tensors/).
#pragma once
#include "harness/run/run_record.hpp"

namespace fa {

// Sets ro.inputs from ro.load_tensors and ro.keep_outputs from ro.save_tensors (with ro.reference
// for ref_o), where those name a folder; the parent and each --isolate child call it alike.
void install_tensor_hooks(RunOptions& ro);

}  // namespace fa
