// mma: NVIDIA tensor-core FlashAttention-2 forward (sm80+: mma.sync.m16n8k16, fp32 accumulate).
// A block of WARPS warps owns BM query rows (each warp MT 16-row tiles); K/V tiles of BN keys
// stream through a STAGES-deep cp.async ring in shared memory whose rows are padded by 16 bytes,
// so ldmatrix's 8 row addresses fall in 8 distinct bank groups. S and P stay in registers: the
// S accumulator's layout is P's A-operand layout, packed to the dtype with no shared-memory trip.
// Online softmax in the exp2 domain with the scale folded into one FFMA; causal tiles past the
// last row's keys are never visited, and only the diagonal and range-end tiles are masked
// (kernels/device/tile_loop.hpp). G > 1 writes fp32 partials that kernels/device/combine.hip folds.
// On sm_90 (built with sm_90a), dense problems with D in the ws tile table (64, 96, 128, 256) run a
// FlashAttention-3-class kernel instead (issue 18): a TMA producer warp fills a K/V ring completed
// on mbarriers, two consumer warpgroups (three at D=64; setmaxnreg; in the 16-bit rows they take turns
// on wgmma) with P in registers (kernels/mma/fa_mma_ws_sm90.hpp; its host side, tensor maps and
// launch, in kernels/mma/fa_mma_ws.hpp).
// Problems with serving fields (per-sequence lengths, thd, paged K/V, window, ALiBi, softcap) run
// each other kernel's SERVE instance: the same loop with the sequence's key range (tiles outside
// the window never visited) and rows and keys addressed through the serving view; on sm_90 those
// with D = 64 and 128 run the tile loop on warpgroup MMA (wgmma, swizzled shared memory, the softmax
// overlapped with P V). Dense problems the TMA cannot describe fall back the same way.
// Decode-shaped problems (S x H/Hk <= 16, a D in mma-decode's table, its serving fields only) run
// mma-decode's kernel, FlashAttention-3's PackGQA for short S: a GQA group's heads and the S queries
// in one 16-row tile, so K/V are read once per group rather than once per query head, at G key
// chunks (G = 0: one). A 128-row tile of one head's 1..16 queries leaves 7/8 or more of the
// tensor-core rows idle and reads K/V H/Hk times (use_packed_decode says where each wins).
// This file: the traits table, the dispatch from (D, keys, G, arch) to a row, the gate (which asks
// that dispatch, so the head-dim list is written once: the table) and the registry row. The
// kernels: mma_fwd in fa_mma_sm80.hpp, mma_wg_fwd in fa_mma_sm90.hpp, mma_ws_fwd in fa_mma_ws_sm90.hpp.
// fa-bench-isa: sm_90a: mma.sync.aligned.m16n8k16 wgmma.mma_async cp.async.bulk.tensor mbarrier setmaxnreg
// fa-bench-isa: sm_90a: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 cvt.rn.satfinite.e4m3x2.f32
// fa-bench-isa: sm_90a: wgmma.mma_async.sync.aligned.m64n224k32.f32.e4m3.e4m3
// fa-bench-isa: sm_90a.sass: HMMA HGMMA UTMALDG
// fa-bench-isa-each: sm_90a: mma_ws_fwd: wgmma.mma_async cp.async.bulk.tensor setmaxnreg
// fa-bench-isa-each: sm_90a: mma_wg_fwd: wgmma.mma_async
// fa-bench-isa-each: sm_90a: mma_fwd: mma.sync.aligned.m16n8k16
#include <fmt/format.h>

#include "harness/path_registry.hpp"
#include "kernels/mma/fa_mma_sm80.hpp"
#include "kernels/mma/fa_mma_sm90.hpp"
#include "kernels/mma/fa_mma_ws.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/launchers.hpp"

namespace fa::gpu {
namespace {

// The traits table. TFLOP/s: H100, cold L2, medians (torch flash/cuDNN in the same sessions:
// aiter-4 (8,16,16,8192,8192,64) bf16 317/471, whisper-enc-b4 fp16 259/348, (2,16,16,8192,8192,128)
// bf16 354/617, its causal twin 315/546).
// D=64, long key ranges: 128x128, Q re-read from shared memory: aiter-4 318 (128x64 with Q in
//   registers 302; 64x64 3 stages 253; 64x128 216). 64 bytes of spill, which cost less than the
//   extra softmax rounds of 64-key tiles. With the constant-stride copies: 324-332.
// D=64, short key ranges (< 4096 keys a block): 128x64, Q in registers: whisper-enc-b4 240 vs 233.
// D=128: 128x64 (40 B of spill at the 255-register cap): (2,16,16,8192,8192,128) 330, causal 295,
//   FlyDSL's 64-head causal 315; 128x32 313 / 278 / 296 in the same run (before the constant-stride
//   copies, 128x64 spilled 92 B and lost: 307 vs 318). 128x32 3 stages 309; 64x64 276. A later
//   run (torch flash 356 / 317 / 324): 128x64 333 / 298 / 316; 256x64 with 8 warps 343 / 292 / 313;
//   128x64 with 8 warps of 16 rows (<= 128 registers, 2 blocks an SM) 288 / 261 / 277; the same
//   with 32-key tiles, 3 stages 254 / 230 / 245. Copying K/V with 2 threads a row (immediate
//   offsets, fewer registers) lost 22% (259 vs 332): 16 rows a warp instruction, one sector each.
// D=80/96/256: by register count alone (no spill), not yet measured against a peer.
// sm_90 (wgmma), one H100 run each, torch flash in the same call. D=128: 2 warpgroups x 128-key
//   tiles (236 registers, 1 block an SM): d128-8k 424, causal 394, FlyDSL 425 (flash 348 / 311 /
//   322; mma.sync above 332 / 296 / 305); one warpgroup a block 312 / 296 / 298. The first
//   version, without swizzle (core matrices of 128 contiguous bytes), reached 259: the 128-byte
//   swizzle is what lets wgmma read shared memory at speed. D=64: 2 warpgroups x 64-key tiles
//   (122 registers, 2 blocks an SM): aiter-4 373, aiter-3 375, aiter-1 359, whisper-enc-b4 298
//   (flash 309 / 313 / 263 / 261); with 128-key tiles (190 registers, 1 block) 335 / 336 / 324 /
//   249; one warpgroup of 64-key tiles (4 blocks) 323 / 323 / 317 / 269.
// sm_90, dense problems: the ws kernel (TMA producer warp, 2 ping-pong consumer warpgroups; tiles
//   in kernels/mma/ws_tile_traits.hpp), one H100 call, cold L2, medians, torch flash / cuDNN in
//   the same call: D128 8k 640 (354/626), causal 586 (312/564), Llama-3 GQA causal 589 (312/567),
//   64-head causal fp16 585 (305/561); D64 8k 426 (288/458), 32k 434 (288/424), 40k 421 (257/406),
//   S=512 228 (wgmma kernel above 254; 156/148), whisper 1500 311 (wgmma 298); D256 causal 555
//   (mma.sync 230; 269/549); D96 causal 364 (mma.sync 248; 243/334). It replaces the wgmma kernel
//   for dense problems (S=512 at D64 is the one shape where the wgmma kernel was ahead, by 10%).
using Wg64 = WgTraits<64, 2, 64>;
using Wg128 = WgTraits<128, 2, 128>;
using Mma64Long = MmaTraits<64, 128, 128, 4, 2, false>;
using Mma64Short = MmaTraits<64, 128, 64, 4, 2, true>;
using Mma80 = MmaTraits<80, 128, 64, 4, 2, false>;
using Mma96 = MmaTraits<96, 128, 64, 4, 2, false>;
using Mma128 = MmaTraits<128, 128, 64, 4, 2, false>;
using Mma256 = MmaTraits<256, 64, 32, 4, 2, false>;
constexpr int kLongKeys = 4096;  // keys a block visits from which Mma64Long pays

// The kernel a traits row runs; SERVE: its instance for problems with serving fields.
template <typename T, typename K, bool SERVE = false>
auto kernel_of() {
  if constexpr (K::WG) return mma_wg_fwd<T, K, SERVE>;
  else return mma_fwd<T, K, SERVE>;
}

template <typename T, typename K, bool SERVE>
void launch_cfg(const AttnArgs& a, Stream st) {
  const auto kernel = kernel_of<T, K, SERVE>();
  static thread_local const bool smem_ok = [&] {  // per device: one per --devices worker thread
    FA_GPU_CHECK(set_max_dynamic_smem(kernel, K::SMEM));
    return true;
  }();
  (void)smem_ok;
  const dim3 grid((a.S + K::BM - 1) / K::BM, a.H, a.B * (a.G > 1 ? a.G : 1));
  kernel<<<grid, K::THREADS, K::SMEM, st>>>(a);
  FA_GPU_CHECK_LAUNCH(K::WG ? "mma_wg_fwd" : "mma_fwd");
}

// The dispatch: calls f(K{}) with the traits row a launch uses, or returns false for a D without
// a kernel. The switches below are the head-dim list; the gate and the row's words ask them.
template <typename F>
bool with_wg_cfg(int64_t D, F&& f) {
  switch (D) {
    case 64: f(Wg64{}); return true;
    case 128: f(Wg128{}); return true;
    default: return false;
  }
}
template <typename F>
bool with_sync_cfg(int64_t D, int64_t Sk, int G, F&& f) {
  switch (D) {
    case 64:
      if (Sk / (G > 1 ? G : 1) >= kLongKeys) f(Mma64Long{});
      else f(Mma64Short{});
      return true;
    case 80: f(Mma80{}); return true;
    case 96: f(Mma96{}); return true;
    case 128: f(Mma128{}); return true;
    case 256: f(Mma256{}); return true;
    default: return false;
  }
}

// sm_90 runs the wgmma kernel for its D where this binary holds sm_90a code (kBuiltSm90a).
bool use_wgmma(int64_t D, const DeviceFacts& device) {
  return kBuiltSm90a && device.arch == "sm_90" && with_wg_cfg(D, [](auto) {});
}

// Dense problems on sm_90 run the ws kernel for D in its tile table, where the TMA can describe Q,
// K and V; problems with serving fields keep the SERVE instances of the kernels above.
bool use_ws(const Problem& p, const DeviceFacts& device) {
  return kBuiltSm90a && device.has_wgmma_sm90a && p.serving_fields().empty() && with_ws_cfg(p, [](auto) {}) &&
         !ws_tma_problem(p);
}

// Decode-shaped problems at G run the packed kernel where its grid (B x Hk x the chunks it runs at G)
// fills at least half the SMs or is no smaller than the one-head-a-block grid (B x H x max(G, 1);
// S <= 16 is one row block), which holds whenever H = Hk.
// A memory-bound decode's rate grows with the blocks in flight until the SMs are full: on the H100
// (bf16, 132 SMs), the packed kernel over (8,32,4,1,<=8192) paged reached 279 / 487 / 804 GB/s with
// 32 / 64 / 128 blocks; over (4,32,8,1,8192) the one-head grid's 128 blocks reached 1222 GB/s at G = 0
// (the group's heads share K/V through L2) and the packed kernel 2030 at 4 chunks (128 blocks).
bool use_packed_decode(const Problem& p, int G, const DeviceFacts& device) {
  if (!packs_gqa_decode(p, device)) return false;
  const int64_t packed = p.B * p.Hk * packed_decode_chunks(p, G);
  return 2 * packed >= device.units || packed >= p.B * p.H * std::max(G, 1);
}

template <typename F>
bool with_mma_cfg(int64_t D, int64_t Sk, int G, bool wg, F&& f) {
  return wg ? with_wg_cfg(D, f) : with_sync_cfg(D, Sk, G, f);
}

// The head dims the dispatchers have rows for (the capabilities' list and the row's words).
HeadDims sync_head_dims() {
  return head_dims_where([](int D) { return with_sync_cfg(D, 0, 0, [](auto) {}); });
}
std::string wg_head_dims() {
  return head_dims_where([](int D) { return with_wg_cfg(D, [](auto) {}); }).str();
}

void launch_mma(const AttnArgs& a, DType t, bool wg, Stream st) {
  with_dtype(t, [&](auto tr) {
    using T = decltype(tr);
    const bool serve = a.serving != nullptr;  // the problem has serving fields: the SERVE instances
    if (!with_mma_cfg(a.D, a.Sk, a.G, wg, [&](auto k) {
          if (serve) launch_cfg<T, decltype(k), true>(a, st);
          else launch_cfg<T, decltype(k), false>(a, st);
        }))
      throw std::logic_error(fmt::format("mma has no kernel for D={} (its gate should have said so)", a.D));
  });
}

// The tile and occupancy a run at G uses, for the split rules (blocks an SM holds: the runtime's
// occupancy of that kernel configuration).
TileShape mma_tile(const Problem& p, int G, const DeviceFacts& device) {
  if (use_packed_decode(p, G, device)) return packed_decode_tile(p, device);
  if (use_ws(p, device)) return ws_tile(p, G, device);
  TileShape tile{128, 64, 1};
  if (!device.has_mma_sm80 || p.dtype == DType::fp32) return tile;
  with_dtype(p.dtype, [&](auto tr) {
    using T = decltype(tr);
    with_mma_cfg(p.D, p.Sk, G, use_wgmma(p.D, device), [&](auto k) {
      using K = decltype(k);
      const auto kernel = kernel_of<T, K>();
      FA_GPU_CHECK(set_max_dynamic_smem(kernel, K::SMEM));
      int per_sm = 0;
      FA_GPU_CHECK(max_active_blocks(&per_sm, kernel, K::THREADS, K::SMEM));
      tile = TileShape{K::BM, K::BN, std::max(per_sm, 1)};
    });
  });
  return tile;
}

class MmaExecution : public GpuExecution {
 public:
  MmaExecution(const Problem& p, const HostInputs& in, int G, const GateContext& ctx)
      : GpuExecution(p, in, ctx, G > 1 ? G : 0),
        ws_(use_ws(p, ctx.device)),
        wg_(use_wgmma(p.D, ctx.device)),
        units_(ctx.device.units) {
    args_.G = G > 1 ? G : 0;
    if (ws_) {  // a counter wave's item counter, zero between launches (the kernel's last block re-zeroes it)
      sched_ = DeviceBuffer(2 * sizeof(int));
      FA_GPU_CHECK(memset_async(sched_.as<void>(), 0, sched_.bytes(), stream_));
    }
    if (ws_ && !with_ws_cfg(p, [&](auto k) {
          using K = decltype(k);
          if constexpr (K::PREPASS) {  // the instance's scratch, rows rounded for its tile
            vt_ = DeviceBuffer(size_t(ws::vt_bytes(p.B, p.Hk, K::D, p.Sk, K::BN)));
            vt_bn_ = K::BN;
          }
          maps_ = make_maps<K>(args_, p.dtype, units_, sched_.as<int>(), vt_.as<void>());
        }))
      throw std::logic_error(fmt::format("mma has no ws kernel for D={} (use_ws should have said so)", p.D));
  }

 protected:
  void launch() override {
    append_kv();  // kv_cache: the new tokens into their slots (pages, per-sequence offsets) first
    if (ws_) {
      with_ws_kernel(p_, [&](auto tr, auto k) {
        using K = decltype(k);
        // The instance the constructor sized the V^T scratch and encoded the maps for, either way.
        if ((K::PREPASS ? K::BN : 0) != vt_bn_)
          throw std::logic_error(fmt::format("mma: the launch picked the {}-key V^T tile, the setup the {} (0: none)",
                                             K::PREPASS ? K::BN : 0, vt_bn_));
        if constexpr (K::PREPASS) launch_vt_prepass<K::D, K::BN>(args_, vt_.as<uint8_t>(), stream_);  // V^T first
        launch_ws_cfg<decltype(tr), K>(maps_, args_, stream_, units_);
      });
    } else {
      launch_mma(args_, p_.dtype, wg_, stream_);
    }
    if (args_.G > 1) launch_combine(args_, out_dtype(p_.dtype), stream_);  // FP8 inputs: O in bf16
  }

 private:
  bool ws_, wg_;
  int units_;      // SMs: the ws kernel's persistent wave
  WsMaps maps_{};  // encoded once (ws_ only): the buffers they point into live as long as the execution
  DeviceBuffer vt_;  // FP8 with the V^T pre-pass (vt_prepass): its scratch V^T, rewritten every launch
  int vt_bn_ = 0;    // the key tile vt_ was sized for (0: no pre-pass)
  DeviceBuffer sched_;  // ws_: a counter wave's counter (ws_wave_from_counter, make_maps; ws_produce_wave)
};

// Every serving field and kv_cache (the append, per sequence and page, runs first); FP8 on its
// sm_90a kernel only (mma_limits), in the OCP formats alone: wgmma has no FNUZ.
Capabilities mma_caps() {
  Capabilities c = gpu_caps();
  c.device = DeviceNeed::mma_sm80;
  c.dtypes = gpu_dtypes(Fp8Formats::ocp);
  c.head_dims = sync_head_dims();
  c.splits = SplitSet::all();
  c.serving = ServingSet::every();
  c.kv_cache = KvCache::takes;
  return c;
}

std::optional<std::string> mma_limits(const Problem& p, int G, const GateContext& ctx) {
  if (is_fp8(p.dtype) && !use_ws(p, ctx.device))  // wgmma's 8-bit path: the sm_90a kernel alone
    return fmt::format("mma takes {} inputs on its sm_90a kernel only: dense problems, D in {}, sm_90 with 90a "
                       "built (this device is {}{})",
                       dtype_name(p.dtype), ws_head_dims(1), ctx.device.arch,
                       p.serving_fields().empty() ? "" : "; the problem has serving fields");
  if (p.H > 65535 || p.B * std::max(G, 1) > 65535) return std::string("H or B*G exceeds the grid");
  return std::nullopt;
}

PathRow mma_row(const DeviceFacts&) {
  PathRow r{"mma", "gpu",
            fmt::format("tensor-core flash attention, split-K: on sm_90 a TMA producer warp + 2 or 3 consumer "
                        "warpgroups (FA3-class, wgmma, setmaxnreg) for D {} (FP8 inputs at D {}: wgmma's 8-bit "
                        "path, V transposed by a pre-pass kernel on long problems, else in shared memory); the wgmma kernel for serving problems at D {}; decode "
                        "shapes (S*H/Hk <= 16) where B*Hk*G blocks fill half the SMs or H = Hk: "
                        "mma-decode's kernel, the GQA group packed in one tile, G key chunks; mma.sync m16n8k16 "
                        "with a cp.async K/V ring elsewhere; S/P in registers",
                        ws_head_dims(), ws_head_dims(1), wg_head_dims()),
            fmt::format("kv_cache: the append runs first; FP8 (P in e4m3, O in bf16) on sm_90 with 90a built, "
                        "dense, D in {}; H, B*G <= 65535",
                        ws_head_dims(1)),
            false, nullptr,
            [](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
              if (use_packed_decode(p, G, ctx.device)) return make_packed_decode(p, in, ctx, G);
              return std::make_unique<MmaExecution>(p, in, G, ctx);
            }};
  r.auto_rank = 45;  // tensor cores: far ahead of tiled/splitk wherever its gate admits
  r.tiles = TileShape{128, 64};
  r.rz_accumulate_keys = 16;  // PV through m16n8k16 / wgmma k16: a truncating fp32 add every 16 keys
  r.fp8_accumulate_bits = 13;  // FP8 Q K^T through wgmma k32: Hopper's e8m13 accumulation
  r.tile_at = mma_tile;
  r.declare(mma_caps(), mma_limits);
  return r;
}
FA_REGISTER_PATH(mma_row);

}  // namespace
}  // namespace fa::gpu
