// in_process.hpp — a trial's stages run in the test's own process, exactly as the trial child runs
// them (harness/trial/stages.hpp run_stages, on the child's input sets), each output then judged
// against the exact reference of its own input set as the parent would (compare.hpp). For tests
// that need the plan in their process: compute-sanitizer sees every kernel, and a test can add
// checks of its own on top (the plan after each stage, outputs of two combinations compared).
//
//   const InProcessTrial t = run_in_process("gpu", "graph", spec, options, shared_references());
//   for (const auto& c : t.calls) CHECK(c.pass());   // t.sink.outputs[i] is checked call i+1
#pragma once
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cases.hpp"
#include "compare.hpp"
#include "reference_store.hpp"
#include "stages.hpp"

namespace nvfp4::test {

// References for in-process trials: one cache per test process, backed by the tests' on-disk
// reference store (NVFP4_REFERENCE_CACHE, test_reference_cache.hpp) when it opens, so a reference
// computed once (by this test, another one, or a harness a test ran) is read thereafter.
inline ReferenceCache& shared_references() {
  static ReferenceCache* refs = [] {
    auto* cache = new ReferenceCache();  // never destroyed: tests may use it until exit
    std::string why;
    if (const char* dir = std::getenv("NVFP4_REFERENCE_CACHE"); dir && *dir)
      if (auto store = ReferenceStore::open(dir, &why)) cache->set_store(std::move(store));
    return cache;
  }();
  return *refs;
}

struct InProcessTrial {
  TrialSpec spec;
  MemorySink sink;
  // calls[i]: checked call i+1 against its input set's reference; the last call's with its G and U
  // when the plan exposes them (Comparison::g_out_of_bound, u_out_of_bound).
  std::vector<Comparison> calls;
  std::vector<Comparison> configs;  // configs[i]: configuration sink.configs[i]
};

// Runs `combo` of `backend` on case `c` with `options` through run_stages (the backend must be
// registered in this process and available, the combination supported for the shape), then judges
// every checked call's and every configuration's output. `on_completed` (optional) is called with
// the plan after each stage (MemorySink::on_completed). References come from `refs`.
inline InProcessTrial run_in_process(const std::string& backend, const std::string& combo, const CaseSpec& c,
                                     const TrialOptions& options, ReferenceCache& refs,
                                     const std::function<void(Stage, Plan&)>& on_completed = nullptr) {
  InProcessTrial t;
  t.spec.backend = backend;
  t.spec.combo = Combo::parse(combo);
  t.spec.c = c;
  t.spec.options = options;
  t.sink.on_completed = on_completed;
  refs.prefetch({c}, options.runs, options.fresh);
  run_stages(t.spec, trial_input_sets(t.spec), t.sink);
  auto reference = [&](int set) { return refs.get(c, set, set == 0 ? InputSet::Activations : options.fresh); };
  for (const auto& o : t.sink.outputs) {
    const auto info = reference(o.set);
    const bool last = o.index + 1 == options.runs && t.sink.has_intermediates;
    t.calls.push_back(compare_output(info->ref, info->alpha1, info->alpha2, o.c.data(), last ? &t.sink.g : nullptr,
                                     last ? &t.sink.u : nullptr, o.index + 1));
  }
  for (const auto& o : t.sink.configs) {
    const auto info = reference(o.set);
    t.configs.push_back(compare_output(info->ref, info->alpha1, info->alpha2, o.c.data(), nullptr, nullptr, 1));
  }
  return t;
}

}  // namespace nvfp4::test
