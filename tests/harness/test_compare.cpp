// test_compare.cpp — the fp16 ordered line and ULP distance (exhaustively), the derived tolerance on
// constructed cases, the per-trial metrics of compare_output, and the statistical criterion on real
// suite data with correct and deliberately degraded fp32 arithmetic. (About 605 lines, over the
// project's ~600: the criterion's cases share the suite data and degraded-arithmetic helpers.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "compare.hpp"
#include "decoded_case.hpp"
#include "cpu/cpu_common.hpp"
#include "distributions.hpp"
#include "formats.hpp"
#include "reference.hpp"
#include "silu.hpp"

using namespace nvfp4;

namespace {

float silu_f32(float x) { return x / (1.0f + std::exp(-x)); }

// A reference for one row of `n` elements, built from given exact G, U and abs sums.
ReferenceResult make_ref(int64_t K, const std::vector<double>& g, const std::vector<double>& u,
                         const std::vector<double>& sg, const std::vector<double>& su) {
  ReferenceResult r;
  r.shape = Shape{1, int64_t(g.size()), K, 1};
  r.g = g;
  r.u = u;
  r.g_abs = sg;
  r.u_abs = su;
  const Tolerance t(K, 1.0f, 1.0f);
  for (size_t i = 0; i < g.size(); ++i) r.c.push_back(fp16_from_double(t.exact_output(g[i], u[i])));
  return r;
}

// Random NVFP4-like terms: E2M1 value times E4M3-like scale, products exact in fp32 and double.
struct Terms {
  std::vector<float> t;
  double exact = 0, abs_sum = 0;
};
Terms random_terms(std::mt19937_64& rng, int64_t K, double scale_spread) {
  static const float mags[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  Terms x;
  std::uniform_int_distribution<int> code(0, 15), ex(-int(scale_spread), int(scale_spread));
  for (int64_t k = 0; k < K; ++k) {
    const int a = code(rng), b = code(rng);
    const float va = (a & 8 ? -1.f : 1.f) * mags[a & 7], vb = (b & 8 ? -1.f : 1.f) * mags[b & 7];
    const float s = std::ldexp(1.0f, ex(rng)) * 1.25f;  // 1.25 * 2^e: an E4M3 value
    const float term = va * vb * s;
    x.t.push_back(term);
    x.exact += double(term);  // exact: multiples of 2^-k far from 53 bits
    x.abs_sum += std::fabs(double(term));
  }
  return x;
}

}  // namespace

TEST_CASE("fp16 ordered line: exhaustive over all 65536 patterns") {
  std::vector<uint16_t> finite;
  for (uint32_t b = 0; b < 65536; ++b)
    if (!fp16_is_nan(uint16_t(b))) finite.push_back(uint16_t(b));
  std::sort(finite.begin(), finite.end(), [](uint16_t a, uint16_t b) {
    return fp16_to_double(a) < fp16_to_double(b);
  });
  // Strictly increasing with value, except +0 and -0 which share 0.
  for (size_t i = 1; i < finite.size(); ++i) {
    const double va = fp16_to_double(finite[i - 1]), vb = fp16_to_double(finite[i]);
    if (va == vb) {
      CHECK(fp16_ordered(finite[i - 1]) == fp16_ordered(finite[i]));
      CHECK(va == 0.0);
    } else {
      CHECK(fp16_ordered(finite[i]) == fp16_ordered(finite[i - 1]) + 1);
      CHECK(fp16_ulp_distance(finite[i], finite[i - 1]) == 1);
    }
  }
  CHECK(fp16_ordered(0x7C00) == 0x7C00);
  CHECK(fp16_ulp_distance(0x7BFF, 0x7C00) == 1);   // 65504 to +inf
  CHECK(fp16_ulp_distance(0x0001, 0x8001) == 2);   // across zero
  CHECK(fp16_ulp_distance(0x8000, 0x0000) == 0);
}

TEST_CASE("fp16_ulp_at is the spacing of fp16 values, for every finite positive pattern") {
  for (uint16_t b = 0; b < 0x7BFF; ++b) {
    const double v = fp16_to_double(b), next = fp16_to_double(uint16_t(b + 1));
    INFO("pattern " << b);
    CHECK(fp16_ulp_at(v) == next - v);
    CHECK(fp16_ulp_at(-v) == next - v);
  }
  CHECK(fp16_ulp_at(1e9) == 32.0);
}

TEST_CASE("fp16_ulp_at of any double is 2^(e-11) with frexp's e (its bit-level form agrees with the library)") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    double x;
    std::memcpy(&x, &bits, sizeof x);
    if (!std::isfinite(x)) continue;
    const double a = std::fabs(x);
    int e = 0;
    std::frexp(a, &e);
    const double want = !(a >= 0x1p-14) ? 0x1p-24 : a >= 32768.0 ? 32.0 : std::ldexp(1.0, e - 11);
    INFO("x = " << x);
    CHECK(fp16_ulp_at(x) == want);
  }
  for (double x : {0x1p-14, 0x1.fffffffffffffp-15, 32767.99, 32768.0, 1.0, 0.0, -0.0})
    CHECK(fp16_ulp_at(x) == (x >= 0x1p-14 && x < 32768 ? std::ldexp(1.0, std::ilogb(x) - 10) : x >= 32768 ? 32.0 : 0x1p-24));
}

TEST_CASE("one exp per element: silu_at gives reference/silu.hpp's silu_mul bit for bit") {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> n(0, 40);
  auto same = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); };
  for (const auto& alphas : {std::pair<float, float>{1.f, 1.f}, {-1.5f, 0.3f}, {0.00033333333f, 6000.f}}) {
    const Tolerance t(7168, alphas.first, alphas.second);
    std::vector<double> gs = {0.0, -0.0, 1e-300, -88.8, -745.2, 710.0, 1e308, INFINITY, -INFINITY, NAN};
    for (int i = 0; i < 20000; ++i) gs.push_back(n(rng));
    for (double g : gs)
      for (double u : {-3.25, 0.0, 17.0, 1e5, double(NAN)}) {
        const Tolerance::SiluAt at = t.silu_at(g);
        INFO("g = " << g << ", u = " << u);
        CHECK(same(at.x, t.alpha1 * g));
        CHECK(same(at.e, std::exp(-(t.alpha1 * g))));
        CHECK(same(t.exact_output(at, u), silu_mul(g, u, t.alpha1, t.alpha2)));
      }
  }
}

TEST_CASE("ULP histogram buckets") {
  CHECK(ulp_bucket(0) == 0);
  CHECK(ulp_bucket(1) == 1);
  CHECK(ulp_bucket(2) == 2);
  CHECK(ulp_bucket(3) == 3);
  CHECK(ulp_bucket(4) == 3);
  CHECK(ulp_bucket(5) == 4);
  CHECK(ulp_bucket(8) == 4);
  CHECK(ulp_bucket(9) == 5);
  CHECK(ulp_bucket(63488) == kUlpBuckets - 1);
  CHECK(ulp_bucket_label(3) == "3-4");
  CHECK(ulp_bucket_label(4) == "5-8");
  CHECK(ulp_bucket_label(kUlpBuckets - 1) == "32769-65536");
}

TEST_CASE("tolerance: correct fp32 computations pass, in any summation order") {
  std::mt19937_64 rng(20261121);
  for (int64_t K : {16, 160, 4096, 7168}) {
    const Tolerance tol(K, 1.0f, 1.0f);
    int checked = 0;
    for (int e = 0; e < 300; ++e) {
      const Terms g = random_terms(rng, K, 6), u = random_terms(rng, K, 6);
      // Three fp32 orders: forward, backward, and blocked partial sums (as tiled kernels do).
      float gf = 0, uf = 0, gb = 0, ub = 0;
      for (int64_t k = 0; k < K; ++k) gf += g.t[k], uf += u.t[k];
      for (int64_t k = K - 1; k >= 0; --k) gb += g.t[k], ub += u.t[k];
      float gp = 0, up = 0;
      for (int64_t k0 = 0; k0 < K; k0 += 64) {
        float pg = 0, pu = 0;
        for (int64_t k = k0; k < std::min<int64_t>(K, k0 + 64); ++k) pg += g.t[k], pu += u.t[k];
        gp += pg, up += pu;
      }
      for (auto [gg, uu] : {std::pair<float, float>{gf, uf}, {gb, ub}, {gp, up}}) {
        const uint16_t got = fp16_from_float(silu_f32(gg) * uu);
        const auto v = tol.judge(got, g.exact, u.exact, g.abs_sum, u.abs_sum);
        INFO("K " << K << " G " << g.exact << " U " << u.exact << " got " << fp16_to_double(got)
                  << " exact " << v.exact << " err " << v.err << " bound " << v.bound);
        CHECK(v.ok);
        ++checked;
      }
    }
    CHECK(checked == 900);
  }
}

TEST_CASE("tolerance: 2 fp16 ulps off on a well-conditioned element fails") {
  // 16 same-sign terms: S = |G|, so the accumulation allowance is tiny; only rounding remains.
  const int64_t K = 16;
  const Tolerance tol(K, 1.0f, 1.0f);
  for (double g : {1.5, -2.25, 0.75, 7.0}) {
    for (double u : {3.0, -0.5, 11.0}) {
      const uint16_t right = fp16_from_double(tol.exact_output(g, u));
      CHECK(tol.judge(right, g, u, std::fabs(g), std::fabs(u)).ok);
      for (int d : {2, -2, 3, 16}) {
        const uint16_t wrong = uint16_t(right + d);  // same sign, same binade neighbourhood
        INFO("g " << g << " u " << u << " right " << fp16_to_double(right) << " wrong " << fp16_to_double(wrong));
        CHECK_FALSE(tol.judge(wrong, g, u, std::fabs(g), std::fabs(u)).ok);
      }
    }
  }
}

TEST_CASE("tolerance: cancellation near zero (G ~ 0 with a large sum of |terms|) is no false alarm") {
  // Large terms cancel; fp32 sums in different orders disagree far beyond a relative tolerance
  // on |G|, but stay within gamma * S.
  std::mt19937_64 rng(7);
  const int64_t K = 4096;
  const Tolerance tol(K, 1.0f, 1.0f);
  int big_relative_error = 0;
  for (int e = 0; e < 200; ++e) {
    std::vector<float> t;
    std::uniform_real_distribution<double> pick(0, 1);
    double exact = 0, s = 0;
    for (int64_t k = 0; k < K / 2; ++k) {
      const float big = std::ldexp(1.0f + std::floor(float(pick(rng) * 8)) / 8, 10 + int(pick(rng) * 6));
      const float small = std::ldexp(float(int(pick(rng) * 17) - 8), -6);  // symmetric: G stays near 0
      t.push_back(big + small);  // exact in fp32: 4 + 4 significant bits 16 binades apart
      t.push_back(-big);
    }
    std::shuffle(t.begin(), t.end(), rng);
    for (float x : t) exact += double(x), s += std::fabs(double(x));
    float gf = 0;
    for (float x : t) gf += x;
    const double u = 2.0;  // a well-conditioned U
    const uint16_t got = fp16_from_float(silu_f32(gf) * 2.0f);
    const auto v = tol.judge(got, exact, u, s, std::fabs(u));
    INFO("exact G " << exact << " fp32 " << gf << " S " << s);
    CHECK(v.ok);
    if (std::fabs(double(gf) - exact) > 1e-2 * std::fabs(exact) + 1e-3) ++big_relative_error;
  }
  // The case is genuinely ill-conditioned: a relative check on G would have raised false alarms.
  CHECK(big_relative_error > 150);  // 191 of the 200 draws with this seed
}

TEST_CASE("tolerance: overflow to inf, clamping, NaN") {
  const int64_t K = 16;
  const Tolerance tol(K, 1.0f, 1.0f);
  // Exact c = silu(300) * 300 = 90000: beyond fp16, the reference is +inf.
  CHECK(tol.judge(0x7C00, 300, 300, 300, 300).ok);
  CHECK_FALSE(tol.judge(0x7BFF, 300, 300, 300, 300).ok);  // clamping to 65504 is wrong
  CHECK_FALSE(tol.judge(0xFC00, 300, 300, 300, 300).ok);  // wrong sign
  // Exact c = silu(256) * 256 = 65536, just past the rounding edge 65520: only +inf is right. The
  // one-ulp allowance (32 at the top of the range) must not let a saturated 65504 through.
  CHECK(tol.judge(0x7C00, 256, 256, 256, 256).ok);
  CHECK_FALSE(tol.judge(0x7BFF, 256, 256, 256, 256).ok);
  // Exact c = -90000: -inf.
  CHECK(tol.judge(0xFC00, 300, -300, 300, 300).ok);
  // Exact c = 250 * 250 = 62500 (finite): inf only if the allowance reached 65520; it does not.
  CHECK_FALSE(tol.judge(0x7C00, 250, 250, 250, 250).ok);
  CHECK(tol.judge(fp16_from_double(tol.exact_output(250, 250)), 250, 250, 250, 250).ok);
  // NaN only where the reference is NaN.
  const double nan = std::nan("");
  CHECK(tol.judge(0x7E00, nan, 1, nan, 1).ok);
  CHECK_FALSE(tol.judge(0x3C00, nan, 1, nan, 1).ok);
  CHECK_FALSE(tol.judge(0x7E00, 1, 1, 1, 1).ok);
}

TEST_CASE("tolerance: alpha scales the allowance and the exact value") {
  const Tolerance t1(16, 1.0f, 1.0f), t2(16, 0.5f, 4.0f);
  CHECK(t2.exact_output(2, 3) == doctest::Approx(t1.exact_output(1, 12)));
  CHECK(t2.epilogue_bound(2, 3, 2, 3) > 0);
}

TEST_CASE("compare_output: counters, worst indices, GPU MODE check, attribution") {
  // One row of 6 elements, K = 16; exact G, U with S = |G| (no accumulation slack).
  const std::vector<double> g = {1, 2, -1, 0.5, 3, 1.5}, u = {2, 2, 4, -1, 1, 8};
  std::vector<double> sg, su;
  for (double x : g) sg.push_back(std::fabs(x));
  for (double x : u) su.push_back(std::fabs(x));
  const ReferenceResult ref = make_ref(16, g, u, sg, su);
  std::vector<uint16_t> out = ref.c;

  SUBCASE("the reference itself passes with 0 ulp") {
    const Comparison c = compare_output(ref, 1, 1, out.data(), nullptr, nullptr);
    CHECK(c.pass());
    CHECK(c.max_ulp == 0);
    CHECK(c.ulp_hist[0] == 6);
    CHECK(c.gpumode_pass());
    CHECK(c.attribution == "none");
  }
  SUBCASE("each kind of error is counted once, with its index") {
    out[1] = kPoisonBits;              // unwritten
    out[2] = 0x7E00;                   // NaN where the reference is finite
    out[4] = uint16_t(out[4] + 40);    // 40 ulps off
    const Comparison c = compare_output(ref, 1, 1, out.data(), nullptr, nullptr, 3);
    CHECK_FALSE(c.pass());
    CHECK(c.over_tolerance == 3);
    CHECK(c.poisoned == 1);
    CHECK(c.nan_mismatch == 1);
    CHECK(c.inf_mismatch == 0);
    CHECK(c.max_ulp == 40);
    CHECK(c.ulp_hist[ulp_bucket(40)] == 1);
    REQUIRE(c.first_poisoned.size() == 1);
    CHECK(c.first_poisoned[0].n == 1);
    CHECK(c.first_poisoned[0].call == 3);
    REQUIRE(c.worst.size() == 2);
    CHECK(c.worst[0].n == 2);  // NaN mismatch ranks first
    CHECK(c.worst[1].n == 4);
    CHECK(c.gpumode_mismatch == 3);
    CHECK(c.attribution == "unknown");
    CHECK(c.attribution_detail == "unknown (path exposes no intermediates)");
  }
  SUBCASE("GPU MODE's check is looser than ours for large values") {
    // c = silu(1.5)*8 ~ 9.81: 2 ulps = 0.0156 > 1e-3 + 1e-3*9.81, so both checks reject it.
    out[5] = uint16_t(out[5] + 2);
    // c = silu(1)*2 ~ 1.46: 2 ulps = 0.00195 <= 1e-3 + 1e-3*1.46: GPU MODE's check accepts it.
    out[0] = uint16_t(out[0] + 2);
    const Comparison c = compare_output(ref, 1, 1, out.data(), nullptr, nullptr);
    CHECK(c.over_tolerance == 2);
    CHECK(c.gpumode_mismatch == 1);
  }
  SUBCASE("attribution with intermediates: GEMM error vs epilogue error") {
    std::vector<float> gh(g.begin(), g.end()), uh(u.begin(), u.end());
    out[3] = uint16_t(out[3] + 5);
    Comparison c = compare_output(ref, 1, 1, out.data(), &gh, &uh);
    CHECK(c.attribution == "epilogue");
    CHECK(c.g_out_of_bound == 0);
    gh[3] = 0.75f;  // G itself is wrong at the failing element
    c = compare_output(ref, 1, 1, out.data(), &gh, &uh);
    CHECK(c.attribution == "gemm");
    CHECK(c.g_out_of_bound == 1);
    CHECK(c.u_out_of_bound == 0);
  }
}

TEST_CASE("degenerate references and suspicious scales are flagged") {
  std::vector<uint16_t> c(10, 0x3C00);
  CHECK_FALSE(assess_reference(c).degenerate());
  for (int i = 0; i < 6; ++i) c[i] = i % 2 ? 0x7C00 : 0x8000;  // inf and -0
  const Degeneracy d = assess_reference(c);
  CHECK(d.degenerate());
  CHECK(d.inf == 3);
  CHECK(d.zero == 3);

  Problem p = Problem::zeros(Shape{2, 3, 32, 1});
  CHECK(scan_scales(p).empty());
  p.sfa[3] = 0x7F;   // NaN: row 1, block 1
  p.sfb2[0] = 0xB8;  // negative (-1.0)
  const auto w = scan_scales(p);
  REQUIRE(w.size() == 2);
  CHECK(w[0].find("SFA: 1 NaN") == 0);
  CHECK(w[0].find("row=1 block=1") != std::string::npos);
  CHECK(w[1].find("SFB2: 1 negative") == 0);
}

// ---------------------------------------------------------------------------------------------
// The statistical criterion (compare.hpp, second criterion). Outputs are built from real suite
// data: the exact reference's G, U and abs sums, and fp32 G, U accumulated here from the exactly
// decoded operands, then the epilogue, each with one piece of arithmetic changed the way a bug
// would change it.


namespace {

enum class Acc { Sequential, Fma, Blocked64, Fp16, DropBlock };

float to_bf16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  b += 0x7FFFu + ((b >> 16) & 1u);
  b &= 0xFFFF0000u;
  std::memcpy(&x, &b, 4);
  return x;
}
float to_fp16(float x) { return fp16_to_float(fp16_from_float(x)); }

// exp from 2^f = 1 + f*(0.6565 + 0.3435 f) after range reduction: a low-order polynomial with a
// relative error of about 1e-3.
float exp_quadratic(float t) {
  const float y = t * 1.44269504f, n = std::floor(y), f = y - n;
  return std::ldexp(1.0f + f * (0.6565f + 0.3435f * f), int(n));
}

using Data = test::DecodedCase;
Data make_data(const char* shape, const char* dist, uint64_t seed) { return test::make_decoded_case(shape, dist, seed); }

float dot(const float* x, const float* y, int64_t K, Acc acc) {
  float s = 0;
  switch (acc) {
    case Acc::Sequential:
      for (int64_t k = 0; k < K; ++k) {
        volatile float prod = x[k] * y[k];  // no contraction into an FMA
        s += prod;
      }
      return s;
    case Acc::Fma:
      for (int64_t k = 0; k < K; ++k) s = std::fma(x[k], y[k], s);
      return s;
    case Acc::Blocked64:
      for (int64_t k0 = 0; k0 < K; k0 += 64) {
        float part = 0;
        for (int64_t k = k0; k < std::min<int64_t>(K, k0 + 64); ++k) part += x[k] * y[k];
        s += part;
      }
      return s;
    case Acc::Fp16:  // per-block fp32 products summed into an fp16 accumulator
      for (int64_t k0 = 0; k0 < K; k0 += 16) {
        float part = 0;
        for (int64_t k = k0; k < k0 + 16; ++k) part += x[k] * y[k];
        s = to_fp16(s + part);
      }
      return s;
    case Acc::DropBlock:  // the middle block of 16 is skipped
      for (int64_t k = 0; k < K; ++k)
        if (k / 16 != (K / 16) / 2) s += x[k] * y[k];
      return s;
  }
  return s;
}

struct Path {
  Acc acc = Acc::Sequential;
  float (*mid)(float) = nullptr;  // rounding of G and U before the epilogue
  bool fast_exp = false;          // exp off by +1.2e-7 relative (a fast library exp)
  bool poly_exp = false;          // exp_quadratic
  bool truncate_lane = false;     // n % 4 == 3 converted to fp16 toward zero
};

std::vector<uint16_t> run_path(const Data& d, const Path& path) {
  const Shape& s = d.p.shape;
  std::vector<uint16_t> c(size_t(s.M * s.N));
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      float g = dot(&d.a[size_t(m * s.K)], &d.b1[size_t(n * s.K)], s.K, path.acc);
      float u = dot(&d.a[size_t(m * s.K)], &d.b2[size_t(n * s.K)], s.K, path.acc);
      if (path.mid) g = path.mid(g), u = path.mid(u);
      const float x = d.p.alpha1 * g, y = d.p.alpha2 * u;
      float e = path.poly_exp ? exp_quadratic(-x) : std::exp(-x);
      if (path.fast_exp) e *= 1.0f + 0x1p-23f;
      const float v = x / (1.0f + e) * y;
      uint16_t h = fp16_from_float(v);
      if (path.truncate_lane && n % 4 == 3 && std::isfinite(v) &&
          std::fabs(fp16_to_double(h)) > std::fabs(double(v)))
        h = uint16_t(h - 1);
      c[size_t(m * s.N + n)] = h;
    }
  return c;
}

Comparison judge_path(const Data& d, const Path& path) {
  const auto c = run_path(d, path);
  return compare_output(d.ref, d.p.alpha1, d.p.alpha2, c.data(), nullptr, nullptr);
}

}  // namespace

TEST_CASE("statistical gate: the binomial limit is the smallest count with tail <= 1e-9") {
  // Independent check by direct summation of the pmf in long double.
  for (auto [n, p] : {std::pair<int64_t, double>{91, 2.9e-6}, {2145, 1e-5}, {6144, 2.5e-4},
                      {32768, 4.4e-4}, {1000, 0.05}, {1, 1e-6}}) {
    const int64_t lim = Statistic::limit(n, p);
    auto tail_above = [&](int64_t c) {  // P(X > c)
      long double t = 0, pmf = std::pow(1.0L - p, (long double)n);
      for (int64_t j = 0; j <= n; ++j) {
        if (j > c) t += pmf;
        pmf *= (long double)(n - j) / (j + 1) * p / (1 - p);
      }
      return double(t);
    };
    INFO("n " << n << " p " << p << " limit " << lim);
    CHECK(tail_above(lim) <= Statistic::kFalseAlarm * 1.0001);
    if (lim > 0 && lim < n) CHECK(tail_above(lim - 1) > Statistic::kFalseAlarm);
  }
  CHECK(Statistic::limit(100, 0.0) == 0);
  CHECK(Statistic::element_probability(16) < 1e-6);
}

TEST_CASE("statistical gate: no false alarm on correct fp32 paths (orders, FMA, fast exp)") {
  for (const char* shape : {"7x13x48", "33x65x160", "64x64x256", "32x48x4096", "32x64x7168"})
    for (const char* dist : {"normal", "uniform", "edge", "gpumode"})
      for (uint64_t seed : {1, 2}) {
        const Data d = make_data(shape, dist, seed);
        for (Acc acc : {Acc::Sequential, Acc::Fma, Acc::Blocked64})
          for (bool fast : {false, true}) {
            Path path;
            path.acc = acc;
            path.fast_exp = fast;
            const Comparison c = judge_path(d, path);
            INFO(shape << " " << dist << " seed " << seed << " acc " << int(acc) << " fast exp " << fast
                       << ": unexplained " << c.unexplained << " limit " << c.unexplained_limit
                       << " margin " << c.stat_margin << " element margin " << c.element_margin);
            CHECK(c.pass());
            CHECK(c.stat_margin > 1.5);
          }
      }
}

TEST_CASE("statistical gate: catches systematic precision loss the worst-case bound accepts") {
  struct Bug {
    const char* name;
    Path path;
    std::vector<const char*> shapes;  // where the statistic must catch it
  };
  Path bf16, fp16, acc16, drop, trunc, poly;
  bf16.mid = to_bf16;
  fp16.mid = to_fp16;
  acc16.acc = Acc::Fp16;
  drop.acc = Acc::DropBlock;
  trunc.truncate_lane = true;
  poly.poly_exp = true;
  const std::vector<Bug> bugs = {
      {"G, U rounded to bf16", bf16, {"33x65x160", "64x64x256", "32x48x4096", "64x64x7168"}},
      {"G, U rounded to fp16", fp16, {"33x65x160", "64x64x256"}},
      {"fp16 accumulation", acc16, {"33x65x160", "64x64x256", "32x48x4096", "64x64x7168"}},
      {"one K block dropped", drop, {"7x13x48", "33x65x160", "64x64x256", "32x48x4096", "64x64x7168"}},
      {"fp16 conversion truncating in lane 3 of 4", trunc, {"33x65x160", "64x64x256"}},
      {"silu with a quadratic exp (~1e-3)", poly, {"33x65x160", "64x64x256"}},
  };
  int bound_missed = 0;
  for (const auto& bug : bugs)
    for (const char* shape : bug.shapes)
      for (const char* dist : {"normal", "uniform", "gpumode"}) {
        const Data d = make_data(shape, dist, 3);
        const Comparison c = judge_path(d, bug.path);
        INFO(bug.name << " on " << shape << " " << dist << ": unexplained " << c.unexplained << " limit "
                      << c.unexplained_limit << " over bound " << c.over_tolerance);
        CHECK_FALSE(c.stat_pass());
        CHECK_FALSE(c.pass());
        CHECK(c.stat_message().find("fp32 accumulation") != std::string::npos);
        bound_missed += c.bound_pass();
      }
  // The point of the criterion: many of these pass the worst-case bound alone.
  CHECK(bound_missed >= 10);
}

TEST_CASE("statistical gate: the message says what the failure means") {
  Path bf16;
  bf16.mid = to_bf16;
  const Comparison c = judge_path(make_data("64x64x7168", "normal", 3), bf16);
  REQUIRE_FALSE(c.stat_pass());
  CHECK(c.bound_pass());  // the worst-case bound alone accepts G held in bf16 at K = 7168
  CHECK(c.criterion() == "statistic");
  CHECK(c.stat_message().find("larger than fp32 accumulation allows") != std::string::npos);
  CHECK(c.stat_message().find("bf16") != std::string::npos);
  CHECK(c.stat_margin < 1);
  Path trunc;
  trunc.truncate_lane = true;
  const Comparison t = judge_path(make_data("33x65x160", "normal", 3), trunc);
  REQUIRE_FALSE(t.stat_pass());
  CHECK(t.bound_pass());
  CHECK(t.stat_message().find("one fp16 ulp off") != std::string::npos);
  CHECK(t.unexplained_at.size() == 5);
}

TEST_CASE("compare_output: a large output scanned on several threads gives exactly the serial result") {
  // 4 batches of 256 x 512 (524,288 elements: up to eight ranges of 2^16) with errors of every kind,
  // ties in err/bound and poison in several ranges, and intermediates with a wrong G.
  const Data d = make_data("256x512x32x4", "suspicious", 3);
  std::vector<uint16_t> out = d.ref.c;
  std::vector<float> gh(d.ref.g.begin(), d.ref.g.end()), uh(d.ref.u.begin(), d.ref.u.end());
  for (size_t i = 0; i < out.size(); i += 977) out[i] = kPoisonBits;
  for (size_t i = 13; i < out.size(); i += 1531) out[i] = uint16_t(out[i] ^ 0x0040);  // equal-size flips
  for (size_t i = 29; i < out.size(); i += 4099) out[i] = 0x7E00;
  for (size_t i = 7; i < out.size(); i += 311) out[i] = uint16_t(out[i] + 1);  // one ulp, many of them
  for (size_t i = 101; i < gh.size(); i += 2711) gh[i] += 1.0f;
  const Comparison one = compare_output(d.ref, 2.0f, -0.5f, out.data(), &gh, &uh, 2, 1);
  for (int threads : {2, 3, 8}) {
    CAPTURE(threads);
    const Comparison many = compare_output(d.ref, 2.0f, -0.5f, out.data(), &gh, &uh, 2, threads);
    auto same_report = [](const ElementReport& x, const ElementReport& y) {
      return x.l == y.l && x.m == y.m && x.n == y.n && x.got == y.got && x.call == y.call &&
             (x.err == y.err || (std::isnan(x.err) && std::isnan(y.err)));
    };
    auto same_list = [&](const std::vector<ElementReport>& x, const std::vector<ElementReport>& y) {
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!same_report(x[i], y[i])) return false;
      return true;
    };
    CHECK(many.over_tolerance == one.over_tolerance);
    CHECK(many.nan_mismatch == one.nan_mismatch);
    CHECK(many.inf_mismatch == one.inf_mismatch);
    CHECK(many.poisoned == one.poisoned);
    CHECK(many.gpumode_mismatch == one.gpumode_mismatch);
    CHECK(many.max_abs == one.max_abs);
    CHECK(many.max_rel == one.max_rel);
    CHECK(same_report(many.max_abs_at, one.max_abs_at));
    CHECK(same_report(many.max_rel_at, one.max_rel_at));
    CHECK(many.max_ulp == one.max_ulp);
    CHECK(many.ulp_hist == one.ulp_hist);
    CHECK(same_list(many.worst, one.worst));
    CHECK(same_list(many.first_poisoned, one.first_poisoned));
    CHECK(many.g_out_of_bound == one.g_out_of_bound);
    CHECK(many.u_out_of_bound == one.u_out_of_bound);
    CHECK(many.attribution_detail == one.attribution_detail);
    CHECK(many.stat_elements == one.stat_elements);
    CHECK(many.unexplained == one.unexplained);
    CHECK(many.unexplained_limit == one.unexplained_limit);
    CHECK(many.unexplained_one_ulp == one.unexplained_one_ulp);
    CHECK(many.stat_margin == one.stat_margin);
    CHECK(many.element_margin == one.element_margin);
    CHECK(many.excess_factor == one.excess_factor);
    CHECK(same_list(many.unexplained_at, one.unexplained_at));
    CHECK(many.certified == one.certified);
    CHECK(many.cert_violations == one.cert_violations);
    CHECK(many.cert_one_ulp == one.cert_one_ulp);
    CHECK(many.cert_margin == one.cert_margin);
    CHECK(same_list(many.cert_at, one.cert_at));
    CHECK(many.ms_elements == one.ms_elements);
    CHECK(many.ms_mean == one.ms_mean);
    CHECK(many.ms_limit == one.ms_limit);
    CHECK(many.dir_elements == one.dir_elements);
    CHECK(many.dir_toward == one.dir_toward);
    CHECK(many.dir_expected == one.dir_expected);
    CHECK(many.dir_limit == one.dir_limit);
  }
  CHECK(one.poisoned > 5);     // the lists were cut: their merge order matters
  CHECK(one.over_tolerance > 5);
  CHECK(one.cert_violations > 5);  // (power-of-two alphas: the certificate applies)
}
