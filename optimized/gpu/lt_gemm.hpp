// lt_gemm.hpp — one cuBLASLt matrix product, prepared once and issued many times.
//
// Computes, for each batch l in [0, batch):
//     D[l] = X[l] · W[l]^T
//   X: rows x K, row-major (leading dimension K), batch stride x_stride elements
//   W: cols x K, row-major (leading dimension K), batch stride w_stride elements
//   D: rows x cols, row-major with leading dimension ldd >= cols, batch stride d_stride elements
// with fp32 accumulation (CUBLAS_COMPUTE_32F) and alpha = 1, beta = 0.
//
// In cuBLASLt's column-major terms this is the "TN" product: matrix "A" is W viewed as a K x cols
// column-major matrix with op T, matrix "B" is X viewed as K x rows with op N, and D is cols x rows
// column-major with leading dimension ldd. Element types:
//   Input::BF16       X, W bf16; D fp32 or bf16 (out_type)
//   Input::FP4_VEC16  X, W packed E2M1 (two per byte, low nibble first); block scales (E4M3, one
//                     per 16 K elements) in cuBLASLt's 128x4 blocked layout at x_scale / w_scale;
//                     sm_100+ only (native block-scaled FP4).
//
// Everything is created in the constructor: handle, descriptors, preference, workspace and the
// heuristic's algorithm list (the autotune candidates; index 0 is the heuristic's first choice).
// enqueue() issues cublasLtMatmul with the selected algorithm and the fixed workspace only, so it
// may be captured into a CUDA graph.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_util.hpp"

namespace nvfp4::gpu {

struct LtGemmShape {
  int64_t rows = 0, cols = 0, K = 0, batch = 1;
  int64_t ldd = 0;                                 // >= cols
  int64_t x_stride = 0, w_stride = 0, d_stride = 0;  // batch strides, in elements
};

class LtGemm {
 public:
  enum class Input { BF16, FP4_VEC16 };
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // what cuBLASLt asks for on Hopper

  // Throws CudaError when cuBLASLt offers no algorithm for this problem.
  LtGemm(const LtGemmShape& shape, Input input, cudaDataType_t out_type, int max_algos,
         const void* x_scale = nullptr, const void* w_scale = nullptr);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  size_t algo_count() const { return algos_.size(); }
  // "cublasLt algo id=21 tile=… stages=… splitK=1 reduction=0 swizzle=0 custom=0 cluster=…"
  std::string algo_name(size_t index) const;
  void select(size_t index);  // throws std::out_of_range
  size_t selected() const { return selected_; }

  // Issues D = X · W^T on `stream` (device pointers; see the header for layouts).
  void enqueue(const void* x, const void* w, void* d, cudaStream_t stream) const;

 private:
  void release() noexcept;  // destroys the cuBLASLt objects created so far

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  DeviceBuffer<unsigned char> workspace_;
  std::vector<cublasLtMatmulHeuristicResult_t> algos_;
  size_t selected_ = 0;
};

}  // namespace nvfp4::gpu
