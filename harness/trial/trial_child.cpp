// trial_child.cpp — the child's side of a trial: `harness --child-trial SPEC` runs the stages and
// reports each over the pipe (see trial.hpp); `harness --child-worker` does the same for each SPEC
// it reads from stdin, then reports `end` (worker.hpp). The parent's side is worker.cpp, the SPEC
// encoding trial.cpp.
//
// Message lines: KIND [\t FIELD]...; fields escape backslash, tab and newline. Files in the trial
// directory: out<i>.f16 (checked call i+1's output), g.f32/u.f32 (the last call's intermediates),
// timed<i>.f16 (stage time's checked outputs, bench trials only).
#include "trial.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "errors.hpp"
#include "external.hpp"
#include "input_store.hpp"
#include "modules.hpp"
#include "plugin_plan.hpp"
#include "worker.hpp"

namespace nvfp4 {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Message lines: KIND [\t FIELD]...; fields escape backslash, tab and newline.

namespace {

std::string line_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '\\') o += "\\\\";
    else if (ch == '\n') o += "\\n";
    else if (ch == '\t') o += "\\t";
    else o += ch;
  }
  return o;
}


// The child's end of the pipe. write() directly: nothing sits in a buffer when the child dies.
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  void send(const std::string& kind, const std::vector<std::string>& fields = {}) {
    std::string line = kind;
    for (const auto& f : fields) line += '\t' + line_escape(f);
    line += '\n';
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        _exit(3);  // the parent is gone: nothing left to report to
      }
      p += n;
      left -= size_t(n);
    }
  }

 private:
  int fd_;
};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", s);
  return buf;
}

// Runs `body` as one stage: enter, body, leave with the wall time. An exception leaves the stage
// open (the parent then knows where it happened).
template <class F>
void stage(Channel& ch, Stage s, F&& body) {
  const std::string name = stage_name(s);
  ch.send("enter", {name});
  const auto t0 = Clock::now();
  body();
  ch.send("leave", {name, seconds_text(std::chrono::duration<double>(Clock::now() - t0).count())});
}

void write_file(const std::string& path, const void* data, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  const size_t n = bytes ? std::fwrite(data, 1, bytes, f) : 0;
  const bool ok = std::fclose(f) == 0 && n == bytes;
  if (!ok) throw std::runtime_error("short write to " + path);
}


// The backend and its optimizations as registered in this child (after its module or plugin
// loaded): the load probe's manifest lines, with the kind and wrapper order the parent's lattice
// needs (external.cpp probe_manifest reads them back). None when the module did not register the
// backend its file is named after.
void send_manifest(Channel& ch, const Registry& reg, const std::string& backend) {
  if (const Backend* b = reg.backend(backend)) {
    ch.send("manifest", {"backend", b->name, b->summary});
    for (const OptimizationManifest* o : reg.optimizations(b->name)) {
      std::string stages;
      for (Stage s : o->stages) stages += std::string(stages.empty() ? "" : ",") + stage_name(s);
      ch.send("manifest", {"optimization", o->name, stages, o->summary,
                           o->kind == OptKind::Variant ? "variant" : "wrapper", std::to_string(o->order)});
    }
  }
}

// Stage time (trial.hpp): the steady state under the bench's stopping rule, then the back-to-back
// figure; the last timed call's and the last back-to-back call's outputs go to the parent.
void time_stage(Channel& ch, const TrialSpec& t, Plan& plan, const std::vector<Problem>& sets, const std::string& dir) {
  const TrialOptions& o = t.options;
  const Shape& shape = sets[0].shape;
  for (const auto& note : fire_stage_faults(o.faults, Stage::Time, t.combo, o.slow_seconds, &shape))
    ch.send("note", {note});
  auto set_of = [&](int call) { return timed_call_set(call, o.runs); };
  BenchFigures f;
  f.t = measure_calls(plan, o.timing, [&](int i) { plan.set_inputs(sets[size_t(set_of(i))], o.fresh); });
  std::vector<uint16_t> c(size_t(shape.c_elems()));
  auto send_output = [&](int index, int set) {
    plan.read_output(c.data());
    for (const auto& note : apply_output_faults(o.faults, Stage::Time, t.combo, shape, c.data(), kPoisonBits))
      ch.send("note", {note});
    write_file(dir + "/timed" + std::to_string(index) + ".f16", c.data(), c.size() * 2);
    ch.send("timed-output", {std::to_string(index), std::to_string(set)});
  };
  send_output(0, set_of(f.t.reps - 1));
  // Back-to-back: enough calls for about 20 ms (at least 10, at most 2000), on the set after the
  // last timed call's, so its output is not left over from the timed calls.
  const int b2b_set = set_of(f.t.reps);
  f.b2b_calls = back_to_back_calls(f.t.median);
  plan.set_inputs(sets[size_t(b2b_set)], o.fresh);
  f.b2b = plan.back_to_back(plan, f.b2b_calls);
  send_output(1, b2b_set);
  auto num = [](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  ch.send("timing", {std::to_string(f.t.reps), num(f.t.median), num(f.t.min), num(f.t.mean), num(f.t.stdev),
                     num(f.t.rse), num(f.b2b), std::to_string(f.b2b_calls)});
}

// Whether the combination holds no wrapper: its plan is the base plan itself, whose configurations
// stage configs may switch freely (a wrapper such as a captured graph would keep replaying one).
bool only_variants(const Registry& reg, const std::string& backend, const Combo& combo) {
  for (const auto& name : combo.opts) {
    const Optimization* o = reg.optimization(backend, name);
    if (!o || o->kind != OptKind::Variant) return false;
  }
  return true;
}

// Stage configs (trial.hpp): each configuration of the base plan, one poisoned checked call on
// input set i mod (R+1), its output to the parent.
void configs_stage(Channel& ch, Plan& base, const std::vector<Problem>& sets, const TrialOptions& o,
                   const std::string& dir) {
  const std::vector<std::string> names = base.candidates();
  std::vector<uint16_t> c(size_t(sets[0].shape.c_elems()));
  for (size_t i = 0; i < names.size(); ++i) {
    const int set = int(i % size_t(warmup_set(o.runs) + 1));
    base.select(i);
    base.set_inputs(sets[size_t(set)], o.fresh);
    base.poison_output(kPoisonBits);
    base.enqueue();
    base.synchronize();
    base.read_output(c.data());
    write_file(dir + "/config" + std::to_string(i) + ".f16", c.data(), c.size() * 2);
    ch.send("config-output", {std::to_string(i), std::to_string(set), names[i]});
  }
}

// `loaded`: a worker's plugin, loaded by its first trial and kept for the next (nullptr: one
// trial per process).
void child_body(Channel& ch, const TrialSpec& t, const std::string& dir, bool probe,
                std::shared_ptr<const LoadedPlugin>* loaded = nullptr) {
  const Registry& reg = Registry::instance();
  const Backend* be = nullptr;
  const TrialOptions& o = t.options;
  std::vector<Problem> sets;  // index: input set (cases.hpp); the last one is the warm-up's
  bool skip = false;
  if (!t.plugin.empty() && !(loaded && *loaded)) {
    // The plugin's code runs from here on, in this child only: its load-time work is stage load.
    std::shared_ptr<const LoadedPlugin> plugin;
    stage(ch, Stage::Load, [&] {
      plugin = load_plugin(t.plugin);
      register_plugin(plugin);
    });
    if (loaded) *loaded = plugin;
    if (t.backend.empty()) {  // the load probe: what the plugin declares, as registered
      send_manifest(ch, reg, plugin->backend_name());
      return;
    }
    if (plugin->backend_name() != t.backend)
      throw InputError("plugin " + t.plugin + " now calls itself " + plugin->backend_name() + ", not " + t.backend);
  } else if (t.plugin.empty()) {
    // A built-in backend: its module's code runs from here on, in this child only (modules.hpp).
    // (A test binary that links paths into itself and runs its own children has the backend
    // registered already; the product harness links none.)
    if (!reg.backend(t.backend))
      stage(ch, Stage::Load, [&] {
        const std::string path = module_path(module_dir(), t.backend);
        load_module(path);
        if (!reg.backend(t.backend))
          throw std::runtime_error("module " + path + " loaded but registered no backend '" + t.backend + "'");
      });
    if (probe) send_manifest(ch, reg, t.backend);  // the load probe: what the module registered
  }
  stage(ch, Stage::Setup, [&] {
    be = reg.backend(t.backend);
    if (!be) throw InputError("unknown backend '" + t.backend + "'");
    const Support avail = be->available ? be->available() : Support::yes();
    if (!avail.ok) {
      ch.send("skip", {"backend " + t.backend + " unavailable: " + avail.reason});
      skip = true;
      return;
    }
    if (probe) {
      ch.send("available");
      skip = true;
      return;
    }
    check_combo(t.backend, t.combo);
    // Each input set from the parent's store when it is there (input_store.hpp), else generated.
    auto input_set = [&](int k) {
      const InputSet mode = k == 0 ? InputSet::Activations : o.fresh;
      Problem p;
      if (read_stored_set(o.input_store, t.c, k, mode, p, k == 0 ? nullptr : &sets[0])) return p;
      return k == 0 ? t.c.make() : make_input_set(t.c, sets[0], k, o.fresh);
    };
    sets.push_back(input_set(0));
    const Support sup = combo_supports(t.backend, t.combo, sets[0].shape);
    if (!sup.ok) {
      ch.send("skip", {t.combo.str() + " does not support " + sets[0].shape.str() + ": " + sup.reason});
      skip = true;
      return;
    }
    for (int k = 1; k <= warmup_set(o.runs); ++k) sets.push_back(input_set(k));
  });
  if (skip) return;
  const Problem& problem = sets[0];

  auto faults_at = [&](Stage s) {
    for (const auto& note : fire_stage_faults(o.faults, s, t.combo, o.slow_seconds, &problem.shape))
      ch.send("note", {note});
  };
  std::unique_ptr<Plan> plan;
  stage(ch, Stage::Init, [&] {
    faults_at(Stage::Init);
    plan = build_plan(t.backend, t.combo, sets[size_t(warmup_set(o.runs))], o.plan);
    if (!plan) throw std::runtime_error("build_plan returned no plan");
  });
  ch.send("describe", {plan->describe()});
  if (combo_has_stage(t.backend, t.combo, Stage::Tune)) {
    stage(ch, Stage::Tune, [&] {
      faults_at(Stage::Tune);
      plan->tune();
    });
    ch.send("describe", {plan->describe()});
  }
  stage(ch, Stage::Warmup, [&] {
    faults_at(Stage::Warmup);
    for (int i = 0; i < o.warmup; ++i) {
      plan->enqueue();
      plan->synchronize();
    }
  });
  if (combo_has_stage(t.backend, t.combo, Stage::Capture)) {
    stage(ch, Stage::Capture, [&] {
      faults_at(Stage::Capture);
      plan->capture();
    });
    ch.send("describe", {plan->describe()});
  }
  stage(ch, Stage::Run, [&] {
    faults_at(Stage::Run);
    std::vector<uint16_t> c(size_t(problem.shape.c_elems()));
    for (int call = 0; call < o.runs; ++call) {
      const int set = checked_call_set(call + 1);
      plan->set_inputs(sets[size_t(set)], o.fresh);
      // Every checked call but the last starts from the poison pattern (an element it does not
      // write is caught as unwritten); the last starts from the previous call's output, so a path
      // that only computes when it sees the poison returns that stale output and fails.
      if (o.runs == 1 || call + 1 < o.runs) plan->poison_output(kPoisonBits);
      plan->enqueue();
      plan->synchronize();
      plan->read_output(c.data());
      if (call == o.runs - 1)
        for (const auto& note : apply_output_faults(o.faults, Stage::Run, t.combo, problem.shape, c.data(), kPoisonBits))
          ch.send("note", {note});
      write_file(dir + "/out" + std::to_string(call) + ".f16", c.data(), c.size() * 2);
      ch.send("output", {std::to_string(call), std::to_string(set)});
    }
    std::vector<float> g, u;
    if (plan->read_intermediates(g, u)) {
      write_file(dir + "/g.f32", g.data(), g.size() * 4);
      write_file(dir + "/u.f32", u.data(), u.size() * 4);
      ch.send("intermediates", {std::to_string(g.size()), std::to_string(u.size())});
    }
  });
  if (o.configs && !o.bench && only_variants(reg, t.backend, t.combo) && plan->base()->candidates().size() > 1)
    stage(ch, Stage::Configs, [&] { configs_stage(ch, *plan->base(), sets, o, dir); });
  if (o.bench) stage(ch, Stage::Time, [&] { time_stage(ch, t, *plan, sets, dir); });
  stage(ch, Stage::Teardown, [&] { plan.reset(); });
}

// No core files: crash drills must not litter them.
void no_core_files() {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
}

// Runs one decoded trial and reports how it ended (done, or error with the message).
void run_trial(Channel& ch, const TrialSpec& spec, const std::string& dir, bool probe,
               std::shared_ptr<const LoadedPlugin>* loaded) {
  try {
    if (const char* device = std::getenv("CUDA_VISIBLE_DEVICES")) ch.send("device", {device});
    child_body(ch, spec, dir, probe, loaded);
    ch.send("done");
  } catch (const InputError& e) {
    ch.send("error", {std::string("InputError: ") + e.what()});
  } catch (const std::exception& e) {
    ch.send("error", {e.what()});
  } catch (...) {
    ch.send("error", {"unknown exception"});
  }
  std::fflush(nullptr);
}

}  // namespace

// The parent's spawn() made the child's process group (the parent kills the whole group on a
// timeout); the child stays in it, so that under compute-sanitizer (--sanitize), where the child is
// the sanitizer's child, the group still holds both. It dies with whoever started it.
void stay_in_group() { prctl(PR_SET_PDEATHSIG, SIGKILL); }

int child_main(const std::string& encoded) {
  stay_in_group();
  no_core_files();
  int fd = -1;
  std::string dir;
  bool probe = false;
  TrialSpec spec;
  try {
    spec = decode_trial(encoded, &fd, &dir, &probe);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness child: %s\n", e.what());
    return 2;
  }
  if (fd < 0) return 2;
  Channel ch(fd);
  run_trial(ch, spec, dir, probe, nullptr);
  _exit(0);  // skip static destructors (driver teardown is not part of any trial)
}

int worker_main() {
  stay_in_group();
  no_core_files();
  std::shared_ptr<const LoadedPlugin> loaded;  // loaded once, by the first trial that names it
  for (;;) {
    // One SPEC: its lines up to an empty one (encode_trial escapes newlines inside values).
    std::string text, line;
    while (std::getline(std::cin, line) && !line.empty()) text += line + '\n';
    if (text.empty()) break;  // the parent closed our stdin: nothing more to run
    int fd = -1;
    std::string dir;
    bool probe = false;
    TrialSpec spec;
    try {
      spec = decode_trial(text, &fd, &dir, &probe);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "harness worker: %s\n", e.what());
      _exit(2);
    }
    if (fd < 0) _exit(2);
    // This trial's stdout and stderr go to its own log, as a one-process child's do.
    std::fflush(nullptr);
    const int log = ::open((dir + "/child.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
      ::close(log);
    }
    Channel ch(fd);
    run_trial(ch, spec, dir, probe, &loaded);
    ch.send("end");
  }
  std::fflush(nullptr);
  _exit(0);
}

}  // namespace nvfp4
