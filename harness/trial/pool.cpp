// pool.cpp — the run policy's parsing and Session::run_schedule: the slots that run a schedule of
// trials, with workers started ahead (see pool.hpp and lattice.hpp).
#include "pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "errors.hpp"
#include "lattice.hpp"
#include "worker.hpp"

namespace nvfp4 {

const char* isolation_name(Isolation i) { return i == Isolation::Trial ? "trial" : "worker"; }

Isolation parse_isolation(const std::string& text) {
  if (text == "worker") return Isolation::Worker;
  if (text == "trial") return Isolation::Trial;
  throw InputError("--isolate: must be 'worker' or 'trial', not '" + text + "'");
}

EnvOverrides RunPolicy::env(int slot) const {
  if (gpus.empty()) return {};
  return {"CUDA_VISIBLE_DEVICES=" + gpus[size_t(slot) % gpus.size()]};
}

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (char ch : text) {
    if (ch == sep) out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::vector<std::string> parse_gpu_list(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& id : split(text, ',')) {
    const bool uuid = (id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0) && id.size() > 4 &&
                      id.find_first_not_of("0123456789abcdefABCDEF-/GPUMI") == std::string::npos;
    if (!all_digits(id) && !uuid)
      throw InputError("--gpus: '" + id + "' is not a device index (0, 1, ...) or a GPU-/MIG- UUID");
    if (std::find(out.begin(), out.end(), id) != out.end()) throw InputError("--gpus: device " + id + " given twice");
    out.push_back(id);
  }
  return out;
}

int count_gpus(const std::string& proc_dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(proc_dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++n;
  if (n > 0) return n;
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return 0;
  char line[512];
  while (std::fgets(line, sizeof line, p))
    if (std::string(line).rfind("GPU ", 0) == 0) ++n;
  pclose(p);
  return n;
}

std::vector<std::string> gpus_from_ctest(const std::function<const char*(const std::string&)>& getenv) {
  const char* count = getenv("CTEST_RESOURCE_GROUP_COUNT");
  if (!count || !*count) return {};
  if (!all_digits(count)) throw InputError(std::string("CTEST_RESOURCE_GROUP_COUNT: not a count: '") + count + "'");
  std::vector<std::string> out;
  for (int g = 0; g < std::atoi(count); ++g) {
    const std::string group = "CTEST_RESOURCE_GROUP_" + std::to_string(g);
    const char* types = getenv(group);
    bool has_gpus = false;
    for (const auto& t : split(types ? types : "", ',')) has_gpus |= t == "gpus";
    if (!has_gpus) continue;
    const char* spec = getenv(group + "_GPUS");
    if (!spec || !*spec) throw InputError(group + " names gpus but " + group + "_GPUS is not set");
    for (const auto& entry : split(spec, ';')) {
      std::string id;
      for (const auto& field : split(entry, ',')) {
        if (field.rfind("id:", 0) == 0) id = field.substr(3);
        else if (field.rfind("slots:", 0) != 0 || !all_digits(field.substr(6)))
          throw InputError(group + "_GPUS: malformed entry '" + entry + "' (expected id:ID,slots:N)");
      }
      if (id.empty()) throw InputError(group + "_GPUS: entry '" + entry + "' has no id");
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    }
  }
  return out;
}

namespace {
// A slot joins a group that has workers only while each would keep this many trials to hand out.
constexpr size_t kShareTrials = 16;
// The default --jobs in all, whatever the GPUs (default_jobs).
constexpr size_t kMaxDefaultSlots = 8;
// A trial this long (its child's wall, on average over its group's finished trials) is worth a
// worker's start: a slot on a GPU without a worker of the group joins it, whatever kShareTrials says.
constexpr double kLongTrialSeconds = 1.0;
}  // namespace

int default_jobs(size_t gpus, unsigned cores) {
  const size_t devices = std::max<size_t>(1, gpus);
  const size_t per_gpu = std::clamp<size_t>(cores / (4 * devices), 1, 4);
  // At most kMaxDefaultSlots in all (but one per device): a worker's start is serialized across
  // the host, so more slots at once start more workers no faster.
  return int(std::min<size_t>(std::max(devices, std::min(devices * per_gpu, kMaxDefaultSlots)), 1024));
}

Schedule Schedule::of(std::vector<TrialSpec> specs) {
  Schedule s;
  std::map<std::pair<std::string, std::string>, size_t> group_of;
  for (const auto& spec : specs) {
    const auto key = std::make_pair(spec.backend, spec.combo.str());
    auto it = group_of.emplace(key, group_of.size()).first;
    s.group.push_back(it->second);
  }
  s.needs.resize(group_of.size());
  s.specs = std::move(specs);
  return s;
}

// ---------------------------------------------------------------------------------------------

void Session::run_all(const std::vector<TrialSpec>& specs, std::vector<uint16_t>* first_output) {
  run_schedule(Schedule::of(specs), nullptr, first_output);
}

void Session::start_spare(int slot, const std::string& backend) {
  auto w = std::make_unique<Worker>(runner_.exe(), runner_.new_dir(), policy_.env(slot), backend);
  w->start();
  std::lock_guard<std::mutex> lock(spares_mu_);
  spares_.push_back(std::move(w));
}

std::unique_ptr<Worker> Session::take_worker(int slot, const TrialSpec& spec, size_t want) {
  // A plugin loads in its first trial's stage load, inside the worker: nothing to start ahead.
  if (!policy_.prestart || spec.options.external(spec.backend))
    return std::make_unique<Worker>(runner_.exe(), runner_.new_dir(), policy_.env(slot));
  std::unique_ptr<Worker> w;
  size_t left = 0;
  {
    std::lock_guard<std::mutex> lock(spares_mu_);
    for (auto it = spares_.begin(); it != spares_.end(); ++it)
      if ((*it)->preload() == spec.backend && (*it)->env() == policy_.env(slot)) {
        w = std::move(*it);
        spares_.erase(it);
        break;
      }
    left = spares_.size();
  }
  // None ready: a worker that loads in its first trial, timed from its start as without spares.
  if (!w) w = std::make_unique<Worker>(runner_.exe(), runner_.new_dir(), policy_.env(slot));
  if (left < want) {
    try {
      start_spare(slot, spec.backend);  // loads while this one works
    } catch (const std::exception&) {
      // A spare is an optimization: without one (no process or descriptor to spare), the next
      // fresh worker starts when needed.
    }
  }
  return w;
}

void Session::prefetch_in_background(std::vector<CaseSpec> cases) {
  wait_references();
  background_ = std::thread([this, cases = std::move(cases)] {
    try {
      cache_.prefetch(cases, options_.runs, options_.fresh, 0,
                      [this](const CaseSpec& c, int set, InputSet mode, const Problem& p) { store_.put(c, set, mode, p); },
                      options_.instances && !options_.bench);
    } catch (...) {
      // Whatever failed here is computed again, and reported, where a trial needs it.
    }
  });
}

void Session::wait_references() {
  if (background_.joinable()) background_.join();
}

Session::~Session() { wait_references(); }

// One run_schedule call: its groups and results, the slot threads that run the trials and the loop
// that records them in list order. Group, slot and stop state are guarded by `mu`.
struct Session::Run {
  enum class State { Waiting, Runnable, Finished, Blocked };
  struct Group {
    std::vector<size_t> trials;  // indices into specs, in order
    size_t handed = 0;           // trials given to a slot
    size_t left = 0;             // trials not finished
    int workers = 0;             // slots bound to it (each with its worker, or about to start one)
    double wall = 0;             // its finished trials' child wall time, summed
    size_t timed = 0;            // ... over this many trials
    std::vector<int> on_device;  // ... of them on each of the policy's GPUs (one entry without --gpus)
    State state = State::Waiting;
    size_t first_failure = SIZE_MAX;  // its failing trial first in the list (a BLOCKED one included)
    std::string reason, by;           // State::Blocked: why
  };
  struct Slot {
    std::optional<TrialResult> result;
    std::vector<uint16_t> output;  // the first checked call's, when asked for
    bool blocked = false;
  };

  Session& s;
  const Schedule& sch;
  const std::vector<TrialSpec>& specs;
  const BlockedWhy& why;
  std::vector<uint16_t>* first_output;
  const int n_slots;
  std::vector<Group> groups;
  std::vector<std::vector<size_t>> dependents;
  std::vector<Slot> slots;
  std::mutex mu;
  std::condition_variable changed;
  bool stop = false;
  std::exception_ptr failure;

  Run(Session& session, const Schedule& schedule, const BlockedWhy& w, std::vector<uint16_t>* first)
      : s(session), sch(schedule), specs(schedule.specs), why(w), first_output(first),
        n_slots(std::max(1, session.policy_.jobs)), groups(schedule.needs.size()),
        dependents(schedule.needs.size()), slots(schedule.specs.size()) {
    for (size_t i = 0; i < specs.size(); ++i) groups[sch.group[i]].trials.push_back(i);
    for (size_t g = 0; g < groups.size(); ++g) {
      groups[g].left = groups[g].trials.size();
      groups[g].on_device.assign(std::max<size_t>(1, s.policy_.gpus.size()), 0);
      for (size_t n : sch.needs[g]) dependents[n].push_back(g);
    }
    std::lock_guard<std::mutex> lock(mu);
    for (size_t g = 0; g < groups.size(); ++g) settle(g);
  }

  // Under `mu`. A group whose needs have all settled becomes runnable, or BLOCKED when one failed
  // (then its own dependents are settled in turn). A group of no trials finishes at once.
  void settle(size_t g) {
    Group& gr = groups[g];
    if (gr.state != State::Waiting) return;
    std::vector<std::pair<size_t, const TrialResult*>> failed;
    for (size_t n : sch.needs[g]) {
      if (groups[n].state != State::Finished && groups[n].state != State::Blocked) return;
      if (groups[n].first_failure != SIZE_MAX) failed.emplace_back(n, &*slots[groups[n].first_failure].result);
    }
    if (failed.empty()) {
      gr.state = gr.trials.empty() ? State::Finished : State::Runnable;
    } else {
      auto reason = why ? why(g, failed) : std::make_pair(std::string("a group it needs failed"), std::string());
      gr.state = State::Blocked;
      gr.reason = std::move(reason.first);
      gr.by = std::move(reason.second);
      for (size_t i : gr.trials) {
        TrialResult r;
        r.spec = specs[i];
        r.outcome = Outcome::Blocked;
        r.message = gr.reason;
        r.blocked_by = gr.by;
        slots[i].result = std::move(r);
        slots[i].blocked = true;
      }
      if (!gr.trials.empty()) gr.first_failure = gr.trials.front();
    }
    if (gr.state != State::Runnable)
      for (size_t d : dependents[g]) settle(d);
  }

  size_t device_of(int slot) const { return s.policy_.gpus.empty() ? 0 : size_t(slot) % s.policy_.gpus.size(); }

  // Under `mu`: the group slot `slot`, bound to `bound`, takes its next trial from (SIZE_MAX: none
  // now). Staying costs nothing; another group's worker costs a process start (for the GPU backend
  // the driver's initialization, which the driver serializes across the host, worth tens of
  // trials), so a slot joins a group that has workers only while that leaves each at least
  // kShareTrials, counting its workers on every GPU (more GPUs do not make a start cheaper: they
  // make more of them at once), or where the group's trials have proved long (kLongTrialSeconds)
  // and no worker of it runs on the slot's GPU. The bench starts no spares and shares freely: one
  // slot per GPU.
  size_t pick(int slot, size_t bound) const {
    auto open = [&](size_t g) { return groups[g].state == State::Runnable && groups[g].handed < groups[g].trials.size(); };
    auto worth = [&](size_t g) {
      const Group& gr = groups[g];
      if (gr.workers == 0 || !s.policy_.prestart || !s.reuses_workers(specs[gr.trials.front()])) return true;
      if (gr.trials.size() - gr.handed >= kShareTrials * size_t(gr.workers + 1)) return true;
      return gr.on_device[device_of(slot)] == 0 && gr.timed > 0 && gr.wall / double(gr.timed) >= kLongTrialSeconds;
    };
    if (bound != SIZE_MAX && open(bound)) return bound;
    size_t best = SIZE_MAX;
    for (size_t g = 0; g < groups.size(); ++g)
      if (open(g) && worth(g) && (best == SIZE_MAX || groups[g].workers < groups[best].workers)) best = g;
    return best;
  }

  // Under `mu`: nothing is left to hand out, now or later.
  bool all_handed() const {
    for (const auto& gr : groups)
      if (gr.state == State::Waiting || (gr.state == State::Runnable && gr.handed < gr.trials.size())) return false;
    return true;
  }

  // Under `mu`: spares to keep: one for each group no worker has started yet, and those the policy
  // keeps for the session's next run (a bisect's next step).
  size_t spares_wanted() const {
    size_t unstarted = 0;
    for (const auto& gr : groups)
      unstarted += gr.handed == 0 && (gr.state == State::Waiting || gr.state == State::Runnable);
    return std::max(unstarted, std::min<size_t>(size_t(n_slots), s.policy_.kept_spares));
  }

  // Runs trial `i` in slot `slot`'s worker (or a process of its own): the child's report.
  ChildReport run_child(int slot, size_t i, std::unique_ptr<Worker>& worker, size_t want_spares) {
    const TrialSpec& spec = specs[i];
    if (!s.reuses_workers(spec))  // --isolate trial, or a submission (its child is its Python driver)
      return s.runner_.run_child(spec, false, s.policy_.env(slot));
    if (!worker) worker = s.take_worker(slot, spec, want_spares);
    const std::string dir = s.runner_.new_dir();
    ChildReport child = worker->run(spec, dir);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return child;
  }

  // Judges trial `i` from its child's report (the comparisons against the references).
  Slot judge(size_t i, ChildReport&& child, double started) {
    Slot out;
    if (first_output && !child.outputs.empty()) out.output = child.outputs.front();
    const auto t_eval = std::chrono::steady_clock::now();
    out.result = evaluate_trial(specs[i], std::move(child), s.cache_);
    out.result->started = started;
    const double evaluated = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_eval).count();
    out.result->judged = evaluated;
    std::lock_guard<std::mutex> lock(mu);
    s.parent_.evaluation += evaluated;
    return out;
  }

  // Under `mu`: records trial `i` of group `g`.
  void record(size_t g, size_t i, Slot&& out) {
    const bool failed = is_failure(out.result->outcome);
    slots[i] = std::move(out);
    Group& gr = groups[g];
    if (failed && (gr.first_failure == SIZE_MAX || i < gr.first_failure)) gr.first_failure = i;
    if (slots[i].result->wall > 0) {
      gr.wall += slots[i].result->wall;
      ++gr.timed;
    }
    if (--gr.left == 0) {
      gr.state = State::Finished;
      for (size_t d : dependents[g]) settle(d);
    }
    changed.notify_all();
  }

  // A trial judged on another thread while its worker runs the slot's next trial (RunPolicy::
  // overlap): the comparison of a large output takes as long as the child's run.
  struct Judging {
    size_t g = SIZE_MAX, i = 0;
    std::future<Slot> slot;
    bool pending() const { return g != SIZE_MAX; }
  };

  // Waits for `j`'s verdict and records it. Returns the process id of its child when it failed
  // (that process may have run the slot's next trial since), else 0.
  int finish(Judging& j) {
    if (!j.pending()) return 0;
    Slot out = j.slot.get();
    const int failed = is_failure(out.result->outcome) ? std::max(1, out.result->child_pid) : 0;
    std::lock_guard<std::mutex> lock(mu);
    record(j.g, j.i, std::move(out));
    j.g = SIZE_MAX;
    return failed;
  }

  // Fail-stop: no trial's result comes from a process that ran a failing trial before it (a FAIL
  // included). A slot hands its worker the next trial while the previous one is still being
  // judged; when that one turns out to fail, the next one's report is dropped and the trial runs
  // again in a fresh worker. Only a report whose child ended cleanly (PASS so far) is judged on
  // the side: any other (SKIP, or a child that failed: its worker is gone) is judged at once, which
  // for those takes no time, so a worker is neither dropped after a SKIP nor a trial run twice
  // after a crash.
  void slot_body(int slot) {
    Judging judging;
    try {
      std::unique_ptr<Worker> worker;
      size_t bound = SIZE_MAX;
      for (;;) {
        size_t g = SIZE_MAX, i = 0, want_spares = 0;
        {
          std::unique_lock<std::mutex> lock(mu);
          // A slot with a trial in judgement goes on only with the same group: the verdict may
          // unblock or block others, and a new group takes another worker anyway.
          auto next = [&] {
            const size_t p = pick(slot, bound);
            return judging.pending() && p != bound ? SIZE_MAX : p;
          };
          changed.wait(lock, [&] {
            return stop || judging.pending() || (g = next()) != SIZE_MAX || all_handed();
          });
          if (!stop) g = next();
          if (stop || g == SIZE_MAX) {
            if (stop || !judging.pending()) break;
            lock.unlock();
            if (finish(judging)) worker.reset();
            continue;
          }
          i = groups[g].trials[groups[g].handed++];
          if (g != bound) {
            if (bound != SIZE_MAX) {
              --groups[bound].workers;
              --groups[bound].on_device[device_of(slot)];
            }
            ++groups[g].workers;
            ++groups[g].on_device[device_of(slot)];
          }
          want_spares = spares_wanted();
        }
        if (g != bound) worker.reset();  // another combination: another process
        bound = g;
        double started = s.elapsed();
        ChildReport child = run_child(slot, i, worker, want_spares);
        if (const int failed = finish(judging); failed && child.pid == failed) {
          // This report came from the process that ran the failing trial: it does not count.
          worker.reset();
          started = s.elapsed();
          child = run_child(slot, i, worker, want_spares);
        }
        if (!s.policy_.overlap || child.outcome != Outcome::Pass) {
          Slot out = judge(i, std::move(child), started);
          if (is_failure(out.result->outcome)) worker.reset();
          std::lock_guard<std::mutex> lock(mu);
          record(g, i, std::move(out));
          continue;
        }
        judging.g = g;
        judging.i = i;
        auto work = [this, i, started, c = std::make_shared<ChildReport>(std::move(child))] {
          return judge(i, std::move(*c), started);
        };
        try {
          // A copy: std::async takes its function before it starts the thread, so a moved one
          // would be gone for the fallback below.
          judging.slot = std::async(std::launch::async, work);
        } catch (const std::system_error&) {
          judging.slot = std::async(std::launch::deferred, work);  // judged in finish(), here
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure) failure = std::current_exception();
      stop = true;
      changed.notify_all();
    }
    // A judgement still running reads this Run: wait for it (a deferred one never started).
    if (judging.pending() && judging.slot.valid() &&
        judging.slot.wait_for(std::chrono::seconds(0)) != std::future_status::deferred)
      judging.slot.wait();
  }

  // Records and prints the results in the order of `specs`, as each one's turn comes; a run of
  // BLOCKED trials of one group on one line.
  void record_in_order() {
    for (size_t i = 0; i < specs.size();) {
      std::unique_lock<std::mutex> lock(mu);
      changed.wait(lock, [&] { return slots[i].result.has_value() || failure; });
      if (!slots[i].result) return;
      if (slots[i].blocked) {
        const Group& gr = groups[sch.group[i]];
        size_t j = i;
        while (j < specs.size() && slots[j].blocked && sch.group[j] == sch.group[i]) ++j;
        const std::vector<TrialSpec> run(specs.begin() + long(i), specs.begin() + long(j));
        const std::string reason = gr.reason, by = gr.by;
        lock.unlock();
        s.add_not_run(run, Outcome::Blocked, reason, by);
        i = j;
        continue;
      }
      TrialResult r = *slots[i].result;  // copied: a blocked group's reason may still read it
      std::vector<uint16_t> output = std::move(slots[i].output);
      lock.unlock();
      if (first_output && first_output->empty() && !output.empty()) *first_output = std::move(output);
      s.results_.push_back(std::move(r));
      s.progress_line(s.results_.back(), s.results_.size(), s.results_.size());
      ++i;
    }
  }

  void run() {
    std::vector<std::thread> threads;
    // Whatever leaves this function (an exception while recording, or a thread that cannot be
    // started), the slots are told to stop and joined first: a joinable std::thread must not be
    // destroyed.
    auto stop_all = [&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        stop = true;
      }
      changed.notify_all();
      for (auto& t : threads)
        if (t.joinable()) t.join();
    };
    struct OnExit {
      std::function<void()> f;
      ~OnExit() { f(); }
    } join_all{stop_all};
    for (int k = 0; k < n_slots; ++k) threads.emplace_back([this, k] { slot_body(k); });
    record_in_order();
    stop_all();
    if (failure) std::rethrow_exception(failure);
  }
};

bool Session::reuses_workers(const TrialSpec& t) const {
  const External* ext = t.options.external(t.backend);
  return policy_.isolate == Isolation::Worker && !(ext && ext->kind == External::Submission);
}

void Session::run_schedule(const Schedule& sch, const BlockedWhy& why, std::vector<uint16_t>* first_output) {
  const std::vector<TrialSpec>& specs = sch.specs;
  if (specs.empty()) return;
  // The first spares start now: their backend loads while the parent gets the references. As many
  // as there are groups (each needs a worker), at most one per slot, spread over the slots' GPUs.
  const TrialSpec& head = specs.front();
  if (reuses_workers(head) && policy_.prestart && !head.options.external(head.backend)) {
    size_t ready = 0;
    {
      std::lock_guard<std::mutex> lock(spares_mu_);
      // Spares of a backend this run does not use (an earlier backend's) are of no further use.
      std::set<std::string> used;
      for (const auto& t : specs) used.insert(t.backend);
      spares_.erase(std::remove_if(spares_.begin(), spares_.end(),
                                   [&](const std::unique_ptr<Worker>& w) { return !used.count(w->preload()); }),
                    spares_.end());
      for (const auto& w : spares_) ready += w->preload() == head.backend;
    }
    const size_t first = std::min<size_t>(size_t(std::max(1, policy_.jobs)), std::max<size_t>(1, sch.needs.size()));
    try {
      for (size_t k = ready; k < first; ++k) start_spare(int(k), head.backend);
    } catch (const std::exception&) {
      // Spares are an optimization: the slots start workers when they need them.
    }
  }
  // Every reference these trials need, once per (case, input set), on the host's cores; the input
  // sets generated for them go to the store, where the children read them.
  std::vector<CaseSpec> cases;
  for (const auto& t : specs) cases.push_back(t.c);
  const auto t_refs = std::chrono::steady_clock::now();
  cache_.prefetch(cases, options_.runs, options_.fresh, 0,
                  [this](const CaseSpec& c, int set, InputSet mode, const Problem& p) { store_.put(c, set, mode, p); },
                  options_.instances && !options_.bench);
  parent_.references += std::chrono::duration<double>(std::chrono::steady_clock::now() - t_refs).count();
  Run(*this, sch, why, first_output).run();
}

}  // namespace nvfp4
