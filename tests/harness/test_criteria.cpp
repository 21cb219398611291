// test_criteria.cpp — the exactness certificate, the mean-square gate and the rounding-direction
// count (compare.hpp, third to fifth criteria), on outputs simulated from real suite data: fp32 G
// and U accumulated here from the exactly decoded operands in several orders, then an fp32
// epilogue (the IEEE one, or an __expf-style exp with an approximate reciprocal), each with one
// piece of arithmetic changed the way a bug would change it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compare.hpp"
#include "criteria.hpp"
#include "decoded_case.hpp"
#include "cpu/cpu_common.hpp"
#include "distributions.hpp"
#include "formats.hpp"
#include "reference.hpp"

using namespace nvfp4;

namespace {

struct Data : test::DecodedCase {
  std::vector<int64_t> perm;  // one random order of k
};

Data make_data(const char* shape, const char* dist, uint64_t seed) {
  Data d;
  static_cast<test::DecodedCase&>(d) = test::make_decoded_case(shape, dist, seed);
  const Shape& s = d.p.shape;
  d.perm.resize(size_t(s.K));
  std::iota(d.perm.begin(), d.perm.end(), 0);
  std::mt19937_64 rng(seed * 7919 + 1);
  std::shuffle(d.perm.begin(), d.perm.end(), rng);
  return d;
}

// ChunkRz models a tensor-core adder: the accumulator and 16 products summed wide (here exactly, in
// double), then rounded toward zero to fp32 once per chunk.
enum class Order { Sequential, Reverse, Blocked64, Pairwise, Strided8, Random, Fma, ChunkRz };
const Order kOrders[] = {Order::Sequential, Order::Reverse, Order::Blocked64, Order::Pairwise,
                         Order::Strided8,   Order::Random,  Order::Fma,       Order::ChunkRz};

float pairwise(const float* x, const float* y, int64_t lo, int64_t hi) {
  if (hi - lo <= 8) {
    float s = 0;
    for (int64_t k = lo; k < hi; ++k) s += x[k] * y[k];
    return s;
  }
  const int64_t mid = lo + (hi - lo) / 2;
  return pairwise(x, y, lo, mid) + pairwise(x, y, mid, hi);
}

// The fp32 dot product in one order (every product is exact in fp32).
float dot(const Data& d, const float* x, const float* y, int64_t K, Order order) {
  float s = 0;
  switch (order) {
    case Order::Sequential:
      for (int64_t k = 0; k < K; ++k) {
        volatile float prod = x[k] * y[k];  // no contraction into an FMA
        s += prod;
      }
      return s;
    case Order::Reverse:
      for (int64_t k = K - 1; k >= 0; --k) s += x[k] * y[k];
      return s;
    case Order::Blocked64:
      for (int64_t k0 = 0; k0 < K; k0 += 64) {
        float part = 0;
        for (int64_t k = k0; k < std::min<int64_t>(K, k0 + 64); ++k) part += x[k] * y[k];
        s += part;
      }
      return s;
    case Order::Pairwise:
      return pairwise(x, y, 0, K);
    case Order::Strided8: {  // eight SIMD-style lanes, then a tree
      float lane[8] = {};
      for (int64_t k = 0; k < K; ++k) lane[k % 8] += x[k] * y[k];
      return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    }
    case Order::Random:
      for (int64_t k : d.perm) s += x[k] * y[k];
      return s;
    case Order::Fma:
      for (int64_t k = 0; k < K; ++k) s = std::fma(x[k], y[k], s);
      return s;
    case Order::ChunkRz:
      for (int64_t k0 = 0; k0 < K; k0 += 16) {
        double wide = s;
        for (int64_t k = k0; k < std::min<int64_t>(K, k0 + 16); ++k) wide += double(x[k] * y[k]);
        s = float(wide);
        if (std::fabs(double(s)) > std::fabs(wide)) s = std::nextafter(s, 0.0f);
      }
      return s;
  }
  return s;
}

float to_bf16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  b += 0x7FFFu + ((b >> 16) & 1u);
  b &= 0xFFFF0000u;
  std::memcpy(&x, &b, 4);
  return x;
}

// An __expf-style exp: 2^(t*log2 e) with the product rounded to fp32, then off by 2 ulps (what
// ex2.approx may add).
float exp_fast(float t) {
  const float y = t * 1.44269504f;
  return std::exp2(y) * (1.0f + 2 * 0x1p-23f);
}

struct Path {
  Order order = Order::Sequential;
  bool fast_epilogue = false;     // exp_fast and x * (1/d) instead of expf and x / d
  float (*mid)(float) = nullptr;  // rounding of G and U before the epilogue
  bool truncate = false;          // the final fp16 conversion rounds toward zero
  double noise = 0;               // G, U moved by +-noise * sqrt(K) u S (u = 2^-23), random signs
};

uint16_t fp16_toward_zero(float v) {
  uint16_t h = fp16_from_float(v);
  if (!std::isfinite(v) || fp16_is_nan(h)) return h;
  if ((h & 0x7FFF) != 0 && std::fabs(fp16_to_double(h)) > std::fabs(double(v))) h = uint16_t(h - 1);
  return h;
}

std::vector<uint16_t> run_path(const Data& d, const Path& path) {
  const Shape& s = d.p.shape;
  std::vector<uint16_t> c(size_t(s.M * s.N));
  std::mt19937_64 rng(99);
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      const size_t i = size_t(m * s.N + n);
      float g = dot(d, &d.a[size_t(m * s.K)], &d.b1[size_t(n * s.K)], s.K, path.order);
      float u = dot(d, &d.a[size_t(m * s.K)], &d.b2[size_t(n * s.K)], s.K, path.order);
      if (path.noise > 0) {
        const double root = std::sqrt(double(s.K)) * Tolerance::kUnit;
        g = float(d.ref.g[i] + ((rng() & 1) ? 1 : -1) * path.noise * root * d.ref.g_abs[i]);
        u = float(d.ref.u[i] + ((rng() & 1) ? 1 : -1) * path.noise * root * d.ref.u_abs[i]);
      }
      if (path.mid) g = path.mid(g), u = path.mid(u);
      const float x = d.p.alpha1 * g, y = d.p.alpha2 * u;
      float v;
      if (path.fast_epilogue) {
        const float den = 1.0f + exp_fast(-x);
        v = x * (1.0f / den) * y;
      } else {
        v = x / (1.0f + std::exp(-x)) * y;
      }
      c[i] = path.truncate ? fp16_toward_zero(v) : fp16_from_float(v);
    }
  return c;
}

Comparison judge(const Data& d, const Path& path) {
  const auto c = run_path(d, path);
  return compare_output(d.ref, d.p.alpha1, d.p.alpha2, c.data(), nullptr, nullptr);
}

std::string describe(const Comparison& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "bound over %lld; certificate %lld/%lld violations margin %.3g; statistic %lld/%lld "
                "margin %.3g; mean square %.3g over %lld (limit %.3g); direction %lld of %lld (limit %lld)",
                (long long)c.over_tolerance, (long long)c.cert_violations, (long long)c.certified, c.cert_margin,
                (long long)c.unexplained, (long long)c.unexplained_limit, c.stat_margin, c.ms_mean,
                (long long)c.ms_elements, c.ms_limit, (long long)c.dir_toward, (long long)c.dir_elements,
                (long long)c.dir_limit);
  return buf;
}

}  // namespace

TEST_CASE("mean-square limit: n (t - 1 - ln t) / 2 = ln(1e9), decreasing in n") {
  double prev = INFINITY;
  for (int64_t n : {1, 10, 100, 1000, 32768, 1 << 22}) {
    const double t = MeanSquare::limit(n);
    INFO("n " << n << " t* " << t);
    CHECK(t > 1);
    CHECK(double(n) * (t - 1 - std::log(t)) / 2 == doctest::Approx(std::log(1e9)).epsilon(1e-9));
    CHECK(t < prev);
    prev = t;
  }
  CHECK(std::isinf(MeanSquare::limit(0)));
}

TEST_CASE("rounding-direction limit: the smallest count whose Chernoff tail is below 1e-9") {
  auto log_bound = [](double mu, double t) { return -mu + t * (1 + std::log(mu / t)); };
  for (double mu : {1e-6, 0.3, 4.5, 311.5, 16291.0}) {
    const int64_t lim = Direction::limit(mu);
    INFO("mu " << mu << " limit " << lim);
    CHECK(double(lim) >= mu);
    CHECK(log_bound(mu, double(lim + 1)) <= std::log(1e-9));
    if (double(lim) > mu) CHECK(log_bound(mu, double(lim)) > std::log(1e-9));
  }
  CHECK(Direction::limit(0) == 0);
}

TEST_CASE("certificate: exact in fp32 exactly when max(P, N) = (S + |G|)/2 <= 2^24 quanta") {
  // Terms in units of 2^(q - 20) = 2^-20 (q = 0): 2^23 + 2^23 - 1 positive and 1 negative.
  CHECK(Certificate::exact_in_fp32(0x1p24 * 0x1p-20, 0x1p24 * 0x1p-20, 0));
  CHECK_FALSE(Certificate::exact_in_fp32((0x1p24 + 2) * 0x1p-20, (0x1p24 + 2) * 0x1p-20, 0));
  // Cancellation: S = 2^25 quanta, G = 0: a partial sum reaches at most 2^24.
  CHECK(Certificate::exact_in_fp32(0x1p25 * 0x1p-20, 0, 0));
  CHECK_FALSE(Certificate::exact_in_fp32(0x1p25 * 0x1p-20, 4 * 0x1p-20, 0));
  // A coarser quantum (q = 3) allows 8 times the sum; all-zero terms are exact; NaN is not.
  CHECK(Certificate::exact_in_fp32(0x1p27 * 0x1p-20, 0x1p27 * 0x1p-20, 3));
  CHECK(Certificate::exact_in_fp32(0, 0, kZeroRowQ));
  CHECK_FALSE(Certificate::exact_in_fp32(std::nan(""), 1, 0));
  // The fp32 sum of 2^24 quanta in any order is exact; one quantum more is not representable.
  CHECK(float(0x1p24) + 1.0f == float(0x1p24));
  // Every quantum the exponents give, against 2^(q + 4) written with the library (from far below
  // the double range to far above it, where the limit is +inf).
  std::mt19937_64 rng(3);
  for (int64_t q = -1200; q <= 5000; ++q) {
    const double limit = std::ldexp(1.0, int(std::min<int64_t>(q + 4, 4000)));
    for (double f : {0.25, 0.5, 1.0, 1.0000000000000002, 1.5, 2.0}) {
      const double reach = limit * f, s_abs = 2 * reach;  // G = 0: reach = S / 2
      INFO("q = " << q << ", reach = " << f << " x the limit");
      CHECK(Certificate::exact_in_fp32(s_abs, 0, q) == (s_abs / 2 <= limit));
    }
  }
}

TEST_CASE("certificate: the block quantum is the minimum of the byte sums, exact below 255") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    const int n = int(rng() % 80);
    const size_t len = size_t(n);
    std::vector<uint8_t> a(len), b(len);
    // Mostly real exponents (0..kZeroBlockQ), sometimes any byte (the saturation).
    const unsigned top = trial % 5 == 0 ? 256 : unsigned(kZeroBlockQ) + 1;
    for (int i = 0; i < n; ++i) a[size_t(i)] = uint8_t(rng() % top), b[size_t(i)] = uint8_t(rng() % top);
    unsigned want = 255;
    for (int i = 0; i < n; ++i) want = std::min(want, std::min(255u, unsigned(a[size_t(i)]) + unsigned(b[size_t(i)])));
    INFO("n = " << n << ", trial " << trial);
    CHECK(criteria::block_quantum(a.data(), b.data(), n) == want);
  }
}

TEST_CASE("certificate: the epilogue allowance covers __expf-style exp and approximate division") {
  // Every fp32 epilogue variant over a sweep of x: |v - c| <= e_c / 2 (the factor 2 is margin).
  const Tolerance t(64, 1.0f, 1.0f);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> pick(-64, 40);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const float g = float(pick(rng)), u = float(std::ldexp(pick(rng), -3));
    const double e = Certificate::epilogue_allowance(t, g, u);
    if (!std::isfinite(e)) continue;
    const double c = t.exact_output(g, u);
    const float den_fast = 1.0f + exp_fast(-g), den = 1.0f + std::exp(-g);
    for (float v : {g / den * u, g * (1.0f / den_fast) * u, g * u / den_fast, (g / den_fast) * u}) {
      INFO("g " << g << " u " << u << " v " << v << " c " << c << " e_c " << e);
      CHECK(std::fabs(double(v) - c) <= e / 2);
      ++checked;
    }
  }
  CHECK(checked > 400000);
  CHECK(std::isinf(Certificate::epilogue_allowance(t, -65, 1)));  // exp(65) region: not certified
  CHECK(std::isinf(Certificate::epilogue_allowance(t, 300, 300)));  // beyond fp16
}

TEST_CASE("criteria: no false alarm on correct fp32 paths (eight orders, IEEE and fast epilogues)") {
  double min_cert = INFINITY, min_ms = INFINITY, min_dir = INFINITY;
  int64_t certified = 0, ms_elements = 0;
  for (const char* shape : {"7x13x48", "33x65x160", "128x96x256", "9x129x1040", "64x96x4096", "32x64x7168"})
    for (const char* dist : {"normal", "uniform", "edge", "gpumode", "suspicious"})
      for (uint64_t seed : {1, 2}) {
        const Data d = make_data(shape, dist, seed);
        for (Order order : kOrders)
          for (bool fast : {false, true}) {
            Path path;
            path.order = order;
            path.fast_epilogue = fast;
            const Comparison c = judge(d, path);
            INFO(shape << " " << dist << " seed " << seed << " order " << int(order) << " fast " << fast << ": "
                       << describe(c));
            CHECK(c.pass());
            min_cert = std::min(min_cert, c.cert_margin);
            min_ms = std::min(min_ms, c.ms_margin);
            min_dir = std::min(min_dir, c.dir_margin);
            certified += c.certified;
            ms_elements += c.ms_elements;
          }
      }
  MESSAGE("smallest margins: certificate " << min_cert << ", mean square " << min_ms << ", direction " << min_dir
                                           << "; " << certified << " certified and " << ms_elements
                                           << " mean-square elements judged");
  CHECK(min_cert > 4);
  CHECK(min_ms > 4);
  CHECK(min_dir > 4);
  CHECK(certified > 100000);
  CHECK(ms_elements > 100000);
}

TEST_CASE("criteria: G and U rounded to bf16 fail, short-K uniform data included") {
  Path bf16;
  bf16.mid = to_bf16;
  for (const char* shape : {"7x13x48", "33x65x160", "128x96x256", "64x96x4096", "64x64x7168"})
    for (const char* dist : {"normal", "uniform", "gpumode"}) {
      const Data d = make_data(shape, dist, 3);
      const Comparison c = judge(d, bf16);
      INFO("bf16 on " << shape << " " << dist << ": " << describe(c));
      CHECK_FALSE(c.pass());
      if (c.certified > int64_t(d.ref.c.size()) / 2) {
        CHECK_FALSE(c.cert_pass());
        CHECK(c.cert_message().find("bf16") != std::string::npos);
      }
    }
}

TEST_CASE("criteria: a final fp16 conversion that truncates fails on long-K quantized data") {
  Path trunc;
  trunc.truncate = true;
  for (const char* shape : {"33x65x160", "128x96x256", "64x96x4096"}) {
    const Data d = make_data(shape, "normal", 4);
    const Comparison c = judge(d, trunc);
    INFO("truncation on " << shape << " normal: " << describe(c));
    CHECK_FALSE(c.cert_pass());
    CHECK(c.bound_pass());
    CHECK(c.criterion() == "certificate");
    CHECK(c.cert_message().find("truncates") != std::string::npos);
  }
  // Uniform data at K = 1040 is certified on a few elements only; the rounding direction alone
  // catches it as well.
  const Data d = make_data("9x129x1040", "uniform", 4);
  const Comparison c = judge(d, trunc);
  INFO("truncation on 9x129x1040 uniform: " << describe(c));
  CHECK(c.certified < int64_t(d.ref.c.size()) / 4);
  CHECK_FALSE(c.dir_pass());
  CHECK(c.dir_message().find("truncates") != std::string::npos);
}

TEST_CASE("criteria: errors systematically 3.5x the fp32 accumulation scale fail the mean-square gate") {
  Path noisy;
  noisy.noise = 3.5;
  for (const char* shape_dist : {"128x256x7168 normal", "64x96x4096 uniform", "64x96x4096 gpumode"}) {
    const std::string sd = shape_dist;
    const std::string shape = sd.substr(0, sd.find(' ')), dist = sd.substr(sd.find(' ') + 1);
    const Data d = make_data(shape.c_str(), dist.c_str(), 5);
    const Comparison c = judge(d, noisy);
    INFO("noise 3.5 on " << sd << ": " << describe(c));
    CHECK(c.bound_pass());
    CHECK(c.stat_pass());  // no single element is an outlier beyond lambda = 6
    CHECK_FALSE(c.ms_pass());
    CHECK(c.criterion() == "mean_square");
    CHECK(c.ms_message().find("bf16") != std::string::npos);
  }
}

TEST_CASE("certificate: only with power-of-two alphas (a path may fold them into the terms)") {
  for (float alpha1 : {1.0f, 0.5f, -4.0f, 1.5f, 0.7f}) {
    Problem p = make_problem(Shape::parse("33x65x160"), "normal", 6);
    p.alpha1 = alpha1;
    p.alpha2 = 2.0f;
    ReferenceOptions o;
    o.abs_sums = true;
    const ReferenceResult ref = compute_reference(p, o);
    const Comparison c = compare_output(ref, p.alpha1, p.alpha2, ref.c.data(), nullptr, nullptr);
    INFO("alpha1 " << alpha1 << ": " << describe(c));
    CHECK(c.pass());
    const bool pow2 = alpha1 == 1.0f || alpha1 == 0.5f || alpha1 == -4.0f;
    CHECK((c.certified == int64_t(ref.c.size())) == pow2);
    CHECK((c.certified == 0) == !pow2);
  }
}

TEST_CASE("certificate: pow2 data is certified on every element at the suites' long K") {
  // The suites' long-K pow2 cases (harness/plan/suite.cpp): every element certified, so precision
  // lost in an intermediate there fails by the certificate; normal data at K = 7168 has none.
  for (const char* shape : {"64x96x4096", "48x40x7168x2"}) {
    for (uint64_t seed : {7, 1111}) {
      const Problem p = make_problem(Shape::parse(shape), "pow2", seed);
      ReferenceOptions o;
      o.abs_sums = true;
      const ReferenceResult ref = compute_reference(p, o);
      const Comparison c = compare_output(ref, p.alpha1, p.alpha2, ref.c.data(), nullptr, nullptr);
      INFO(shape << " seed " << seed << ": " << describe(c));
      CHECK(c.pass());
      CHECK(c.certified == int64_t(ref.c.size()));
    }
  }
  const Problem p = make_problem(Shape::parse("48x40x7168"), "normal", 1111);
  ReferenceOptions o;
  o.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, o);
  CHECK(compare_output(ref, p.alpha1, p.alpha2, ref.c.data(), nullptr, nullptr).certified == 0);
}

TEST_CASE("reference: the row exponents q are the smallest trailing-zero count of a nonzero term factor") {
  // Brute force over every element: I = (2*e2m1) * (512*e4m3), blocks with a NaN scale skipped.
  auto row_q = [](const std::vector<uint8_t>& packed, const std::vector<uint8_t>& sf, int64_t row, int64_t K) {
    int32_t q = kZeroRowQ;
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t s = sf[size_t(row * (K / 16) + k / 16)];
      if (e4m3_is_nan(s)) continue;
      const int64_t v = int64_t(e2m1_twice(fp4_code_at(packed.data() + row * (K / 2), k))) * e4m3_times_512(s);
      if (v != 0) q = std::min<int32_t>(q, __builtin_ctzll(uint64_t(v < 0 ? -v : v)));
    }
    return q;
  };
  for (const char* dist : {"normal", "uniform", "edge", "suspicious", "ones"}) {
    const Problem p = make_problem(Shape::parse("40x600x64x3"), dist, 9);
    ReferenceOptions o;
    o.abs_sums = true;
    o.threads = 3;
    const ReferenceResult r = compute_reference(p, o);
    const Shape& s = p.shape;
    REQUIRE(int64_t(r.q_a.size()) == s.L * s.M);
    REQUIRE(int64_t(r.q_b1.size()) == s.L * s.N);
    REQUIRE(int64_t(r.q_b2.size()) == s.L * s.N);
    int64_t bad = 0;
    for (int64_t i = 0; i < s.L * s.M; ++i) bad += r.q_a[size_t(i)] != row_q(p.a, p.sfa, i, s.K);
    for (int64_t i = 0; i < s.L * s.N; ++i) {
      bad += r.q_b1[size_t(i)] != row_q(p.b1, p.sfb1, i, s.K);
      bad += r.q_b2[size_t(i)] != row_q(p.b2, p.sfb2, i, s.K);
    }
    // Block exponents: the same count per block of 16, kZeroBlockQ for blocks without terms.
    auto block_q = [](const std::vector<uint8_t>& packed, const std::vector<uint8_t>& sf, int64_t row,
                      int64_t K, int64_t b) {
      const uint8_t s = sf[size_t(row * (K / 16) + b)];
      int q = kZeroBlockQ;
      if (e4m3_is_nan(s)) return q;
      for (int64_t k = 16 * b; k < 16 * b + 16; ++k) {
        const int64_t v = int64_t(e2m1_twice(fp4_code_at(packed.data() + row * (K / 2), k))) * e4m3_times_512(s);
        if (v != 0) q = std::min(q, __builtin_ctzll(uint64_t(v < 0 ? -v : v)));
      }
      return q;
    };
    const int64_t kb = s.K / 16;
    REQUIRE(int64_t(r.qb_a.size()) == s.L * s.M * kb);
    for (int64_t i = 0; i < s.L * s.M; ++i)
      for (int64_t b = 0; b < kb; ++b) bad += r.qb_a[size_t(i * kb + b)] != block_q(p.a, p.sfa, i, s.K, b);
    for (int64_t i = 0; i < s.L * s.N; ++i)
      for (int64_t b = 0; b < kb; ++b) {
        bad += r.qb_b1[size_t(i * kb + b)] != block_q(p.b1, p.sfb1, i, s.K, b);
        bad += r.qb_b2[size_t(i * kb + b)] != block_q(p.b2, p.sfb2, i, s.K, b);
      }
    INFO(dist);
    CHECK(bad == 0);
  }
  ReferenceOptions plain;
  CHECK(compute_reference(make_problem(Shape::parse("4x4x32"), "normal", 1), plain).q_a.empty());
}
