// gpu_unavailable.cpp — registers the "gpu" backend in builds without CUDA, so that every GPU
// trial is reported as SKIP with the reason instead of silently missing from the report.
#include "registry.hpp"

#include <stdexcept>

namespace nvfp4 {
namespace {
const bool registered = register_backend(Backend{
    "gpu",
    "CUDA paths (this build has none: configured without a CUDA toolkit)",
    [] { return Support::no("built without CUDA (no toolkit found at configure time)"); },
    [](const Shape&) { return Support::yes(); },
    [](const Problem&, const PlanOptions&) -> std::unique_ptr<Plan> {
      throw std::runtime_error("built without CUDA");
    }});
}  // namespace
}  // namespace nvfp4
