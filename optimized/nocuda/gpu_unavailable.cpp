// gpu_unavailable.cpp — registers the "gpu" backend in builds without CUDA, so that every GPU
// trial is reported as SKIP with the reason instead of silently missing from the report.
#include "registry.hpp"

#include <stdexcept>

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
    }});

// The gpu backend's own optimizations, by name only: a command line written for a CUDA build
// (`--backend gpu --verify fused+graph`, `--bisect autotune+fused+graph`) parses here too and
// every trial is SKIP with the reason, exit 125 — not exit 2 (bad usage), which `git bisect run`
// would count as a bad commit. Name, kind, order and stages match gpu/graph.cu and gpu/fused.cu
// (the lattice and the canonical combination names depend on them); nothing here ever runs.
const bool registered_graph = register_optimization(Optimization{
    "gpu", "graph", "CUDA graph capture/replay (not in this build)", OptKind::Wrapper, 20,
    {Stage::Capture}, nullptr,
    [](std::unique_ptr<Plan>, const PlanOptions&) -> std::unique_ptr<Plan> {
      throw std::runtime_error("built without CUDA");
    },
    [](const Shape&) { return Support::no(kNoCuda); }});
const bool registered_fused = register_optimization(Optimization{
    "gpu", "fused", "the fused sm_90a kernel (not in this build)", OptKind::Variant, 0, {},
    [](const Problem&, const PlanOptions&) -> std::unique_ptr<Plan> {
      throw std::runtime_error("built without CUDA");
    },
    nullptr, [](const Shape&) { return Support::no(kNoCuda); }});
}  // namespace
}  // namespace nvfp4
