// test_decode.cu — the device FP4 decoder (optimized/gpu/decode.cuh) against the CPU decoder
// (reference/formats.hpp), which was written separately: a bug shared by both would pass
// everywhere else, so the two are compared over every (E2M1 code, E4M3 byte) pair, bit for bit
// (value, sign of zero, NaN), and on a batched matrix whose layout exercises nibble order, row
// and batch strides and the concatenation stride used for [B1; B2].
#include <cuda_bf16.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ios>
#include <string>
#include <vector>

#include "formats.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/decode.cuh"

using namespace nvfp4;
using namespace nvfp4::gpu;

namespace {

float bf16_bits_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Decodes on the device; returns the raw bf16 bit patterns of `out_elems` output elements
// (pre-filled with `fill` so untouched elements are visible).
std::vector<uint16_t> gpu_decode(const std::vector<uint8_t>& packed, const std::vector<uint8_t>& scales,
                                 int64_t batches, int64_t rows, int64_t K, int64_t out_stride,
                                 uint16_t fill) {
  const size_t out_elems = size_t(batches * out_stride);
  std::vector<uint16_t> host(out_elems, fill);
  DeviceBuffer<uint8_t> p(packed.size()), s(scales.size());
  DeviceBuffer<uint16_t> out(out_elems);
  p.upload(packed.data(), packed.size());
  s.upload(scales.data(), scales.size());
  out.upload(host.data(), out_elems);
  decode_fp4_to_bf16(p.get(), s.get(), reinterpret_cast<__nv_bfloat16*>(out.get()), batches, rows, K,
                     out_stride, nullptr);
  NVFP4_CUDA_CHECK(cudaDeviceSynchronize());
  out.download(host.data(), out_elems);
  NVFP4_CUDA_CHECK(cudaDeviceSynchronize());
  return host;
}

// The CPU decoder's value of one element, and whether the GPU's bf16 bits represent exactly it.
bool same_value(uint16_t gpu_bits, uint8_t code, uint8_t scale, std::string* why) {
  const double want = e2m1_value(code) * e4m3_value(scale);
  const float got = bf16_bits_to_float(gpu_bits);
  if (std::isnan(want) || std::isnan(got)) {
    if (std::isnan(want) && std::isnan(got)) return true;
    *why = "NaN mismatch";
    return false;
  }
  if (double(got) != want || std::signbit(double(got)) != std::signbit(want)) {
    *why = "value " + std::to_string(got) + " (bits " + std::to_string(gpu_bits) + "), want " +
           std::to_string(want);
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("decode: every (E2M1 code, E4M3 scale) pair matches the CPU decoder bit for bit") {
  // Row r has scale byte r and the 16 codes 0..15 as its 16 elements (K = 16):
  // byte j holds code 2j in the low nibble and 2j+1 in the high one.
  const int64_t rows = 256, K = 16;
  std::vector<uint8_t> packed(static_cast<size_t>(rows * K / 2)), scales(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    scales[size_t(r)] = uint8_t(r);
    for (int j = 0; j < 8; ++j) packed[size_t(r * 8 + j)] = uint8_t((2 * j) | ((2 * j + 1) << 4));
  }
  const auto out = gpu_decode(packed, scales, 1, rows, K, rows * K, 0xDEAD);
  int bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int code = 0; code < 16; ++code) {
      std::string why;
      if (!same_value(out[size_t(r * K + code)], uint8_t(code), uint8_t(r), &why)) {
        if (++bad <= 10) MESSAGE("code " << code << " scale 0x" << std::hex << r << ": " << why);
      }
    }
  CHECK(bad == 0);
  // Spot checks that make a wrong table obvious: 6 * 448 and 0.5 * 2^-9 (smallest product).
  CHECK(bf16_bits_to_float(out[size_t(0x7E * K + 7)]) == 2688.0f);
  CHECK(bf16_bits_to_float(out[size_t(0x01 * K + 1)]) == std::ldexp(1.0f, -10));
  CHECK(std::isnan(bf16_bits_to_float(out[size_t(0x7F * K + 0)])));   // 0 * NaN is NaN
  CHECK(std::signbit(bf16_bits_to_float(out[size_t(0x38 * K + 8)])));  // -0 * 1 is -0
}

TEST_CASE("decode: batched ragged matrix, nibble order, row/batch/concatenation strides") {
  // 3 batches of 37 rows x 160 (10 scale blocks per row); output batch stride leaves a gap of 64
  // elements after each batch (as [B1; B2] does) that must stay untouched.
  const int64_t L = 3, rows = 37, K = 160, stride = rows * K + 64;
  std::vector<uint8_t> packed(static_cast<size_t>(L * rows * K / 2)),
      scales(static_cast<size_t>(L * rows * K / 16));
  uint64_t x = 0x9E3779B97F4A7C15ull;  // splitmix-style sequence, fixed seed
  auto next = [&] {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (auto& b : packed) b = uint8_t(next());
  for (auto& s : scales) s = uint8_t(next() % 0x7F);  // finite, non-negative scales
  const uint16_t fill = 0x7FAB;
  const auto out = gpu_decode(packed, scales, L, rows, K, stride, fill);
  int bad = 0;
  for (int64_t l = 0; l < L; ++l) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < K; ++k) {
        const uint8_t* row = packed.data() + (l * rows + r) * (K / 2);
        const uint8_t code = fp4_code_at(row, k);
        const uint8_t sc = scales[size_t((l * rows + r) * (K / 16) + k / 16)];
        std::string why;
        if (!same_value(out[size_t(l * stride + r * K + k)], code, sc, &why) && ++bad <= 10)
          MESSAGE("l " << l << " r " << r << " k " << k << ": " << why);
      }
    for (int64_t g = rows * K; g < stride; ++g)
      if (out[size_t(l * stride + g)] != fill && ++bad <= 10) MESSAGE("gap written at l " << l);
  }
  CHECK(bad == 0);
}
