// external.hpp — outside paths in the harness's trials: C-ABI plugins (--plugin) and Python
// submissions (--submission), loaded only in trial children (docs/design.md §3, §4).
//
// The harness process never runs an outside path's code. What the lattice, bisect and reports
// need from a path (its backend name, its optimizations with their kinds and stages) is learned
// without loading it in this process, and registered as a manifest: a Backend and Optimizations
// without code (their constructors throw: a manifest is for the parent, which never builds a plan).
//   plugin      a load probe child (TrialRunner::load_probe) loads the library in stage load and
//               reports its name and optimizations; a load that hangs, crashes or is refused is
//               that probe's TIMEOUT, CRASH or ERROR in stage load.
//   submission  `submission_driver.py describe FILE` reads the submission's declarations without
//               importing it (ast); the driver's own toggles (compile, max-autotune, graph) are
//               offered when the submission takes torch data and torch is importable here.
// Every trial of such a backend then loads the path afresh in its child, in stage load. The
// built-in backends are learned the same way (modules.hpp): their manifests add variants and
// wrapper orders.
#pragma once
#include <string>
#include <vector>

#include "trial.hpp"

namespace nvfp4 {

struct ManifestOptimization {
  std::string name, summary;
  std::vector<Stage> stages;
  OptKind kind = OptKind::Wrapper;  // a plugin's and a submission's are all wrappers
  int order = 0;
};
struct Manifest {
  std::string backend, summary;
  std::vector<ManifestOptimization> optimizations;
};

// Registers `m` in Registry::instance() as a backend and optimizations without code.
void register_manifest(const Manifest& m);

// The manifest from a load probe's report, a plugin's or a built-in module's (InputError when the
// report carries none).
Manifest probe_manifest(const ChildReport& probe);

// submission_driver.py: $NVFP4_SUBMISSION_DRIVER, else share/nvfp4_dual/submission_driver.py next
// to an installed harness, else the harness's source directory. Throws InputError when none exists.
std::string submission_driver_path();
// The submission at `path`, described by the driver (without importing it): its External
// (backend "submission:NAME", NAME the file's stem, or its folder's name for a file named
// submission.py) and manifest. Throws InputError with the driver's reason.
std::pair<External, Manifest> describe_submission(const std::string& path);

// Writes the trial's input sets for the driver into `dir` (submission_driver.py's header):
// case/ the warm-up's set, call<i>/ the set of checked call i+1 with a file `set` naming it.
void write_submission_inputs(const TrialSpec& spec, const std::string& dir);
// The driver's command line for one trial (`fd`: the pipe's write end).
std::vector<std::string> submission_child_args(const External& e, const TrialSpec& spec, int fd,
                                               const std::string& dir);

}  // namespace nvfp4
