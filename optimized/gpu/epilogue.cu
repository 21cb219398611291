// epilogue.cu — the silu·mul kernel (arithmetic and layouts in epilogue.cuh).
#include "cuda_util.hpp"
#include "epilogue.cuh"

namespace nvfp4::gpu {

namespace {

// Grid: x over column groups of 4 (kVec4) or single columns, y over rows (grid-stride).
// (A variant with 4 rows per thread, all loads issued first, was slower on the H100 at the
// benchmark shapes, so one row per thread stays.)
template <bool kVec4>
__global__ void silu_mul_kernel(const float* __restrict__ d, int64_t ldd, __half* __restrict__ c,
                                int64_t rows, int64_t N, float alpha1, float alpha2) {
  const int64_t col = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * (kVec4 ? 4 : 1);
  if (col >= N) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* g = d + r * ldd + col;
    const float* u = g + N;
    __half* out = c + r * N + col;
    if constexpr (kVec4) {
      const float4 g4 = *reinterpret_cast<const float4*>(g);
      const float4 u4 = *reinterpret_cast<const float4*>(u);
      const __half2 lo = __halves2half2(__float2half_rn(silu_mul(g4.x, u4.x, alpha1, alpha2)),
                                        __float2half_rn(silu_mul(g4.y, u4.y, alpha1, alpha2)));
      const __half2 hi = __halves2half2(__float2half_rn(silu_mul(g4.z, u4.z, alpha1, alpha2)),
                                        __float2half_rn(silu_mul(g4.w, u4.w, alpha1, alpha2)));
      uint2 packed;
      packed.x = *reinterpret_cast<const uint32_t*>(&lo);
      packed.y = *reinterpret_cast<const uint32_t*>(&hi);
      *reinterpret_cast<uint2*>(out) = packed;
    } else {
      *out = __float2half_rn(silu_mul(*g, *u, alpha1, alpha2));
    }
  }
}

}  // namespace

void silu_mul_to_fp16(const float* d, int64_t ldd, __half* c, int64_t rows, int64_t N, float alpha1,
                      float alpha2, cudaStream_t stream) {
  if (rows == 0 || N == 0) return;
  const bool vec4 = N % 4 == 0 && ldd % 4 == 0;
  const int threads = 128;
  const int64_t per_row = vec4 ? N / 4 : N;
  const dim3 grid(unsigned((per_row + threads - 1) / threads),
                  unsigned(rows < 65535 ? rows : 65535));
  if (vec4)
    silu_mul_kernel<true><<<grid, threads, 0, stream>>>(d, ldd, c, rows, N, alpha1, alpha2);
  else
    silu_mul_kernel<false><<<grid, threads, 0, stream>>>(d, ldd, c, rows, N, alpha1, alpha2);
  NVFP4_CHECK_LAUNCH();
}

}  // namespace nvfp4::gpu
