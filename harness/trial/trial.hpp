// trial.hpp — one trial in a child process, with stage watchdogs (docs/design.md §3, §4.2).
//
// A trial is (backend, combination, case, options). The parent (TrialRunner) fork+execs its own
// binary (/proc/self/exe) as `harness --child-trial SPEC`, or hands SPEC to a worker child that runs
// one combination's trials in a row (`harness --child-worker`, worker.hpp; the default); the child
// puts itself in its own process group, runs the stages and reports over a pipe, one line per message:
//   enter STAGE | leave STAGE SECONDS | describe TEXT | note TEXT | skip REASON | error MESSAGE
//   | output CALL SET | intermediates | available | manifest FIELDS... | device TEXT
//   | timing REPS MEDIAN MIN MEAN STDEV RSE B2B B2B_CALLS | timed-output INDEX SET
//   | config-output INDEX SET NAME | done
// (device: the CUDA_VISIBLE_DEVICES the child runs with, when set; a worker adds `end`: worker.hpp).
// Stages: load (the backend's module, or the plugin library, is loaded and registered here, so
// its load-time work, hang or crash is this child's; a worker loads once, in its first trial), setup (the harness builds the inputs; checks availability and support), init
// (build_plan), tune (only when the combination adds it), warmup (N eager calls), capture (only
// when the combination adds it), run (R checked calls), time (bench mode only, see below), teardown
// (the plan is destroyed).
// Stage time (a bench trial, TrialOptions::bench; docs/design.md §4.1): the steady state timed with
// the one timing helper (plan.hpp measure_calls over Plan::timed_calls): timed call i runs on
// input set i mod (R+1), written before it outside the timed region; then the back-to-back figure
// on the next set. The output of the last timed call and of the last back-to-back call are sent
// like checked calls' (timed<INDEX>.f16, message timed-output INDEX SET) and the parent checks each
// against the reference of its own set: a trial whose timed output fails is FAIL in stage time,
// and no trial that is not PASS reports a time.
// Stage configs (TrialOptions::configs, not in bench mode): in a trial whose combination holds no
// wrapper (plain, or a variant alone), when the plan offers several configurations (candidates()),
// the child selects each on the base plan in turn and makes one checked call on input set
// i mod (R+1), poisoned first; the output goes to config<INDEX>.f16 with message config-output INDEX
// SET NAME, and the parent checks each against its set's reference: a configuration that fails is
// FAIL in stage configs naming it, though the default configuration passed (a kernel configuration
// that only some shapes select is still verified on every shape that offers it).
// Fresh inputs (cases.hpp): the plan is built, tuned, warmed up and captured on input set R; before
// checked call i (1-based) the child writes input set i-1 into the plan (Plan::set_inputs, the
// activations or, with --fresh all, every input) and poisons the output with kPoisonBits (all
// calls but the last when R > 1: the last starts from the previous output, which catches a path
// that computes only when it sees the poison); every
// call's output is written to a file in the trial's private directory and checked by the parent
// against the exact reference of ITS OWN input set. A failing call whose output passes against
// another set's reference is named as such: stale inputs or a cached result.
// The parent polls the pipe against the current stage's deadline and the trial's; past either it
// kills the child's whole process group (TIMEOUT, naming the stage). A signal is CRASH, an
// exception ERROR, an unsupported backend or shape SKIP. The parent never touches a device.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cases.hpp"
#include "compare.hpp"
#include "faults.hpp"
#include "plan.hpp"
#include "registry.hpp"

namespace nvfp4 {

enum class Outcome { Pass, Fail, Error, Crash, Timeout, Skip, Blocked };
const char* outcome_name(Outcome o);  // "PASS", "FAIL", ...
bool outcome_of(const std::string& name, Outcome& out);  // the inverse: false for an unknown name
// FAIL, ERROR, CRASH, TIMEOUT and BLOCKED are verification failures (exit code 1).
inline bool is_failure(Outcome o) { return o != Outcome::Pass && o != Outcome::Skip; }

// Watchdog budgets in seconds: one per stage with a budget of its own (kStages, plan.hpp; setup
// and teardown are watched by init's), and one for the whole trial.
struct Budgets {
  Budgets() {
    for (const auto& s : kStages) stage_s[int(s.id)] = s.default_budget;
  }
  double& operator[](Stage s) { return stage_s[int(s)]; }
  double operator[](Stage s) const { return stage_s[int(s)]; }
  // The budget that watches stage s.
  double of(Stage s) const { return stage_s[int(stage_info(s).budget_of)]; }
  double trial = 300;

 private:
  double stage_s[kStageCount] = {};
};

// A path from outside the harness binary, loaded only in trial children (external.hpp): a C-ABI
// plugin library (the child is the harness itself, which loads it in stage load) or a Python
// submission (the child is harness/backends/submission_driver.py, which imports it in stage load).
struct External {
  enum Kind { Plugin, Submission } kind = Plugin;
  std::string path;     // the plugin library or the submission file, as the user gave it
  std::string backend;  // "plugin:NAME" or "submission:NAME"
  std::string python, driver;  // Submission: the interpreter and submission_driver.py
  bool alphas = false;         // Submission: takes alpha1, alpha2 (it declares NVFP4_ALPHAS = True)
  // Submission: its own toggles (NVFP4_TOGGLES); --emulate-fp4 auto|on|off for its driver.
  std::vector<std::string> own_toggles = {};
  std::string emulate_fp4 = "auto";
};

struct TrialOptions {
  int warmup = 3;             // eager calls in stage warmup
  int runs = 3;               // checked calls in stage run
  bool instances = true;      // stage instances (stages.cpp): a second plan beside the first
  bool configs = true;        // stage configs: every configuration the base path offers, checked
  // --sanitize: the compute-sanitizer tool (memcheck, racecheck, initcheck, synccheck) every trial
  // child runs under, and the sanitizer's path; empty: none (worker.cpp sanitized_args).
  std::string sanitize, sanitizer;
  // With --sanitize every watchdog budget is this many times the one given (compute-sanitizer's
  // tools slow kernels down by one to two orders of magnitude).
  static constexpr double kSanitizeSlowdown = 20;
  Budgets budget;
  PlanOptions plan;           // tune cache dir, tune reps, tune time budget
  std::vector<Fault> faults;
  double slow_seconds = 2.0;  // what the `slow` fault sleeps
  // What changes between checked calls (--fresh activations|all): A and SFA, or every input and
  // the alphas.
  InputSet fresh = InputSet::Activations;
  std::vector<External> externals;  // the outside paths of this run, by backend name
  // The parent's InputStore folder (input_store.hpp): the child reads its input sets from there
  // when they are stored, else generates them. Empty: always generate.
  std::string input_store;
  // The directory of the on-disk reference store (reference_store.hpp: --reference-cache, as the
  // CLI resolved it); empty: references are computed and not stored. The parent's alone: never
  // sent to a child.
  std::string reference_cache;
  // Bench mode: after run, stage time measures the steady state under `timing` (see above).
  bool bench = false;
  TimingRule timing;
  const External* external(const std::string& backend) const;  // nullptr for a built-in one
};

struct TrialSpec {
  std::string backend;
  // A plugin library the child loads in stage load before anything else (from options.externals
  // for a plugin backend; set alone, with an empty backend, for the load probe).
  std::string plugin;
  Combo combo;
  CaseSpec c;
  TrialOptions options;
};

struct StageTime {
  std::string stage;
  double seconds = 0;
  bool completed = false;  // false: the trial ended inside it
  bool ahead = false;      // done before the trial was handed over (a worker's stage load, worker.hpp): not in its wall time
};

// What stage time measured: the timed calls, and the back-to-back mean (NaN when not measured).
struct BenchFigures {
  Timing t;
  double b2b = NAN;
  int b2b_calls = 0;
};

// Timed call i's input set, with `runs` checked calls (sets 0..runs exist: cases.hpp).
inline int timed_call_set(int i, int runs) { return i % (runs + 1); }

struct TrialResult {
  TrialSpec spec;
  Outcome outcome = Outcome::Error;
  std::string stage;          // the stage the trial ended in (for non-PASS outcomes)
  double stage_elapsed = 0;   // seconds spent in that stage
  std::string message;        // the reason / error / failure summary
  std::vector<StageTime> stages;
  std::string describe;       // the plan's own description
  std::vector<std::string> notes;  // fault drills that fired, teardown anomalies
  std::string child_log;      // tail of the child's stderr (ERROR / CRASH)
  double wall = 0;            // whole trial, seconds
  double started = -1;        // when it was handed to its child or worker, seconds after the session began (-1: not run)
  double judged = -1;         // seconds the parent spent judging it (its comparisons; -1: not run)
  int child_pid = 0;          // the process that ran it (a worker runs several); 0: none
  std::string device;         // CUDA_VISIBLE_DEVICES as the child saw it (empty: unset)

  // Comparison (completed trials): the primary call (the worst failing, else the one with the
  // largest ULP distance) and the over-tolerance count of each call.
  bool compared = false;
  Comparison cmp;
  int cmp_call = 0;
  std::vector<int64_t> over_per_call;
  std::vector<int> set_per_call;      // the input set of each checked call
  // Per checked call: the other input set whose reference a failing output matches (stale inputs
  // or a cached result), or -1.
  std::vector<int> matches_set_per_call;
  bool degenerate = false;
  std::string degeneracy;
  std::vector<std::string> warnings;
  std::string blocked_by;     // BLOCKED: the failing sub-combination(s)
  // Bench mode: the figures of stage time, only for a PASS trial whose timed outputs passed.
  bool timed = false;
  BenchFigures timing;
  // Stage configs: the configurations checked, and those whose output failed.
  std::vector<std::string> configs_checked, configs_failing;
  // Stage instances: how many calls of the two plans were checked, and a text per failing one.
  int instances_checked = 0;
  std::vector<std::string> instances_failing;

  double stage_seconds(const std::string& name) const;  // -1 when absent
  // Seconds of the trial's wall time spent outside its stages (starting the child, the messages,
  // the output files; a worker's start counts in its first trial); 0 for a trial that did not run.
  double overhead() const;
};

// The child's raw report, before comparison.
struct ChildReport {
  Outcome outcome = Outcome::Error;  // Pass here means "completed; outputs to check"
  std::string stage, message, describe, child_log, device;
  double stage_elapsed = 0, wall = 0;
  int pid = 0;
  std::vector<StageTime> stages;
  std::vector<std::string> notes;
  std::vector<std::vector<uint16_t>> outputs;  // one per checked call
  std::vector<int> output_sets;                // the input set the child wrote before each call
  bool have_intermediates = false;             // G and U of the LAST checked call
  std::vector<float> g, u;
  bool available = false;  // probe: the backend said yes
  // Stage time (bench mode): the figures, and the timed outputs with their input sets.
  bool timed = false;
  BenchFigures timing;
  std::vector<std::vector<uint16_t>> timed_outputs;
  std::vector<int> timed_sets;
  // A submission's later calls (after the checked ones, submission_driver.py): the outputs that
  // differ from the first of them, with their input set and their number among the trial's calls.
  std::vector<std::vector<uint16_t>> late_outputs;
  std::vector<int> late_sets, late_calls;
  // Stage instances: the outputs of the two plans' calls (stages.cpp, instances_stage), each with
  // the input set and mode it was handed and which plan made it (0: the trial's, 1: the second).
  std::vector<std::vector<uint16_t>> instance_outputs;
  std::vector<int> instance_sets, instance_plans;
  std::vector<InputSet> instance_modes;
  // Stage configs: one output per configuration, with its input set and name.
  std::vector<std::vector<uint16_t>> config_outputs;
  std::vector<int> config_sets;
  std::vector<std::string> config_names;
  // Load probe: what the loaded module or plugin registered, one entry per `manifest` message:
  // {"backend", NAME, SUMMARY} then {"optimization", NAME, STAGES (comma-joined), SUMMARY, KIND
  // (variant or wrapper), ORDER} for each.
  std::vector<std::vector<std::string>> manifest;
};

// NAME=VALUE entries a child gets on top of (replacing) the harness's own environment, e.g. the
// device a worker slot runs on (CUDA_VISIBLE_DEVICES).
using EnvOverrides = std::vector<std::string>;

class TrialRunner {
 public:
  // `exe`: the harness binary to exec for children (default: this process's own binary).
  explicit TrialRunner(std::string exe = "/proc/self/exe");
  ~TrialRunner();
  TrialRunner(const TrialRunner&) = delete;
  TrialRunner& operator=(const TrialRunner&) = delete;

  // Runs the trial's child and collects its report (no comparison). Safe to call from several
  // threads at once.
  ChildReport run_child(const TrialSpec& spec, bool probe = false, const EnvOverrides& env = {});
  // A new private directory for one trial (or one worker's own files), under this runner's.
  std::string new_dir();
  // This runner's private directory (removed with the runner).
  const std::string& tmp() const { return tmp_; }
  const std::string& exe() const { return exe_; }
  // A probe child: does Backend::available() say yes? (outcome SKIP with the reason if not.)
  // (A submission backend is not probed: its trials SKIP with the driver's reason.)
  // `env`: the slots' environment (the first slot's CUDA_VISIBLE_DEVICES under --gpus), so that the
  // answer is about the devices the trials will use.
  ChildReport probe(const std::string& backend, const TrialOptions& options, const EnvOverrides& env = {});
  // A load probe: a child that loads the plugin library in stage load and reports its manifest.
  ChildReport load_probe(const std::string& plugin, const TrialOptions& options);
  // The whole trial: child, then comparison of every call against the cached reference.
  TrialResult run(const TrialSpec& spec, ReferenceCache& cache);

 private:
  std::string exe_, tmp_;
  std::atomic<int> counter_{0};
};

// Turns a child's report into a trial result (comparison against the reference when completed).
TrialResult evaluate_trial(const TrialSpec& spec, ChildReport&& child, ReferenceCache& cache);

// The child side: `harness --child-trial SPEC` (main calls this before parsing options).
int child_main(const std::string& encoded);

// Waits up to `limit_s` seconds for child `pid` to be reaped (status in *status); false if it was
// not. A SIGKILLed child normally goes at once, but one inside an uninterruptible call (a hung
// GPU driver ioctl) dies only when that call returns: the harness must not hang with it, so it
// stops waiting and reports the child as left behind. Exposed for tests.
bool reap_within(int pid, int* status, double limit_s);
// Seconds run_child waits for a killed child to be reaped before leaving it behind.
constexpr double kReapSeconds = 30.0;

// SPEC encoding (exposed for tests): key=value lines, values percent-escaped.
std::string encode_trial(const TrialSpec& spec, int fd, const std::string& dir, bool probe);
TrialSpec decode_trial(const std::string& text, int* fd, std::string* dir, bool* probe);

}  // namespace nvfp4
