// worker.hpp — the parent's side of a trial child's report, shared by a one-process trial
// (TrialRunner::run_child) and a worker (docs/design.md §4).
//
// A worker is one child, `harness --child-worker`, that runs trials one after another: the parent
// writes each trial's SPEC (trial.hpp, encode_trial) to the worker's stdin, ended by an empty
// line; the worker answers on its report pipe exactly as a one-process child does (enter, leave,
// output, ..., done or error or skip) and then `end`. Each trial keeps its private directory
// (outputs, and child.log: the worker sends its stdout and stderr there for that trial). A plugin
// is loaded once, before the worker's first trial, which reports stage load.
// The parent keeps every watchdog per trial (the stage's deadline and the trial's, the trial
// counted from the SPEC sent, or from the fork for a worker's first trial). Fail-stop: a trial
// that does not end cleanly (TIMEOUT, CRASH, ERROR; a FAIL the parent judges; see Worker::end)
// ends the worker (its process group is killed), so no trial ever runs after a fault in the same
// process; the next trial starts a fresh worker. The outcome, stage and message of a trial are
// what a one-process child gives.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "process.hpp"
#include "trial.hpp"

namespace nvfp4 {


// One trial's conversation on the report pipe, as the parent heard it.
struct Conversation {
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0;  // the trial's start: the fork, or the SPEC sent to a running worker
  std::string stage = "setup";
  Clock::time_point stage_t0, end_of_talk;
  bool done = false, skip = false, error = false;
  bool end = false;      // a worker's `end`: the trial is over and the worker waits for the next
  bool killed = false, trial_budget_hit = false;
  std::string skip_reason, error_message;
  int outputs = 0;
  std::vector<int> output_sets;
  std::vector<int> timed_sets;  // stage time: the input set of each timed output
  std::vector<int> late_sets, late_calls;  // a submission's later calls: input set, call number
  std::vector<int> config_sets;            // stage configs: the input set of each configuration's call
  std::vector<std::string> config_names;   // ... and the configuration's name
  std::vector<int> instance_sets, instance_plans;  // stage instances: each call's set and plan
  std::vector<InputSet> instance_modes;            // ... and the mode of its set
  size_t mid_g = 0, mid_u = 0;
  // One-shot children (converse's `reap`): the child exited (it is left unreaped, a zombie that
  // keeps its pid and group id, for the caller to reap) while the pipe gave no EOF; pipe_held:
  // after its messages were read the pipe still gave no EOF, so another process holds it.
  bool exited = false;
  bool pipe_held = false;
  // A line longer than kMaxMessageLine was handled cut; the rest of it, up to its newline, is dropped.
  bool dropping_line = false;
  size_t notes_dropped = 0;  // notes beyond kMaxNotes
};

// What one child can make the parent hold: a text field (an error, a note, a description, a skip
// reason, a stage or configuration name) is kept to kMaxMessageText bytes, a line to
// kMaxMessageLine, a trial to kMaxNotes notes (plus up to kMaxOutputs notes that carry a verdict),
// kMaxStages stage entries and kMaxOutputs outputs of each kind (more outputs than the trial asked
// for are counted, and an error, all the same).
// A submission or plugin whose exception text is megabytes long (a repr of a tensor) still gets
// its verdict and the start of its message, not megabytes of console and JSON per trial.
constexpr size_t kMaxMessageText = 4096;
constexpr size_t kMaxMessageLine = size_t(1) << 20;
constexpr size_t kMaxNotes = 64;
constexpr size_t kMaxStages = 64;     // stage entries kept (the protocol has 10 stages)
constexpr size_t kMaxOutputs = 4096;  // checked outputs whose input set is kept (--runs is at most 1000)
// `text` cut to kMaxMessageText bytes at a UTF-8 character boundary (backing over at most three
// continuation bytes), with the number of bytes left out; `line_cut`: the text comes from a line
// cut at kMaxMessageLine, so more was left out than the count says.
std::string bounded_text(const std::string& text, bool line_cut = false);

// Reads message lines from `fd` (bytes of a partial line stay in `pending`) into `rep` and `talk`
// until EOF, an `end` line, or the stage's or the trial's deadline; past a deadline it kills the
// process group `pid` (talk.killed). With `reap` (a one-shot child, not a worker), also until the
// child `pid` has exited and the pipe holds nothing more: a process the child started that
// inherited the pipe and keeps running (a submission that forks) then ends the talk neither with
// EOF nor by the trial's budget (talk.exited; the caller kills the holders and reaps the child).
void converse(int fd, int pid, const Budgets& b, std::string& pending, ChildReport& rep, Conversation& talk,
              bool reap = false);
// Fills rep's outcome, stage, times and message from `talk` and the child's wait `status` (a
// worker that said `end` is alive: status 0). `log_path`: the trial's child.log.
void conclude(ChildReport& rep, const Conversation& talk, int status, const Budgets& b,
              const std::string& log_path);
// A completed trial's outputs (and intermediates) from its directory `dir`.
void collect_outputs(ChildReport& rep, const Conversation& talk, const TrialSpec& spec, const std::string& dir);

class Worker {
 public:
  // `exe`: the harness binary; `dir`: a private directory for the worker's own log; `env`: see
  // EnvOverrides. The child is started by the first run(), or ahead by start().
  // `preload`: a built-in backend (modules.hpp) the worker loads as soon as it starts, module and
  // availability check (for the GPU backend the driver's initialization, most of a worker's
  // start), while it waits for its first trial: a spare started ahead (pool.hpp) has done that
  // work when a trial comes. The first trial reports it as its stage load (worker_main), and is
  // timed from the SPEC sent, not from the fork. Empty: nothing ahead; the first trial loads what
  // it needs and is timed from the fork.
  Worker(std::string exe, std::string dir, EnvOverrides env, std::string preload = "");
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Runs one trial (its private directory `trial_dir` exists). A trial that did not complete
  // (anything but outputs to check or SKIP) has ended the worker when this returns.
  ChildReport run(const TrialSpec& spec, const std::string& trial_dir);
  // Kills the worker's process group and reaps it (nothing when none runs); the next run()
  // starts a fresh one. The caller ends it after a trial it judged FAIL.
  void end();
  bool running() const { return pid_ > 0; }
  int started() const { return started_; }  // how many worker processes were started
  // Starts the worker process now (it must not be running).
  void start();
  const std::string& preload() const { return preload_; }
  const EnvOverrides& env() const { return env_; }

 private:
  // Reaps a worker that died while idle (between trials), with a note in `rep`.
  void drop_dead(ChildReport& rep);
  std::string exe_, dir_;
  EnvOverrides env_;
  std::string preload_;
  int pid_ = -1, to_child_ = -1, from_child_ = -1;
  int child_fd_ = -1;  // the report pipe's number in the child
  Conversation::Clock::time_point forked_;
  bool first_ = false;  // the next trial is the worker's first
  int started_ = 0;
  std::string pending_;
};

// The child side: `harness --child-worker [--preload BACKEND --report-fd N]` (main calls this
// before parsing options with the arguments after --child-worker).
int worker_main(int argc, char** argv);

}  // namespace nvfp4
