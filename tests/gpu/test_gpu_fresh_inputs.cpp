// test_gpu_fresh_inputs.cpp — Plan::set_inputs on every GPU combination (plain, graph, autotune,
// autotune+graph, fused and their combinations): one plan, built on problem P0, runs calls on
// P0, then on P1 (new activations: InputSet::Activations), then on P2 (everything new, other
// alphas: InputSet::All), then on P0 again (All); every call's output, poisoned first, must pass
// the harness's tolerance (compare.hpp) against the exact reference of its own inputs. The
// graph combinations replay the graph captured on P0 throughout, so they also show that new
// inputs reach a captured graph. Cases: a shape for the v3 family (K % 256 != 0) and one where
// the fused default is a v5 kernel; the yardstick's G and U follow new inputs too.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "compare.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "gpu/gpu_plan.hpp"
#include "reference.hpp"
#include "gpu_cases.hpp"
#include "registry.hpp"
#include "gpu_skip.hpp"

using namespace nvfp4;

namespace {

// Every gpu combination the lattice runs.
std::vector<std::string> all_combos() {
  std::vector<std::string> v = nvfp4::test::gpu_combos(false);
  for (const auto& c : nvfp4::test::gpu_combos(true)) v.push_back(c);
  return v;
}

// P0 with the activations (A, SFA) of another seed.
Problem with_new_activations(const Problem& p0, uint64_t seed) {
  const Problem other = make_problem(p0.shape, "normal", seed);
  Problem p = p0;
  p.a = other.a;
  p.sfa = other.sfa;
  return p;
}

ReferenceResult reference_of(const Problem& p) {
  ReferenceOptions ro;
  ro.abs_sums = true;
  return compute_reference(p, ro);
}

// One poisoned call of `plan`, checked against the reference of `p` (the plan's inputs now).
void check_call(Plan& plan, const Problem& p, const std::string& what) {
  std::vector<uint16_t> got(size_t(p.shape.c_elems()));
  plan.poison_output(kPoisonBits);
  plan.enqueue();
  plan.read_output(got.data());
  const Comparison c = compare_output(reference_of(p), p.alpha1, p.alpha2, got.data(), nullptr,
                                      nullptr);
  CHECK_MESSAGE(c.pass(), what << ": " << c.over_tolerance << " over tolerance, " << c.poisoned
                               << " unwritten, max ulp " << c.max_ulp);
}

void check_combo(const std::string& combo_text, const Problem& p0, const Problem& p1,
                 const Problem& p2, const std::string& name) {
  const Combo combo = Combo::parse(combo_text);
  const Support sup = combo_supports("gpu", combo, p0.shape);
  if (!sup.ok) {
    MESSAGE(combo_text << " unsupported for " << name << ": " << sup.reason);
    return;
  }
  PlanOptions opts;
  opts.tune_budget_s = 0.3;
  opts.tune_reps = 2;
  std::unique_ptr<Plan> plan = build_plan("gpu", combo, p0, opts);
  if (combo_has_stage("gpu", combo, Stage::Tune)) plan->tune();
  plan->enqueue();  // a warm-up call before capture, as the harness makes
  plan->synchronize();
  if (combo_has_stage("gpu", combo, Stage::Capture)) plan->capture();
  const std::string at = combo_text + " " + name;
  check_call(*plan, p0, at + ", inputs P0");
  plan->set_inputs(p1, InputSet::Activations);
  check_call(*plan, p1, at + ", new activations P1");
  plan->set_inputs(p2, InputSet::All);
  check_call(*plan, p2, at + ", all new P2");
  plan->set_inputs(p0, InputSet::All);
  check_call(*plan, p0, at + ", back to P0");
}

bool have_gpu_backend() {
  const Backend* be = Registry::instance().backend("gpu");
  REQUIRE(be);
  const Support s = be->available();
  if (!s.ok) MESSAGE("gpu backend unavailable: " << s.reason);
  return s.ok;
}

}  // namespace

TEST_CASE("small: every GPU combination computes each call from the inputs set last") {
  if (!have_gpu_backend()) return nvfp4::test::skip("the gpu backend is unavailable here");
  const std::vector<std::string> combos = all_combos();
  REQUIRE(combos.size() >= 8);
  for (const char* shape : {"33x65x160", "260x72x512x2"}) {
    const Problem p0 = make_problem(Shape::parse(shape), "normal", 31);
    const Problem p1 = with_new_activations(p0, 32);
    Problem p2 = make_problem(p0.shape, "gpumode", 33);
    p2.alpha1 = 0.5f;
    p2.alpha2 = 2.0f;
    for (const auto& combo : combos) check_combo(combo, p0, p1, p2, shape);
  }
}

TEST_CASE("small: the GEMM yardstick's G and U follow new inputs") {
  if (!have_gpu_backend()) return nvfp4::test::skip("the gpu backend is unavailable here");
  const Problem p0 = make_problem(Shape::parse("45x70x320"), "normal", 41);
  const Problem p2 = make_problem(p0.shape, "gpumode", 42);
  auto y = gpu::make_gemm_yardstick(p0);
  for (const Problem* p : {&p0, &p2, &p0}) {
    y->set_inputs(*p, InputSet::All);
    y->enqueue();
    std::vector<float> g, u;
    REQUIRE(y->read_intermediates(g, u));
    const ReferenceResult ref = reference_of(*p);
    const Tolerance tol(p->shape.K, p->alpha1, p->alpha2);
    int64_t bad = 0;
    for (size_t e = 0; e < g.size(); ++e)
      bad += !(std::fabs(g[e] - ref.g[e]) <= tol.gemm_bound(ref.g_abs[e])) ||
             !(std::fabs(u[e] - ref.u[e]) <= tol.gemm_bound(ref.u_abs[e]));
    CHECK_MESSAGE(bad == 0, bad << " elements of G or U outside the fp32 GEMM bound");
  }
}

TEST_CASE("small: set_inputs refuses a problem of another shape") {
  if (!have_gpu_backend()) return nvfp4::test::skip("the gpu backend is unavailable here");
  const Problem p0 = make_problem(Shape::parse("32x64x256"), "normal", 51);
  const Problem other = make_problem(Shape::parse("32x64x512"), "normal", 51);
  for (const char* combo : {"plain", "fused"}) {
    const Combo c = Combo::parse(combo);
    if (!combo_supports("gpu", c, p0.shape).ok) continue;
    auto plan = build_plan("gpu", c, p0, PlanOptions{});
    CHECK_THROWS_AS(plan->set_inputs(other, InputSet::Activations), InputError);
  }
}
