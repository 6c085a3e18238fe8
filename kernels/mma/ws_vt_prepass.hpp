// The V^T pre-pass of mma's sm_90 FP8 kernel (ws_tile_traits.hpp's vt_prepass_rows): before mma_ws_fwd,
// one kernel reads V once and writes V^T, wgmma's K-major 8-bit B operand, to a scratch tensor
// [B][Hk][D][vt_keys(Sk, BN)] in the key order P's registers hold (ws_fp8.hpp's vt_source_key); the main
// kernel then brings V^T tiles in by the TMA as it does K. Without it the producer warpgroup's warps
// transpose every V tile in shared memory, once per block that reads it; under ncu that transposer was
// what held the FP8 kernel back (H200, 2026-11-29: the FP8 D = 256 kernel with the transposer's loop
// taken out ran 0.873 ms against 1.301, D = 128 1.311 against 1.436). FA3 takes V already
// column-major (hopper/, v_colmajor) and else transposes it in the kernel, as this kernel did. The
// main kernel is launched to overlap this one's tail (fa_mma_ws.hpp's launch_ws_cfg).
#pragma once
#include <cstdint>

#include "kernels/device/device_common.hpp"
#include "kernels/device/gpu.hpp"
#include "kernels/mma/ws_fp8.hpp"

namespace fa::gpu {
namespace {

constexpr int kVtPrepassThreads = 256;

// A block: kVtChunkKeys keys of one (batch, kv head). Its rows land in shared memory (16-byte global
// loads, 4-byte stores, vt_chunk_pitch words a row: 4-way bank conflicts at most below); then each
// item (ws_fp8.hpp's vt_item: one output word column, four head-dim rows) loads the 4 key words its
// slots stand for, transposes them in registers and stores 4 words. A first form that loaded single
// key bytes took 88% of L1 and ran at 1.5 TB/s (ncu, D = 256, 8k keys: 44 us; this one about half).
template <int D>
__global__ void __launch_bounds__(kVtPrepassThreads) ws_vt_prepass(const uint8_t* __restrict__ v, int64_t s_row,
                                                                    int64_t s_head, int64_t s_batch,
                                                                    uint8_t* __restrict__ vt, int Sk, int64_t keys,
                                                                    int Hk) {
  constexpr int kChunk = ws::kVtChunkKeys, kPitch = ws::vt_chunk_pitch(D);  // words a row in shared memory
  __shared__ uint32_t chunk[kChunk * kPitch];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The main kernel may launch now (programmatic dependent launch, launch_ws_cfg): its blocks take
  // SMs as this grid's last blocks leave, and its producer waits for this grid before any V^T load.
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  const int64_t k0 = int64_t(blockIdx.x) * kChunk;
  const int h = int(blockIdx.y), b = int(blockIdx.z);
  const uint8_t* src = v + b * s_batch + h * s_head;
  for (int i = int(threadIdx.x); i < kChunk * D / 16; i += kVtPrepassThreads) {
    const int r = i / (D / 16), c = i % (D / 16);
    uint4 x = make_uint4(0u, 0u, 0u, 0u);
    if (k0 + r < Sk) x = *reinterpret_cast<const uint4*>(src + (k0 + r) * s_row + 16 * c);
    uint32_t* row = chunk + r * kPitch + 4 * c;
    row[0] = x.x, row[1] = x.y, row[2] = x.z, row[3] = x.w;
  }
  __syncthreads();
  uint8_t* dst = vt + (int64_t(b) * Hk + h) * D * keys + k0;
  for (int i = int(threadIdx.x); i < ws::vt_items(D); i += kVtPrepassThreads) {
    const ws::VtItem it = ws::vt_item(i);
    uint32_t in[4], out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) in[j] = chunk[ws::vt_prepass_word(it, j, D)];
    ws::transpose_4x4_bytes(in, out);
#pragma unroll
    for (int r = 0; r < 4; ++r) *reinterpret_cast<uint32_t*>(dst + int64_t(4 * it.dg + r) * keys + 4 * it.w) = out[r];
  }
}

// Enqueues the pre-pass of a's V (FP8: element strides are bytes) into vt, vt_keys(Sk, BN) bytes a
// row for the instance's BN.
template <int D, int BN>
void launch_vt_prepass(const AttnArgs& a, uint8_t* vt, Stream st) {
  const int64_t keys = ws::vt_keys(a.Sk, BN);
  ws_vt_prepass<D><<<dim3(unsigned(keys / ws::kVtChunkKeys), unsigned(a.Hk), unsigned(a.B)), kVtPrepassThreads, 0,
                     st>>>(reinterpret_cast<const uint8_t*>(a.v), a.k_ss, a.k_sh, a.k_sb, vt, a.Sk, keys, a.Hk);
  FA_GPU_CHECK_LAUNCH("ws_vt_prepass");
}

}  // namespace
}  // namespace fa::gpu
