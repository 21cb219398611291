// test_plans.cpp — the gpu backend's plain path and its combinations with graph and autotune,
// in this process (no child processes, so compute-sanitizer sees every kernel):
//   * every combination of plain with {graph, autotune} runs the trial's own stages (the child's
//     pipeline, harness/trial/stages.hpp, through tests/support/in_process.hpp: init, tune,
//     warmup, capture, run on the child's input sets, the output poisoned before the calls that
//     catch unwritten elements) and passes the harness's derived tolerance (compare.hpp) against
//     the exact reference of each call's own input set;
//   * on top of the pipeline: graph replays give the same bits as plain's eager calls on the same
//     input sets; select() is refused after capture; the last call's intermediates G/U are within
//     the fp32 GEMM bound (error attribution works); autotune keeps a candidate whose output is
//     right.
// Test cases:
//   "small"   the shared small cases (gpu_cases.hpp: ragged shapes, L > 1, alpha != 1) — the
//             compute-sanitizer subset (tools/gpu_run.sh runs `test_plans -tc='small*'` under
//             memcheck/racecheck/...);
//   "suite"   the harness's default gpu suite (all distributions, ragged shapes, the four GPU MODE
//             benchmark shapes).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compare.hpp"
#include "distributions.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu_cases.hpp"
#include "gpu_skip.hpp"
#include "gpu_trials.hpp"
#include "reference.hpp"
#include "registry.hpp"
#include "suite.hpp"

using namespace nvfp4;

namespace {

void check_case(const CaseSpec& c) {
  const std::string name = c.name();
  // No stage configs: plain's cuBLASLt algorithms are checked by the harness (`verify`).
  const TrialOptions o = test::gpu_trial_options(false);
  std::map<std::string, test::InProcessTrial> trials;
  const std::vector<std::string> combos = nvfp4::test::gpu_combos(false);  // after static registration
  REQUIRE(combos.size() >= 4);
  for (const auto& combo : combos) {
    CAPTURE(name);
    CAPTURE(combo);
    test::InProcessTrial t = test::run_gpu_trial(combo, c, o);
    REQUIRE(t.calls.size() == size_t(o.runs));
    for (size_t i = 0; i < t.calls.size(); ++i) {
      const Comparison& cmp = t.calls[i];
      CHECK_MESSAGE(cmp.pass(), name << ": " << combo << " call " << i + 1 << ": " << cmp.over_tolerance
                                     << " over tolerance, " << cmp.poisoned << " unwritten, max ulp " << cmp.max_ulp
                                     << ", attribution " << cmp.attribution << " (" << cmp.attribution_detail << ")");
    }
    // The unfused paths expose G and U: the last call's are within the fp32 GEMM bound.
    CHECK(t.sink.has_intermediates);
    CHECK(t.calls.back().g_out_of_bound == 0);
    CHECK(t.calls.back().u_out_of_bound == 0);
    trials.emplace(combo, std::move(t));
  }
  test::check_same_bits(trials.at("graph"), trials.at("plain"));
}

bool have_gpu_backend() {
  const Backend* be = Registry::instance().backend("gpu");
  REQUIRE(be);
  const Support s = be->available();
  if (!s.ok) MESSAGE("gpu backend unavailable: " << s.reason);
  return s.ok;
}

}  // namespace

TEST_CASE("small: plain, graph, autotune, autotune+graph on small and ragged shapes") {
  if (!have_gpu_backend()) return nvfp4::test::skip("the gpu backend is unavailable here");
  for (const test::GpuCase& c : test::small_gpu_cases()) check_case(c.spec());
}

TEST_CASE("suite: the default gpu suite, including the four GPU MODE benchmark shapes") {
  if (!have_gpu_backend()) return nvfp4::test::skip("the gpu backend is unavailable here");
  for (const CaseSpec& cs : default_suite("gpu")) check_case(cs);
}

TEST_CASE("small: the GEMM-alone yardstick computes G and U within the fp32 GEMM bound") {
  if (!have_gpu_backend()) return nvfp4::test::skip("the gpu backend is unavailable here");
  const Problem p = make_problem(Shape::parse("45x70x320"), "normal", 9);
  ReferenceOptions ro;
  ro.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, ro);
  auto y = gpu::make_gemm_yardstick(p);
  REQUIRE(y->candidates().size() >= 1);
  for (size_t i = 0; i < y->candidates().size(); ++i) {
    y->select(i);
    y->enqueue();
    std::vector<float> g, u;
    REQUIRE(y->read_intermediates(g, u));
    const Tolerance tol(p.shape.K, p.alpha1, p.alpha2);
    int64_t bad = 0;
    for (size_t e = 0; e < g.size(); ++e)
      bad += !(std::fabs(g[e] - ref.g[e]) <= tol.gemm_bound(ref.g_abs[e])) ||
             !(std::fabs(u[e] - ref.u[e]) <= tol.gemm_bound(ref.u_abs[e]));
    CHECK_MESSAGE(bad == 0, "algorithm " << i << " (" << y->candidates()[i] << "): " << bad);
  }
}

TEST_CASE("small: tune keys name device, driver, library, shape and variant; candidates >= 1") {
  if (!have_gpu_backend()) return nvfp4::test::skip("the gpu backend is unavailable here");
  const Problem p = make_problem(Shape::parse("32x64x128"), "normal", 1);
  auto plan = build_plan("gpu", Combo::parse("plain"), p, PlanOptions{});
  const std::string key = plan->tune_key();
  const auto& dev = gpu::device_info();
  CHECK(key.find(dev.name) != std::string::npos);
  CHECK(key.find("driver" + std::to_string(dev.driver_version)) != std::string::npos);
  CHECK(key.find("cublasLt" + std::to_string(dev.cublaslt_version)) != std::string::npos);
  CHECK(key.find("32x64x128") != std::string::npos);
  CHECK(key.find("gpu-plain") != std::string::npos);
  const auto cands = plan->candidates();
  CHECK(cands.size() >= 1);
  MESSAGE("cuBLASLt offered " << cands.size() << " algorithms for 32x64x128 (asked for 16)");
  // Each candidate can be selected and run.
  for (size_t i = 0; i < cands.size(); ++i) {
    plan->select(i);
    plan->enqueue();
  }
  plan->synchronize();
  CHECK_THROWS(plan->select(cands.size()));
  CHECK(seconds_per_call(*plan, 3) > 0);
}
