// Device selection as the host harness sees it (plain C++, no GPU headers), for --devices: makes
// `ordinal` the calling thread's current device and returns its PCI address (the worker's clock
// reader finds its own device by it); throws (naming the call) when the runtime refuses.
// Defined in kernels/runtime/gpu_select.hip; only built with a GPU backend.
#pragma once
#include "harness/path.hpp"

namespace fa::gpu {

DeviceFacts::Pci select_device(int ordinal);

}  // namespace fa::gpu
