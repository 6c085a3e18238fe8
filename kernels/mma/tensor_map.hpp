// Tensor maps for the TMA (cuTensorMapEncodeTiled, reached through the runtime's driver entry point
// so that nothing links libcuda), from a tile description of ws_layout.hpp (ws::TmaTile): mma's
// sm_90 kernel (kernels/mma/fa_mma_ws.hpp) and mma-decode's sm_90 stream (kernels/mma/fa_mma_decode.hip)
// encode theirs here.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "harness/conventions.hpp"
#include "kernels/mma/async_sm90.hpp"
#include "kernels/mma/ws_layout.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#if FA_CUDA
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000, and cuda.h's tensor map enums
#endif

namespace fa::gpu {

// Whether this binary holds sm_90a device code (wgmma is an sm_90a feature, neither sm_80 code nor a
// later arch runs it, and the TMA code of mma and mma-decode is built in that pass); the paths'
// hosts ask it with the device's facts.
#ifdef FABENCH_CUDA_SM90A
inline constexpr bool kBuiltSm90a = true;
#else
inline constexpr bool kBuiltSm90a = false;
#endif

#if FA_CUDA
// cuTensorMapEncodeTiled from the driver the runtime loaded. cudaGetDriverEntryPointByVersion is the
// form CUDA 13 keeps (plain cudaGetDriverEntryPoint is deprecated there); 12000 asks for the
// signature as of CUDA 12.0, the one cudaTypedefs.h names _v12000.
inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    FA_GPU_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !p)
      throw std::runtime_error("mma: the driver has no cuTensorMapEncodeTiled (it needs a CUDA 12.0+ driver)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}
#endif

// Encodes one tensor map: 16-bit elements (FP8 tensors as pairs of bytes), the tile's swizzle,
// out-of-bounds boxes filled with zeros (rows past S or Sk), L2 promotion of 128 bytes (CUTLASS's
// default for its TMA copies) or 256 (`l2_promote`; mma-decode's stream on cards where that pays:
// fa_mma_decode_traits.hpp's decode_l2_promote).
inline sm90::TensorMap encode_map(DType t, const uint16_t* base, const ws::TmaTile& g, const char* what,
                                  int l2_promote = 128) {
  if (const char* why = ws::tma_tile_problem(g))
    throw std::logic_error(fmt::format("mma: the {} tensor map: {} (the gate should have said so)", what, why));
#if FA_CUDA
  static_assert(sizeof(sm90::TensorMap) == sizeof(CUtensorMap) && alignof(sm90::TensorMap) == alignof(CUtensorMap));
  CUtensorMap m;
  const cuuint64_t dim[5] = {g.dim[0], g.dim[1], g.dim[2], g.dim[3], g.dim[4]};
  const cuuint64_t stride[4] = {g.stride[0], g.stride[1], g.stride[2], g.stride[3]};
  const cuuint32_t box[5] = {g.box[0], g.box[1], g.box[2], g.box[3], g.box[4]}, unit[5] = {1, 1, 1, 1, 1};
  const CUresult r = encode_tiled()(
      &m,
      t == DType::bf16   ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
      : t == DType::fp16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                         : CU_TENSOR_MAP_DATA_TYPE_UINT16,  // FP8: the TMA moves bytes, two a column
      cuuint32_t(g.rank),
      const_cast<uint16_t*>(base), dim, stride, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
      g.swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : g.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B,
      l2_promote == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(fmt::format("mma: cuTensorMapEncodeTiled for {} failed (CUresult {}): rank {}, dims {}, "
                                         "byte strides {}, box {}",
                                         what, int(r), g.rank, fmt::join(g.dim, g.dim + g.rank, "x"),
                                         fmt::join(g.stride, g.stride + g.rank - 1, "/"),
                                         fmt::join(g.box, g.box + g.rank, "x")));
  sm90::TensorMap out;
  std::memcpy(&out, &m, sizeof m);
  return out;
#else
  (void)t, (void)base, (void)l2_promote;
  throw std::logic_error("mma: tensor maps are a CUDA feature (the gate refuses other devices)");
#endif
}

}  // namespace fa::gpu
