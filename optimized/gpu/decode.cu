// decode.cu — the FP4 x E4M3 -> bf16 decode kernel (layouts and exactness in decode.cuh).
#include "cuda_util.hpp"
#include "decode.cuh"

namespace nvfp4::gpu {

namespace {

// One thread per 16-element scale block. Block b of the flattened (batches, rows, K/16) scale
// array: its 8 packed bytes start at byte 8*b of `packed` (rows are contiguous), its scale is
// scales[b], its 16 outputs start at element 16*(b % per_batch) of batch b / per_batch.
// (A variant with 8-element chunks per lane, fully coalesced 16-byte stores and 4 chunks per
// thread was slower on the H100 at the benchmark shapes — fewer bytes in flight per SM — so this
// simple form stays.)
__global__ void decode_fp4_bf16_kernel(const uint2* __restrict__ packed,
                                       const uint8_t* __restrict__ scales,
                                       __nv_bfloat16* __restrict__ out, int64_t blocks,
                                       int64_t per_batch, int64_t out_batch_stride) {
  for (int64_t b = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; b < blocks;
       b += int64_t(gridDim.x) * blockDim.x) {
    const uint2 codes = packed[b];
    const float s = e4m3_to_float(scales[b]);
    const int64_t batch = b / per_batch;
    const int64_t in_batch = b - batch * per_batch;  // row * (K/16) + block within the row
    uint4* dst = reinterpret_cast<uint4*>(out + batch * out_batch_stride + in_batch * 16);
    uint32_t word[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t byte = ((i < 4 ? codes.x : codes.y) >> (8 * (i & 3))) & 0xFFu;
      // Low nibble = even element, high nibble = odd element. The products are exact (see
      // decode.cuh), so the bf16 value is the upper half of the fp32 bits.
      const uint32_t lo = __float_as_uint(e2m1_to_float(byte & 0xFu) * s) >> 16;
      const uint32_t hi = __float_as_uint(e2m1_to_float(byte >> 4) * s) >> 16;
      word[i] = lo | (hi << 16);
    }
    dst[0] = make_uint4(word[0], word[1], word[2], word[3]);
    dst[1] = make_uint4(word[4], word[5], word[6], word[7]);
  }
}

}  // namespace

void decode_fp4_to_bf16(const uint8_t* packed, const uint8_t* scales, __nv_bfloat16* out,
                        int64_t batches, int64_t rows, int64_t K, int64_t out_batch_stride,
                        cudaStream_t stream) {
  const int64_t per_batch = rows * (K / 16);
  const int64_t blocks = batches * per_batch;
  if (blocks == 0) return;
  const int threads = 256;
  int64_t grid = (blocks + threads - 1) / threads;
  if (grid > 65535 * 8) grid = 65535 * 8;  // grid-stride beyond this
  decode_fp4_bf16_kernel<<<unsigned(grid), threads, 0, stream>>>(
      reinterpret_cast<const uint2*>(packed), scales, out, blocks, per_batch, out_batch_stride);
  NVFP4_CHECK_LAUNCH();
}

}  // namespace nvfp4::gpu
