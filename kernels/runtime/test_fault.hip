// Test only: a kernel that writes to an address no allocation owns, so that a device fault can be
// planted in a sweep (cli/test_paths.cpp, `test-gpu-fault`, FABENCH_TEST_PATHS=1) and --isolate
// shown turning it into one `error` record while the rest of the sweep passes. Not a path.
#include <exception>

#include "kernels/device/gpu.hpp"
#include "kernels/runtime/gpu_device.hpp"
#include "kernels/runtime/gpu_execution.hpp"

namespace fa::gpu {
namespace {

__global__ void write_where_nothing_is(float* p) { p[threadIdx.x] = 1.f; }
__global__ void do_nothing() {}
__global__ void write_one(uint8_t* p, int64_t at, int bytes) {
  for (int i = 0; i < bytes; ++i) p[at * bytes + i] ^= 0x01;
}

// A path that only flips the low bit of each byte of K's element `at`.
class WritesK : public GpuExecution {
 public:
  WritesK(const Problem& p, const HostInputs& in, int64_t at) : GpuExecution(p, in, GateContext{}, 0), at_(at) {}

 protected:
  void launch() override {
    write_one<<<1, 1, 0, stream_>>>(k_.as<uint8_t>(), at_, dtype_bytes(p_.dtype));
    FA_GPU_CHECK_LAUNCH("write_one");
  }

 private:
  int64_t at_;
};

}  // namespace

void fault_device_for_test() {
  write_where_nothing_is<<<1, 32>>>(reinterpret_cast<float*>(uintptr_t(64)));  // the null page
  FA_GPU_CHECK(last_error());
  FA_GPU_CHECK(stream_sync(nullptr));  // the illegal address surfaces here and throws
}

AfterFailedCall launch_after_failed_allocation_for_test() {
  AfterFailedCall r;
  void* p = nullptr;
  try {
    FA_GPU_CHECK(malloc_device(&p, size_t(1) << 52));  // 4 PiB
  } catch (const std::exception& e) {
    r.allocation = e.what();
  }
  try {
    do_nothing<<<1, 1>>>();
    FA_GPU_CHECK_LAUNCH("do_nothing");
    FA_GPU_CHECK(stream_sync(nullptr));
  } catch (const std::exception& e) {
    r.launch = e.what();
  }
  return r;
}

std::string drawn_input_written_for_test(const Problem& p, int64_t at) {
  WritesK e(p, make_inputs(p), at);
  e.poison();
  e.run();
  return e.read_back().fault;
}

}  // namespace fa::gpu
