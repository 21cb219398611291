// trial_child.cpp — the child's side of a trial: `harness --child-trial SPEC` runs the stages and
// reports each over the pipe (see trial.hpp); `harness --child-worker` does the same for each SPEC
// it reads from stdin, then reports `end` (worker.hpp). The parent's side is worker.cpp, the SPEC
// encoding trial.cpp. Stages load and setup are here; the rest is stages.hpp run_stages, whose
// products PipeSink turns into files and messages.
//
// Message lines: KIND [\t FIELD]...; fields escape backslash, tab and newline. Files in the trial
// directory: out<i>.f16 (checked call i+1's output), g.f32/u.f32 (the last call's intermediates),
// config<i>.f16 (stage configs' outputs), timed<i>.f16 (stage time's checked outputs, bench trials
// only).
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
#include "modules.hpp"
#include "plugin_plan.hpp"
#include "stages.hpp"
#include "worker.hpp"

namespace nvfp4 {

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

// The child's sink: each output to a file in the trial directory, then its message; everything
// else as a message.
class PipeSink : public StageSink {
 public:
  PipeSink(Channel& ch, const std::string& dir) : ch_(ch), dir_(dir) {}
  void enter(Stage s) override { ch_.send("enter", {stage_name(s)}); }
  void leave(Stage s, double seconds) override { ch_.send("leave", {stage_name(s), seconds_text(seconds)}); }
  void describe(const std::string& text) override { ch_.send("describe", {text}); }
  void note(const std::string& text) override { ch_.send("note", {text}); }
  void output(int call, int set, const std::vector<uint16_t>& c) override {
    write_file(dir_ + "/out" + std::to_string(call) + ".f16", c.data(), c.size() * 2);
    ch_.send("output", {std::to_string(call), std::to_string(set)});
  }
  void intermediates(const std::vector<float>& g, const std::vector<float>& u) override {
    write_file(dir_ + "/g.f32", g.data(), g.size() * 4);
    write_file(dir_ + "/u.f32", u.data(), u.size() * 4);
    ch_.send("intermediates", {std::to_string(g.size()), std::to_string(u.size())});
  }
  void config_output(int index, int set, const std::string& name, const std::vector<uint16_t>& c) override {
    write_file(dir_ + "/config" + std::to_string(index) + ".f16", c.data(), c.size() * 2);
    ch_.send("config-output", {std::to_string(index), std::to_string(set), name});
  }
  void instance_output(int index, int plan, int set, InputSet mode, const std::vector<uint16_t>& c) override {
    write_file(dir_ + "/instance" + std::to_string(index) + ".f16", c.data(), c.size() * 2);
    ch_.send("instance-output", {std::to_string(index), std::to_string(plan), std::to_string(set), input_set_name(mode)});
  }
  void timed_output(int index, int set, const std::vector<uint16_t>& c) override {
    write_file(dir_ + "/timed" + std::to_string(index) + ".f16", c.data(), c.size() * 2);
    ch_.send("timed-output", {std::to_string(index), std::to_string(set)});
  }
  void timing(const BenchFigures& f) override {
    auto num = [](double v) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      return std::string(buf);
    };
    ch_.send("timing", {std::to_string(f.t.reps), num(f.t.median), num(f.t.min), num(f.t.mean), num(f.t.stdev),
                        num(f.t.rse), num(f.b2b), std::to_string(f.b2b_calls)});
  }

 private:
  Channel& ch_;
  std::string dir_;
};

// `loaded`: a worker's plugin, loaded by its first trial and kept for the next (nullptr: one
// trial per process).
void child_body(Channel& ch, const TrialSpec& t, const std::string& dir, bool probe,
                std::shared_ptr<const LoadedPlugin>* loaded = nullptr) {
  const Registry& reg = Registry::instance();
  PipeSink sink(ch, dir);
  std::vector<Problem> sets;  // index: input set (cases.hpp); the last one is the warm-up's
  bool skip = false;
  if (!t.plugin.empty() && !(loaded && *loaded)) {
    // The plugin's code runs from here on, in this child only: its load-time work is stage load.
    std::shared_ptr<const LoadedPlugin> plugin;
    run_stage(sink, Stage::Load, [&] {
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
      run_stage(sink, Stage::Load, [&] {
        const std::string path = module_path(module_dir(), t.backend);
        load_module(path);
        if (!reg.backend(t.backend))
          throw std::runtime_error("module " + path + " loaded but registered no backend '" + t.backend + "'");
      });
    if (probe) send_manifest(ch, reg, t.backend);  // the load probe: what the module registered
  }
  run_stage(sink, Stage::Setup, [&] {
    const Backend* be = reg.backend(t.backend);
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
    sets.push_back(trial_input_set(t, 0, nullptr));
    const Support sup = combo_supports(t.backend, t.combo, sets[0].shape);
    if (!sup.ok) {
      ch.send("skip", {t.combo.str() + " does not support " + sets[0].shape.str() + ": " + sup.reason});
      skip = true;
      return;
    }
    for (int k = 1; k <= warmup_set(t.options.runs); ++k) sets.push_back(trial_input_set(t, k, &sets[0]));
  });
  if (skip) return;
  run_stages(t, sets, sink);
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

namespace {

// A spare worker's head start (worker.hpp): the built-in backend's module loaded, its availability
// asked and its per-process setup done (for the GPU backend: the driver's initialization and the
// device's context) before the first SPEC.
// "enter load" goes out at once, so that a load that hangs is the first trial's TIMEOUT in stage
// load; "leave load" when it is done. A load that failed is told only when the first SPEC comes,
// as that trial's ERROR in stage load (the parent then ends the worker). "leave load" says
// "ahead": that stage's time is not part of the trial's wall time (trial.hpp StageTime).
struct Preload {
  std::string backend;
  std::string error;  // why the load failed ("" when it did not, or when there was none)
};

Preload preload_backend(const std::string& backend, int fd) {
  Preload p{backend, ""};
  Channel ch(fd);
  const Registry& reg = Registry::instance();
  ch.send("enter", {stage_name(Stage::Load)});
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const std::string path = module_path(module_dir(), backend);
    load_module(path);
    const Backend* be = reg.backend(backend);
    if (!be) throw std::runtime_error("module " + path + " loaded but registered no backend '" + backend + "'");
    // The answer is asked again, cheaply, in the trial's setup; an unavailable backend skips there.
    const Support avail = be->available ? be->available() : Support::yes();
    if (avail.ok && be->prepare) be->prepare();
  } catch (const std::exception& e) {
    p.error = e.what();
    return p;
  } catch (...) {
    p.error = "unknown exception";
    return p;
  }
  ch.send("leave", {stage_name(Stage::Load),
                    seconds_text(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()), "ahead"});
  return p;
}

}  // namespace

int worker_main(int argc, char** argv) {
  stay_in_group();
  no_core_files();
  std::string preload;
  int report_fd = -1;
  for (int i = 0; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--preload") preload = argv[i + 1];
    else if (flag == "--report-fd") report_fd = std::atoi(argv[i + 1]);
  }
  if ((argc % 2) != 0 || preload.empty() != (report_fd < 0)) {
    std::fprintf(stderr, "harness worker: usage: --child-worker [--preload BACKEND --report-fd N]\n");
    return 2;
  }
  Preload head;
  if (!preload.empty()) head = preload_backend(preload, report_fd);
  bool first = true;
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
    if (first && !head.backend.empty() && (!head.error.empty() || spec.backend != head.backend)) {
      // The preload's failure is this first trial's (still in stage load); a trial of another
      // backend is the parent's mistake, reported rather than run beside the wrong module.
      ch.send("error", {!head.error.empty() ? head.error
                                            : "this worker loaded backend " + head.backend + " ahead, not " + spec.backend});
      ch.send("end");
      std::fflush(nullptr);
      _exit(0);
    }
    first = false;
    run_trial(ch, spec, dir, probe, &loaded);
    ch.send("end");
  }
  std::fflush(nullptr);
  _exit(0);
}

}  // namespace nvfp4
