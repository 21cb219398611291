// test_plans.cpp — the gpu backend's plain path and its combinations with graph and autotune,
// in this process (no child processes, so compute-sanitizer sees every kernel):
//   * every combination of plain with {graph, autotune} passes the harness's derived tolerance
//     (compare.hpp) against the exact reference, on every call of the run stage, with the output
//     poisoned before each call (unwritten elements are caught);
//   * graph replays give bit-identical output to the eager calls before capture, and repeated
//     calls are bit-identical (no race, no state carried between calls);
//   * the intermediates G/U are within the fp32 GEMM bound (error attribution works);
//   * autotune keeps a candidate whose output is right, and graph refuses select() after capture.
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
#include "reference.hpp"
#include "registry.hpp"
#include "gpu_skip.hpp"
#include "suite.hpp"

using namespace nvfp4;

namespace {


struct Checked {
  bool pass = true;
  std::string message;
  std::vector<uint16_t> first;  // output of the first checked call
};

// Runs the stages of one combination the way the harness does (init, tune, warmup, capture,
// `runs` checked calls) and compares every checked call with the reference.
Checked run_combo(const std::string& combo_text, const Problem& p, const ReferenceResult& ref,
                  int runs = 3) {
  Checked out;
  const Combo combo = Combo::parse(combo_text);
  const Support sup = combo_supports("gpu", combo, p.shape);
  REQUIRE_MESSAGE(sup.ok, combo_text << " unsupported for " << p.shape.str() << ": " << sup.reason);
  PlanOptions opts;
  opts.tune_budget_s = 0.5;
  opts.tune_reps = 3;
  std::unique_ptr<Plan> plan = build_plan("gpu", combo, p, opts);
  if (combo_has_stage("gpu", combo, Stage::Tune)) plan->tune();
  std::vector<uint16_t> eager(size_t(p.shape.c_elems())), got(eager.size());
  plan->poison_output(kPoisonBits);
  plan->enqueue();
  plan->read_output(eager.data());
  const bool graph = combo_has_stage("gpu", combo, Stage::Capture);
  if (graph) {
    plan->capture();
    // select() after capture would silently be ignored by the replay: it must be refused.
    CHECK_THROWS(plan->select(0));
  }
  for (int call = 1; call <= runs; ++call) {
    plan->poison_output(kPoisonBits);
    plan->enqueue();
    plan->read_output(got.data());
    std::vector<float> g, u;
    const bool inter = plan->read_intermediates(g, u);
    CHECK(inter);  // the unfused paths expose G and U
    const Comparison c =
        compare_output(ref, p.alpha1, p.alpha2, got.data(), inter ? &g : nullptr, inter ? &u : nullptr, call);
    if (!c.pass()) {
      out.pass = false;
      out.message = combo_text + " call " + std::to_string(call) + ": " +
                    std::to_string(c.over_tolerance) + " over tolerance, " +
                    std::to_string(c.poisoned) + " unwritten, max ulp " + std::to_string(c.max_ulp) +
                    ", attribution " + c.attribution + " (" + c.attribution_detail + ")";
      return out;
    }
    if (inter) {
      CHECK(c.g_out_of_bound == 0);
      CHECK(c.u_out_of_bound == 0);
    }
    // Identical results: every call (eager before capture, each replay) gives the same bits.
    if (got != eager) {
      out.pass = false;
      out.message = combo_text + " call " + std::to_string(call) +
                    (graph ? ": graph replay differs from the eager call" : ": differs from call 1");
      return out;
    }
  }
  out.first = eager;
  return out;
}

void check_case(const Problem& p, const std::string& name) {
  ReferenceOptions ro;
  ro.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, ro);
  std::map<std::string, std::vector<uint16_t>> outputs;
  const std::vector<std::string> combos = nvfp4::test::gpu_combos(false);  // after static registration
  REQUIRE(combos.size() >= 4);
  for (const auto& combo : combos) {
    CAPTURE(name);
    CAPTURE(combo);
    const Checked r = run_combo(combo, p, ref);
    CHECK_MESSAGE(r.pass, name << ": " << r.message);
    outputs[combo] = r.first;
  }
  // Graph changes how a call is issued, not what it computes: same algorithm, same bits.
  CHECK(outputs["graph"] == outputs["plain"]);
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
  for (const test::GpuCase& c : test::small_gpu_cases()) check_case(c.make(), c.name());
}

TEST_CASE("suite: the default gpu suite, including the four GPU MODE benchmark shapes") {
  if (!have_gpu_backend()) return nvfp4::test::skip("the gpu backend is unavailable here");
  for (const CaseSpec& cs : default_suite("gpu")) check_case(cs.make(), cs.name());
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
