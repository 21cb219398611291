// fp4_decode.cuh — the fused kernels' in-register NVFP4 decoders: packed E2M1 codes times one E4M3
// scale to fp16, exactly (docs/design.md §1 for the formats; every E2M1·E4M3 product has at most 6
// significant bits and lies in [2^-10, 2688], inside fp16's normal range, so fp16 holds it
// exactly). A NaN scale gives NaN products (also for zero codes), a negative scale negative ones,
// as the reference does. Each decoder emits the 8 elements of a group of 8 in its own fixed
// order; the two operands of a GEMM must go through decoders with the same order, so that both
// see the same permutation of K.
//
// These are written separately from plain's decoder (optimized/gpu/decode.cuh) and from the CPU
// decoder (reference/formats.hpp), and cross-checked against the reference over every code and
// scale byte (tests/gpu/test_fused.cu).
#pragma once
#include <cstdint>

#include "ptx.cuh"

namespace nvfp4::gpu::fused {

// 8 packed E2M1 codes (e_i in bits 4i..4i+3 of x) times one scale -> 8 fp16 in the order
// e0 e2 e4 e6 e1 e3 e5 e7. `s64` is the scale times 64 in both fp16 halves.
__device__ __forceinline__ uint4 decode8(uint32_t x, uint32_t s64) {
  using namespace ptx;
  // E4M3 bytes holding value*2^-6: magnitude bits 0-2 -> 2-4, sign bit 3 -> 7 (per nibble).
  const uint32_t even = ((x << 2) & 0x1C1C1C1Cu) | ((x << 4) & 0x80808080u);  // e0 e2 e4 e6
  const uint32_t odd = ((x >> 2) & 0x1C1C1C1Cu) | (x & 0x80808080u);          // e1 e3 e5 e7
  uint4 r;
  r.x = hmul2(e4m3x2_lo_to_f16x2(even), s64);
  r.y = hmul2(e4m3x2_hi_to_f16x2(even), s64);
  r.z = hmul2(e4m3x2_lo_to_f16x2(odd), s64);
  r.w = hmul2(e4m3x2_hi_to_f16x2(odd), s64);
  return r;
}

// The integer decoder (no conversion instructions): 8 packed E2M1 codes -> 8 fp16 in the order
// e0 e4 e1 e5 e2 e6 e3 e7, times one scale `s` (fp16 in both halves). Each nibble s|e1 e0|m is
// moved to the fp16 bits s.......|0 0 0 e1 e0|m 0..0 (sign 15, exponent bits 11-10, mantissa
// bit 9), which encode exactly value*2^-14 (code 1 as an fp16 subnormal); one multiply by 2^14
// and one by the scale give value*scale exactly (fp16 arithmetic keeps subnormals).
// Word i holds elements i (low half) and i+4 (high half), whose nibbles are 16 bits apart, so one
// shift per word serves both halves.
__device__ __forceinline__ uint4 decode8_int(uint32_t x, uint32_t s) {
  using ptx::hmul2;
  constexpr uint32_t kMag = 0x0E000E00u, kSign = 0x80008000u, kTwo14 = 0x74007400u;  // 2^14
  const uint32_t w0 = ((x << 9) & kMag) | ((x << 12) & kSign);
  const uint32_t w1 = ((x << 5) & kMag) | ((x << 8) & kSign);
  const uint32_t w2 = ((x << 1) & kMag) | ((x << 4) & kSign);
  const uint32_t w3 = ((x >> 3) & kMag) | (x & kSign);
  uint4 r;
  r.x = hmul2(hmul2(w0, kTwo14), s);
  r.y = hmul2(hmul2(w1, kTwo14), s);
  r.z = hmul2(hmul2(w2, kTwo14), s);
  r.w = hmul2(hmul2(w3, kTwo14), s);
  return r;
}

// One E4M3 scale byte -> (scale * 64) in both fp16 halves (decode8 yields value * 2^-6).
__device__ __forceinline__ uint32_t scale64(uint32_t b) {
  return ptx::hmul2(ptx::e4m3x2_lo_to_f16x2(b * 0x0101u), 0x54005400u);
}

}  // namespace nvfp4::gpu::fused
