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

// A backend learned without loading it here: its name, summary and optimizations (a plugin's and a
// submission's are all Wrappers of order 0; a built-in module's carry their kinds and orders).
struct Manifest {
  std::string backend, summary;
  std::vector<OptimizationManifest> optimizations;
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

// How a submission sees the inputs of one call (submission_driver.py's header). Both ways an
// evaluator or an engine hands inputs are checked in every trial of two or more calls: the last
// checked call and every second one before it (calls 1 and 3 of 3) refill the tensors of the warm-up
// in place (an engine; with --fresh activations only A and SFA change); the others (call 2 of 3), and
// a trial's only call, get newly allocated tensors holding a whole new input set, weights and scales
// included (GPU MODE's evaluator builds a new `data` per call). The last call being in place keeps
// its diagnosis apart: it starts from the previous call's output, which lives in other tensors. The
// warm-up (and compile, capture) runs on set R in the trial's mode, which no checked call uses.
struct SubmissionCall {
  int set = 0;                            // the input set (cases.hpp)
  InputSet mode = InputSet::Activations;  // how that set was derived from the case
  bool new_tensors = false;               // false: refilled in place into the warm-up's tensors
  // The set's alphas are the case's: a submission that declares no NVFP4_ALPHAS has no global
  // scales to change (GPU MODE's convention), so its new weights come with the case's alphas.
  bool keep_alphas = false;
};
// Checked calls 1..R at indices 0..R-1, then the warm-up's entry (set R) at index R.
std::vector<SubmissionCall> submission_calls(const TrialSpec& spec, const External& e);
// Input set `set` as a bench trial's timed calls hand it (submission_driver.py, stage time): in the
// trial's own mode, in place for the per-call figure and as distinct new tensors back to back.
SubmissionCall submission_timed_set(const TrialSpec& spec, const External& e, int set);
// Input set `k.set` as the submission is handed it (`base`: spec.c.make()).
Problem submission_input_set(const TrialSpec& spec, const Problem& base, const SubmissionCall& k);
// "new tensors, new weights, input set 1" / "in place, new activations, input set 2" for a report.
std::string submission_call_text(const SubmissionCall& k, int runs);
// A driver's note that contains this marks a FAIL the parent cannot see in the output file alone:
// the output read in order on the calling stream differed from a read after a device-wide
// synchronize (submission_driver.py, stream-ordered read-back).
constexpr const char* kUnjoinedStreamNote = "output not complete when the calling stream reached it";
// Likewise: after a checked call, a tensor of `data` other than the output no longer held what the
// driver had put there: the submission wrote into its inputs (submission_driver.py, inputs.py).
constexpr const char* kInputsChangedNote = "the inputs it was handed were changed";
// Likewise: after the import or a call, torch's current stream was not the caller's.
constexpr const char* kStreamChangedNote = "the current CUDA stream was left changed";
// Likewise: after the calls, an output read right after its call had changed (storage the
// submission reuses: one buffer returned every call, an earlier c as scratch).
constexpr const char* kOutputReusedNote = "output changed by a later call";
// Likewise, for every backend (the trial's own stages, harness/trial/output_guard.hpp): a read_output
// wrote into the guard zone before or after the L·M·N elements of the buffer it was handed.
constexpr const char* kOutputOverrunNote = "read_output wrote outside C";
// Whether a note carries one of these verdicts (evaluate.cpp fails the trial on it; the parent
// keeps such notes past its cap on notes, worker.hpp).
inline bool carries_verdict(const std::string& note) {
  for (const char* marker :
       {kUnjoinedStreamNote, kInputsChangedNote, kStreamChangedNote, kOutputReusedNote, kOutputOverrunNote})
    if (note.find(marker) != std::string::npos) return true;
  return false;
}

// Writes the trial's input sets for the driver into `dir` (submission_driver.py's header):
// case/ the warm-up's set; call<i>/ the set of checked call i+1, with a file `set` naming it and a
// file `call` saying how the driver hands it over ("in-place activations", "in-place all", "new").
void write_submission_inputs(const TrialSpec& spec, const std::string& dir);
// The driver's command line for one trial (`fd`: the pipe's write end).
std::vector<std::string> submission_child_args(const External& e, const TrialSpec& spec, int fd,
                                               const std::string& dir);

}  // namespace nvfp4
