// registry.cpp — the table of backends and optimizations, and plan construction from a combo.
#include "registry.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "errors.hpp"

namespace nvfp4 {

// kStages is indexed by Stage: each row sits at its enumerator's position.
static_assert([] {
  for (int i = 0; i < kStageCount; ++i)
    if (int(kStages[i].id) != i) return false;
  return true;
}(), "kStages must list the stages in enum order");

Combo Combo::parse(const std::string& text) {
  Combo c;
  if (text.empty()) throw InputError("empty combination (write 'plain' for no optimization)");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t next = text.find('+', pos);
    if (next == std::string::npos) next = text.size();
    std::string part = text.substr(pos, next - pos);
    if (part.empty()) throw InputError("bad combination '" + text + "': empty name between '+'");
    if (part.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") != std::string::npos)
      throw InputError("bad combination '" + text + "': names are lower-case letters, digits, - and _");
    if (part != "plain") c.opts.push_back(part);
    pos = next + 1;
  }
  std::sort(c.opts.begin(), c.opts.end());
  c.opts.erase(std::unique(c.opts.begin(), c.opts.end()), c.opts.end());
  return c;
}

std::string Combo::str() const {
  if (opts.empty()) return "plain";
  std::string s;
  for (const auto& o : opts) s += (s.empty() ? "" : "+") + o;
  return s;
}

bool Combo::contains(const Combo& other) const {
  return std::includes(opts.begin(), opts.end(), other.opts.begin(), other.opts.end());
}

bool Combo::has(const std::string& name) const {
  return std::binary_search(opts.begin(), opts.end(), name);
}

bool Combo::operator<(const Combo& o) const {
  if (opts.size() != o.opts.size()) return opts.size() < o.opts.size();
  return opts < o.opts;
}

Registry& Registry::instance() {
  static Registry r;
  return r;
}

void Registry::add_backend(Backend b) {
  const std::string name = b.name;
  backends_[name] = std::move(b);
}

void Registry::add_optimization(Optimization o) {
  const std::string be = o.backend, name = o.name;
  opts_[be][name] = std::move(o);
}

std::vector<const Backend*> Registry::backends() const {
  std::vector<const Backend*> v;
  for (const auto& kv : backends_) v.push_back(&kv.second);
  return v;
}

const Backend* Registry::backend(const std::string& name) const {
  auto it = backends_.find(name);
  return it == backends_.end() ? nullptr : &it->second;
}

std::vector<const Optimization*> Registry::optimizations(const std::string& backend) const {
  std::vector<const Optimization*> v;
  auto it = opts_.find(backend);
  if (it == opts_.end() || !this->backend(backend)) return v;
  for (const auto& kv : it->second) v.push_back(&kv.second);
  return v;
}

const Optimization* Registry::optimization(const std::string& backend,
                                           const std::string& name) const {
  auto it = opts_.find(backend);
  if (it == opts_.end()) return nullptr;
  auto jt = it->second.find(name);
  return jt == it->second.end() ? nullptr : &jt->second;
}

namespace {
std::vector<const Optimization*> resolve(const std::string& backend, const Combo& combo) {
  const Registry& r = Registry::instance();
  if (!r.backend(backend)) throw InputError("unknown backend '" + backend + "'");
  std::vector<const Optimization*> v;
  const Optimization* variant = nullptr;
  for (const auto& name : combo.opts) {
    const Optimization* o = r.optimization(backend, name);
    if (!o) {
      std::string known;
      for (const auto* k : r.optimizations(backend)) known += (known.empty() ? "" : ", ") + k->name;
      throw InputError("unknown optimization '" + name + "' for backend " + backend +
                       " (known: " + (known.empty() ? "none" : known) + ")");
    }
    if (o->kind == OptKind::Variant) {
      if (variant)
        throw InputError("'" + variant->name + "' and '" + o->name +
                         "' both replace the base kernel and cannot be combined");
      variant = o;
    }
    v.push_back(o);
  }
  return v;
}
}  // namespace

void check_combo(const std::string& backend, const Combo& combo) { resolve(backend, combo); }

Support combo_supports(const std::string& backend, const Combo& combo, const Shape& shape) {
  const auto opts = resolve(backend, combo);
  const Backend* be = Registry::instance().backend(backend);
  bool has_variant = false;
  for (const auto* o : opts) has_variant |= o->kind == OptKind::Variant;
  if (!has_variant && be->supports) {
    Support s = be->supports(shape);
    if (!s.ok) return s;
  }
  for (const auto* o : opts) {
    if (o->supports) {
      Support s = o->supports(shape);
      if (!s.ok) return Support::no(o->name + ": " + s.reason);
    }
  }
  return Support::yes();
}

bool combo_has_stage(const std::string& backend, const Combo& combo, Stage stage) {
  for (const auto* o : resolve(backend, combo))
    if (std::find(o->stages.begin(), o->stages.end(), stage) != o->stages.end()) return true;
  return false;
}

std::unique_ptr<Plan> build_plan(const std::string& backend, const Combo& combo,
                                 const Problem& problem, const PlanOptions& options) {
  auto opts = resolve(backend, combo);
  const Backend* be = Registry::instance().backend(backend);
  if (be->make_combo) return be->make_combo(combo, problem, options);
  std::unique_ptr<Plan> plan;
  for (const auto* o : opts)
    if (o->kind == OptKind::Variant) plan = o->make(problem, options);
  if (!plan) plan = be->make_plain(problem, options);
  std::vector<const Optimization*> wrappers;
  for (const auto* o : opts)
    if (o->kind == OptKind::Wrapper) wrappers.push_back(o);
  std::stable_sort(wrappers.begin(), wrappers.end(),
                   [](const Optimization* a, const Optimization* b) { return a->order < b->order; });
  for (const auto* w : wrappers) plan = w->wrap(std::move(plan), options);
  return plan;
}

bool register_backend(Backend b) {
  Registry::instance().add_backend(std::move(b));
  return true;
}

bool register_optimization(Optimization o) {
  Registry::instance().add_optimization(std::move(o));
  return true;
}

const std::vector<Optimization>& listed_optimizations() {
  static const std::vector<Optimization> list = {
      {OptimizationManifest{
           "fused",
           "one sm_90a kernel: FP4 decoded inside it (the weights into registers; both operands "
           "into shared memory where K % 256 != 0), both GEMMs on wgmma, silu*mul epilogue",
           OptKind::Variant, 0, {}},
       "gpu"},
      {OptimizationManifest{
           "graph", "capture the whole per-call launch sequence once in a CUDA graph; later calls replay it",
           OptKind::Wrapper, 20, {Stage::Capture}},
       "gpu"},
  };
  return list;
}

bool register_listed(const std::string& backend, const std::string& name, MakePlanFn make,
                     WrapPlanFn wrap, SupportFn supports) {
  for (const Optimization& l : listed_optimizations()) {
    if (backend != l.backend || name != l.name) continue;
    Optimization o = l;
    o.make = std::move(make);
    o.wrap = std::move(wrap);
    o.supports = std::move(supports);
    return register_optimization(std::move(o));
  }
  throw std::logic_error("register_listed: " + backend + "/" + name +
                         " is not in listed_optimizations()");
}

}  // namespace nvfp4
