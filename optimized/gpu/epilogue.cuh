// epilogue.cuh — the SwiGLU epilogue of the unfused GPU paths: C = fp16(silu(alpha1*G) * (alpha2*U)).
//
// Arithmetic (the rounding points a tolerance must allow for): fp32 throughout, silu(x) =
// x / (1 + expf(-x)) with the accurate expf (no fast-math) and an IEEE division, one product,
// then one round-to-nearest-even conversion to fp16 (overflow gives +-inf, NaN stays NaN).
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace nvfp4::gpu {

// silu(alpha1*g) * (alpha2*u) in fp32. For x below about -88, expf(-x) is +inf and the quotient
// is -0, which is also what the exact value rounds to in fp16.
__device__ __forceinline__ float silu_mul(float g, float u, float alpha1, float alpha2) {
  const float x = alpha1 * g;
  return x / (1.0f + expf(-x)) * (alpha2 * u);
}

// C[r, n] = fp16(silu_mul(D[r, n], D[r, N + n])) for r in [0, rows), n in [0, N):
//   d: fp32, row r at d + r * ldd, G in columns [0, N), U in columns [N, 2N); ldd % 4 == 0
//   c: fp16, (rows, N) row-major
// rows = L * M (the batches are stacked). Vectorized by 4 columns when N % 4 == 0.
void silu_mul_to_fp16(const float* d, int64_t ldd, __half* c, int64_t rows, int64_t N, float alpha1,
                      float alpha2, cudaStream_t stream);

}  // namespace nvfp4::gpu
