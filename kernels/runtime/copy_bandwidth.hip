// The device copy bandwidth (GB/s, bytes read plus bytes written): the peer that memory-bound
// paths' GB/s is reported against. The median of event-timed device-to-device copies, after one
// warm-up copy.
#include <algorithm>
#include <vector>

#include "kernels/device/gpu.hpp"
#include "kernels/runtime/gpu_device.hpp"

namespace fa::gpu {

double copy_bandwidth_gbps(size_t bytes, int reps) {
  void *src = nullptr, *dst = nullptr;
  FA_GPU_CHECK(malloc_device(&src, bytes));
  FA_GPU_CHECK(malloc_device(&dst, bytes));
  Event a, b;
  FA_GPU_CHECK(event_create(&a));
  FA_GPU_CHECK(event_create(&b));
  FA_GPU_CHECK(memset_async(src, 1, bytes, nullptr));
  std::vector<float> ms(static_cast<size_t>(reps));
  for (int i = -1; i < reps; ++i) {  // i = -1: warm-up
    FA_GPU_CHECK(event_record(a, nullptr));
    FA_GPU_CHECK(copy_on_device(dst, src, bytes, nullptr));
    FA_GPU_CHECK(event_record(b, nullptr));
    FA_GPU_CHECK(stream_sync(nullptr));
    if (i >= 0) FA_GPU_CHECK(event_elapsed_ms(&ms[size_t(i)], a, b));
  }
  event_destroy(a);
  event_destroy(b);
  free_device(src);
  free_device(dst);
  std::sort(ms.begin(), ms.end());
  return 2.0 * double(bytes) / (double(ms[ms.size() / 2]) * 1e-3) / 1e9;
}

}  // namespace fa::gpu
