// mma-decode: flash-decoding on NVIDIA tensor cores (sm80+) for S * (H / Hk) <= 16 — decode
// steps and short query blocks. One block per (kv head, key chunk, batch); the query heads of the
// GQA group and the S query rows are packed into one 16-row mma tile (row = head_in_group * S + s),
// so K and V are read once per group (at group x S <= 8, dense: the transposed products, 8 rows in
// the MMA's N; see NARROW below). Each warp streams its own tiles of the chunk (tiles w,
// w + WARPS, ...) through a private cp.async ring and keeps its own online softmax; the warps
// fold their states through shared memory, and chunks write fp32 partials; the last block of a
// (batch, kv head) to finish folds them (kernels/mma/decode_fold.hpp) in the same launch.
// Chunks: one wave of blocks (occupancy x SMs / (B x Hk)), reported as G_used. `mma` runs this
// kernel on decode-shaped problems too, with its G as the chunk count (kernels/mma/fa_mma.hip). On sm_90
// (sm_90a code built), dense fp16/bf16 problems at D 64 and 128 fill the rings through the TMA
// instead of cp.async (use_tma; the stream's steps: kernels/mma/decode_stream_sm90.hpp). The kernel
// is kernels/mma/fa_mma_decode_sm80.hpp; this file holds its host side: chunks, launch, gate, row.
// fa-bench-isa: sm_90a: mma.sync.aligned.m16n8k16 cp.async.bulk.tensor mbarrier movmatrix.sync.aligned.m8n8.trans.b16
// fa-bench-isa: sm_90a.sass: HMMA UTMALDG
// fa-bench-isa-each: sm_90a: mma_decode_fwd: mma.sync.aligned.m16n8k16
#include <fmt/format.h>

#include <algorithm>

#include "harness/path_registry.hpp"
#include "kernels/mma/decode_fold.hpp"
#include "kernels/mma/decode_stream_sm90.hpp"
#include "kernels/device/fragment_layout.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"
#include "kernels/mma/mma_sm80.hpp"
#include "kernels/device/tile_loop.hpp"
#include "kernels/mma/ws_layout.hpp"
#include "kernels/mma/fa_mma_decode_traits.hpp"
#include "kernels/mma/tensor_map.hpp"
#include "kernels/mma/fa_mma_decode_sm80.hpp"

namespace fa::gpu {
namespace {

using mma_decode::decode_head_dims;
using mma_decode::with_traits;

// The keys the chunks cut: the most some sequence's rows see together (the union of the S rows'
// keys under causal and window, per sequence's own key count); Sk for a dense problem.
int64_t decode_span(const Problem& p) {
  if (p.serving_fields().empty()) return p.Sk;
  int64_t span = 0;
  for (int64_t b = 0; b < p.B; ++b) {
    const KeyRange first = p.row_keys(b, 0), last = p.row_keys(b, p.S - 1);
    span = std::max(span, std::max(last.end, first.end) - std::min(first.begin, last.begin));
  }
  return std::max<int64_t>(span, 1);
}

// Whether the device runs the TMA stream: sm_90 with sm_90a code built (use_tma adds the problem's
// conditions). Elsewhere the TMA instances are neither launched nor prepared: their shared memory
// (197 KB at D=128) passes what an A100 (163 KB) or an sm_89 part grants a block.
bool tma_device(const DeviceFacts& device) { return kBuiltSm90a && device.has_wgmma_sm90a; }

// Blocks of the kernel for (dtype, D) one SM holds; its dynamic shared memory is raised first.
// Where the TMA stream runs, the fewer of the cp.async and TMA instances' (one count, whichever a
// run launches; the traits rows give both the same). Counted on the 16-row instances: the narrow
// ones take the same shared memory and fewer registers.
template <typename T, typename K>
int decode_resident(const DeviceFacts& device) {
  FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, false, false>, K::SMEM));
  FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, true, false>, K::SMEM));
  FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, false, false, true>, K::SMEM));
  int per_sm = 0;
  FA_GPU_CHECK(max_active_blocks(&per_sm, mma_decode_fwd<T, K, false, false>, K::THREADS, K::SMEM));
  if constexpr (K::TMA_STREAM) {  // a constexpr test: D = 256's TMA instance is never instantiated
    if (tma_device(device)) {
      FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, false, true>, K::TMA_SMEM));
      FA_GPU_CHECK(set_max_dynamic_smem(mma_decode_fwd<T, K, false, true, true>, K::TMA_SMEM));
      int tma_per_sm = 0;
      FA_GPU_CHECK(max_active_blocks(&tma_per_sm, mma_decode_fwd<T, K, false, true>, K::THREADS, K::TMA_SMEM));
      per_sm = std::min(per_sm, tma_per_sm);
    }
  }
  return std::max(per_sm, 1);
}

// The keys a chunk holds when the span is cut into `chunks` (at least 1): whole tiles, at least one
// per warp, so a short span runs fewer chunks than asked (chunks_of says how many).
template <typename K>
int chunk_keys_for(const Problem& p, int64_t chunks) {
  chunks = std::max<int64_t>(chunks, 1);
  const int64_t min_keys = int64_t(K::WARPS) * K::BN;
  const int64_t per = (decode_span(p) + chunks - 1) / chunks;
  return int(std::max(min_keys, (per + K::BN - 1) / K::BN * K::BN));
}
int chunks_of(const Problem& p, int chunk_keys) { return int((decode_span(p) + chunk_keys - 1) / chunk_keys); }

// The keys a chunk holds. splits = 0: one wave of blocks, the occupancy-sized count of resident
// blocks over B x Hk (the decode-occupancy rule, mma-decode's own); splits > 0: the keys cut into
// that many chunks (mma's G, where mma runs this kernel). Either way the kernel's shared-memory
// limit is raised here, before any launch: an --isolate child prepares and launches with nothing
// else having done so.
int decode_chunk_keys(const Problem& p, DType t, const DeviceFacts& device, int splits) {
  int keys = 0;
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    with_traits(int(p.D), [&](auto k) {
      using K = decltype(k);
      const int64_t slots = int64_t(decode_resident<T, K>(device)) * std::max(device.units, 1);
      keys = chunk_keys_for<K>(p, splits > 0 ? splits : slots / (p.B * p.Hk));
    });
  });
  return keys;
}

// K's (and V's) tile as the TMA stream reads it: BN key rows of one head and batch, its 64-column
// blocks in one box.
template <typename K>
ws::TmaTile decode_kv_tile(const AttnArgs& a) {
  return ws::tma_tile_one_copy(ws::tma_tile(K::D, K::BN, a.Sk, a.Hk, a.B, a.k_ss, a.k_sh, a.k_sb));
}
// Whether a run streams K/V through the TMA: sm_90 with sm_90a code built, a dense fp16/bf16 problem
// whose K and V the TMA can describe (strides, 16-byte aligned bases) and whose key coordinate fits
// the TMA's int. Elsewhere cp.async.
bool use_tma(const Problem& p, const AttnArgs& a, const DeviceFacts& device) {
  if (!tma_device(device) || !p.serving_fields().empty()) return false;
  if ((p.dtype != DType::fp16 && p.dtype != DType::bf16) || p.Sk > INT32_MAX) return false;
  bool fits = false;
  with_traits(p.D, [&](auto k) {
    using K = decltype(k);
    fits = K::TMA_STREAM && !ws::tma_tile_problem(decode_kv_tile<K>(a));
  });
  return fits && reinterpret_cast<uintptr_t>(a.k) % 16 == 0 && reinterpret_cast<uintptr_t>(a.v) % 16 == 0;
}

class MmaDecodeExecution : public GpuExecution {
 public:
  MmaDecodeExecution(const Problem& p, const HostInputs& in, const GateContext& ctx, int chunk_keys)
      : GpuExecution(p, in, ctx, chunks_of(p, chunk_keys)), chunk_keys_(chunk_keys), chunks_(chunks_of(p, chunk_keys)) {
    args_.G = chunks_ > 1 ? chunks_ : 0;
    if (chunks_ > 65535)  // the grid's y; the gates keep it far below (mma: B x G <= 65535; else one wave)
      throw std::logic_error(fmt::format("mma-decode: {} key chunks exceed the grid", chunks_));
    if (args_.G > 1) {  // one arrival count a (batch, kv head), zero between launches
      counters_ = DeviceBuffer(size_t(p.B) * p.Hk * sizeof(int));
      FA_GPU_CHECK(memset_async(counters_.as<int>(), 0, counters_.bytes(), stream_));
    }
    tma_ = use_tma(p, args_, ctx.device);
    if (tma_)
      with_traits(args_.D, [&](auto k) {
        const ws::TmaTile kv = decode_kv_tile<decltype(k)>(args_);
        const int promote = mma_decode::decode_l2_promote(ctx.device);
        maps_ = DecodeMaps{encode_map(p.dtype, args_.k, kv, "K", promote), encode_map(p.dtype, args_.v, kv, "V", promote)};
      });
  }

 protected:
  int g_used() const override { return chunks_; }
  void launch() override {
    append_kv();  // kv_cache: the new tokens into their slots first
    with_dtype(p_.dtype, [&](auto tr) {
      using T = decltype(tr);
      with_traits(args_.D, [&](auto k) {
        using K = decltype(k);
        const dim3 grid(args_.Hk, chunks_, args_.B);
        const int64_t rows = args_.S * (args_.H / args_.Hk);
        if (args_.serving)
          mma_decode_fwd<T, K, true, false>
              <<<grid, K::THREADS, K::SMEM, stream_>>>(maps_, args_, chunk_keys_, counters_.as<int>());
        else if (rows <= 8)
          launch_dense<T, K, true>(grid);
        else
          launch_dense<T, K, false>(grid);
        FA_GPU_CHECK_LAUNCH("mma_decode_fwd");
      });
    });
  }
  // A dense problem's instance: through the TMA where it runs, else cp.async; NARROW at S x group <= 8.
  // The TMA instance goes out in 2-block clusters along x (kv heads h and h + 1 of a chunk, on one
  // GPC) where Hk is even. H100, one call, alternated: (16,32,8,1,8192,128) 3042.2 -> 3065.0 GB/s
  // (16 samples a side; cuDNN 3055.9), (1,32,8,1,131072,128) 2994.7 -> 3016.4 (2 a side), D=64 rows
  // +0.4-0.7%. The stream probe gained 0.3-0.4% so, and lost 4-14% with clusters of 4 or 8; why
  // pairs pay is not pinned down (README, 2026-11-27, session 19).
  template <typename T, typename K, bool NARROW>
  void launch_dense(dim3 grid) {
    if (tma_ && K::TMA_STREAM)
      FA_GPU_CHECK(launch_clusters(mma_decode_fwd<T, K, false, K::TMA_STREAM, NARROW>, grid, dim3(K::THREADS),
                                   K::smem(K::TMA_STREAM), stream_, grid.x % 2 == 0 ? 2u : 1u, maps_, args_,
                                   chunk_keys_, counters_.as<int>()));
    else
      mma_decode_fwd<T, K, false, false, NARROW>
          <<<grid, K::THREADS, K::SMEM, stream_>>>(maps_, args_, chunk_keys_, counters_.as<int>());
  }

 private:
  int chunk_keys_, chunks_;
  DeviceBuffer counters_;
  bool tma_ = false;
  DecodeMaps maps_{};
};

// What mma-decode takes: every serving field but the query lengths and thd (its rows are the S
// dense queries of every head of a group), kv_cache (the append runs first), G = 0 (it sizes its own
// key chunks, reported as G_used).
Capabilities mma_decode_caps() {
  Capabilities c = gpu_caps();
  c.device = DeviceNeed::mma_sm80;
  c.head_dims = decode_head_dims();
  c.serving = {ServingField::seqlens_k, ServingField::page_size, ServingField::window, ServingField::alibi,
               ServingField::softcap};
  c.kv_cache = KvCache::takes;
  return c;
}

std::optional<std::string> mma_decode_limits(const Problem& p, int, const GateContext&) {
  if (p.S * p.group_size() > 16)
    return fmt::format("mma-decode packs S x H/Hk <= 16 query rows into a tile (got {})", p.S * p.group_size());
  if (p.Hk > 65535 || p.B > 65535) return std::string("Hk or B exceeds the grid");
  return std::nullopt;
}

const Gate& mma_decode_supports() {
  static const Gate gate = gated("mma-decode", mma_decode_caps(), mma_decode_limits);
  return gate;
}

}  // namespace

bool packs_gqa_decode(const Problem& p, const DeviceFacts& device) {
  return !mma_decode_supports()(p, 0, GateContext{device});  // its own gate, at its own G
}

TileShape packed_decode_tile(const Problem& p, const DeviceFacts& device) {
  TileShape tile{16, 32, 1, int(p.group_size())};
  with_dtype(p.dtype, [&](auto tr) {
    with_traits(int(p.D), [&](auto k) {
      using K = decltype(k);
      tile.block_n = K::BN;
      tile.resident = decode_resident<decltype(tr), K>(device);
    });
  });
  return tile;
}

int packed_decode_chunks(const Problem& p, int splits) {
  int chunks = 1;
  with_traits(int(p.D), [&](auto k) { chunks = chunks_of(p, chunk_keys_for<decltype(k)>(p, splits)); });
  return chunks;
}

std::unique_ptr<Execution> make_packed_decode(const Problem& p, const HostInputs& in, const GateContext& ctx,
                                              int splits) {
  return std::make_unique<MmaDecodeExecution>(p, in, ctx,
                                              decode_chunk_keys(p, p.dtype, ctx.device, std::max(splits, 1)));
}

namespace {

PathRow mma_decode_row(const DeviceFacts&) {
  PathRow r{"mma-decode", "gpu",
            "flash-decoding on tensor cores: the GQA group x S packed into one 16-row tile, key chunks + combine",
            "S*H/Hk <= 16; own key chunks (G_used); Hk, B <= 65535", false, nullptr,
            [](const Problem& p, const HostInputs& in, int, const GateContext& ctx) -> std::unique_ptr<Execution> {
              return std::make_unique<MmaDecodeExecution>(p, in, ctx,
                                                          decode_chunk_keys(p, p.dtype, ctx.device, 0));
            }};
  r.auto_rank = 55;  // S*H/Hk <= 16: reads K/V once per group on tensor cores, ahead of the scalar decode
  r.tiles = TileShape{16, 32};
  r.tile_at = [](const Problem& p, int, const DeviceFacts& d) { return packed_decode_tile(p, d); };
  r.own_split_rule = kDecodeSplitRule;
  r.rz_accumulate_keys = 16;  // PV through m16n8k16: a truncating fp32 add every 16 keys of a chunk
  r.declare(mma_decode_caps(), mma_decode_limits);
  return r;
}
FA_REGISTER_PATH(mma_decode_row);

}  // namespace
}  // namespace fa::gpu
