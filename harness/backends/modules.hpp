// modules.hpp — where the built-in backends' code lives and how a trial child loads it
// (docs/design.md §3).
//
// Each built-in backend is a shared module, libnvfp4_paths_<backend>.so; the file name is the
// backend's name. The harness process never loads one: it knows the backends from the file names,
// and their optimizations from a load probe (a child that loads the module in stage load and
// reports what registered: TrialRunner::load_probe). A trial child loads its backend's module in
// stage load, so whatever a path does at load time (static initialization, the C++ form of work at
// import) is timed, budgeted (--budget-load) and contained like every other stage.
// The modules' registrations bind to the harness's registry: the harness exports its symbols and
// the modules leave the registry's undefined (optimized/CMakeLists.txt).
//
// The folder: $NVFP4_PATHS_DIR when set (tests point it at modules with planted bugs); else
// paths/ next to the harness binary (the build tree); else <prefix>/<libdir>/nvfp4_dual/paths
// beside an installed harness.
#pragma once
#include <string>
#include <vector>

namespace nvfp4 {

struct ModuleDir {
  std::string path;   // empty when none was found
  std::string tried;  // where it looked (for the error message)
};
ModuleDir module_dir();
// The module file of `backend` in `dir` (whether or not it exists).
std::string module_path(const ModuleDir& dir, const std::string& backend);
// The built-in backends: one per libnvfp4_paths_<name>.so in the folder, sorted by name.
std::vector<std::string> builtin_backends(const ModuleDir& dir);
// dlopen(RTLD_NOW). Throws InputError with the path and the loader's message.
void* load_module(const std::string& path);

}  // namespace nvfp4
