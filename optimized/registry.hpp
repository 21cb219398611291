// registry.hpp — backends, optimizations and combinations (docs/design.md §3).
//
// A backend ("cpu", "gpu") provides the plain path. An optimization is a named, independent
// toggle registered for one backend by one source file (its name is its CLI token, its file
// name, its report column and its test name). A combination is a set of optimizations written
// with '+'; the empty set is "plain". Registration happens in static initializers of OBJECT
// library files and only fills this table: no device work at load time.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plan.hpp"

namespace nvfp4 {

using MakePlanFn = std::function<std::unique_ptr<Plan>(const Problem&, const PlanOptions&)>;
using WrapPlanFn = std::function<std::unique_ptr<Plan>(std::unique_ptr<Plan>, const PlanOptions&)>;
using SupportFn = std::function<Support(const Shape&)>;
struct Combo;

struct Backend {
  std::string name;                     // "cpu", "gpu"
  std::string summary;                  // one line for --list
  std::function<Support()> available;   // e.g. no("no CUDA device"); called in trial children only
  SupportFn supports;                   // shape support of the plain path
  MakePlanFn make_plain;                // builds the plain path
  // Optional: builds any combination in one step (a plugin receives the whole combination at
  // create()); when set, build_plan calls it instead of assembling variant and wrappers.
  std::function<std::unique_ptr<Plan>(const Combo&, const Problem&, const PlanOptions&)> make_combo;
  // Optional: the per-process setup every plan of the backend shares (the GPU backend: the
  // device's context). A worker started ahead calls it after available() says yes, before its first
  // trial (harness/trial/worker.hpp), so that a trial's stage init holds the plan's own work; it
  // must leave nothing a plan could mistake for its own state.
  std::function<void()> prepare;
};

enum class OptKind {
  Variant,  // builds the base plan instead of plain (at most one variant per combination)
  Wrapper,  // wraps whatever plan it is given
};

// An optimization as the lattice, bisect, --list and the reports know it, without its code: what a
// built-in module's load probe reports, a plugin declares (nvfp4_plugin.h, converted in
// plugin_plan.cpp) and a submission's driver describes, and what the parent registers for a path
// it never loads (harness/backends/external.hpp).
struct OptimizationManifest {
  std::string name;
  std::string summary;
  OptKind kind = OptKind::Wrapper;
  int order = 0;              // wrappers are applied in increasing order (inner first)
  std::vector<Stage> stages;  // the extra stages it adds: Tune, Capture
};

// An optimization of one backend, with its code:
//   Optimization{OptimizationManifest{"fused", "summary", OptKind::Variant, 0, {}}, "cpu", make}
// (the manifest's type named: with a bare braced list g++ 12 warns, wrongly, of an uninitialized vector).
struct Optimization : OptimizationManifest {
  std::string backend;
  MakePlanFn make = nullptr;     // Variant only
  WrapPlanFn wrap = nullptr;     // Wrapper only
  SupportFn supports = nullptr;  // optional extra shape check
};

// A set of optimization names, kept sorted and unique. "plain" parses to the empty set.
struct Combo {
  std::vector<std::string> opts;

  static Combo parse(const std::string& text);  // "fused+graph", "plain"; throws InputError
  std::string str() const;                      // canonical: sorted, '+'-joined, or "plain"
  bool contains(const Combo& other) const;      // other ⊆ this
  bool has(const std::string& name) const;
  size_t size() const { return opts.size(); }
  bool operator==(const Combo& o) const { return opts == o.opts; }
  bool operator<(const Combo& o) const;  // by size, then lexicographic
};

class Registry {
 public:
  static Registry& instance();
  void add_backend(Backend b);
  void add_optimization(Optimization o);

  std::vector<const Backend*> backends() const;                          // sorted by name
  const Backend* backend(const std::string& name) const;                 // nullptr if unknown
  std::vector<const Optimization*> optimizations(const std::string& backend) const;  // by name
  const Optimization* optimization(const std::string& backend, const std::string& name) const;

 private:
  std::map<std::string, Backend> backends_;
  std::map<std::string, std::map<std::string, Optimization>> opts_;
};

// Throws InputError when a name in `combo` is not registered for `backend`, or two variants meet.
void check_combo(const std::string& backend, const Combo& combo);
// Shape support of the whole combination (plain or the variant, plus every optimization's check).
Support combo_supports(const std::string& backend, const Combo& combo, const Shape& shape);
// Whether any optimization in the combination adds `stage` (Tune, Capture).
bool combo_has_stage(const std::string& backend, const Combo& combo, Stage stage);
// Builds the plan: the variant (or plain), then each wrapper in increasing `order`.
std::unique_ptr<Plan> build_plan(const std::string& backend, const Combo& combo,
                                 const Problem& problem, const PlanOptions& options);

// Registration helper for a file's static initializer:
//   static const bool registered = nvfp4::register_optimization({...});
bool register_backend(Backend b);
bool register_optimization(Optimization o);

// The listed optimizations: every build knows their names, kinds, orders, stages and summaries
// (the lattice and the canonical combination names depend on them), whether or not it has the
// code that runs them. Today: the gpu backend's "fused" and "graph" (registry.cpp), without code.
// In a CUDA build their files supply the constructors (register_listed); a build without CUDA
// registers every listed one of the gpu backend with constructors that refuse
// (nocuda/gpu_unavailable.cpp), so its trials are SKIP with the reason.
const std::vector<Optimization>& listed_optimizations();
// Registers the listed optimization backend/name with its constructors (`make` for a Variant,
// `wrap` for a Wrapper, `supports` optional). Throws std::logic_error when it is not listed.
bool register_listed(const std::string& backend, const std::string& name, MakePlanFn make,
                     WrapPlanFn wrap, SupportFn supports);

}  // namespace nvfp4
