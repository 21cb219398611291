// test_plugin_gpu.cpp — the GPU example plugin (examples/plugin_gpu) through PluginPlan, plain and
// with its graph optimization, against the exact reference with the harness's comparison;
// set_inputs after capture must reach the captured graph. Label gpu: exit 125 without a GPU.
#include <doctest/doctest.h>

#include "compare.hpp"
#include "distributions.hpp"
#include "plugin_plan.hpp"
#include "reference.hpp"

using namespace nvfp4;

namespace {

Comparison call_and_compare(Plan& plan, const Problem& p) {
  plan.poison_output(kPoisonBits);
  plan.enqueue();
  plan.synchronize();
  std::vector<uint16_t> c(size_t(p.shape.c_elems()));
  plan.read_output(c.data());
  ReferenceOptions ro;
  ro.abs_sums = true;
  return compare_output(compute_reference(p, ro), p.alpha1, p.alpha2, c.data(), nullptr, nullptr);
}

}  // namespace

TEST_CASE("the GPU example plugin: plain and graph, exact within tolerance, fresh inputs reach the graph") {
  const auto plugin = load_plugin(NVFP4_GPU_PLUGIN);
  CHECK(plugin->backend_name() == "plugin:gpu-example");
  REQUIRE(plugin_available(*plugin).ok);
  const Shape shape{130, 72, 256, 2};
  for (const char* combo : {"plain", "graph"}) {
    CAPTURE(combo);
    Problem p = make_problem(shape, "normal", 11);
    auto plan = make_plugin_plan(plugin, Combo::parse(combo), p);
    plan->enqueue();
    plan->synchronize();
    plan->capture();
    Comparison c = call_and_compare(*plan, p);
    CHECK(c.poisoned == 0);
    CHECK(c.pass());
    const Problem fresh = make_problem(shape, "edge", 12);
    plan->set_inputs(fresh, InputSet::All);
    c = call_and_compare(*plan, fresh);
    CHECK(c.poisoned == 0);
    CHECK(c.pass());
  }
}
