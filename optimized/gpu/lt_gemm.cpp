// lt_gemm.cpp — LtGemm: cuBLASLt descriptors, heuristic algorithm list and the matmul call.
// Layout conventions are in lt_gemm.hpp.
#include "lt_gemm.hpp"

#include <cstdio>
#include <stdexcept>

namespace nvfp4::gpu {

namespace {

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                   int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  NVFP4_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, uint64_t(rows), uint64_t(cols), ld));
  if (batch > 1) {
    const int32_t count = int32_t(batch);
    try {
      NVFP4_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                          &count, sizeof(count)));
      NVFP4_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    } catch (...) {
      cublasLtMatrixLayoutDestroy(layout);
      throw;
    }
  }
  return layout;
}

template <class T>
T algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written) !=
      CUBLAS_STATUS_SUCCESS)
    return T{};
  return value;
}

}  // namespace

LtGemm::LtGemm(const LtGemmShape& s, Input input, cudaDataType_t out_type, int max_algos,
               const void* x_scale, const void* w_scale) {
  if (s.rows < 1 || s.cols < 1 || s.K < 1 || s.batch < 1 || s.ldd < s.cols)
    throw std::invalid_argument("LtGemm: bad shape");
  try {
    const cudaDataType_t in_type = input == Input::BF16 ? CUDA_R_16BF : CUDA_R_4F_E2M1;
    NVFP4_CUBLAS_CHECK(cublasLtCreate(&handle_));
    NVFP4_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_w = CUBLAS_OP_T, trans_x = CUBLAS_OP_N;
    NVFP4_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_w, sizeof(trans_w)));
    NVFP4_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_x, sizeof(trans_x)));
    if (input == Input::FP4_VEC16) {
      if (!x_scale || !w_scale) throw std::invalid_argument("LtGemm: FP4 input needs scale pointers");
      const cublasLtMatmulMatrixScale_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
      // cuBLASLt's "A" is W and its "B" is X (see the header).
      NVFP4_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                                                        &mode, sizeof(mode)));
      NVFP4_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
                                                        &mode, sizeof(mode)));
      NVFP4_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                        &w_scale, sizeof(w_scale)));
      NVFP4_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                        &x_scale, sizeof(x_scale)));
    }
    a_ = make_layout(in_type, s.K, s.cols, s.K, s.batch, s.w_stride);
    b_ = make_layout(in_type, s.K, s.rows, s.K, s.batch, s.x_stride);
    d_ = make_layout(out_type, s.cols, s.rows, s.ldd, s.batch, s.d_stride);

    workspace_ = DeviceBuffer<unsigned char>(kWorkspaceBytes);
    NVFP4_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_));
    const size_t ws = kWorkspaceBytes;
    NVFP4_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));

    // The heuristic query happens here, once; never inside a capture.
    if (max_algos < 1) max_algos = 1;
    std::vector<cublasLtMatmulHeuristicResult_t> found(static_cast<size_t>(max_algos));
    int returned = 0;
    NVFP4_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, d_, d_, pref_,
                                                      max_algos, found.data(), &returned));
    for (int i = 0; i < returned; ++i)
      if (found[size_t(i)].state == CUBLAS_STATUS_SUCCESS &&
          found[size_t(i)].workspaceSize <= kWorkspaceBytes)
        algos_.push_back(found[size_t(i)]);
    if (algos_.empty())
      throw CudaError("cuBLASLt offers no algorithm for this matrix product (" +
                      std::to_string(s.rows) + "x" + std::to_string(s.cols) + "x" +
                      std::to_string(s.K) + ", batch " + std::to_string(s.batch) + ")");
  } catch (...) {
    release();  // the destructor does not run when the constructor throws
    throw;
  }
}

LtGemm::~LtGemm() { release(); }

void LtGemm::release() noexcept {
  if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
  if (d_) cublasLtMatrixLayoutDestroy(d_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  if (handle_) cublasLtDestroy(handle_);
  pref_ = nullptr;
  d_ = b_ = a_ = nullptr;
  op_ = nullptr;
  handle_ = nullptr;
}

std::string LtGemm::algo_name(size_t index) const {
  const cublasLtMatmulHeuristicResult_t& r = algos_.at(index);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "cublasLt algo id=%d tile=%u stages=%u splitK=%d reduction=%u swizzle=%u custom=%u "
                "inner=%u cluster=%u ws=%zu",
                algo_attr<int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_ID),
                algo_attr<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                algo_attr<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                algo_attr<int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                algo_attr<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
                algo_attr<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                algo_attr<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
                unsigned(algo_attr<uint16_t>(r.algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID)),
                unsigned(algo_attr<uint16_t>(r.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)),
                r.workspaceSize);
  return buf;
}

void LtGemm::select(size_t index) {
  if (index >= algos_.size())
    throw std::out_of_range("LtGemm::select: index " + std::to_string(index) + " of " +
                            std::to_string(algos_.size()) + " algorithms");
  selected_ = index;
}

void LtGemm::enqueue(const void* x, const void* w, void* d, cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  const cublasLtMatmulHeuristicResult_t& r = algos_[selected_];
  NVFP4_CUBLAS_CHECK(cublasLtMatmul(handle_, op_, &alpha, w, a_, x, b_, &beta, d, d_, d, d_,
                                    &r.algo, workspace_.get(), workspace_.bytes(), stream));
}

}  // namespace nvfp4::gpu
