// backends.hpp — which backends a run uses, and the built-in ones' load probes (modules.hpp).
// Used by main.cpp before any trial runs; nothing here loads path code in this process.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "modules.hpp"
#include "suite.hpp"
#include "trial.hpp"

namespace nvfp4 {

// The backends `--backend` names (`names`, or "all"): "all" is every built-in one (a module in the
// paths folder) and every outside path given; a name must be one of those (InputError otherwise).
std::vector<std::string> chosen_backends(const std::vector<std::string>& names, const std::vector<std::string>& builtins,
                                         const std::vector<std::string>& externals, const ModuleDir& dir);

// Load probes of the built-in backends in `backends` (in parallel, one child each): each module's
// manifest is registered here and its probe report (which also says whether the backend is available)
// goes to `loaded`; a module that does not load (TIMEOUT, CRASH, ERROR in stage load, or no manifest)
// is that probe's result in `failed`, and leaves `backends`. Prints a line only while a load takes
// longer than a second.
// `env`: the first slot's environment (RunPolicy::env(0)), so availability is about the devices
// the trials will use.
void load_builtins(std::vector<std::string>& backends, const std::vector<std::string>& builtins,
                   const TrialOptions& opt, const SuiteFilter& filter, std::vector<TrialResult>& failed,
                   std::map<std::string, ChildReport>& loaded, const EnvOverrides& env);

}  // namespace nvfp4
