// gpu_unavailable.cpp — registers the "gpu" backend in builds without CUDA, so that every GPU
// trial is reported as SKIP with the reason instead of silently missing from the report.
//
// The gpu backend's optimizations are registered from the one list every build shares
// (listed_optimizations, registry.hpp), with constructors that refuse: a command line written for
// a CUDA build (`--backend gpu --verify fused+graph`, `--bisect autotune+fused+graph`) parses
// here too and every trial is SKIP with the reason, exit 125 — not exit 2 (bad usage), which
// `git bisect run` would count as a bad commit. Nothing registered here ever runs.
#include <stdexcept>

#include "autotune.hpp"
#include "registry.hpp"

namespace nvfp4 {
namespace {
const char* const kNoCuda = "built without CUDA (no toolkit found at configure time)";

const bool registered = register_backend(Backend{
    "gpu",
    "CUDA paths (this build has none: configured without a CUDA toolkit)",
    [] { return Support::no(kNoCuda); },
    [](const Shape&) { return Support::yes(); },
    [](const Problem&, const PlanOptions&) -> std::unique_ptr<Plan> {
      throw std::runtime_error("built without CUDA");
    },
    nullptr,
    nullptr});
const bool registered_autotune = register_optimization(autotune_for("gpu"));

bool register_unavailable() {
  for (const Optimization& l : listed_optimizations()) {
    if (l.backend != "gpu") continue;
    register_listed(
        l.backend, l.name,
        [](const Problem&, const PlanOptions&) -> std::unique_ptr<Plan> {
          throw std::runtime_error("built without CUDA");
        },
        [](std::unique_ptr<Plan>, const PlanOptions&) -> std::unique_ptr<Plan> {
          throw std::runtime_error("built without CUDA");
        },
        [](const Shape&) { return Support::no(kNoCuda); });
  }
  return true;
}
const bool registered_optimizations = register_unavailable();
}  // namespace
}  // namespace nvfp4
