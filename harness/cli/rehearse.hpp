// rehearse.hpp — `harness rehearse gpumode --submission FILE.py`: a Python submission run the way GPU
// MODE's evaluator runs it, one evaluator mode per process, each under that mode's overall limit
// (docs/gpu-mode.md "Rehearsing the evaluator"; docs/design.md §4.1).
//
// For each evaluator mode, in the evaluator's order test, benchmark, leaderboard (kernelbot's
// run_eval.py:806-819; --evaluator-mode picks some), stopping after the first that does not pass:
//   1. kernelbot's "compile" run: the submission executed as a script (submission_driver.py
//      compile-run) under --limit-compile; its outcome is reported and, as the evaluator does,
//      ignored (run_eval.py:737-764);
//   2. the mode: submission_driver.py rehearse (nvfp4_driver/rehearse.py runs the evaluator's loops),
//      a child in its own process group speaking the trial protocol (trial.hpp), supervised by
//      the same watchdog as a trial (worker.hpp converse): the mode's limit is the trial's budget,
//      and a stage budget applies only when given (--budget-load, -init, -warmup, -run, -time;
//      the evaluator has none). The child keeps its account in DIR/rehearse.json, rewritten at each
//      step, so a child killed at the limit still says where it was and what had finished.
// Each child's stdout and stderr are one pipe the parent drains into its log: kernelbot reads the
// mode's to EOF, so a process the submission started that still holds it after the child's exit
// (past a 5 s grace) would keep the evaluator waiting until its limit. After every child, the
// compile run's too, whatever it left behind is killed: its process group, and the orphans that left
// the group (setsid), which the harness adopts as child subreaper (rehearse_mode sets it).
// Verdict per mode: PASS (a warning when within 10% of the limit); FAIL (the check's message, an
// Exception from the submission); WOULD TIME OUT (killed at the mode's limit: the evaluator's
// subprocess timeout, exit 114, run_eval.py:326-345; the output pipe held by a process left behind;
// the evaluator's pool worker would die: a signal, an exit, SystemExit or KeyboardInterrupt after
// the import began); TIMEOUT (a stage budget the user gave); SKIP (torch or a GPU missing here).
// Exit code: 0 every mode run passed, 1 one failed or would time out, 2 bad usage or a bad
// submission (missing file, not a regular file, syntax error or NUL byte, no custom_kernel or one
// bound only to a literal, a toggle it does not declare, a bad task file, --json naming an input),
// 125 every mode SKIP. Bad input is refused before any child runs.
#pragma once
#include <boost/program_options.hpp>
#include <string>

namespace nvfp4::cli {

// Group::Rehearse: --task, --evaluator-mode, --limit-test/-benchmark/-leaderboard/-compile,
// --secret-seed, --toggles.
boost::program_options::options_description rehearse_options();

// --emulate-fp4 (group paths, shared with verify/bisect/bench --submission): auto, on or off;
// InputError for another value, or when given without --submission.
std::string emulate_fp4_option(const boost::program_options::variables_map& vm);

// The mode's body; returns the exit code.
int rehearse_mode(const boost::program_options::variables_map& vm, const std::string& command);

}  // namespace nvfp4::cli
