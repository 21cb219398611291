// test_reference.cpp — the proof that the reference is exact.
//
// G and U from compute_reference() are compared BIT FOR BIT with a deliberately naive exact
// implementation written here: plain loops over (l, m, n, k), integer products of
// e2m1_twice(code) * e4m3_times_512(scale) summed in __int128 — no decoding to floating point, no
// blocking, no bounds. Inputs are random bytes from this file's own seeded generator (not the
// library's distributions), over ragged shapes, L > 1, K up to 16384, full-range codes and
// scale bytes, edge scales (448 with 448, subnormals, zero, negative) and NaN scales.
// C is compared with an epilogue computed here independently (long double, own fp16 rounding).
// Case names carry their seed: "reference[seed=...]" reproduces a case.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "formats.hpp"
#include "reference.hpp"

using namespace nvfp4;

namespace {

// How scale bytes are drawn.
enum class Scales {
  Ordinary,  // [2^-4, 2^4], non-negative
  Full,      // any non-NaN byte: negative, subnormal, zero, 448
  Edge,      // only 448, -448, the smallest subnormals, the smallest normal, 0, -0, 1
  Big,       // 448 and 256 only (large products, big sums)
  WithNaN,   // Full, with about one NaN byte in 300
};
const char* scales_name(Scales s) {
  switch (s) {
    case Scales::Ordinary: return "ordinary";
    case Scales::Full: return "full";
    case Scales::Edge: return "edge";
    case Scales::Big: return "big";
    case Scales::WithNaN: return "nan";
  }
  return "?";
}

uint8_t draw_scale(std::mt19937_64& rng, Scales mode) {
  std::uniform_int_distribution<int> byte(0, 255);
  switch (mode) {
    case Scales::Ordinary: return uint8_t(std::uniform_int_distribution<int>(0x18, 0x5F)(rng));
    case Scales::Full:
    case Scales::WithNaN: {
      if (mode == Scales::WithNaN && std::uniform_int_distribution<int>(0, 299)(rng) == 0)
        return (rng() & 1) ? 0x7F : 0xFF;
      uint8_t b;
      do b = uint8_t(byte(rng));
      while ((b & 0x7F) == 0x7F);
      return b;
    }
    case Scales::Edge: {
      static const uint8_t v[] = {0x7E, 0xFE, 0x01, 0x02, 0x07, 0x08, 0x00, 0x80, 0x38};
      return v[std::uniform_int_distribution<int>(0, 8)(rng)];
    }
    case Scales::Big: return (rng() & 1) ? 0x7E : 0x78;
  }
  return 0;
}

struct Case {
  Shape shape;
  Scales scales;
  uint64_t seed;
  std::string name() const {
    std::ostringstream os;
    os << "reference[shape=" << shape.str() << " scales=" << scales_name(scales) << " seed=" << seed
       << "]";
    return os.str();
  }
};

Problem random_problem(const Case& c) {
  Problem p = Problem::zeros(c.shape);
  std::mt19937_64 rng(c.seed);
  for (auto* v : {&p.a, &p.b1, &p.b2})
    for (auto& b : *v) b = uint8_t(rng());  // every E2M1 code, both nibbles
  for (auto* v : {&p.sfa, &p.sfb1, &p.sfb2})
    for (auto& b : *v) b = draw_scale(rng, c.scales);
  return p;
}

// --- the naive exact implementation -------------------------------------------------------

// Element k of row r of a packed (rows, K/2) matrix, by the docs/design.md §1 rule, written out again.
int naive_code(const std::vector<uint8_t>& packed, int64_t row_offset_bytes, int64_t k) {
  const uint8_t byte = packed[size_t(row_offset_bytes + k / 2)];
  return k % 2 == 0 ? (byte & 0xF) : (byte >> 4);
}

struct Naive {
  bool nan = false;
  __int128 sum = 0;       // exact dot product in units of 2^-20
  __int128 abs_sum = 0;   // exact sum of |terms| in the same units
  double value() const { return nan ? NAN : std::ldexp(double(sum), -20); }
  double abs_value() const { return nan ? NAN : std::ldexp(double(abs_sum), -20); }
};

Naive naive_dot(const Problem& p, const std::vector<uint8_t>& b, const std::vector<uint8_t>& sfb,
                int64_t l, int64_t m, int64_t n) {
  const Shape& s = p.shape;
  Naive r;
  const int64_t arow = (l * s.M + m), brow = (l * s.N + n);
  for (int64_t k = 0; k < s.K; ++k) {
    const uint8_t sa = p.sfa[size_t(arow * (s.K / 16) + k / 16)];
    const uint8_t sb = sfb[size_t(brow * (s.K / 16) + k / 16)];
    if (e4m3_is_nan(sa) || e4m3_is_nan(sb)) {
      r.nan = true;
      continue;
    }
    const __int128 ta = __int128(e2m1_twice(uint8_t(naive_code(p.a, arow * (s.K / 2), k)))) *
                        e4m3_times_512(sa);
    const __int128 tb = __int128(e2m1_twice(uint8_t(naive_code(b, brow * (s.K / 2), k)))) *
                        e4m3_times_512(sb);
    r.sum += ta * tb;
    r.abs_sum += (ta < 0 ? -ta : ta) * (tb < 0 ? -tb : tb);
  }
  return r;
}

bool same_bits(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::memcmp(&x, &y, sizeof x) == 0;
}

// --- an independent epilogue ---------------------------------------------------------------

// fp16 round-to-nearest-even of a long double, written without formats.cpp. Sets *near_tie when
// x lies within 2^-40 (relative) of a rounding midpoint, where a double-precision epilogue may
// legitimately round the other way.
uint16_t independent_fp16(long double x, bool* near_tie) {
  *near_tie = false;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7E00;
  long double a = std::fabs(x);
  // Quantum of fp16 at a: 2^-24 below 2^-14, else 2^(e-10) for a in [2^e, 2^(e+1)).
  int e = a < 0x1p-14L ? -14 : std::ilogb(a);
  long double q = std::ldexp(1.0L, e - 10);
  long double t = a / q;  // exact (power of two)
  long double fl = std::floor(t), frac = t - fl;
  if (a < 65520.0L && std::fabs(frac - 0.5L) < 0x1p-40L * t) *near_tie = true;
  long double r = fl;
  if (frac > 0.5L || (frac == 0.5L && std::fmod(fl, 2.0L) != 0)) r = fl + 1;
  long double v = r * q;
  if (v > 65504.0L) return uint16_t(sign | 0x7C00);
  if (v == 0) return sign;
  // Encode v (a representable fp16 magnitude).
  if (v < 0x1p-14L) return uint16_t(sign | uint16_t(v / 0x1p-24L));
  int ev = std::ilogb(v);
  const uint16_t man = uint16_t(v / std::ldexp(1.0L, ev - 10) - 1024);
  return uint16_t(sign | ((ev + 15) << 10) | man);
}

uint16_t independent_epilogue(double g, double u, float alpha1, float alpha2, bool* near_tie) {
  if (std::isnan(g) || std::isnan(u)) {
    *near_tie = false;
    return 0x7E00;
  }
  const long double x = (long double)alpha1 * g, y = (long double)alpha2 * u;
  return independent_fp16(x / (1.0L + std::exp(-x)) * y, near_tie);
}

bool same_fp16(uint16_t a, uint16_t b) {
  if (fp16_is_nan(a) || fp16_is_nan(b)) return fp16_is_nan(a) && fp16_is_nan(b);
  return a == b;
}

struct Report {
  int64_t elements = 0, g_diff = 0, u_diff = 0, c_diff = 0, near_ties = 0, abs_bad = 0;
};

// Checks one reference result against the naive implementation; returns the counts.
Report check_against_naive(const Problem& p, const ReferenceResult& r, bool check_abs) {
  const Shape& s = p.shape;
  Report rep;
  for (int64_t l = 0; l < s.L; ++l)
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t n = 0; n < s.N; ++n) {
        const size_t e = size_t((l * s.M + m) * s.N + n);
        const Naive g = naive_dot(p, p.b1, p.sfb1, l, m, n);
        const Naive u = naive_dot(p, p.b2, p.sfb2, l, m, n);
        ++rep.elements;
        if (!same_bits(r.g[e], g.value())) ++rep.g_diff;
        if (!same_bits(r.u[e], u.value())) ++rep.u_diff;
        bool tie = false;
        const uint16_t c = independent_epilogue(g.value(), u.value(), p.alpha1, p.alpha2, &tie);
        if (tie) ++rep.near_ties;
        else if (!same_fp16(c, r.c[e])) ++rep.c_diff;
        if (check_abs) {
          // exact S <= reported <= S (1 + 4(K+1) 2^-24), NaN exactly where G is NaN.
          const double slack = 1.0 + 4.0 * double(s.K + 1) * 0x1p-24;
          for (auto pr : {std::make_pair(g, r.g_abs[e]), std::make_pair(u, r.u_abs[e])}) {
            const Naive& nv = pr.first;
            const double got = pr.second;
            if (nv.nan ? !std::isnan(got)
                       : !(got >= nv.abs_value() && got <= nv.abs_value() * slack + 0x1p-60))
            {
              if (rep.abs_bad < 3)
                MESSAGE("abs sum " << got << " vs exact " << nv.abs_value() << " K=" << s.K);
              ++rep.abs_bad;
            }
          }
        }
      }
  return rep;
}

void run_case(const Case& c, const ReferenceOptions& opt, bool check_abs) {
  INFO(c.name());
  const Problem p = random_problem(c);
  const ReferenceResult r = compute_reference(p, opt);
  REQUIRE(r.g.size() == size_t(c.shape.c_elems()));
  const Report rep = check_against_naive(p, r, check_abs);
  CHECK(rep.g_diff == 0);
  CHECK(rep.u_diff == 0);
  CHECK(rep.c_diff == 0);
  CHECK(rep.abs_bad == 0);
  CHECK(rep.near_ties <= rep.elements / 1000);
}

}  // namespace

TEST_CASE("G and U are bit-identical to the naive integer dot product on random shapes") {
  // Small ragged shapes with every scale mode; L up to 3; K from 16 to 1024.
  std::mt19937_64 pick(20240601);
  const Scales modes[] = {Scales::Ordinary, Scales::Full, Scales::Edge, Scales::Big, Scales::WithNaN};
  int cases = 0;
  for (int i = 0; i < 150; ++i) {
    Case c;
    c.shape.M = std::uniform_int_distribution<int>(1, 19)(pick);
    c.shape.N = std::uniform_int_distribution<int>(1, 23)(pick);
    c.shape.K = 16 * std::uniform_int_distribution<int>(1, 64)(pick);
    c.shape.L = std::uniform_int_distribution<int>(1, 3)(pick);
    c.scales = modes[i % 5];
    c.seed = 1000 + uint64_t(i);
    ReferenceOptions opt;
    opt.abs_sums = (i % 2) == 0;
    opt.threads = 1 + i % 3;
    run_case(c, opt, opt.abs_sums);
    ++cases;
  }
  CHECK(cases == 150);
}

TEST_CASE("exactness at large K (7168, 16384) and across column chunks and row tiles") {
  // N > 256 crosses the reference's column chunks; M = 33 with 3 threads splits rows into tiles.
  const Case cases[] = {
      {Shape{3, 5, 16384, 1}, Scales::Full, 7},
      {Shape{2, 3, 16384, 2}, Scales::Big, 8},
      {Shape{4, 4, 16384, 1}, Scales::Edge, 9},
      {Shape{5, 3, 7168, 1}, Scales::Ordinary, 10},
      {Shape{2, 300, 160, 1}, Scales::Full, 11},
      {Shape{33, 7, 64, 2}, Scales::WithNaN, 12},
      {Shape{1, 1, 16, 1}, Scales::Edge, 13},
  };
  for (const Case& c : cases) {
    for (int threads : {1, 3}) {
      ReferenceOptions opt;
      opt.threads = threads;
      opt.abs_sums = true;
      run_case(c, opt, true);
    }
  }
}

TEST_CASE("every usable GEMM ISA gives the same bits") {
  const std::vector<std::string> isas = reference_isas();
  REQUIRE(!isas.empty());
  CHECK(isas.back() == "baseline");
  const Case c{Shape{17, 41, 2048, 2}, Scales::Full, 21};
  const Problem p = random_problem(c);
  std::vector<ReferenceResult> results;
  for (const auto& isa : isas) {
    ReferenceOptions opt;
    opt.isa = isa;
    opt.abs_sums = true;
    results.push_back(compute_reference(p, opt));
    INFO("isa " << isa);
    const Report rep = check_against_naive(p, results.back(), true);
    CHECK(rep.g_diff == 0);
    CHECK(rep.u_diff == 0);
    CHECK(rep.c_diff == 0);
    CHECK(rep.abs_bad == 0);
  }
  ReferenceOptions bad;
  bad.isa = "no-such-isa";
  CHECK_THROWS(compute_reference(p, bad));
}

TEST_CASE("the integer fallback (tier 3) is exercised and exact") {
  // K/16 = 2h+1 blocks. Block 0 has the smallest subnormal scale (2^-9) and element 0 the code
  // 0.5, so element 0 contributes 2^-20 to every dot product, and q = 0 (limit 2^33). Blocks
  // 1..h have scale 448 and codes 4 or 6; blocks h+1..2h repeat them, except that in B1 they are
  // negated. So G = (block 0 terms) exactly, a small number with bits down to 2^-20, while the
  // partial sums of a double GEMM reach ~2^36 on the way and lose those bits. sum|terms| is
  // ~2^37 > 2^33: tiers 1 and 2 fail and the integer fallback must produce G.
  const int64_t h = 1024;
  const Shape s{3, 4, 16 * (2 * h + 1), 1};
  Problem p = Problem::zeros(s);
  std::mt19937_64 rng(31);
  auto fill = [&](std::vector<uint8_t>& v, std::vector<uint8_t>& sf, int64_t rows, bool negate) {
    const int64_t kb = s.K / 16;
    for (int64_t r = 0; r < rows; ++r) {
      uint8_t* row = &v[size_t(r * s.K / 2)];
      uint8_t* srow = &sf[size_t(r * kb)];
      for (int64_t j = 0; j < 8; ++j) row[j] = uint8_t(rng() & 0x77);  // block 0: small codes
      row[0] = uint8_t((row[0] & 0xF0) | 0x1);                          // element 0: 0.5
      srow[0] = 0x01;                                                    // 2^-9
      for (int64_t b = 1; b <= h; ++b) {
        srow[b] = srow[b + h] = 0x7E;  // 448
        for (int64_t j = 0; j < 8; ++j) {
          const uint8_t byte = uint8_t(((rng() & 1) ? 0x7 : 0x6) | (((rng() & 1) ? 0x7 : 0x6) << 4));
          row[b * 8 + j] = byte;
          row[(b + h) * 8 + j] = negate ? uint8_t(byte | 0x88) : byte;  // sign bits of both nibbles
        }
      }
    }
  };
  fill(p.a, p.sfa, s.M, false);
  fill(p.b1, p.sfb1, s.N, true);
  fill(p.b2, p.sfb2, s.N, false);
  for (bool abs_sums : {false, true}) {
    ReferenceOptions opt;
    opt.abs_sums = abs_sums;
    const ReferenceResult r = compute_reference(p, opt);
    CHECK(r.integer_fallback > 0);
    const Report rep = check_against_naive(p, r, abs_sums);
    CHECK(rep.g_diff == 0);
    CHECK(rep.u_diff == 0);
    CHECK(rep.c_diff == 0);
    CHECK(rep.abs_bad == 0);
  }
  // The case is one where a double sum really goes wrong: summing the decoded products in
  // order in double differs from the exact value (here representable) for every element.
  int64_t inexact = 0;
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < s.K; ++k) {
        const double a = e2m1_value(fp4_code_at(&p.a[size_t(m * s.K / 2)], k)) *
                         e4m3_value(p.sfa[size_t(m * s.K / 16 + k / 16)]);
        const double b = e2m1_value(fp4_code_at(&p.b1[size_t(n * s.K / 2)], k)) *
                         e4m3_value(p.sfb1[size_t(n * s.K / 16 + k / 16)]);
        acc += a * b;
      }
      const Naive exact = naive_dot(p, p.b1, p.sfb1, 0, m, n);
      CHECK(double(exact.sum) == (long double)exact.sum);  // G itself fits in a double
      if (std::ldexp(double(exact.sum), -20) != acc) ++inexact;
    }
  CHECK(inexact == s.M * s.N);
}

TEST_CASE("tier 2 certifies big but exactly summable products without the integer fallback") {
  // Scales 448 everywhere except one ordinary-scale block per row: the row norms bound sum|terms|
  // above 2^33+q, but the actual sums are smaller, so the |A||B|^T GEMM settles it (tier 2).
  const Shape s{4, 6, 16384, 1};
  Problem p = Problem::zeros(s);
  std::mt19937_64 rng(41);
  for (auto* v : {&p.a, &p.b1, &p.b2})
    for (auto& b : *v) b = uint8_t(rng());
  // A: 448 in the first half of K, 2^-9 elsewhere; B: the opposite. Row norms see 448 * 448 pairs
  // (l1 * linf is large) but every actual product has one tiny factor.
  for (int64_t r = 0; r < s.M; ++r)
    for (int64_t b = 0; b < s.K / 16; ++b) p.sfa[size_t(r * s.K / 16 + b)] = b < s.K / 32 ? 0x7E : 0x01;
  for (auto* sf : {&p.sfb1, &p.sfb2})
    for (int64_t r = 0; r < s.N; ++r)
      for (int64_t b = 0; b < s.K / 16; ++b) (*sf)[size_t(r * s.K / 16 + b)] = b < s.K / 32 ? 0x01 : 0x7E;
  const ReferenceResult r = compute_reference(p);
  CHECK(r.certified_by_abs_gemm > 0);
  CHECK(r.integer_fallback == 0);
  const Report rep = check_against_naive(p, r, false);
  CHECK(rep.g_diff == 0);
  CHECK(rep.u_diff == 0);
}

TEST_CASE("NaN scales make exactly the outputs they touch NaN") {
  const Shape s{5, 6, 64, 2};
  Problem p = random_problem({s, Scales::Ordinary, 51});
  // A row 2 of batch 1, block 3: NaN scale over all-zero codes (0 * NaN must still be NaN).
  p.sfa[size_t((1 * s.M + 2) * 4 + 3)] = 0x7F;
  for (int j = 0; j < 8; ++j) p.a[size_t((1 * s.M + 2) * 32 + 3 * 8 + j)] = 0x00;
  // B1 row 4 of batch 0: NaN scale 0xFF (negative-signed NaN).
  p.sfb1[size_t((0 * s.N + 4) * 4 + 0)] = 0xFF;
  const ReferenceResult r = compute_reference(p);
  for (int64_t l = 0; l < s.L; ++l)
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t n = 0; n < s.N; ++n) {
        const size_t e = size_t((l * s.M + m) * s.N + n);
        const bool a_nan = l == 1 && m == 2, b1_nan = l == 0 && n == 4;
        CHECK(std::isnan(r.g[e]) == (a_nan || b1_nan));
        CHECK(std::isnan(r.u[e]) == a_nan);
        CHECK(fp16_is_nan(r.c[e]) == (a_nan || b1_nan));
      }
}

TEST_CASE("negative scales are decoded with their sign") {
  const Shape s{1, 1, 16, 1};
  Problem p = Problem::zeros(s);
  for (auto* v : {&p.a, &p.b1, &p.b2})
    for (auto& b : *v) b = 0x22;  // every element 1.0
  p.sfa[0] = 0xB8;   // -1.0
  p.sfb1[0] = 0x38;  // 1.0
  p.sfb2[0] = 0xC0;  // -2.0
  const ReferenceResult r = compute_reference(p);
  CHECK(r.g[0] == -16.0);
  CHECK(r.u[0] == 32.0);
}

TEST_CASE("overflow gives +-inf with the sign of silu(g)*u; alpha scales both GEMMs") {
  // Every element 6.0 with scale 448: G = U = 16 * 2688^2 = 115605504 (exact).
  const Shape s{1, 2, 16, 1};
  Problem p = Problem::zeros(s);
  for (auto* v : {&p.a, &p.b1, &p.b2})
    for (auto& b : *v) b = 0x77;
  for (auto* v : {&p.sfa, &p.sfb1, &p.sfb2})
    for (auto& b : *v) b = 0x7E;
  for (int j = 0; j < 8; ++j) p.b2[size_t(8 + j)] = 0xFF;  // column 1 of U: all -6.0
  ReferenceResult r = compute_reference(p);
  CHECK(r.g[0] == 115605504.0);
  CHECK(r.u[1] == -115605504.0);
  CHECK(r.c[0] == 0x7C00);  // +inf
  CHECK(r.c[1] == 0xFC00);  // -inf
  // alpha = 2^-14 each: silu(7056.0) * 7056.0 = 49787136 -> still inf; alpha = 2^-20: ~ 12155.
  p.alpha1 = p.alpha2 = 0x1p-20f;
  r = compute_reference(p);
  CHECK(r.g[0] == 115605504.0);  // alpha is not applied to G
  const double x = 115605504.0 * 0x1p-20;
  CHECK(r.c[0] == fp16_from_double(x * x));  // silu(x) == x to double precision at x ~ 110
  CHECK(r.c[1] == fp16_from_double(-x * x));
  CHECK(!fp16_is_inf(r.c[0]));
  // A large negative gate: silu(-110) * u is a tiny negative number times u.
  p.alpha1 = -0x1p-20f;
  r = compute_reference(p);
  bool tie = false;
  CHECK(r.c[0] == independent_epilogue(r.g[0], r.u[0], p.alpha1, p.alpha2, &tie));
}

TEST_CASE("random alphas: C matches the independent epilogue") {
  std::mt19937_64 rng(61);
  for (int i = 0; i < 20; ++i) {
    Case c{Shape{7, 9, 96, 2}, i % 2 ? Scales::Ordinary : Scales::Full, uint64_t(70 + i)};
    Problem p = random_problem(c);
    p.alpha1 = float(std::ldexp(std::uniform_real_distribution<double>(-2, 2)(rng), -int(rng() % 12)));
    p.alpha2 = float(std::ldexp(std::uniform_real_distribution<double>(-2, 2)(rng), -int(rng() % 12)));
    INFO(c.name() << " alpha1=" << p.alpha1 << " alpha2=" << p.alpha2);
    const ReferenceResult r = compute_reference(p);
    const Report rep = check_against_naive(p, r, false);
    CHECK(rep.g_diff == 0);
    CHECK(rep.c_diff == 0);
  }
}

TEST_CASE("reference_epilogue on chosen values") {
  bool tie = false;
  // silu(0) = 0; silu(-1000) = -0 (exp overflow handled); inf propagation of the product.
  CHECK(reference_epilogue(0.0, 5.0, 1.0f, 1.0f) == 0x0000);
  CHECK(reference_epilogue(-1000.0, 1.0, 1.0f, 1.0f) == 0x8000);
  CHECK(reference_epilogue(1000.0, 1000.0, 1.0f, 1.0f) == 0x7C00);
  CHECK(reference_epilogue(1000.0, -1000.0, 1.0f, 1.0f) == 0xFC00);
  CHECK(fp16_is_nan(reference_epilogue(NAN, 1.0, 1.0f, 1.0f)));
  // silu(1) * 1 = 1/(1+e^-1) = 0.7310585786... -> fp16 0x39D9 (0.73095703125).
  CHECK(reference_epilogue(1.0, 1.0, 1.0f, 1.0f) == 0x39D9);
  // 65504 boundary: a product rounding to 65520 overflows, one just below stays finite.
  CHECK(reference_epilogue(1000.0, 65.519, 1.0f, 1.0f) == 0x7BFF);
  CHECK(reference_epilogue(1000.0, 65.521, 1.0f, 1.0f) == 0x7C00);
  // A sweep against the independent version.
  std::mt19937_64 rng(81);
  int64_t diffs = 0, ties = 0;
  for (int i = 0; i < 200000; ++i) {
    const double g = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), int(rng() % 40) - 20);
    const double u = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), int(rng() % 40) - 20);
    const uint16_t want = independent_epilogue(g, u, 1.0f, 1.0f, &tie);
    if (tie) ++ties;
    else if (!same_fp16(want, reference_epilogue(g, u, 1.0f, 1.0f))) ++diffs;
  }
  CHECK(diffs == 0);
  CHECK(ties < 10);
}
