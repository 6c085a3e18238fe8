// Pieces shared between path files: the tiled producer (tiled, splitk), the split-K combine
// (splitk, decode), the decode execution (decode, kv-cache) and the capabilities GPU rows start from.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "harness/path.hpp"
#include "kernels/device/device_common.hpp"
#include "kernels/runtime/gpu_execution.hpp"

namespace fa::gpu {

// Tiled FA-2 forward. a.G > 1: grid.z carries the split, outputs are fp32 partials. Its tile:
// 64-row blocks (D = 64, 80, 128; the generic D <= 256 kernel halves them) and 32-key tiles.
constexpr TileShape kTiledTile{64, 32};
void launch_tiled(const AttnArgs& a, DType t, Stream s);
// Folds a.G partial (O, LSE) per row into O (dtype) and LSE; rows whose splits are all empty
// get O = 0 and LSE = -inf.
void launch_combine(const AttnArgs& a, DType t, Stream s);
// The decode execution (kernels/scalar/fa_decode.hip): Sk cut into one wave of chunks, decode + combine.
// kv-cache derives from it and enqueues its append first (before_decode).
constexpr TileShape kDecodeTile{1, 64};  // one query token a block, 64-key tiles
// The decode paths' own split rule (records' split_rule): one full wave of resident blocks, each a
// run of whole key tiles (decode_chunks, decode_chunk_keys).
inline constexpr const char* kDecodeSplitRule = "decode-occupancy";
struct DecodeChunks {
  int keys, count;  // keys per chunk (whole tiles), chunks per (batch, kv head)
};
DecodeChunks decode_chunks(const Problem& p, int units);

class DecodeExecution : public GpuExecution {
 public:
  DecodeExecution(const Problem& p, const HostInputs& in, const GateContext& ctx)
      : DecodeExecution(p, in, ctx, decode_chunks(p, ctx.device.units)) {}

 protected:
  void launch() override;
  virtual void before_decode() {}

 private:
  DecodeExecution(const Problem& p, const HostInputs& in, const GateContext& ctx, DecodeChunks c);
  DecodeChunks chunks_;
};

// mma-decode's kernel (kernels/mma/fa_mma_decode.hip) as `mma` runs it on decode-shaped problems: the
// query heads of a GQA group and the S queries packed into one 16-row tile, K/V read once per group
// (FlashAttention-3's PackGQA for short S; flash-decoding's split). Whether it takes the problem
// (16-bit, sm_80+, D in its table, S x H/Hk <= 16, its serving fields), the tile the split rules
// count (16 rows, heads = the group), the chunks it runs when asked for `splits` (fewer where a
// chunk would hold under a key tile a warp; 0 or 1: one), and an execution over them.
bool packs_gqa_decode(const Problem& p, const DeviceFacts& device);
TileShape packed_decode_tile(const Problem& p, const DeviceFacts& device);
int packed_decode_chunks(const Problem& p, int splits);
std::unique_ptr<Execution> make_packed_decode(const Problem& p, const HostInputs& in, const GateContext& ctx,
                                              int splits);

// What decode takes (kv-cache takes the same, but only kv_cache problems), the limits of its grid
// beyond them, and those in words.
Capabilities decode_caps();
std::optional<std::string> decode_limits(const Problem& p, int G, const GateContext& ctx);
std::string decode_limits_doc();

// What every GPU row's capabilities start from: any GPU, fp16/bf16, D <= 256, G = 0, no serving
// field, no kv_cache. A row changes the fields its kernels take beyond these.
// Which FP8 formats of the dtype table a row's kernels decode: none, the OCP ones (Hopper's wgmma
// and gfx12's WMMA have no FNUZ), the FNUZ ones (gfx94x's MFMA), or all of them (the paths that load
// element by element).
enum class Fp8Formats { none, ocp, fnuz, all };
// fp16 and bf16, and the FP8 rows of the dtype table in the formats given.
inline std::vector<DType> gpu_dtypes(Fp8Formats f) {
  std::vector<DType> v{DType::fp16, DType::bf16};
  for (DType t : every_dtype())
    if (is_fp8(t) && (f == Fp8Formats::all || (f == Fp8Formats::ocp && !is_fnuz(t)) || (f == Fp8Formats::fnuz && is_fnuz(t))))
      v.push_back(t);
  return v;
}
inline Capabilities gpu_caps() {
  Capabilities c;
  c.dtypes = gpu_dtypes(Fp8Formats::none);
  c.head_dims = HeadDims::range(1, 256);
  c.splits = SplitSet::none_split();
  c.device = DeviceNeed::gpu;
  return c;
}

}  // namespace fa::gpu
