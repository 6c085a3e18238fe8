// Q, K and V drawn on the device: the counter-based generator of harness/rng.hpp (its arithmetic,
// harness/normal_draw.hpp, draws the same bits on a host and a device), rounded to the dtype as
// make_inputs and to_typed round them (FP8: the tensor's amax on the format's largest value, found
// on the device), written in the problem's layout. A seeded GPU record then uploads nothing and
// converts nothing on the host; its host inputs serve the CPU oracle (and CPU paths) alone.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/inputs.hpp"
#include "harness/problem.hpp"
#include "kernels/runtime/gpu_execution.hpp"

namespace fa::gpu {

// Tensor `stream` of p (1: Q, 2: K, 3: V) into dst (allocated here, in p.dtype), on stream st;
// returns its descale (1 unless FP8). Requires harness/inputs.hpp's drawn_on_device(p) (dense
// layouts without a kv cache; packed and paged layouts and kv caches upload from the host).
float draw_tensor(const Problem& p, uint32_t stream, DeviceBuffer& dst, Stream st);

// The same tensor's bytes on the host (for naming a changed element, and for tests).
std::vector<uint8_t> drawn_bytes(const Problem& p, uint32_t stream, Stream st);

}  // namespace fa::gpu
