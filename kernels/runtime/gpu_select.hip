// --devices: the calling worker thread's device, through the portability header's set_device.
#include "kernels/device/gpu.hpp"
#include "kernels/runtime/gpu_select.hpp"

namespace fa::gpu {

DeviceFacts::Pci select_device(int ordinal) {
  FA_GPU_CHECK(set_device(ordinal));
#if FA_HIP
  hipDeviceProp_t pr;
  FA_GPU_CHECK(hipGetDeviceProperties(&pr, ordinal));
#else
  cudaDeviceProp pr;
  FA_GPU_CHECK(cudaGetDeviceProperties(&pr, ordinal));
#endif
  return {pr.pciDomainID, pr.pciBusID, pr.pciDeviceID};
}

}  // namespace fa::gpu
