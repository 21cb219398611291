// decode.cuh — the device-side NVFP4 decoder: packed E2M1 codes times E4M3FN block scales to bf16.
//
// Written from the format definitions (docs/design.md §1), independently of the CPU decoder in
// reference/formats.cpp; tests/gpu/test_decode.cu compares the two over all 16 x 256 (code,
// scale) pairs.
//   E2M1 code c (bit 3 = sign): magnitude 0, 0.5, 1, 1.5, 2, 3, 4, 6 for c & 7 = 0..7.
//   E4M3FN byte b: sign bit 7, exponent bits 6..3 (bias 7), mantissa bits 2..0; exponent 0 is
//   subnormal (m/8 * 2^-6); 0x7F / 0xFF are NaN; no infinities.
// Exactness: |code| * |scale| has at most 2 + 4 = 6 significant bits and lies in [2^-10, 2688]
// (or is 0), so the fp32 product is exact and so is its bf16 value (8 significant bits, the fp32
// exponent range): the bf16 bits are the fp32 bits' upper half, no rounding happens.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace nvfp4::gpu {

// E2M1 code (low 4 bits of `code`) -> fp32, built from the bit fields: magnitude 1 is the
// subnormal 0.5; magnitudes 2..7 are (1 + m/2) * 2^(e-1) with e = mag >> 1, m = mag & 1.
__host__ __device__ inline float e2m1_to_float(uint32_t code) {
  const uint32_t mag = code & 7u;
  const uint32_t sign = (code & 8u) << 28;
  uint32_t bits;
  if (mag == 0u)
    bits = 0u;
  else if (mag == 1u)
    bits = 0x3F000000u;  // 0.5
  else
    bits = (((mag >> 1) + 126u) << 23) | ((mag & 1u) << 22);
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits | sign);
#else
  float f;
  bits |= sign;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// E4M3FN byte -> fp32: normal values (1 + m/8) * 2^(e-7) map to the fp32 exponent e + 120 and
// the top three mantissa bits; subnormals are m * 2^-9; 0x7F/0xFF give a quiet NaN.
__host__ __device__ inline float e4m3_to_float(uint32_t byte) {
  const uint32_t sign = (byte & 0x80u) << 24;
  const uint32_t e = (byte >> 3) & 0xFu, m = byte & 7u;
  uint32_t bits;
  if (e == 0u) {
    const float sub = float(m) * 0.001953125f;  // m * 2^-9, exact
#ifdef __CUDA_ARCH__
    bits = __float_as_uint(sub);
#else
    __builtin_memcpy(&bits, &sub, sizeof bits);
#endif
  } else if (e == 15u && m == 7u) {
    bits = 0x7FC00000u;
  } else {
    bits = ((e + 120u) << 23) | (m << 20);
  }
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits | sign);
#else
  float f;
  bits |= sign;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// Decodes a packed FP4 matrix with its plain-layout scales into bf16, batch by batch:
//   packed (batches, rows, K/2) bytes, element 2j in the low nibble of byte j
//   scales (batches, rows, K/16) E4M3FN bytes
//   out    bf16, element (l, r, k) at out[l * out_batch_stride + r * K + k]
// (out_batch_stride >= rows * K lets [B1; B2] be decoded into one concatenated matrix).
// K % 16 == 0 and out_batch_stride % 8 == 0; packed 8-byte and out 16-byte aligned (cudaMalloc).
// One thread per 16-element block: an 8-byte load, a 1-byte scale load and two 16-byte stores.
void decode_fp4_to_bf16(const uint8_t* packed, const uint8_t* scales, __nv_bfloat16* out,
                        int64_t batches, int64_t rows, int64_t K, int64_t out_batch_stride,
                        cudaStream_t stream);

}  // namespace nvfp4::gpu
