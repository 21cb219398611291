// epilogue.cuh — the SwiGLU epilogue of the unfused GPU paths: C = fp16(silu(alpha1*G) * (alpha2*U)).
//
// Arithmetic (the rounding points a tolerance must allow for): silu_mul of reference/silu.hpp in
// fp32 with the IEEE division (the accurate expf, no fast-math), then one round-to-nearest-even
// conversion to fp16 (overflow gives +-inf, NaN stays NaN).
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "silu.hpp"

namespace nvfp4::gpu {

// C[r, n] = fp16(silu_mul(D[r, n], D[r, N + n])) for r in [0, rows), n in [0, N):
//   d: fp32, row r at d + r * ldd, G in columns [0, N), U in columns [N, 2N); ldd % 4 == 0
//   c: fp16, (rows, N) row-major
// rows = L * M (the batches are stacked). Vectorized by 4 columns when N % 4 == 0.
void silu_mul_to_fp16(const float* d, int64_t ldd, __half* c, int64_t rows, int64_t N, float alpha1,
                      float alpha2, cudaStream_t stream);

}  // namespace nvfp4::gpu
