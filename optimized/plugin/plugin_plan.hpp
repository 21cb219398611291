// plugin_plan.hpp — C-ABI plugins (optimized/plugin/nvfp4_plugin.h) as backends of the registry.
//
// load_plugin() opens a plugin library and checks its table of entry points; every way a library
// can be unusable is an InputError naming the file and the reason. PluginPlan is the Plan around
// one plugin handle: each Plan call forwards to the matching entry point and turns an ERROR status
// into an exception carrying the plugin's last_error text. register_plugin() adds the plugin to the
// registry as backend "plugin:NAME" (its plain path, create() with no optimization) and one
// optimization per name it offers.
//
// How a combination is built. The plugin receives the whole combination at create() ("a+b", names
// sorted) and builds it itself, so the registry's plan assembly (one variant, then wrappers each
// wrapping the plan before it) does not describe it. register_plugin therefore sets the backend's
// make_combo, which build_plan calls instead: one create() per combination. Each plugin
// optimization is still registered as a Wrapper (so the lattice combines them freely) whose wrap()
// rebuilds the plugin plan it is given with its own name added, for a registry used without
// make_combo (plugin_registration's caller decides).

// Only a trial's child process loads plugins (stage `load`): a plugin's load-time work, hang or
// crash then stays in that child. Libraries are never unloaded: code that started threads or
// registered handlers cannot be unloaded safely, and the child ends soon after.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nvfp4_plugin.h"
#include "plan.hpp"
#include "registry.hpp"

namespace nvfp4 {

// A plugin library opened in this process, with its table checked.
struct LoadedPlugin {
  std::string path;  // as given to load_plugin
  std::string name, summary;
  // As the plugin lists them: each a Wrapper of order 0 (the plugin builds every combination itself)
  // adding the stages its bits declare (Tune, Capture).
  std::vector<OptimizationManifest> optimizations;
  const nvfp4_plugin_v1* api = nullptr;
  void* library = nullptr;  // dlopen handle (never closed)

  std::string backend_name() const { return "plugin:" + name; }
};

// Opens `path` with dlopen(RTLD_NOW | RTLD_LOCAL), finds nvfp4_plugin_v1_get and checks the table:
// ABI version, struct size, required entry points, names. Throws InputError naming `path` and the
// reason: no such file, not a loadable shared object (the loader's message), missing symbol (and
// which other ABI version it exports, if any), wrong ABI version, table too small, a NULL required
// entry point, a bad or duplicate name.
std::shared_ptr<const LoadedPlugin> load_plugin(const std::string& path);

// Backend::available, through the plugin's optional available().
Support plugin_available(const LoadedPlugin& plugin);
// Shape support of a combination, through the plugin's optional supports().
Support plugin_supports(const LoadedPlugin& plugin, const Combo& combo, const Shape& shape);

// The Plan around one plugin handle (see the file header).
class PluginPlan : public Plan {
 public:
  // Calls create() for `combo` (throws InputError with the plugin's last_error text when it fails;
  // InputError when a name in `combo` is not one the plugin offers).
  PluginPlan(std::shared_ptr<const LoadedPlugin> plugin, const Combo& combo, const Problem& problem);
  ~PluginPlan() override;
  PluginPlan(const PluginPlan&) = delete;
  PluginPlan& operator=(const PluginPlan&) = delete;

  std::string describe() const override;
  void set_inputs(const Problem& p, InputSet which) override;
  void enqueue() override;
  void synchronize() override;
  void poison_output(uint16_t bits) override;
  void read_output(uint16_t* c) override;
  bool read_intermediates(std::vector<float>& g, std::vector<float>& u) override;
  void tune() override;
  void capture() override;

  const Combo& combo() const { return combo_; }
  // Replaces the handle by one built for `combo` from the inputs the plan holds now (the
  // registry-wrapper route described in the file header).
  void rebuild(const Combo& combo);

 private:
  void create();
  void check(int status, const char* what) const;

  std::shared_ptr<const LoadedPlugin> plugin_;
  Combo combo_;
  Problem problem_;  // the inputs as of the last set_inputs (rebuild() needs them)
  nvfp4_plugin_handle* handle_ = nullptr;
};

std::unique_ptr<Plan> make_plugin_plan(std::shared_ptr<const LoadedPlugin> plugin, const Combo& combo,
                                       const Problem& problem);

// What register_plugin adds to the registry, and the combination builder it cannot express yet.
using MakeComboFn =
    std::function<std::unique_ptr<Plan>(const Combo&, const Problem&, const PlanOptions&)>;
struct PluginRegistration {
  Backend backend;                          // "plugin:NAME"; make_plain = create with ""
  std::vector<Optimization> optimizations;  // one Wrapper per offered name, with its stages
  MakeComboFn make_combo;                   // any combination in one create()
};
PluginRegistration plugin_registration(std::shared_ptr<const LoadedPlugin> plugin);
// Adds plugin_registration(plugin)'s backend and optimizations to Registry::instance(); returns
// the backend name.
std::string register_plugin(std::shared_ptr<const LoadedPlugin> plugin);

}  // namespace nvfp4
