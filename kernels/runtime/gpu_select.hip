// --devices: the calling worker thread's device, through the portability header's set_device.
#include "kernels/device/gpu.hpp"
#include "kernels/runtime/gpu_select.hpp"

namespace fa::gpu {

void select_device(int ordinal) { FA_GPU_CHECK(set_device(ordinal)); }

}  // namespace fa::gpu
