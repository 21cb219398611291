// test_cpu_backend.cpp — the CPU backend's plain and fused paths against the exact reference.
//
// Every element is checked with a bound derived here from the fp32 arithmetic (a test-local
// check; the harness has its own tolerance):
//   fp32 GEMM:  |g^ - g| <= gK * S_g, gK = K 2^-23 (> gamma_K = Ku/(1-Ku), u = 2^-24), S_g = sum|terms|
//   alpha:      x = alpha1*g^ adds |x| 2^-24; y = alpha2*u^ likewise
//   silu:       |silu'| <= 1.1, so dsilu <= 1.1 dx + a few ulps of evaluation (exp, add, divide)
//   product:    dc <= dsilu (|y| + dy) + |silu(x)| dy + a few ulps of the product
//   fp16:       plus one fp16 ulp at |c| for the two roundings (ours and the reference's).
// Outputs beyond the fp16 range count as +-65536 so that 65504 vs inf is a difference of 32.
// NaN must match NaN exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "distributions.hpp"
#include "errors.hpp"
#include "formats.hpp"
#include "reference.hpp"
#include "registry.hpp"

using namespace nvfp4;

namespace {

double fp16_ulp(double mag) {
  if (mag < 0x1p-14) return 0x1p-24;
  return std::ldexp(1.0, std::min(std::ilogb(mag), 15) - 10);
}

double as_value(uint16_t bits) {
  if (fp16_is_inf(bits)) return (bits & 0x8000) ? -65536.0 : 65536.0;
  return fp16_to_double(bits);
}

// The bound above for one element, from the exact g, u and their sums of |terms|.
double element_tolerance(double g, double u, double sg, double su, int64_t K, float alpha1,
                         float alpha2) {
  const double eps = 0x1p-24, gk = double(K) * 0x1p-23;
  const double a1 = std::fabs(alpha1), a2 = std::fabs(alpha2);
  const double x = double(alpha1) * g, y = double(alpha2) * u;
  const double dx = a1 * gk * sg + (std::fabs(x) + a1 * gk * sg) * eps;
  const double dy = a2 * gk * su + (std::fabs(y) + a2 * gk * su) * eps;
  const double silu = x / (1.0 + std::exp(-x));
  const double ds = 1.1 * dx + 8 * eps * (std::fabs(silu) + 1.1 * dx);
  const double c = silu * y;
  const double dc = ds * (std::fabs(y) + dy) + std::fabs(silu) * dy + 4 * eps * (std::fabs(c) + ds * (std::fabs(y) + dy));
  return dc + fp16_ulp(std::fabs(c) + dc);
}

struct Verdict {
  int64_t bad = 0, nan_mismatch = 0, checked = 0;
  std::string first;
};

Verdict check_output(const Problem& p, const ReferenceResult& ref, const std::vector<uint16_t>& c) {
  Verdict v;
  for (size_t e = 0; e < c.size(); ++e) {
    ++v.checked;
    const bool ref_nan = fp16_is_nan(ref.c[e]);
    if (ref_nan || fp16_is_nan(c[e])) {
      if (ref_nan != fp16_is_nan(c[e])) ++v.nan_mismatch;
      continue;
    }
    const double tol = element_tolerance(ref.g[e], ref.u[e], ref.g_abs[e], ref.u_abs[e],
                                         p.shape.K, p.alpha1, p.alpha2);
    const double diff = std::fabs(as_value(c[e]) - as_value(ref.c[e]));
    if (!(diff <= tol)) {
      if (v.bad == 0) {
        std::ostringstream os;
        os << "element " << e << ": got " << as_value(c[e]) << " want " << as_value(ref.c[e])
           << " tol " << tol << " (g " << ref.g[e] << " u " << ref.u[e] << ")";
        v.first = os.str();
      }
      ++v.bad;
    }
  }
  return v;
}

std::vector<uint16_t> run_plan(Plan& plan, const Shape& s) {
  plan.poison_output(0x7E01);  // a NaN: unwritten elements cannot pass
  plan.enqueue();
  plan.synchronize();
  std::vector<uint16_t> c(size_t(s.c_elems()));
  plan.read_output(c.data());
  return c;
}

struct Case {
  const char* shape;
  const char* dist;
  uint64_t seed;
};

const Case kCases[] = {
    {"1x1x16", "normal", 1},      {"7x13x64", "uniform", 2},    {"33x70x256x2", "edge", 3},
    {"128x96x1024", "normal", 4}, {"5x300x7168", "gpumode", 5}, {"65x17x512x3", "ones", 6},
    {"40x40x128", "identity", 7}, {"300x9x2048", "uniform", 8}, {"17x129x4096", "edge", 9},
};

}  // namespace

TEST_CASE("the cpu backend is registered and available") {
  const Backend* be = Registry::instance().backend("cpu");
  REQUIRE(be != nullptr);
  CHECK(be->available().ok);
  const Optimization* fused = Registry::instance().optimization("cpu", "fused");
  REQUIRE(fused != nullptr);
  CHECK(fused->kind == OptKind::Variant);
}

TEST_CASE("cpu plain and fused agree with the exact reference within the fp32 bound") {
  for (const Case& k : kCases) {
    const Shape s = Shape::parse(k.shape);
    const Problem p = make_problem(s, k.dist, k.seed);
    ReferenceOptions ro;
    ro.abs_sums = true;
    const ReferenceResult ref = compute_reference(p, ro);
    for (const char* combo : {"plain", "fused"}) {
      INFO("cpu " << std::string(combo) << " shape " << std::string(k.shape) << " dist "
                  << std::string(k.dist) << " seed " << k.seed);
      auto plan = build_plan("cpu", Combo::parse(combo), p, PlanOptions{});
      const Verdict v = check_output(p, ref, run_plan(*plan, s));
      INFO(v.first);
      CHECK(v.bad == 0);
      CHECK(v.nan_mismatch == 0);
      CHECK(v.checked == s.c_elems());
      // Repeated calls give the same bits (no state carried between calls).
      const std::vector<uint16_t> c1 = run_plan(*plan, s), c2 = run_plan(*plan, s);
      CHECK(c1 == c2);
    }
  }
}

TEST_CASE("plain keeps G and U; they are within the fp32 GEMM bound of the exact ones") {
  const Shape s = Shape::parse("19x33x2048x2");
  const Problem p = make_problem(s, "normal", 11);
  ReferenceOptions ro;
  ro.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, ro);
  auto plan = build_plan("cpu", Combo::parse("plain"), p, PlanOptions{});
  run_plan(*plan, s);
  std::vector<float> g, u;
  REQUIRE(plan->read_intermediates(g, u));
  REQUIRE(g.size() == size_t(s.c_elems()));
  int64_t bad = 0;
  for (size_t e = 0; e < g.size(); ++e) {
    const double gk = double(s.K) * 0x1p-23;
    if (!(std::fabs(g[e] - ref.g[e]) <= gk * ref.g_abs[e])) ++bad;
    if (!(std::fabs(u[e] - ref.u[e]) <= gk * ref.u_abs[e])) ++bad;
  }
  CHECK(bad == 0);
  auto fused = build_plan("cpu", Combo::parse("fused"), p, PlanOptions{});
  CHECK_FALSE(fused->read_intermediates(g, u));
}

TEST_CASE("every candidate of plain and fused gives a correct result") {
  const Shape s = Shape::parse("70x45x512x2");
  const Problem p = make_problem(s, "uniform", 21);
  ReferenceOptions ro;
  ro.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, ro);
  for (const char* combo : {"plain", "fused"}) {
    auto plan = build_plan("cpu", Combo::parse(combo), p, PlanOptions{});
    const auto cands = plan->candidates();
    CHECK(!cands.empty());
    if (std::string(combo) == "fused") CHECK(cands.size() >= 3);  // 8, 32, 64 (M = 70)
    CHECK(!plan->tune_key().empty());
    for (size_t i = 0; i < cands.size(); ++i) {
      INFO("cpu " << std::string(combo) << " candidate " << cands[i]);
      plan->select(i);
      const Verdict v = check_output(p, ref, run_plan(*plan, s));
      INFO(v.first);
      CHECK(v.bad == 0);
      CHECK(v.nan_mismatch == 0);
    }
  }
}

TEST_CASE("alpha, NaN scales and overflow go through the cpu paths") {
  const Shape s = Shape::parse("9x21x256");
  Problem p = make_problem(s, "normal", 31);
  p.alpha1 = 3.5f;
  p.alpha2 = -0.75f;
  p.sfa[2 * (s.K / 16) + 1] = 0x7F;  // A row 2: NaN scale -> row 2 of C is NaN
  p.sfb2[5 * (s.K / 16)] = 0xFF;     // B2 row 5: NaN scale -> column 5 of C is NaN
  ReferenceOptions ro;
  ro.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, ro);
  int64_t ref_nans = 0;
  for (uint16_t c : ref.c) ref_nans += fp16_is_nan(c);
  CHECK(ref_nans == s.N + s.M - 1);
  for (const char* combo : {"plain", "fused"}) {
    INFO("cpu " << std::string(combo));
    auto plan = build_plan("cpu", Combo::parse(combo), p, PlanOptions{});
    const Verdict v = check_output(p, ref, run_plan(*plan, s));
    INFO(v.first);
    CHECK(v.bad == 0);
    CHECK(v.nan_mismatch == 0);
  }
  // Overflow: scale 448 and code 6 everywhere, so G = U = K * 2688^2 and C = +inf.
  Problem big = Problem::zeros(Shape::parse("3x4x32"));
  for (auto* v : {&big.a, &big.b1, &big.b2})
    for (auto& b : *v) b = 0x77;
  for (auto* v : {&big.sfa, &big.sfb1, &big.sfb2})
    for (auto& b : *v) b = 0x7E;
  for (const char* combo : {"plain", "fused"}) {
    auto plan = build_plan("cpu", Combo::parse(combo), big, PlanOptions{});
    for (uint16_t c : run_plan(*plan, big.shape)) CHECK(c == 0x7C00);
  }
}

TEST_CASE("the check in this file rejects a wrong answer") {
  // Guard against a vacuous tolerance: flipping one element by a few ulps, or a wrong sign,
  // must be caught.
  const Shape s = Shape::parse("16x16x256");
  const Problem p = make_problem(s, "normal", 41);
  ReferenceOptions ro;
  ro.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, ro);
  auto plan = build_plan("cpu", Combo::parse("plain"), p, PlanOptions{});
  std::vector<uint16_t> c = run_plan(*plan, s);
  CHECK(check_output(p, ref, c).bad == 0);
  size_t e = 0;
  while (e < c.size() && std::fabs(fp16_to_double(ref.c[e])) < 0.5) ++e;
  REQUIRE(e < c.size());
  std::vector<uint16_t> wrong = c;
  wrong[e] = uint16_t(ref.c[e] + 8);  // 8 fp16 ulps away
  CHECK(check_output(p, ref, wrong).bad == 1);
  wrong[e] = uint16_t(ref.c[e] ^ 0x8000);  // sign flipped
  CHECK(check_output(p, ref, wrong).bad == 1);
  wrong = c;
  wrong[0] = 0x7E00;  // a NaN where a number belongs
  CHECK(check_output(p, ref, wrong).nan_mismatch == 1);
}

TEST_CASE("set_inputs: every later call computes on the inputs last written, in both modes") {
  // Fresh inputs (harness/check/cases.hpp): activations only, or every array and both alphas.
  const Shape s = Shape::parse("21x37x272x2");
  const Problem built = make_problem(s, "normal", 51);
  for (const char* combo : {"plain", "fused"})
    for (InputSet mode : {InputSet::Activations, InputSet::All}) {
      INFO("cpu " << std::string(combo) << " fresh " << input_set_name(mode));
      auto plan = build_plan("cpu", Combo::parse(combo), built, PlanOptions{});
      for (uint64_t seed : {52u, 53u}) {
        Problem next = make_problem(s, "suspicious", seed);
        next.alpha1 = -1.25f * float(seed - 51);
        next.alpha2 = 0.375f;
        plan->set_inputs(next, mode);
        // What the plan must now compute: the new activations, and the rest as the mode says.
        Problem want = mode == InputSet::All ? next : built;
        want.a = next.a;
        want.sfa = next.sfa;
        ReferenceOptions ro;
        ro.abs_sums = true;
        const ReferenceResult ref = compute_reference(want, ro);
        const Verdict v = check_output(want, ref, run_plan(*plan, s));
        INFO(v.first);
        CHECK(v.bad == 0);
        CHECK(v.nan_mismatch == 0);
      }
      CHECK_THROWS_AS(plan->set_inputs(make_problem(Shape::parse("21x37x256x2"), "normal", 1), mode), InputError);
    }
}
