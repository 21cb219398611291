// test_formats.cpp — exhaustive tests of the format decoders in reference/formats.hpp.
//
// Every expected value is computed here from the bit-field definition of the format (sign,
// exponent, mantissa, bias), written independently of formats.cpp's tables, plus a few spec
// facts written as literals (448 = 0x7E, smallest subnormal 2^-9, ...).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "formats.hpp"

using namespace nvfp4;

namespace {

// E2M1: 1 sign bit (3), 2 exponent bits (2:1), 1 mantissa bit (0), bias 1, subnormal at e = 0.
double e2m1_from_bits(unsigned c) {
  const unsigned s = (c >> 3) & 1, e = (c >> 1) & 3, m = c & 1;
  const double mag = e == 0 ? m * 0.5 : (1.0 + m / 2.0) * std::pow(2.0, int(e) - 1);
  return s ? -mag : mag;
}

// E4M3FN: sign bit 7, exponent bits 6:3 (bias 7), mantissa 2:0; S.1111.111 is NaN; no inf.
double e4m3_from_bits(unsigned b) {
  const unsigned s = (b >> 7) & 1, e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? (m / 8.0) * std::pow(2.0, -6) : (1.0 + m / 8.0) * std::pow(2.0, int(e) - 7);
  return s ? -mag : mag;
}

// IEEE binary16: sign 15, exponent 14:10 (bias 15), mantissa 9:0.
double fp16_from_bits(unsigned h) {
  const unsigned s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  double mag;
  if (e == 31)
    mag = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == 0)
    mag = m * std::pow(2.0, -24);
  else
    mag = (1.0 + m / 1024.0) * std::pow(2.0, int(e) - 15);
  return s ? -mag : mag;
}

bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace

TEST_CASE("E2M1: all 16 codes") {
  // The magnitudes the spec lists (docs/design.md §1), as literals.
  const double spec[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (unsigned c = 0; c < 16; ++c) {
    CAPTURE(c);
    const double want = e2m1_from_bits(c);
    CHECK(std::fabs(want) == spec[c & 7]);
    CHECK(same_double(e2m1_value(uint8_t(c)), want));
    CHECK(e2m1_twice(uint8_t(c)) == int(2 * want));
    // Only the low 4 bits are used.
    CHECK(same_double(e2m1_value(uint8_t(c | 0xA0)), want));
    CHECK(e2m1_twice(uint8_t(c | 0x50)) == int(2 * want));
  }
  CHECK(std::signbit(e2m1_value(8)));  // code 8 is -0
  CHECK(e2m1_value(8) == 0.0);
  CHECK(e2m1_twice(8) == 0);
  CHECK(e2m1_value(0xF) == -6.0);
}

TEST_CASE("E4M3FN: all 256 codes") {
  int nans = 0;
  for (unsigned b = 0; b < 256; ++b) {
    CAPTURE(b);
    const double want = e4m3_from_bits(b);
    const double got = e4m3_value(uint8_t(b));
    CHECK(same_double(got, want));
    CHECK(e4m3_is_nan(uint8_t(b)) == std::isnan(want));
    if (std::isnan(want)) {
      ++nans;
      continue;
    }
    CHECK(std::isfinite(got));  // no infinities in E4M3FN
    CHECK(double(e4m3_times_512(uint8_t(b))) == want * 512.0);
    // The integer view is exact: value * 2^9 is an integer.
    CHECK(want * 512.0 == std::floor(want * 512.0));
  }
  CHECK(nans == 2);
  CHECK(e4m3_is_nan(0x7F));
  CHECK(e4m3_is_nan(0xFF));
  CHECK_FALSE(e4m3_is_nan(0x80));  // "fnuz" would call 0x80 NaN; FN calls it -0
  CHECK(e4m3_value(0x7E) == 448.0);
  CHECK(e4m3_value(0xFE) == -448.0);
  CHECK(e4m3_times_512(0x7E) == 229376);
  CHECK(e4m3_value(0x01) == std::ldexp(1.0, -9));  // smallest subnormal
  CHECK(e4m3_value(0x07) == 7.0 / 8.0 * std::ldexp(1.0, -6));
  CHECK(e4m3_value(0x08) == std::ldexp(1.0, -6));  // smallest normal
  CHECK(e4m3_value(0x38) == 1.0);                  // bias 7
  CHECK(e4m3_value(0x80) == 0.0);
  CHECK(std::signbit(e4m3_value(0x80)));
  for (unsigned m = 0; m < 8; ++m) CHECK(e4m3_value(uint8_t(m)) == m / 8.0 * std::ldexp(1.0, -6));
}

TEST_CASE("fp16: all 65,536 patterns decode and round-trip bit-exactly") {
  int nan_count = 0;
  for (unsigned h = 0; h < 65536; ++h) {
    const double want = fp16_from_bits(h);
    const double got = fp16_to_double(uint16_t(h));
    if (!same_double(got, want)) {
      FAIL("fp16_to_double(" << h << ") = " << got << ", expected " << want);
    }
    if (!same_double(double(fp16_to_float(uint16_t(h))), want)) FAIL("fp16_to_float(" << h << ")");
    CHECK(fp16_is_nan(uint16_t(h)) == std::isnan(want));
    CHECK(fp16_is_inf(uint16_t(h)) == std::isinf(want));
    const uint16_t back = fp16_from_double(got);
    const uint16_t backf = fp16_from_float(float(got));
    if (std::isnan(want)) {
      ++nan_count;
      if (!fp16_is_nan(back) || !fp16_is_nan(backf)) FAIL("NaN " << h << " did not stay NaN");
    } else if (back != h || backf != h) {
      FAIL("round trip of " << h << " gave " << back << " / " << backf);
    }
  }
  CHECK(nan_count == 2 * 1023);
}

TEST_CASE("fp16: round to nearest, ties to even, at every midpoint") {
  // For each pair of adjacent finite positive fp16 values, the exact midpoint (representable in
  // double) rounds to the one with an even mantissa, and anything off the midpoint to the nearer.
  for (unsigned h = 0; h < 0x7BFF; ++h) {
    const double lo = fp16_from_bits(h), hi = fp16_from_bits(h + 1);
    const double mid = 0.5 * (lo + hi);
    const double eps = (hi - lo) * std::ldexp(1.0, -20);
    const uint16_t even = (h % 2 == 0) ? uint16_t(h) : uint16_t(h + 1);
    if (fp16_from_double(mid) != even) FAIL("midpoint after " << h << " did not round to even");
    if (fp16_from_double(mid - eps) != h) FAIL("just below the midpoint after " << h);
    if (fp16_from_double(mid + eps) != h + 1) FAIL("just above the midpoint after " << h);
    if (fp16_from_double(-mid) != (even | 0x8000)) FAIL("negative midpoint after " << h);
  }
  CHECK(fp16_from_double(1.0 + std::ldexp(1.0, -11)) == 0x3C00);      // tie: down to even
  CHECK(fp16_from_double(1.0 + 3 * std::ldexp(1.0, -11)) == 0x3C02);  // tie: up to even
}

TEST_CASE("fp16: overflow threshold and subnormal rounding") {
  CHECK(fp16_from_double(65504.0) == 0x7BFF);
  CHECK(fp16_from_double(65519.99) == 0x7BFF);
  CHECK(fp16_from_double(65520.0) == 0x7C00);  // the midpoint to the (absent) next value rounds to inf
  CHECK(fp16_from_double(-65520.0) == 0xFC00);
  CHECK(fp16_from_double(1e300) == 0x7C00);
  CHECK(fp16_from_double(std::numeric_limits<double>::infinity()) == 0x7C00);
  CHECK(fp16_from_double(-std::numeric_limits<double>::infinity()) == 0xFC00);
  CHECK(fp16_from_float(65520.0f) == 0x7C00);
  CHECK(fp16_is_nan(fp16_from_double(std::numeric_limits<double>::quiet_NaN())));
  // Subnormals are multiples of 2^-24.
  CHECK(fp16_from_double(std::ldexp(1.0, -24)) == 0x0001);
  CHECK(fp16_from_double(std::ldexp(1.0, -25)) == 0x0000);  // tie between 0 and 2^-24: even is 0
  CHECK(fp16_from_double(std::ldexp(1.0, -25) * 1.0001) == 0x0001);
  CHECK(fp16_from_double(3 * std::ldexp(1.0, -25)) == 0x0002);                   // tie 1|2 -> 2
  CHECK(fp16_from_double(std::ldexp(1.0, -14) - std::ldexp(1.0, -25)) == 0x0400);  // carries into normal
  CHECK(fp16_from_double(-std::ldexp(1.0, -26)) == 0x8000);                      // underflow keeps the sign
  CHECK(fp16_from_double(1e-300) == 0x0000);
}

TEST_CASE("nibble order: element 2j in the low nibble of byte j") {
  // Pack 64 known codes arithmetically (low = even element) and read them back.
  std::vector<uint8_t> codes(64), packed(32);
  for (int k = 0; k < 64; ++k) codes[k] = uint8_t((k * 7 + 3) % 16);
  for (int j = 0; j < 32; ++j) packed[j] = uint8_t(codes[2 * j] + 16 * codes[2 * j + 1]);
  for (int k = 0; k < 64; ++k) {
    CAPTURE(k);
    CHECK(fp4_code_at(packed.data(), k) == codes[k]);
  }
  // PyTorch's test writes 0b01000100 to mean two 2.0 values; 0x21 is (0.5, 1.0) in element order.
  const uint8_t b44 = 0x44, b21 = 0x21;
  CHECK(e2m1_value(fp4_code_at(&b44, 0)) == 2.0);
  CHECK(e2m1_value(fp4_code_at(&b44, 1)) == 2.0);
  CHECK(e2m1_value(fp4_code_at(&b21, 0)) == 0.5);
  CHECK(e2m1_value(fp4_code_at(&b21, 1)) == 1.0);
}
