// rehearse_report.hpp — what `harness rehearse gpumode` found, as console text and as one JSON
// document (harness/cli/rehearse.hpp runs the children; docs/gpu-mode.md "Rehearsing the
// evaluator").
//
// Each evaluator mode's child leaves an account (DIR/rehearse.json, written by
// harness/backends/nvfp4_driver/rehearse.py): its stages' seconds, one entry per case (phase test,
// benchmark-warmup, benchmark, leaderboard-warmup, leaderboard; shape, seeds, status, step reached,
// message, bad outputs; the submission's seconds: first_call_s, other_calls_s, timed_s; the
// evaluator's: generate_s, reference_s, check_s, recheck_s, l2_clear_s; the timed repeats' stats in
// ns per call), whether FP4 was emulated, and its verdict. The report turns the account and what the
// parent saw (outcome, wall time, the stage it was killed in) into the verdict and the time
// breakdown. Every time measured with FP4 emulated is labelled "emulated FP4".
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "trial.hpp"

namespace nvfp4 {

// One child of a rehearsal as the parent saw it: kernelbot's compile run, or one evaluator mode.
struct RehearsalChild {
  bool ran = false;
  Outcome outcome = Outcome::Error;  // Pass: completed (a mode's account then says pass or fail)
  bool limit_hit = false;            // Timeout at the overall limit, not at a stage budget
  double limit_s = 0, wall_s = 0;
  double stage_elapsed_s = 0;        // seconds in `stage` when it ended
  std::string stage, message, log_tail;
  std::vector<StageTime> stages;
  std::vector<std::string> notes;
  std::string account;  // DIR/rehearse.json as the child last wrote it; "" when none
  // The child's end and what it left behind (rehearse.cpp supervise):
  bool died = false;         // after stage setup, a signal or an exit without done, error or skip
  double talk_s = 0;         // from the start to the child's exit (or kill) as the parent saw it
  double exit_wait_s = 0;    // after that: the wait for the output pipe, ending what was left behind
  bool output_held = false;  // a process it started still held its stdout/stderr after the grace
  std::vector<std::string> left_behind;  // "pid 123 (sleep 77)": each process found after its exit
};

// One evaluator mode: its compile run, its child, and the verdict (judge()).
struct RehearsalMode {
  std::string name;  // test, benchmark, leaderboard
  RehearsalChild compile, child;
  std::string verdict;  // PASS, FAIL, WOULD TIME OUT, TIMEOUT, SKIP
  std::string message;  // why, in one line (empty for PASS)
};

struct Rehearsal {
  std::string command, submission, toggles, emulate_fp4;
  std::string task_name, task_file, task_source;
  std::optional<uint64_t> secret_seed;
  std::vector<RehearsalMode> modes;       // in the order run
  std::vector<std::string> not_run;       // modes asked for but not run after a failure
  int exit_code = 0;
};

// Sets m.verdict and m.message from its child and the child's account. WOULD TIME OUT: killed at
// the mode's limit; its output pipe held by a process it started (kernelbot reads the pipe to EOF
// until the limit); or the evaluator's pool worker would die (a signal, an exit, SystemExit or
// KeyboardInterrupt after the import began: pool.apply then never returns). A failure otherwise.
void judge(RehearsalMode& m);

// The warning of a mode that passed within 10% of its limit; "" otherwise.
std::string close_to_limit(const RehearsalMode& m);

// The compile run's line and the mode's lines (verdict, time against the limit, the time
// breakdown, one line per case, the geometric mean of the benchmark means, where a timeout was).
void print_rehearsal_mode(std::ostream& os, const RehearsalMode& m, double compile_limit_s);

// The whole rehearsal as one JSON document ("schema": 1, "mode": "rehearse").
std::string rehearsal_json(const Rehearsal& r);

}  // namespace nvfp4
