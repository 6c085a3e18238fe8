// Inputs drawn on the device (kernels/runtime/device_inputs.hip) against the host's draw: every
// byte of Q, K and V the same as make_inputs + to_typed give, in every dtype and dense layout, odd
// element counts and GQA included; the layouts it does not draw are said; and a path that writes a
// drawn input is still named, element and all, with no host copy kept. Labelled `gpu`; skips with
// the reason where no GPU answers.
// Run: ctest --test-dir build/cuda90 -R DeviceInputs --output-on-failure
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "harness/inputs.hpp"
#include "harness/path.hpp"
#include "paths/builtin.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/runtime/gpu_device.hpp"
#endif

using namespace fa;

namespace {

const DeviceFacts& device() {
  static const DeviceFacts d = probe_device();
  return d;
}

#define REQUIRE_GPU() \
  if (!device().gpu) GTEST_SKIP() << "no GPU: " << device().gpu_absent_why

Problem dense(int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D, DType t, Layout l) {
  Problem p;
  p.B = B, p.H = H, p.Hk = Hk, p.S = S, p.Sk = Sk, p.D = D, p.dtype = t, p.layout = l, p.seed = 7;
  return p;
}

}  // namespace

TEST(DeviceInputs, EveryByteIsTheHostsInEveryDtypeAndDenseLayout) {
  REQUIRE_GPU();
#ifdef FABENCH_HAS_GPU
  std::vector<Problem> ps;
  for (DType t : every_dtype()) ps.push_back(dense(2, 3, 1, 7, 9, 5, t, Layout::bshd));  // odd counts, GQA 3
  ps.push_back(dense(1, 8, 2, 300, 1000, 64, DType::bf16, Layout::bhsd));
  ps.push_back(dense(3, 4, 4, 129, 129, 128, DType::fp8_e4m3, Layout::bhsd));
  ps.push_back(dense(1, 2, 2, 40000, 40000, 64, DType::fp16, Layout::bshd));  // more pairs than the grid's threads
  for (const Problem& p : ps) {
    SCOPED_TRACE(p.label() + " " + std::string(dtype_name(p.dtype)));
    const HostInputs in = make_inputs(p);
    const std::vector<float>* host[] = {&in.q, &in.k, &in.v};
    for (uint32_t s = 1; s <= 3; ++s) {
      const std::vector<uint8_t> want = to_typed(p.dtype, *host[s - 1]).bytes;
      const std::vector<uint8_t> got = fa::gpu::drawn_input_bytes(p, s);
      ASSERT_EQ(got.size(), want.size()) << "tensor " << s;
      size_t first = 0, n = 0;
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i] && n++ == 0) first = i;
      EXPECT_EQ(n, 0u) << "tensor " << s << ": " << n << " bytes differ, the first at " << first;
    }
  }
#endif
}

TEST(DeviceInputs, PackedPagedAndKvCacheProblemsAreNotDrawnThere) {
  REQUIRE_GPU();
#ifdef FABENCH_HAS_GPU
  Problem thd = dense(2, 2, 2, 16, 16, 8, DType::fp16, Layout::thd);
  thd.seqlens_q = thd.seqlens_k = "16|9";
  Problem paged = dense(2, 2, 2, 1, 64, 8, DType::fp16, Layout::bshd);
  paged.page_size = 16;
  Problem cache = dense(1, 2, 2, 1, 32, 8, DType::fp16, Layout::bshd);
  cache.kv_cache = true;
  for (const Problem& p : {thd, paged, cache}) EXPECT_TRUE(fa::gpu::drawn_input_bytes(p, 2).empty()) << p.label();
#endif
}

TEST(DeviceInputs, APathThatWritesADrawnInputIsNamedWithTheElement) {
  REQUIRE_GPU();
#ifdef FABENCH_HAS_GPU
  for (DType t : {DType::bf16, DType::fp8_e5m2}) {
    const Problem p = dense(1, 4, 2, 33, 65, 64, t, Layout::bshd);
    EXPECT_EQ(fa::gpu::drawn_input_written_for_test(p, 1234), "the path wrote its inputs (K, element 1234)")
        << dtype_name(t);
  }
#endif
}

// Tensors smaller than the four 4 KiB windows the execution checks against the host's draw (a
// decode row's Q: B*H*D elements), and one just past a window: drawn, checked and run as any other.
TEST(DeviceInputs, TensorsSmallerThanTheCheckedWindowsAreDrawnAndChecked) {
  REQUIRE_GPU();
#ifdef FABENCH_HAS_GPU
  for (const Problem& p : {dense(1, 2, 1, 1, 3, 5, DType::fp16, Layout::bshd), dense(1, 8, 8, 1, 4096, 128, DType::bf16, Layout::bshd),
                           dense(1, 1, 1, 33, 33, 64, DType::fp8_e4m3, Layout::bhsd)}) {
    const int64_t at = p.kv_elements() - 1;
    EXPECT_EQ(fa::gpu::drawn_input_written_for_test(p, at), fmt::format("the path wrote its inputs (K, element {})", at))
        << p.label() << " " << dtype_name(p.dtype);
  }
#endif
}
