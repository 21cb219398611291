// test_scales.cpp — the `scales` distribution (distributions.hpp): every finite E4M3 scale code, of
// either sign, on each of A, B1 and B2, where a wrong decode of it changes C visibly, and a block
// scale product beyond fp16 (448 * 448) whose clamping changes C.
//
// The cases are the default suite's `scales` cases (harness/plan/suite.cpp: the four small shapes
// every distribution runs on, and 24x24x64x12, seed 7); tests/harness/test_lattice_units.cpp checks
// that the suite holds them and that they cover every code. Here, on those cases:
//   - every finite code occurs on every operand, and the generator's structure holds (one scale
//     byte per row but in the saturation pattern, partner products, positive support data);
//   - a wrong table entry: every occurrence of one code in one operand's scales rewritten to its
//     neighbour (code - 1, code + 1, same sign) or with its sign dropped/added (code ^ 0x80), then
//     C recomputed: for every code, operand and rewrite, some element of some case changes by more
//     than 4 fp16 ulps and 1e-3 (or to/from inf) — far outside the harness's tolerance, which for
//     these few exact terms is about one ulp (docs/design.md §4.9);
//   - the scale product sa*sb held in saturating fp16 (clamped to +-65504) changes C likewise.
// C is recomputed from per-block dot products (exact in double here: at most 16 terms per block,
// multiples of 2^-20 far below 2^33) and reference_epilogue; the unperturbed one is checked against
// compute_reference bit for bit first.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "distributions.hpp"
#include "formats.hpp"
#include "reference.hpp"

using namespace nvfp4;

namespace {

const char* const kSuiteShapes[] = {"1x1x16x4", "7x13x48", "33x65x160", "128x96x256x2", "24x24x64x12"};
constexpr uint64_t kSuiteSeed = 7;

std::vector<uint8_t> finite_codes() {
  std::vector<uint8_t> v;
  for (int c = 0; c < 256; ++c)
    if (!e4m3_is_nan(uint8_t(c))) v.push_back(uint8_t(c));
  return v;
}

// One case with its per-block FP4 dot products, so that C can be recomputed for any scale bytes.
struct Case {
  Problem p;
  int64_t nkb = 0;
  std::vector<double> d1, d2;  // (L, M, N, nkb): sum over the block of e2m1(a) * e2m1(b)
  std::vector<uint16_t> c;     // the reference C

  explicit Case(const Shape& s) : p(make_problem(s, "scales", kSuiteSeed)), nkb(s.K / 16) {
    d1.assign(size_t(s.L * s.M * s.N * nkb), 0.0);
    d2 = d1;
    for (int64_t l = 0; l < s.L; ++l)
      for (int64_t m = 0; m < s.M; ++m) {
        const uint8_t* a = p.a.data() + (l * s.M + m) * (s.K / 2);
        for (int64_t n = 0; n < s.N; ++n) {
          const uint8_t* b1 = p.b1.data() + (l * s.N + n) * (s.K / 2);
          const uint8_t* b2 = p.b2.data() + (l * s.N + n) * (s.K / 2);
          const size_t at = size_t(((l * s.M + m) * s.N + n) * nkb);
          for (int64_t k = 0; k < s.K; ++k) {
            const double x = e2m1_value(fp4_code_at(a, k));
            d1[at + size_t(k / 16)] += x * e2m1_value(fp4_code_at(b1, k));
            d2[at + size_t(k / 16)] += x * e2m1_value(fp4_code_at(b2, k));
          }
        }
      }
    c = compute_c(p.sfa, p.sfb1, p.sfb2, {});
  }

  // C for the given scale bytes; `product(sa, sb)` replaces the block scale product when given.
  // Rows of A (and of B) whose scales equal the problem's are recomputed only when `rows_a`
  // (`rows_b`) says so; otherwise their C is taken from `c`.
  std::vector<uint16_t> compute_c(const std::vector<uint8_t>& sfa, const std::vector<uint8_t>& sfb1,
                                  const std::vector<uint8_t>& sfb2, const std::function<double(double, double)>& product,
                                  const std::vector<char>* rows_a = nullptr, const std::vector<char>* rows_b = nullptr) const {
    const Shape& s = p.shape;
    std::vector<uint16_t> out = c.empty() ? std::vector<uint16_t>(size_t(s.c_elems())) : c;
    for (int64_t l = 0; l < s.L; ++l)
      for (int64_t m = 0; m < s.M; ++m)
        for (int64_t n = 0; n < s.N; ++n) {
          const bool redo = (!rows_a && !rows_b) || (rows_a && (*rows_a)[size_t(l * s.M + m)]) ||
                            (rows_b && (*rows_b)[size_t(l * s.N + n)]);
          if (!redo) continue;
          double g = 0, u = 0;
          const size_t at = size_t(((l * s.M + m) * s.N + n) * nkb);
          for (int64_t kb = 0; kb < nkb; ++kb) {
            const double sa = e4m3_value(sfa[size_t((l * s.M + m) * nkb + kb)]);
            const double sb1 = e4m3_value(sfb1[size_t((l * s.N + n) * nkb + kb)]);
            const double sb2 = e4m3_value(sfb2[size_t((l * s.N + n) * nkb + kb)]);
            g += (product ? product(sa, sb1) : sa * sb1) * d1[at + size_t(kb)];
            u += (product ? product(sa, sb2) : sa * sb2) * d2[at + size_t(kb)];
          }
          out[size_t((l * s.M + m) * s.N + n)] = reference_epilogue(g, u, p.alpha1, p.alpha2);
        }
    return out;
  }
};

const std::vector<Case>& suite_cases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> v;
    for (const char* s : kSuiteShapes) v.emplace_back(Shape::parse(s));
    return v;
  }();
  return cases;
}

double ulp16(double x) {
  x = std::fabs(x);
  if (x < std::ldexp(1.0, -14)) return std::ldexp(1.0, -24);
  int e;
  std::frexp(x, &e);  // x in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 1 - 10);
}

// Far outside the harness's tolerance: more than 4 fp16 ulps of the reference and 1e-3, or a
// change between finite and inf (or of inf's sign).
bool visible(uint16_t ref, uint16_t got) {
  if (fp16_is_inf(ref) || fp16_is_inf(got)) return ref != got;
  const double r = fp16_to_double(ref), g = fp16_to_double(got), diff = std::fabs(g - r);
  return diff > 1e-3 && diff > 4 * ulp16(r);
}

bool any_visible(const std::vector<uint16_t>& ref, const std::vector<uint16_t>& got) {
  for (size_t i = 0; i < ref.size(); ++i)
    if (visible(ref[i], got[i])) return true;
  return false;
}

// The rewrites of a scale code that a wrong decode table or sign handling amounts to.
std::vector<uint8_t> rewrites(uint8_t c) {
  std::vector<uint8_t> v;
  const uint8_t sign = c & 0x80, mag = c & 0x7F;
  if (mag > 0) v.push_back(uint8_t(sign | (mag - 1)));
  if (mag < 0x7E) v.push_back(uint8_t(sign | (mag + 1)));
  if (mag > 0) v.push_back(uint8_t(c ^ 0x80));
  return v;
}

const char* const kOperand[] = {"SFA", "SFB1", "SFB2"};

}  // namespace

TEST_CASE("scales: the recomputation is the exact reference") {
  for (const Case& k : suite_cases()) {
    CAPTURE(k.p.shape.str());
    ReferenceOptions o;
    o.threads = 1;
    CHECK(compute_reference(k.p, o).c == k.c);
  }
}

TEST_CASE("scales: every finite code on every operand; one scale byte per row; partners; positive support") {
  std::array<std::set<uint8_t>, 3> seen;
  for (const Case& k : suite_cases()) {
    const Problem& p = k.p;
    const Shape& s = p.shape;
    CAPTURE(s.str());
    const std::vector<uint8_t>* sf[] = {&p.sfa, &p.sfb1, &p.sfb2};
    for (int op = 0; op < 3; ++op) {
      const int64_t rows = op == 0 ? s.M : s.N;
      for (int64_t l = 0; l < s.L; ++l)
        for (int64_t r = 0; r < rows; ++r) {
          const uint8_t* row = sf[op]->data() + (l * rows + r) * k.nkb;
          const bool pattern = s.L >= 2 && l == s.L - 1 && r == rows - 1;
          for (int64_t kb = 0; kb < k.nkb; ++kb) {
            REQUIRE_FALSE(e4m3_is_nan(row[kb]));
            seen[size_t(op)].insert(row[kb]);
            if (!pattern) REQUIRE(row[kb] == row[0]);  // one scale byte per row
          }
          if (pattern) {
            CHECK(row[k.nkb - 1] == (op == 2 ? 0x01 : 0x7E));
            for (int64_t kb = 0; kb + 1 < k.nkb; ++kb) CHECK(row[kb] == 0x00);
          }
        }
    }
    // Partners: every row with a non-zero scale meets, in its batch, a row of the other operand
    // (the same slot, or one slot off on the sparser side) with |sa * sb1|, |sa * sb2| in
    // [0.4, 10]; and sa * sb1 >= 0 throughout a batch (G >= 0: the support data is non-negative).
    auto sc = [&](const std::vector<uint8_t>& sf, int64_t l, int64_t rows, int64_t r) {
      return e4m3_value(sf[size_t((l * rows + r) * k.nkb)]);
    };
    for (int64_t l = 0; l < s.L; ++l) {
      const bool pat = s.L >= 2 && l == s.L - 1;
      const int64_t M = s.M - (pat ? 1 : 0), N = s.N - (pat ? 1 : 0);
      auto partners = [&](int64_t m, int64_t n) {
        const double sa = sc(p.sfa, l, s.M, m), g = sa * sc(p.sfb1, l, s.N, n), u = sa * sc(p.sfb2, l, s.N, n);
        return std::fabs(g) >= 0.4 && std::fabs(g) <= 10 && std::fabs(u) >= 0.4 && std::fabs(u) <= 10;
      };
      for (int64_t m = 0; m < M; ++m) {
        bool found = sc(p.sfa, l, s.M, m) == 0;
        for (int64_t n = 0; n < N && !found; ++n) found = partners(m, n);
        CAPTURE(l);
        CAPTURE(m);
        CHECK(found);
        for (int64_t n = 0; n < N; ++n) CHECK(sc(p.sfa, l, s.M, m) * sc(p.sfb1, l, s.N, n) >= 0);
      }
      for (int64_t n = 0; n < N; ++n) {
        bool found = sc(p.sfb1, l, s.N, n) == 0 || sc(p.sfb2, l, s.N, n) == 0;
        for (int64_t m = 0; m < M && !found; ++m) found = partners(m, n);
        CAPTURE(l);
        CAPTURE(n);
        CHECK(found);
      }
    }
    // Support data of A and B1 non-negative: every per-block dot of G is >= 0. C never overflows,
    // and is zero only in a few rows and columns (zero slots, the pattern's).
    for (double d : k.d1) REQUIRE(d >= 0);
    int64_t zeros = 0;
    for (uint16_t c : k.c) {
      REQUIRE_FALSE(fp16_is_inf(c));
      zeros += (c & 0x7FFF) == 0;
    }
    CHECK(zeros * 5 < int64_t(k.c.size()));
  }
  const auto all = finite_codes();
  for (int op = 0; op < 3; ++op) {
    const std::string operand = kOperand[op];
    CAPTURE(operand);
    std::vector<uint8_t> missing;
    for (uint8_t c : all)
      if (!seen[size_t(op)].count(c)) missing.push_back(c);
    CAPTURE(missing.size());
    CHECK(missing.empty());
    CHECK(seen[size_t(op)].size() == 254);
  }
}

TEST_CASE("scales: a wrong decode of any finite code, on any operand, changes C visibly") {
  const auto& cases = suite_cases();
  int checked = 0;
  for (int op = 0; op < 3; ++op)
    for (uint8_t code : finite_codes())
      for (uint8_t to : rewrites(code)) {
        const std::string operand = kOperand[op];
        CAPTURE(operand);
        CAPTURE(int(code));
        CAPTURE(int(to));
        bool caught = false;
        for (size_t i = 0; i < cases.size() && !caught; ++i) {
          const Case& k = cases[i];
          const Shape& s = k.p.shape;
          std::vector<uint8_t> sf[3] = {k.p.sfa, k.p.sfb1, k.p.sfb2};
          const int64_t rows = op == 0 ? s.M : s.N;
          std::vector<char> touched(size_t(s.L * rows), 0);
          bool any = false;
          for (size_t j = 0; j < sf[op].size(); ++j)
            if (sf[op][j] == code) {
              sf[op][j] = to;
              touched[j / size_t(k.nkb)] = 1;
              any = true;
            }
          if (!any) continue;
          const auto c = k.compute_c(sf[0], sf[1], sf[2], {}, op == 0 ? &touched : nullptr,
                                     op == 0 ? nullptr : &touched);
          caught = any_visible(k.c, c);
        }
        CHECK(caught);
        ++checked;
      }
  // Per operand: 252 non-zero codes with three rewrites each, but +-448 with two (0x7F and 0xFF are
  // NaN), and +-0 with one: 756.
  CHECK(checked == 3 * 756);
}

TEST_CASE("scales: a block scale product held in saturating fp16 changes C; the pattern's values") {
  auto clamp16 = [](double sa, double sb) { return std::max(-65504.0, std::min(65504.0, sa * sb)); };
  int with_pattern = 0;
  for (const Case& k : suite_cases()) {
    const Shape& s = k.p.shape;
    CAPTURE(s.str());
    const auto c = k.compute_c(k.p.sfa, k.p.sfb1, k.p.sfb2, clamp16);
    if (s.L < 2) {
      CHECK(c == k.c);  // no product beyond fp16 outside the pattern
      continue;
    }
    ++with_pattern;
    CHECK(any_visible(k.c, c));
    // The pattern: last batch, last row of A, last column; G = 50176, U = 0.875, C = 43904 (finite).
    ReferenceOptions o;
    o.threads = 1;
    const ReferenceResult ref = compute_reference(k.p, o);
    const size_t at = size_t(((s.L - 1) * s.M + s.M - 1) * s.N + s.N - 1);
    CHECK(ref.g[at] == 50176.0);
    CHECK(ref.u[at] == 0.875);
    CHECK(fp16_to_double(ref.c[at]) == 43904.0);
    CHECK(fp16_to_double(c[at]) == 14328.0);  // 16376 * 0.875 = 14329 in fp16
    // Its row and column are zero elsewhere.
    for (int64_t n = 0; n + 1 < s.N; ++n) CHECK(ref.g[at - size_t(s.N - 1 - n)] == 0.0);
  }
  CHECK(with_pattern == 3);
}

TEST_CASE("scales: the scale bytes depend on the shape only; the seed draws the FP4 data") {
  for (const char* sh : {"7x13x48", "128x96x256x2", "12x20x7168x2"}) {
    CAPTURE(sh);
    const Shape s = Shape::parse(sh);
    const Problem p = make_problem(s, "scales", 1), q = make_problem(s, "scales", 2);
    CHECK(p.sfa == q.sfa);
    CHECK(p.sfb1 == q.sfb1);
    CHECK(p.sfb2 == q.sfb2);
    CHECK(p.a != q.a);
    CHECK(p.b1 != q.b1);
    CHECK(p.b2 != q.b2);
  }
}
