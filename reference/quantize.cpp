// quantize.cpp — float -> NVFP4 block quantizer and the E4M3FN / E2M1 encoders.
// Layouts and rounding rules: see quantize.hpp.
#include "quantize.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "errors.hpp"
#include "formats.hpp"

namespace nvfp4 {

uint8_t e4m3_encode(double x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(x);
  if (a >= 448.0) return static_cast<uint8_t>(sign | 0x7E);  // saturate: E4M3FN has no inf
  if (a < std::ldexp(1.0, -6)) {
    // Subnormal range: a multiple of 2^-9. nearbyint rounds ties to even (default rounding mode).
    // q == 8 lands exactly on the smallest normal, whose byte is also 0x08.
    const double q = std::nearbyint(std::ldexp(a, 9));
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(q));
  }
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  // 4 significant bits: scale so that the significand is an integer in [8, 16].
  double q = std::nearbyint(std::ldexp(a, 4 - e));
  if (q >= 16.0) {  // carried into the next binade
    q = 8.0;
    ++e;
  }
  const int biased = e - 1 + 7;  // value = q/8 * 2^(e-1)
  const int code = (biased << 3) | (static_cast<int>(q) - 8);
  // a < 448 cannot round past 448 (0x7E): the next value up would be 480 (0x7F, NaN).
  return static_cast<uint8_t>(sign | (code > 0x7E ? 0x7E : code));
}

namespace {
// Midpoints between the magnitudes of neighbouring E2M1 codes (0, 0.5, 1, 1.5, 2, 3, 4, 6). The
// code of |x| is the number of midpoints below it; at a midpoint the even code wins (ties to
// even): midpoints 0.25, 1.25, 2.5, 5 (index even, after an even code) round down, 0.75, 1.75,
// 3.5 (index odd) round up. Above the last midpoint everything is code 7: saturation at 6.
constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};

inline int e2m1_magnitude_code(double a, const double (&mid)[7]) {
  int code = 0;
  for (int i = 0; i < 7; ++i) code += int(a > mid[i]) + (int(a == mid[i]) & (i & 1));
  return code;
}
}  // namespace

uint8_t e2m1_encode(double x) {
  if (std::isnan(x)) throw std::invalid_argument("e2m1_encode: NaN has no E2M1 code");
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  return static_cast<uint8_t>(sign | e2m1_magnitude_code(std::fabs(x), kMid));
}

void quantize_nvfp4_into(const float* data, int64_t rows, int64_t K, uint8_t* packed, uint8_t* scales) {
  if (rows < 0 || K <= 0 || K % kBlock != 0)
    throw InputError("quantize_nvfp4: K = " + std::to_string(K) + " must be a positive multiple of 16");
  const int64_t nkb = K / kBlock;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = data + r * K;
    for (int64_t kb = 0; kb < nkb; ++kb) {
      const float* blk = row + kb * kBlock;
      double amax = 0.0;
      for (int i = 0; i < kBlock; ++i) {
        const double v = blk[i];
        if (!std::isfinite(v))
          throw InputError("quantize_nvfp4: non-finite value at (row " + std::to_string(r) + ", k " +
                           std::to_string(kb * kBlock + i) + "); NVFP4 cannot represent it");
        if (std::fabs(v) > amax) amax = std::fabs(v);
      }
      const uint8_t sbyte = e4m3_encode(amax / 6.0);
      scales[r * nkb + kb] = sbyte;
      const double s = e4m3_value(sbyte);
      uint8_t* out = packed + r * (K / 2) + kb * (kBlock / 2);
      if (s == 0.0) {
        for (int i = 0; i < kBlock / 2; ++i) out[i] = 0;
        continue;
      }
      // E2M1 RNE of x/s without dividing: compare |x| with midpoint*s. Both sides are exact
      // (a midpoint has <= 3 significant bits, s has 4, and s >= 2^-9), so this is the correctly
      // rounded code of the exact quotient.
      double mid[7];
      for (int i = 0; i < 7; ++i) mid[i] = kMid[i] * s;
      auto code = [&](float v) {
        return static_cast<uint8_t>((std::signbit(v) ? 0x8 : 0x0) | e2m1_magnitude_code(std::fabs(double(v)), mid));
      };
      for (int i = 0; i < kBlock; i += 2) out[i / 2] = static_cast<uint8_t>(code(blk[i]) | (code(blk[i + 1]) << 4));
    }
  }
}

Nvfp4Matrix quantize_nvfp4(const float* data, int64_t rows, int64_t K) {
  if (rows < 0 || K <= 0 || K % kBlock != 0)
    throw InputError("quantize_nvfp4: K = " + std::to_string(K) + " must be a positive multiple of 16");
  Nvfp4Matrix m;
  m.rows = rows;
  m.K = K;
  m.packed.assign(size_t(rows * (K / 2)), 0);
  m.scales.assign(size_t(rows * (K / kBlock)), 0);
  quantize_nvfp4_into(data, rows, K, m.packed.data(), m.scales.data());
  return m;
}

std::vector<double> dequantize_nvfp4(const uint8_t* packed, const uint8_t* scales, int64_t rows, int64_t K) {
  if (rows < 0 || K <= 0 || K % kBlock != 0)
    throw InputError("dequantize_nvfp4: K = " + std::to_string(K) + " must be a positive multiple of 16");
  std::vector<double> out(size_t(rows * K));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k)
      out[size_t(r * K + k)] =
          e2m1_value(fp4_code_at(packed + r * (K / 2), k)) * e4m3_value(scales[r * (K / kBlock) + k / kBlock]);
  return out;
}

}  // namespace nvfp4
