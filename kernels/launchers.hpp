// Kernel launchers shared between path files: the tiled producer (tiled, splitk), the split-K
// combine (splitk, decode) and the decode kernel (decode, kv-cache). Host-only declarations.
#pragma once
#include "harness/path.hpp"
#include "kernels/device_common.hpp"

namespace fa::gpu {

// Tiled FA-2 forward. a.G > 1: grid.z carries the split, outputs are fp32 partials.
void launch_tiled(const AttnArgs& a, DType t, Stream s);
// Folds a.G partial (O, LSE) per row into O (dtype) and LSE; rows whose splits are all empty
// get O = 0 and LSE = -inf.
void launch_combine(const AttnArgs& a, DType t, Stream s);
// S == 1 decode over `chunks` key chunks of `chunk_keys` keys; chunks > 1 writes partials
// (a.G must equal chunks) and the caller combines.
void launch_decode(const AttnArgs& a, DType t, int chunk_keys, int chunks, Stream s);
// Rows of a (batch, kv head) key range that decode uses per chunk, for a machine of `units`.
void decode_chunking(const Problem& p, int units, int* chunk_keys, int* chunks);

// decode's gate without the kv_cache exclusion (kv-cache shares it).
std::optional<std::string> decode_gate(const Problem& p, int G, const GateContext& ctx);

// The gate every GPU path shares: a device, 16-bit dtype, D <= 256.
std::optional<std::string> common_gpu_gate(const Problem& p, const GateContext& ctx);

}  // namespace fa::gpu
