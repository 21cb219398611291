// formats.cpp — decoders for E2M1, E4M3FN and IEEE binary16 (see formats.hpp for the facts).
#include "formats.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace nvfp4 {

namespace {
// Twice the E2M1 magnitude of codes 0..7: 0, 0.5, 1, 1.5, 2, 3, 4, 6.
constexpr int kE2M1Twice[8] = {0, 1, 2, 3, 4, 6, 8, 12};
}  // namespace

int e2m1_twice(uint8_t code) {
  const int mag = kE2M1Twice[code & 0x7];
  return (code & 0x8) ? -mag : mag;
}

double e2m1_value(uint8_t code) {
  const double mag = 0.5 * kE2M1Twice[code & 0x7];
  return (code & 0x8) ? -mag : mag;  // code 8 yields -0.0
}

int32_t e4m3_times_512(uint8_t byte) {
  const int exp = (byte >> 3) & 0xF;
  const int man = byte & 0x7;
  // subnormal: man/8 * 2^-6 * 2^9 = man; normal: (8+man)/8 * 2^(exp-7) * 2^9 = (8+man) << (exp-1)
  const int32_t mag = exp == 0 ? man : (8 + man) << (exp - 1);
  return (byte & 0x80) ? -mag : mag;
}

double e4m3_value(uint8_t byte) {
  if (e4m3_is_nan(byte)) return std::numeric_limits<double>::quiet_NaN();
  const double mag = std::ldexp(static_cast<double>(e4m3_times_512(byte & 0x7F)), -9);
  return (byte & 0x80) ? -mag : mag;
}

double fp16_to_double(uint16_t bits) {
  const bool neg = bits & 0x8000;
  const int exp = (bits >> 10) & 0x1F;
  const int man = bits & 0x3FF;
  double mag;
  if (exp == 0x1F) {
    mag = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    mag = static_cast<double>(man) * 0x1p-24;  // exact: a power of two times at most 10 bits
  } else {
    // (1024 + man) * 2^(exp - 25), from the bits: a normal double with fp16's 10 mantissa bits on
    // top (the comparison converts several values per output element; no library call).
    const uint64_t b = (uint64_t(exp - 15 + 1023) << 52) | (uint64_t(man) << 42);
    std::memcpy(&mag, &b, sizeof mag);
  }
  return neg ? -mag : mag;
}

float fp16_to_float(uint16_t bits) { return static_cast<float>(fp16_to_double(bits)); }

uint16_t fp16_from_double(double x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return static_cast<uint16_t>(sign | 0x7E00);
  const double a = std::fabs(x);
  if (a >= 65520.0) return static_cast<uint16_t>(sign | 0x7C00);  // rounds past 65504
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal (or zero): integer multiple of 2^-24, ties to even via nearbyint (default FE_TONEAREST).
    const double q = std::nearbyint(std::ldexp(a, 24));  // 0..1024; 1024 becomes the smallest normal
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));
  }
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  // 11 significant bits: scale so the significand is an integer in [1024, 2048).
  double q = std::nearbyint(std::ldexp(a, 11 - e));
  if (q >= 2048.0) {  // rounding carried into the next binade
    q = 1024.0;
    ++e;
  }
  const int biased = e - 1 + 15;
  if (biased >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00);
  return static_cast<uint16_t>(sign | (biased << 10) | (static_cast<int>(q) - 1024));
}

uint16_t fp16_from_float(float x) { return fp16_from_double(static_cast<double>(x)); }

}  // namespace nvfp4
