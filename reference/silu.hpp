// silu.hpp — the SwiGLU epilogue's arithmetic, written once for every path and for the comparison:
//
//   silu_mul(g, u, alpha1, alpha2) = silu(alpha1*g) * (alpha2*u),  silu(x) = x / (1 + exp(-x))
//
// in the precision of its arguments (fp32 on the CPU and GPU paths, double in the harness's exact
// comparison), in this order: x = alpha1*g, d = 1 + exp(-x), q = x / d, then q * (alpha2*u). The
// rounding points are those docs/design.md §4 derives the epilogue tolerance from (exp, add,
// divide, multiply). For x below about -88 (fp32) exp(-x) overflows to +inf and the quotient is
// -0, which is also what the exact value rounds to in fp16; NaN propagates.
//
// `Divide` is the division policy: IeeeDivide (the default) is the correctly rounded x / d. A GPU
// kernel may pass its own policy for speed (optimized/gpu/fused/v5_epilogue.cuh); the rest of the
// arithmetic stays this function's.
//
// Usable from host and device code: under nvcc the functions are __host__ __device__ (NVFP4_HD);
// elsewhere they are plain inline C++ (reference/ needs no CUDA).
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define NVFP4_HD __host__ __device__ __forceinline__
#else
#define NVFP4_HD inline
#endif

namespace nvfp4 {

// exp in the argument's precision: expf for float (the accurate one, not __expf), exp for double.
NVFP4_HD float silu_exp(float x) { return expf(x); }
NVFP4_HD double silu_exp(double x) { return exp(x); }

// The correctly rounded quotient.
struct IeeeDivide {
  template <class T>
  NVFP4_HD static T quotient(T x, T d) {
    return x / d;
  }
};

// silu(x) = x / (1 + exp(-x)).
template <class Divide = IeeeDivide, class T>
NVFP4_HD T silu(T x) {
  return Divide::quotient(x, T(1) + silu_exp(-x));
}

// silu(alpha1*g) * (alpha2*u), rounded as the header says.
template <class Divide = IeeeDivide, class T>
NVFP4_HD T silu_mul(T g, T u, T alpha1, T alpha2) {
  return silu<Divide>(alpha1 * g) * (alpha2 * u);
}

}  // namespace nvfp4
