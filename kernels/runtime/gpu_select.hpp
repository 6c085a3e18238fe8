// Device selection as the host harness sees it (plain C++, no GPU headers), for --devices: makes
// `ordinal` the calling thread's current device; throws (naming the call) when the runtime refuses.
// Defined in kernels/runtime/gpu_select.hip; only built with a GPU backend.
#pragma once

namespace fa::gpu {

void select_device(int ordinal);

}  // namespace fa::gpu
