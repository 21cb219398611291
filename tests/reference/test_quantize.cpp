// test_quantize.cpp — the E4M3FN / E2M1 encoders and the NVFP4 block quantizer (quantize.hpp).
//
// The encoders are checked against a brute-force "nearest representable value, ties to the even
// code" search over value tables built here from the bit-field definitions, and exhaustively at
// every code and every midpoint. The quantizer is checked for the scale rule E4M3(amax/6), the
// round-trip error bound, exactness on representable inputs, and its edge cases.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "errors.hpp"
#include "formats.hpp"
#include "quantize.hpp"

using namespace nvfp4;

namespace {

// Non-negative finite values of a format, indexed by code: E4M3FN codes 0x00..0x7E and E2M1 0..7.
std::vector<double> e4m3_table() {
  std::vector<double> v;
  for (int b = 0; b <= 0x7E; ++b) {
    const int e = b >> 3, m = b & 7;
    v.push_back(e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1 + m / 8.0) * std::ldexp(1.0, e - 7));
  }
  return v;
}
std::vector<double> e2m1_table() {
  std::vector<double> v;
  for (int c = 0; c < 8; ++c) {
    const int e = c >> 1, m = c & 1;
    v.push_back(e == 0 ? m * 0.5 : (1 + m / 2.0) * std::ldexp(1.0, e - 1));
  }
  return v;
}

// Index of the table entry nearest |x|; ties go to the even index (even mantissa). Beyond the
// largest entry this is the largest entry: the saturating rule.
int nearest(const std::vector<double>& t, double x) {
  const double a = std::fabs(x);
  int best = 0;
  for (int i = 1; i < int(t.size()); ++i) {
    const double d = std::fabs(a - t[i]), db = std::fabs(a - t[best]);
    if (d < db || (d == db && i % 2 == 0)) best = i;
  }
  return best;
}

// Small deterministic generator for test data (splitmix64).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unit() { return double(next() >> 11) * std::ldexp(1.0, -53); }
};

}  // namespace

TEST_CASE("e4m3_encode: every code, every midpoint, saturation, NaN") {
  const auto t = e4m3_table();
  for (int b = 0; b < 256; ++b) {
    if (e4m3_is_nan(uint8_t(b))) continue;
    CAPTURE(b);
    CHECK(e4m3_encode(e4m3_value(uint8_t(b))) == b);  // includes -0 -> 0x80
  }
  for (int b = 0; b < 0x7E; ++b) {
    CAPTURE(b);
    const double mid = 0.5 * (t[b] + t[b + 1]), eps = (t[b + 1] - t[b]) * 1e-6;
    const int even = b % 2 == 0 ? b : b + 1;
    CHECK(e4m3_encode(mid) == even);
    CHECK(e4m3_encode(-mid) == (even | 0x80));
    CHECK(e4m3_encode(mid - eps) == b);
    CHECK(e4m3_encode(mid + eps) == b + 1);
  }
  CHECK(e4m3_encode(448.0) == 0x7E);
  CHECK(e4m3_encode(463.9) == 0x7E);
  CHECK(e4m3_encode(464.0) == 0x7E);
  CHECK(e4m3_encode(1e30) == 0x7E);
  CHECK(e4m3_encode(std::numeric_limits<double>::infinity()) == 0x7E);
  CHECK(e4m3_encode(-std::numeric_limits<double>::infinity()) == 0xFE);
  CHECK(e4m3_is_nan(e4m3_encode(std::numeric_limits<double>::quiet_NaN())));
  CHECK(e4m3_encode(std::ldexp(1.0, -10)) == 0x00);  // half the smallest subnormal: tie to 0
  CHECK(e4m3_encode(std::ldexp(1.0, -10) * 1.001) == 0x01);
  CHECK(e4m3_encode(1e-30) == 0x00);
  CHECK(e4m3_encode(-1e-30) == 0x80);
}

TEST_CASE("e4m3_encode agrees with brute-force nearest-even on random inputs") {
  const auto t = e4m3_table();
  Rng rng{42};
  for (int i = 0; i < 200000; ++i) {
    const double x = std::ldexp(rng.unit(), int(rng.next() % 30) - 16) * ((rng.next() & 1) ? -1 : 1);
    const int want = nearest(t, x) | (std::signbit(x) ? 0x80 : 0);
    if (e4m3_encode(x) != want) FAIL("e4m3_encode(" << x << ") = " << int(e4m3_encode(x)) << ", want " << want);
  }
}

TEST_CASE("e2m1_encode: codes, midpoints (ties to even), saturation, sign, NaN") {
  const auto t = e2m1_table();
  for (int c = 0; c < 16; ++c) CHECK(e2m1_encode(e2m1_value(uint8_t(c))) == c);
  // Midpoints: 0.25->0, 0.75->1.0, 1.25->1.0, 1.75->2, 2.5->2, 3.5->4, 5->4.
  const double mids[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  const double want[7] = {0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0};
  for (int i = 0; i < 7; ++i) {
    CAPTURE(mids[i]);
    CHECK(e2m1_value(e2m1_encode(mids[i])) == want[i]);
    CHECK(e2m1_value(e2m1_encode(-mids[i])) == -want[i]);
    CHECK(e2m1_encode(mids[i]) % 2 == 0);
    CHECK(e2m1_encode(mids[i] - 1e-9) == i);
    CHECK(e2m1_encode(mids[i] + 1e-9) == i + 1);
  }
  CHECK(e2m1_encode(6.0) == 7);
  CHECK(e2m1_encode(7.0) == 7);
  CHECK(e2m1_encode(1e9) == 7);
  CHECK(e2m1_encode(-1e9) == 15);
  CHECK(e2m1_encode(-0.1) == 8);  // -0 keeps its sign
  CHECK_THROWS_AS(e2m1_encode(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  Rng rng{7};
  for (int i = 0; i < 100000; ++i) {
    const double x = (rng.unit() * 16 - 8);
    const int w = nearest(t, x) | (std::signbit(x) ? 8 : 0);
    if (e2m1_encode(x) != w) FAIL("e2m1_encode(" << x << ")");
  }
}

TEST_CASE("quantize_nvfp4: scale = E4M3(amax/6) and the round-trip error bound") {
  const auto t4 = e4m3_table();
  const int64_t rows = 64, K = 128;
  Rng rng{2024};
  std::vector<float> x(size_t(rows * K));
  for (int64_t r = 0; r < rows; ++r) {
    const double mag = std::ldexp(1.0, int(r % 24) - 14);  // row magnitudes 2^-14 .. 2^9
    for (int64_t k = 0; k < K; ++k) x[size_t(r * K + k)] = float((rng.unit() * 2 - 1) * mag);
  }
  const Nvfp4Matrix q = quantize_nvfp4(x.data(), rows, K);
  REQUIRE(q.packed.size() == size_t(rows * K / 2));
  REQUIRE(q.scales.size() == size_t(rows * K / 16));
  const std::vector<double> back = dequantize_nvfp4(q.packed.data(), q.scales.data(), rows, K);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t kb = 0; kb < K / 16; ++kb) {
      double amax = 0;
      for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(double(x[size_t(r * K + kb * 16 + i)])));
      const uint8_t sb = q.scales[size_t(r * (K / 16) + kb)];
      CAPTURE(r);
      CAPTURE(kb);
      REQUIRE(sb == nearest(t4, amax / 6.0));  // non-negative, nearest-even E4M3 of amax/6
      const double s = e4m3_value(sb);
      for (int i = 0; i < 16; ++i) {
        const int64_t k = kb * 16 + i;
        const double xv = x[size_t(r * K + k)], got = back[size_t(r * K + k)];
        if (s == 0) {
          REQUIRE(got == 0);
          continue;
        }
        const double y = std::fabs(xv) / s;
        double bound;
        if (y <= 6) {
          // half the spacing of the E2M1 grid around y: 0.25 below 2, 0.5 in [2,4], 1 in [4,6]
          bound = (y < 2 ? 0.25 : y < 4 ? 0.5 : 1.0) * s;
        } else {
          bound = std::fabs(xv) - 6 * s;  // saturated: the scale was rounded below amax/6
          REQUIRE(bound <= amax - 6 * s);
          REQUIRE(got == std::copysign(6 * s, xv));
        }
        if (!(std::fabs(got - xv) <= bound * (1 + 1e-12)))
          FAIL("r " << r << " k " << k << ": " << xv << " -> " << got << " (scale " << s << ")");
        if (xv != 0) REQUIRE(std::signbit(got) == std::signbit(xv));
      }
    }
}

TEST_CASE("quantize_nvfp4: inputs already in NVFP4 round-trip exactly") {
  Rng rng{99};
  const int64_t rows = 40, K = 64;
  std::vector<uint8_t> codes(size_t(rows * K)), scales(size_t(rows * K / 16));
  std::vector<float> x(size_t(rows * K));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t kb = 0; kb < K / 16; ++kb) {
      // Any non-zero, non-NaN scale, including subnormals and 448; one element is +-6 so that
      // amax / 6 is exactly the scale.
      uint8_t sb;
      do sb = uint8_t(rng.next() % 0x7F); while (sb == 0);
      scales[size_t(r * (K / 16) + kb)] = sb;
      const int special = int(rng.next() % 16);
      for (int i = 0; i < 16; ++i) {
        uint8_t c = uint8_t(rng.next() % 16);
        if (i == special) c = (rng.next() & 1) ? 0x7 : 0xF;
        const int64_t k = kb * 16 + i;
        codes[size_t(r * K + k)] = c;
        x[size_t(r * K + k)] = float(e2m1_value(c) * e4m3_value(sb));  // exact in float
      }
    }
  const Nvfp4Matrix q = quantize_nvfp4(x.data(), rows, K);
  CHECK(q.scales == scales);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k) {
      if (fp4_code_at(q.packed.data() + r * (K / 2), k) != codes[size_t(r * K + k)])
        FAIL("code mismatch at r " << r << " k " << k);
    }
}

TEST_CASE("quantize_nvfp4: zero, tiny and huge blocks; bad input") {
  std::vector<float> x(32, 0.0f);
  for (int i = 16; i < 32; ++i) x[size_t(i)] = 1e-4f * float(i - 24);  // amax/6 < 2^-10: scale 0
  auto q = quantize_nvfp4(x.data(), 1, 32);
  CHECK(q.scales == std::vector<uint8_t>{0x00, 0x00});
  for (uint8_t b : q.packed) CHECK(b == 0);

  std::vector<float> big(16);
  for (int i = 0; i < 16; ++i) big[size_t(i)] = float((i % 2 ? -1 : 1) * 1e6 * (i + 1));
  q = quantize_nvfp4(big.data(), 1, 16);
  CHECK(q.scales[0] == 0x7E);  // saturated at 448
  for (int k = 0; k < 16; ++k) CHECK(std::fabs(e2m1_value(fp4_code_at(q.packed.data(), k))) == 6.0);

  std::vector<float> bad(16, 1.0f);
  bad[5] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(quantize_nvfp4(bad.data(), 1, 16), doctest::Contains("k 5"), InputError);
  bad[5] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(quantize_nvfp4(bad.data(), 1, 16), InputError);
  CHECK_THROWS_AS(quantize_nvfp4(big.data(), 1, 8), InputError);
  CHECK_THROWS_AS(quantize_nvfp4(big.data(), 1, 0), InputError);
}
