// reference_gemm.hpp — internal: the dense GEMM kernels behind the exact reference and the CPU
// backend, compiled once per x86-64 ISA level and chosen at run time (not part of the public API).
//
// Layouts: A is (M, K) row-major with row stride K; B is (N, K) row-major with row stride K (the
// "K-major" operand, so the product is A * B^T); C is (M, N) row-major with row stride ldc and is
// overwritten. Sums are plain floating-point dot products (Eigen's blocked GEMM, FMA where the ISA
// has it): the caller is responsible for proving exactness or bounding the error.
//
// The same source (reference_gemm.inc) is compiled as
//   reference_gemm_base.cpp   the portable baseline of the build (no -m flags)
//   reference_gemm_x86v3.cpp  -mavx2 -mfma ... (x86-64-v3), only on x86-64 with GCC/Clang
//   reference_gemm_x86v4.cpp  + AVX-512 F/DQ/BW/VL (x86-64-v4)
// and each copy puts Eigen in its own namespace so the linker cannot merge instantiations built for
// different ISAs (an AVX-512 copy of a template must never be called on a CPU without AVX-512).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nvfp4 {
namespace detail {

using GemmF64 = void (*)(const double* a, const double* b, double* c, int64_t M, int64_t N,
                         int64_t K, int64_t ldc);
using GemmF32 = void (*)(const float* a, const float* b, float* c, int64_t M, int64_t N,
                         int64_t K, int64_t ldc);

struct GemmKernels {
  const char* isa;  // "baseline", "x86-64-v3", "x86-64-v4"
  GemmF64 f64;
  GemmF32 f32;
};

// Each returns nullptr when that copy was not compiled for its ISA (e.g. not x86-64).
const GemmKernels* gemm_kernels_baseline();
const GemmKernels* gemm_kernels_x86v3();
const GemmKernels* gemm_kernels_x86v4();

// The kernels this CPU can run, best first (always ends with the baseline).
std::vector<const GemmKernels*> usable_gemm_kernels();
// The best usable kernels, or the named ones (throws InputError if unknown or not usable here).
const GemmKernels& gemm_kernels(const std::string& isa = "");

}  // namespace detail
}  // namespace nvfp4
