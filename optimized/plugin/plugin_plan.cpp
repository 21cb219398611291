// plugin_plan.cpp — loading C-ABI plugins, the Plan around a plugin handle, registration (see
// plugin_plan.hpp).
#include "plugin_plan.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include "errors.hpp"

namespace nvfp4 {

namespace {

// Names the registry can carry as combination tokens (registry.cpp, Combo::parse).
bool valid_name(const char* s) {
  if (!s || !*s) return false;
  for (const char* p = s; *p; ++p)
    if (!std::strchr("abcdefghijklmnopqrstuvwxyz0123456789-_", *p)) return false;
  return std::strcmp(s, "plain") != 0;
}

std::string text_or(const char* s, const char* fallback) { return s && *s ? s : fallback; }

// Text from a plugin's reason buffer, or `fallback` when it left it empty.
std::string reason_text(const char* buf, const char* fallback) {
  return buf[0] ? std::string(buf) : std::string(fallback);
}

// The combination as create() receives it: sorted names joined with '+', "" for plain.
std::string combo_arg(const Combo& c) { return c.opts.empty() ? std::string() : c.str(); }

nvfp4_plugin_arrays arrays_of(const Problem& p) {
  return {p.a.data(), p.b1.data(), p.b2.data(), p.sfa.data(), p.sfb1.data(), p.sfb2.data(),
          p.alpha1, p.alpha2};
}

nvfp4_plugin_shape shape_of(const Shape& s) { return {s.M, s.N, s.K, s.L}; }

// The arrays are the harness's, passed as const: a plugin that wrote into them during `what` is an
// error (the caller's inputs, e.g. weights another layer still reads), named with the first array
// and byte where `held` (what the plan passed) differs from `given` (the caller's copy). `weights`
// false: only A and SFA are compared.
void check_unchanged(const Problem& held, const Problem& given, const std::string& plugin, const char* what,
                     bool weights = true) {
  using Array = std::vector<uint8_t> Problem::*;
  const std::pair<const char*, Array> arrays[] = {{"a", &Problem::a},       {"sfa", &Problem::sfa},
                                                  {"b1", &Problem::b1},     {"b2", &Problem::b2},
                                                  {"sfb1", &Problem::sfb1}, {"sfb2", &Problem::sfb2}};
  for (size_t i = 0; i < (weights ? 6 : 2); ++i) {
    const auto& h = held.*arrays[i].second;
    const auto& g = given.*arrays[i].second;
    const auto d = std::mismatch(h.begin(), h.end(), g.begin(), g.end());
    if (d.first == h.end() && d.second == g.end()) continue;
    throw std::runtime_error(plugin + " wrote into the input arrays it was handed during " + what + " (" +
                             arrays[i].first + " differs first at byte " + std::to_string(d.first - h.begin()) +
                             "): they are the caller's, passed as const (optimized/plugin/nvfp4_plugin.h)");
  }
}

}  // namespace

std::shared_ptr<const LoadedPlugin> load_plugin(const std::string& path) {
  const std::string where = "plugin " + path + ": ";
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0)
    throw InputError(where + "no such file");
  if (!S_ISREG(st.st_mode)) throw InputError(where + "not a regular file");
  // dlopen searches the library path for a name without '/': make it a path to this file.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  void* lib = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    throw InputError(where + "cannot open as a shared library: " + text_or(e, "unknown dlopen error"));
  }
  dlerror();
  void* sym = dlsym(lib, NVFP4_PLUGIN_V1_SYMBOL);
  if (!sym) {
    std::string other;
    for (int v = 2; v <= 9 && other.empty(); ++v) {
      const std::string name = "nvfp4_plugin_v" + std::to_string(v) + "_get";
      if (dlsym(lib, name.c_str())) other = name;
    }
    throw InputError(where + "missing symbol " NVFP4_PLUGIN_V1_SYMBOL +
                     (other.empty() ? std::string(" (is it an nvfp4 plugin? see optimized/plugin/nvfp4_plugin.h)")
                                    : " (it exports " + other + ": built for a newer ABI than this harness's version " +
                                          std::to_string(NVFP4_PLUGIN_ABI_VERSION) + ")"));
  }
  const auto get = reinterpret_cast<nvfp4_plugin_v1_get_fn>(sym);
  const nvfp4_plugin_v1* api = get();
  if (!api) throw InputError(where + NVFP4_PLUGIN_V1_SYMBOL "() returned NULL");
  if (api->abi_version != NVFP4_PLUGIN_ABI_VERSION)
    throw InputError(where + "ABI version " + std::to_string(api->abi_version) + "; this harness speaks version " +
                     std::to_string(NVFP4_PLUGIN_ABI_VERSION) + " (rebuild it against optimized/plugin/nvfp4_plugin.h)");
  if (api->struct_size < sizeof(nvfp4_plugin_v1))
    throw InputError(where + "entry-point table of " + std::to_string(api->struct_size) + " bytes; version " +
                     std::to_string(NVFP4_PLUGIN_ABI_VERSION) + " needs at least " +
                     std::to_string(sizeof(nvfp4_plugin_v1)));
  if (!valid_name(api->name))
    throw InputError(where + "bad plugin name '" + text_or(api->name, "") +
                     "' (lower-case letters, digits, '-' and '_'; not 'plain')");

  const struct {
    const void* fn;
    const char* name;
  } required[] = {
      {reinterpret_cast<const void*>(api->create), "create"},
      {reinterpret_cast<const void*>(api->set_inputs), "set_inputs"},
      {reinterpret_cast<const void*>(api->enqueue), "enqueue"},
      {reinterpret_cast<const void*>(api->synchronize), "synchronize"},
      {reinterpret_cast<const void*>(api->poison_output), "poison_output"},
      {reinterpret_cast<const void*>(api->read_output), "read_output"},
      {reinterpret_cast<const void*>(api->destroy), "destroy"},
      {reinterpret_cast<const void*>(api->last_error), "last_error"},
  };
  for (const auto& r : required)
    if (!r.fn) throw InputError(where + "required entry point " + r.name + " is NULL");

  auto p = std::make_shared<LoadedPlugin>();
  p->path = path;
  p->name = api->name;
  p->summary = text_or(api->summary, "");
  p->api = api;
  p->library = lib;
  if (api->num_optimizations > 0 && !api->optimizations)
    throw InputError(where + "lists " + std::to_string(api->num_optimizations) +
                     " optimizations but its optimizations pointer is NULL");
  std::set<std::string> seen;
  for (uint32_t i = 0; i < api->num_optimizations; ++i) {
    const nvfp4_plugin_optimization& o = api->optimizations[i];
    if (!valid_name(o.name))
      throw InputError(where + "bad optimization name '" + text_or(o.name, "") +
                       "' (lower-case letters, digits, '-' and '_'; not 'plain')");
    if (!seen.insert(o.name).second) throw InputError(where + "optimization '" + o.name + "' listed twice");
    if (o.stages & ~(NVFP4_PLUGIN_STAGE_TUNE | NVFP4_PLUGIN_STAGE_CAPTURE))
      throw InputError(where + "optimization '" + o.name + "' declares unknown stage bits");
    OptimizationManifest po;  // a Wrapper of order 0
    po.name = o.name;
    po.summary = text_or(o.summary, "");
    if (o.stages & NVFP4_PLUGIN_STAGE_TUNE) {
      if (!api->tune)
        throw InputError(where + "optimization '" + o.name + "' adds stage tune but entry point tune is NULL");
      po.stages.push_back(Stage::Tune);
    }
    if (o.stages & NVFP4_PLUGIN_STAGE_CAPTURE) {
      if (!api->capture)
        throw InputError(where + "optimization '" + o.name +
                         "' adds stage capture but entry point capture is NULL");
      po.stages.push_back(Stage::Capture);
    }
    p->optimizations.push_back(std::move(po));
  }
  return p;
}

Support plugin_available(const LoadedPlugin& plugin) {
  if (!plugin.api->available) return Support::yes();
  char reason[512] = {0};
  const int st = plugin.api->available(reason, sizeof reason);
  if (st == NVFP4_PLUGIN_OK) return Support::yes();
  reason[sizeof reason - 1] = '\0';
  return Support::no(reason_text(reason, st == NVFP4_PLUGIN_UNSUPPORTED ? "unavailable (no reason given)"
                                                                        : "available() failed"));
}

Support plugin_supports(const LoadedPlugin& plugin, const Combo& combo, const Shape& shape) {
  if (!plugin.api->supports) return Support::yes();
  char reason[512] = {0};
  const nvfp4_plugin_shape s = shape_of(shape);
  const int st = plugin.api->supports(&s, combo_arg(combo).c_str(), reason, sizeof reason);
  if (st == NVFP4_PLUGIN_OK) return Support::yes();
  reason[sizeof reason - 1] = '\0';
  return Support::no(reason_text(reason, st == NVFP4_PLUGIN_UNSUPPORTED ? "unsupported (no reason given)"
                                                                        : "supports() failed"));
}

// ---------------------------------------------------------------------------------------------

PluginPlan::PluginPlan(std::shared_ptr<const LoadedPlugin> plugin, const Combo& combo, const Problem& problem)
    : plugin_(std::move(plugin)), combo_(combo), problem_(problem) {
  problem_.validate();
  create();
  try {
    check_unchanged(problem_, problem, plugin_->backend_name(), "create()");
  } catch (...) {
    plugin_->api->destroy(handle_);  // the destructor does not run for a constructor that throws
    handle_ = nullptr;
    throw;
  }
}

PluginPlan::~PluginPlan() {
  if (handle_) plugin_->api->destroy(handle_);  // a destructor cannot report a failed destroy
}

void PluginPlan::create() {
  for (const auto& name : combo_.opts) {
    const auto& offered = plugin_->optimizations;
    if (std::none_of(offered.begin(), offered.end(), [&](const OptimizationManifest& o) { return o.name == name; }))
      throw InputError(plugin_->backend_name() + " offers no optimization '" + name + "'");
  }
  const nvfp4_plugin_shape s = shape_of(problem_.shape);
  const nvfp4_plugin_arrays a = arrays_of(problem_);
  nvfp4_plugin_handle* h = nullptr;
  const int st = plugin_->api->create(&s, &a, combo_arg(combo_).c_str(), &h);
  if (st != NVFP4_PLUGIN_OK || !h) {
    if (h) plugin_->api->destroy(h);
    // The plugin's failure, not bad input (docs/design.md §4.7): a runtime_error, so the trial is
    // ERROR in stage init with this text, not labelled InputError (the user's input at fault).
    const char* e = plugin_->api->last_error(nullptr);
    const std::string where = " (" + plugin_->backend_name() + ", combination " + combo_.str() + ")";
    if (st == NVFP4_PLUGIN_OK)
      throw std::runtime_error("plugin create() returned OK but no handle" + where + ": " +
                               text_or(e, "no reason given (last_error returned NULL)"));
    throw std::runtime_error("plugin create() failed" + where + ": " +
                             (e ? text_or(e, "no reason given (last_error returned an empty string)")
                                : std::string("no reason given (last_error returned NULL)")));
  }
  handle_ = h;
}

void PluginPlan::rebuild(const Combo& combo) {
  if (handle_) plugin_->api->destroy(handle_);
  handle_ = nullptr;
  combo_ = combo;
  const Problem given = problem_;  // create() gets problem_'s arrays: compare with a copy
  create();
  check_unchanged(problem_, given, plugin_->backend_name(), "create()");
}

void PluginPlan::check(int status, const char* what) const {
  if (status == NVFP4_PLUGIN_OK) return;
  const char* e = plugin_->api->last_error(handle_);
  throw std::runtime_error(plugin_->backend_name() + " " + what + " failed (status " + std::to_string(status) +
                           "): " + text_or(e, "no reason given"));
}

std::string PluginPlan::describe() const {
  if (plugin_->api->describe) {
    char text[512] = {0};
    if (plugin_->api->describe(handle_, text, sizeof text) == NVFP4_PLUGIN_OK && text[0]) {
      text[sizeof text - 1] = '\0';
      return text;
    }
  }
  return plugin_->backend_name() + " " + combo_.str();
}

void PluginPlan::set_inputs(const Problem& p, InputSet which) {
  if (p.shape != problem_.shape)
    throw InputError("set_inputs: shape " + p.shape.str() + " differs from the plan's " + problem_.shape.str());
  p.validate();
  problem_.a = p.a;
  problem_.sfa = p.sfa;
  if (which == InputSet::All) {
    problem_.b1 = p.b1;
    problem_.b2 = p.b2;
    problem_.sfb1 = p.sfb1;
    problem_.sfb2 = p.sfb2;
    problem_.alpha1 = p.alpha1;
    problem_.alpha2 = p.alpha2;
  }
  const nvfp4_plugin_arrays a = arrays_of(problem_);
  check(plugin_->api->set_inputs(handle_,
                                 which == InputSet::All ? NVFP4_PLUGIN_INPUTS_ALL : NVFP4_PLUGIN_INPUTS_ACTIVATIONS,
                                 &a),
        "set_inputs");
  // The activations (and with All every array) against the caller's; kept weights are checked
  // where they were handed over, in create() and set_inputs(All).
  check_unchanged(problem_, p, plugin_->backend_name(), "set_inputs()", which == InputSet::All);
}

void PluginPlan::enqueue() { check(plugin_->api->enqueue(handle_), "enqueue"); }
void PluginPlan::synchronize() { check(plugin_->api->synchronize(handle_), "synchronize"); }
void PluginPlan::poison_output(uint16_t bits) { check(plugin_->api->poison_output(handle_, bits), "poison_output"); }
void PluginPlan::read_output(uint16_t* c) { check(plugin_->api->read_output(handle_, c), "read_output"); }

bool PluginPlan::read_intermediates(std::vector<float>& g, std::vector<float>& u) {
  if (!plugin_->api->read_intermediates) return false;
  // The plugin writes L·M·N floats into each of the harness's buffers: each has a guard zone after
  // them (as read_output's buffer has, harness/trial/output_guard.hpp), so a copy rounded up past
  // the end lands there, not in the harness's heap, and is reported. A plan has no note to carry a
  // verdict, so it throws: ERROR in stage run, naming read_intermediates and how far it wrote.
  constexpr size_t kGuard = 4096;
  const size_t n = size_t(problem_.shape.c_elems());
  auto guard = [](size_t i) {
    const uint32_t bits = 0x7FC00000u | (uint32_t(i * 2654435761u) & 0x3FFFFFu);  // a NaN, its payload per position
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  };
  for (auto* v : {&g, &u}) {
    v->assign(n + kGuard, 0.0f);
    for (size_t i = 0; i < kGuard; ++i) (*v)[n + i] = guard(i);
  }
  const int st = plugin_->api->read_intermediates(handle_, g.data(), u.data());
  for (auto [v, name] : {std::pair{&g, "G"}, std::pair{&u, "U"}}) {
    size_t past = 0;
    for (size_t i = 0; i < kGuard; ++i) {
      const float want = guard(i);
      if (std::memcmp(&(*v)[n + i], &want, sizeof want) != 0) past = i + 1;  // bits: the guard is a NaN
    }
    if (past)
      throw std::runtime_error(plugin_->backend_name() + " read_intermediates wrote " + std::to_string(past) +
                               " element" + (past == 1 ? "" : "s") + " past the end of " + name +
                               " (L·M·N = " + std::to_string(n) + "): a copy rounded up to a vector width or tile?");
  }
  g.resize(n);
  u.resize(n);
  if (st == NVFP4_PLUGIN_UNSUPPORTED) {
    g.clear();
    u.clear();
    return false;
  }
  check(st, "read_intermediates");
  return true;
}

void PluginPlan::tune() {
  if (plugin_->api->tune) check(plugin_->api->tune(handle_), "tune");
}

void PluginPlan::capture() {
  if (plugin_->api->capture) check(plugin_->api->capture(handle_), "capture");
}

std::unique_ptr<Plan> make_plugin_plan(std::shared_ptr<const LoadedPlugin> plugin, const Combo& combo,
                                       const Problem& problem) {
  return std::make_unique<PluginPlan>(std::move(plugin), combo, problem);
}

// ---------------------------------------------------------------------------------------------

PluginRegistration plugin_registration(std::shared_ptr<const LoadedPlugin> plugin) {
  PluginRegistration r;
  const std::string backend = plugin->backend_name();
  r.backend.name = backend;
  r.backend.summary = plugin->summary.empty() ? "plugin " + plugin->path : plugin->summary + " (" + plugin->path + ")";
  r.backend.available = [plugin] { return plugin_available(*plugin); };
  r.backend.supports = [plugin](const Shape& s) { return plugin_supports(*plugin, Combo{}, s); };
  r.backend.make_plain = [plugin](const Problem& p, const PlanOptions&) {
    return make_plugin_plan(plugin, Combo{}, p);
  };
  r.make_combo = [plugin](const Combo& c, const Problem& p, const PlanOptions&) {
    return make_plugin_plan(plugin, c, p);
  };
  for (const auto& po : plugin->optimizations) {
    Optimization o{po, backend};
    const std::string name = po.name;
    o.supports = [plugin, name](const Shape& s) { return plugin_supports(*plugin, Combo::parse(name), s); };
    o.wrap = [backend, name](std::unique_ptr<Plan> inner, const PlanOptions&) -> std::unique_ptr<Plan> {
      auto* pp = dynamic_cast<PluginPlan*>(inner.get());
      if (!pp) throw std::logic_error(backend + " optimization '" + name + "' can only extend a plugin plan");
      Combo c = pp->combo();
      c.opts.push_back(name);
      pp->rebuild(Combo::parse(c.str()));
      return inner;
    };
    r.optimizations.push_back(std::move(o));
  }
  return r;
}

std::string register_plugin(std::shared_ptr<const LoadedPlugin> plugin) {
  PluginRegistration r = plugin_registration(std::move(plugin));
  r.backend.make_combo = r.make_combo;  // one create() per combination (build_plan uses it)
  const std::string name = r.backend.name;
  register_backend(std::move(r.backend));
  for (auto& o : r.optimizations) register_optimization(std::move(o));
  return name;
}

}  // namespace nvfp4
