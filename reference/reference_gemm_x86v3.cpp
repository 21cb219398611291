// reference_gemm_x86v3.cpp — the GEMM kernels compiled for x86-64-v3 (flags set per file in
// reference/CMakeLists.txt); an empty accessor when this build has no such copy.
#include "reference_gemm.hpp"

#if defined(NVFP4_GEMM_X86V3)
#define NVFP4_GEMM_FN gemm_kernels_x86v3
#define NVFP4_GEMM_ISA_NAME "x86-64-v3"
#define NVFP4_EIGEN_NS Eigen_nvfp4_x86v3
#include "reference_gemm.inc"
#else
namespace nvfp4 {
namespace detail {
const GemmKernels* gemm_kernels_x86v3() { return nullptr; }
}  // namespace detail
}  // namespace nvfp4
#endif
