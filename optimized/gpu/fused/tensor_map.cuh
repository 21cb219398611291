// tensor_map.cuh — host side: the TMA tensor maps (CUtensorMap) the fused kernels load and store
// through. The driver's cuTensorMapEncodeTiled is reached through the runtime's entry-point query,
// so nothing links -lcuda.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace nvfp4::gpu::fused {

// A tiled tensor map over a (width, rows, L) array of `elem_bytes`-byte elements (rows `width`
// elements long, batches `rows` rows apart), box (box_w, box_rows, 1), zero fill out of bounds.
// Throws std::runtime_error with the driver's status when encoding fails.
inline CUtensorMap make_tensor_map(const void* ptr, int elem_bytes, int64_t width, int64_t rows,
                                   int L, uint32_t box_w, uint32_t box_rows,
                                   CUtensorMapSwizzle swizzle) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
                              CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                              CUtensorMapFloatOOBfill);
  static Encode encode = nullptr;
  if (!encode) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn)
      throw std::runtime_error("fused: cuTensorMapEncodeTiled is not available from the driver");
    encode = reinterpret_cast<Encode>(fn);
  }
  CUtensorMap m;
  const cuuint64_t dims[3] = {cuuint64_t(width), cuuint64_t(rows), cuuint64_t(L)};
  const cuuint64_t strides[2] = {cuuint64_t(width * elem_bytes),
                                 cuuint64_t(width * rows * elem_bytes)};  // bytes
  const cuuint32_t box[3] = {box_w, box_rows, 1};
  const cuuint32_t estr[3] = {1, 1, 1};
  const CUresult r =
      encode(&m, elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8, 3,
             const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("fused: cuTensorMapEncodeTiled failed with status " +
                             std::to_string(int(r)));
  return m;
}

}  // namespace nvfp4::gpu::fused
