// gpu_trials.hpp — the gpu backend's combinations run through the trial's own stages in this process
// (tests/support/in_process.hpp: the child's pipeline on the child's input sets, every output
// judged against its own set's reference), with the checks the GPU tests add on top of the
// pipeline: select() refused after capture, and a graph's outputs bit-identical to the eager
// plan's on the same input sets.
#pragma once
#include <doctest/doctest.h>

#include <string>

#include "in_process.hpp"
#include "registry.hpp"

namespace nvfp4::test {

// The harness's trial options, with a short tune and one warm-up call (the tests' plans also run
// under compute-sanitizer); stage configs (every configuration of a variant alone) when `configs`.
inline TrialOptions gpu_trial_options(bool configs) {
  TrialOptions o;
  o.warmup = 1;
  o.configs = configs;
  o.plan.tune_budget_s = 0.5;
  o.plan.tune_reps = 3;
  return o;
}

// Runs `combo` of the gpu backend on case `c` (which it must support). After capture, select() must
// be refused: the replay would silently ignore it.
inline InProcessTrial run_gpu_trial(const std::string& combo, const CaseSpec& c, const TrialOptions& o) {
  const Support sup = combo_supports("gpu", Combo::parse(combo), c.shape);
  REQUIRE_MESSAGE(sup.ok, combo << " unsupported for " << c.shape.str() << ": " << sup.reason);
  return run_in_process("gpu", combo, c, o, shared_references(), [](Stage s, Plan& plan) {
    if (s == Stage::Capture) CHECK_THROWS(plan.select(0));
  });
}

// A graph changes how a call is issued, not what it computes: `graph`'s checked calls ran on the
// same input sets as `eager`'s and gave the same bits, call by call.
inline void check_same_bits(const InProcessTrial& graph, const InProcessTrial& eager) {
  const auto& g = graph.sink.outputs;
  const auto& e = eager.sink.outputs;
  REQUIRE(g.size() == e.size());
  for (size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    CHECK(g[i].set == e[i].set);
    CHECK_MESSAGE(g[i].c == e[i].c, graph.spec.combo.str() << " call " << i + 1 << " on " << graph.spec.c.name()
                                                           << ": the graph's bits differ from "
                                                           << eager.spec.combo.str() << "'s eager call");
  }
}

}  // namespace nvfp4::test
