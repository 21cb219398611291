// lattice.hpp — the Session and staged isolation over the registry's optimizations (docs/design.md §4);
// bisect.hpp searches a failing combination's sub-combinations.
//
// The combinations of a backend are every subset of its registered optimizations except those
// holding two variants (which replace the same base kernel). `--verify all` lists them level by
// level: plain, then each optimization alone, then pairs, then larger sets; a combination runs
// only when all its immediate sub-combinations (one optimization fewer) passed on the suite,
// otherwise its trials are BLOCKED naming the failing subset. It starts as soon as those have
// finished, without waiting for the rest of their level (a Schedule, pool.hpp).
// A Session owns the trial runner, the reference cache, the results and the progress lines; the
// harness never names an optimization: they all come from Registry::instance().
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "cases.hpp"
#include "input_store.hpp"
#include "pool.hpp"
#include "trial.hpp"
#include "worker.hpp"

namespace nvfp4 {

struct BackendStatus {
  std::string name;
  bool probed = false;
  bool available = false;
  Outcome probe_outcome = Outcome::Skip;  // SKIP (unavailable) or ERROR/CRASH/TIMEOUT of the probe
  std::string reason;
  std::vector<std::string> optimizations;
};

class Session {
 public:
  // `program`: how the user invoked the harness (used in reproducers). `progress`: where progress
  // lines and failure details go (nullptr: silent). `exe`: the binary run for children.
  Session(TrialOptions options, std::string program, std::ostream* progress,
          std::string exe = "/proc/self/exe");

  const TrialOptions& options() const { return options_; }
  // A new private directory in the session's (removed with the session).
  std::string new_dir() { return runner_.new_dir(); }
  const std::string& program() const { return program_; }
  // Spawns one probe child per backend (cached): is the backend available here?
  const BackendStatus& probe(const std::string& backend);
  // A probe child's report obtained elsewhere (the built-in backends' load probes in main.cpp, which
  // also ask for availability): probe() uses it instead of starting another child.
  void adopt_probe(const std::string& backend, ChildReport report);
  // Runs one trial in a child of its own, records it and prints its progress line (and details
  // when it did not pass).
  // `case_output`: when given, receives the output of the first checked call, the one on input
  // set 0 (the case itself; cases.hpp), for case-directory mode.
  const TrialResult& run(const TrialSpec& spec, std::vector<uint16_t>* case_output = nullptr);
  // Runs the trials of `specs` as the run policy says (workers, slots, GPUs: pool.hpp), after
  // computing every reference they need (ReferenceCache::prefetch); records them and prints their
  // progress lines in the order of `specs`. `first_output`: as run()'s `case_output`, for the
  // first trial in that order that has one.
  void run_all(const std::vector<TrialSpec>& specs, std::vector<uint16_t>* first_output = nullptr);
  // Why a group of a schedule is not run: the groups it needs that failed, each with its first
  // failing trial (a BLOCKED one when that group was not run either). Returns the reason and the
  // blocked_by text its BLOCKED trials carry.
  using BlockedWhy = std::function<std::pair<std::string, std::string>(
      size_t group, const std::vector<std::pair<size_t, const TrialResult*>>& failed)>;
  // run_all for a schedule whose groups may wait for others (pool.hpp): a group runs as soon as the
  // groups it needs have finished without a failure, else its trials are BLOCKED for `why`.
  void run_schedule(const Schedule& schedule, const BlockedWhy& why, std::vector<uint16_t>* first_output = nullptr);
  // Gets the references of `cases` (input sets generated and stored for the children, references
  // read from the on-disk cache or computed) on a thread of its own while trials run; a later run
  // finds them in memory. wait_references() waits for it (also done when the session ends).
  // (bisect: its confirmation needs the whole suite, its first steps one case.)
  void prefetch_in_background(std::vector<CaseSpec> cases);
  void wait_references();
  ~Session();
  void set_policy(RunPolicy p) {
    policy_ = std::move(p);
    spares_.clear();  // started for the old policy's slots
  }
  const RunPolicy& policy() const { return policy_; }
  // Records trials that do not run (SKIP: backend unavailable; BLOCKED: a sub-combination
  // failed), with one progress line for the lot.
  void add_not_run(const std::vector<TrialSpec>& specs, Outcome outcome, const std::string& reason,
                   const std::string& blocked_by = "");
  // Records a trial that ran outside run() (a plugin's load probe that failed), with its line.
  void record(TrialResult r);
  // Grows the progress total ("index/total").
  void expect(size_t trials) { total_ += trials; }
  // Whether failing trials print their details under the progress line (default yes).
  void set_details(bool on) { details_ = on; }

  const std::vector<TrialResult>& results() const { return results_; }
  const std::map<std::string, BackendStatus>& backends() const { return backends_; }
  ReferenceCache& cache() { return cache_; }
  const ReferenceCache& cache() const { return cache_; }
  // Seconds since the run began: since the session was made, or since count_from's time.
  double elapsed() const;
  // The run began at `t0`, before this session was made: the CLI's load probes of plugins and
  // built-in modules run first, and a load that hangs until its watchdog is part of the run's time
  // (the progress line of its recorded TIMEOUT, the summary's and the report's elapsed_s).
  void count_from(std::chrono::steady_clock::time_point t0);
  // Where the parent's own time went (the report's "parent_s"): getting references before trials
  // (run_all's prefetch: generating input sets, reading or computing references, writing the input
  // store), wall seconds; judging children's outputs (evaluate_trial), seconds summed over slots.
  struct ParentTimes {
    double references = 0, evaluation = 0;
  };
  ParentTimes parent_times() const { return parent_; }
  std::vector<std::string> verdicts;  // bisect verdict lines

 private:
  void progress_line(const TrialResult& r, size_t first, size_t last);
  struct Run;  // one run_schedule call (pool.cpp)
  // Whether `t` runs in a worker that runs other trials too (not with --isolate trial, nor a
  // submission, whose child is its Python driver).
  bool reuses_workers(const TrialSpec& t) const;
  // A fresh worker for slot `slot` and `spec`'s backend: a spare started ahead for that backend and
  // the slot's environment when there is one; then a new spare when fewer than `want` are left
  // (pool.hpp). Safe from several slots at once.
  std::unique_ptr<Worker> take_worker(int slot, const TrialSpec& spec, size_t want);
  // Starts a spare for `backend` with slot `slot`'s environment.
  void start_spare(int slot, const std::string& backend);
  const BackendStatus& probe_result(const std::string& backend, const ChildReport& rep);

  TrialOptions options_;
  RunPolicy policy_;
  std::string program_;
  std::ostream* progress_;
  TrialRunner runner_;
  std::thread background_;  // prefetch_in_background's
  std::mutex spares_mu_;
  std::vector<std::unique_ptr<Worker>> spares_;  // started ahead; ended before runner_ removes their directories
  ReferenceCache cache_;
  InputStore store_;  // in runner_'s directory: the input sets prefetch generated, for the children
  std::vector<TrialResult> results_;
  std::map<std::string, BackendStatus> backends_;
  std::map<std::string, ChildReport> probes_;  // adopted, not yet turned into a status
  size_t total_ = 0;
  ParentTimes parent_;
  bool details_ = true;
  double t0_;
};

// Every valid combination of the backend's optimizations, plain first, by size then name.
std::vector<Combo> lattice_combos(const std::string& backend);
// The immediate sub-combinations: one optimization removed (plain for a single one).
std::vector<Combo> immediate_subs(const Combo& c);

// `--verify all` for one backend: staged isolation on `cases`.
void verify_lattice(Session& s, const std::string& backend, const std::vector<CaseSpec>& cases);
// `--verify COMBO,...` for one backend: just those, on every case. `first_output`, when given and
// empty, receives the output of the first trial that completes on input set 0 (the case itself).
void verify_combos(Session& s, const std::string& backend, const std::vector<Combo>& combos,
                   const std::vector<CaseSpec>& cases, std::vector<uint16_t>* first_output = nullptr);

// Shared with bisect.cpp: one trial's spec under the session's options; an unavailable backend's
// trials recorded as SKIP (or BLOCKED) and false; the first failing trial of (backend, combo) among
// the session's results from index `from`; trials in the order run_all records them; a failure in
// a few words for a verdict line.
TrialSpec make_spec(const Session& s, const std::string& backend, const Combo& combo, const CaseSpec& c);
bool backend_usable(Session& s, const std::string& backend, const std::vector<Combo>& combos,
                    const std::vector<CaseSpec>& cases);
const TrialResult* first_failure(const Session& s, const std::string& backend, const Combo& combo, size_t from = 0);
std::vector<TrialSpec> level_order(const Session& s, const std::string& backend, const std::vector<Combo>& combos,
                                   const std::vector<CaseSpec>& cases);
std::string failure_brief(const TrialResult& r);

}  // namespace nvfp4
