// trial.cpp — the SPEC encoding and the trial runner's probes (see trial.hpp). The parent's side of
// a child (fork/exec, the stage watchdog, reading the report; workers) is worker.cpp, the child's
// side trial_child.cpp, trial evaluation evaluate.cpp.
//
// Parent and child agree on: the SPEC encoding (encode_trial/decode_trial), the message lines on
// the pipe (tab-separated, fields backslash-escaped) and the files in the trial directory
// (worker.cpp).
#include "trial.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "errors.hpp"
#include "external.hpp"
#include "plugin_plan.hpp"

namespace nvfp4 {

using Clock = std::chrono::steady_clock;

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "PASS";
    case Outcome::Fail: return "FAIL";
    case Outcome::Error: return "ERROR";
    case Outcome::Crash: return "CRASH";
    case Outcome::Timeout: return "TIMEOUT";
    case Outcome::Skip: return "SKIP";
    case Outcome::Blocked: return "BLOCKED";
  }
  return "?";
}

bool outcome_of(const std::string& name, Outcome& out) {
  for (Outcome o : {Outcome::Pass, Outcome::Fail, Outcome::Error, Outcome::Crash, Outcome::Timeout,
                    Outcome::Skip, Outcome::Blocked})
    if (name == outcome_name(o)) {
      out = o;
      return true;
    }
  return false;
}

const External* TrialOptions::external(const std::string& backend) const {
  for (const auto& e : externals)
    if (e.backend == backend) return &e;
  return nullptr;
}

double TrialResult::overhead() const {
  if (wall <= 0) return 0;
  double inside = 0;
  for (const auto& s : stages)
    if (!s.ahead) inside += s.seconds;
  return std::max(0.0, wall - inside);
}

double TrialResult::stage_seconds(const std::string& name) const {
  for (const auto& s : stages)
    if (s.stage == name) return s.seconds;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// SPEC encoding: "key=value" lines; values escape '%', newline and control bytes as %XX.

namespace {

std::string pct_escape(const std::string& s) {
  std::string o;
  for (unsigned char ch : s) {
    if (ch == '%' || ch < 0x20) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      o += buf;
    } else {
      o += char(ch);
    }
  }
  return o;
}

std::string pct_unescape(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      o += char(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      o += s[i];
    }
  }
  return o;
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string encode_trial(const TrialSpec& t, int fd, const std::string& dir, bool probe) {
  std::ostringstream os;
  auto kv = [&](const char* k, const std::string& v) { os << k << '=' << pct_escape(v) << '\n'; };
  kv("backend", t.backend);
  const External* ext = t.options.external(t.backend);
  const std::string plugin = !t.plugin.empty() ? t.plugin : ext && ext->kind == External::Plugin ? ext->path : "";
  if (!plugin.empty()) kv("plugin", plugin);
  kv("combo", t.combo.str());
  if (t.c.from_dir()) {
    kv("inputs", t.c.inputs_dir);
    kv("batch_last", t.c.batch_last ? "1" : "0");
  } else {
    kv("shape", t.c.shape.str());
    kv("dist", t.c.dist);
    kv("seed", std::to_string(t.c.seed));
  }
  if (t.c.has_alpha()) kv("alpha", alphas_text(t.c.alpha1, t.c.alpha2));
  const TrialOptions& o = t.options;
  kv("fresh", input_set_name(o.fresh));
  kv("warmup", std::to_string(o.warmup));
  kv("runs", std::to_string(o.runs));
  kv("configs", o.configs ? "1" : "0");
  kv("instances", o.instances ? "1" : "0");
  kv("slow", num(o.slow_seconds));
  kv("tune_cache", o.plan.tune_cache_dir);
  kv("tune_reps", std::to_string(o.plan.tune_reps));
  kv("tune_time", num(o.plan.tune_budget_s));
  if (!o.input_store.empty()) kv("input_store", o.input_store);
  if (o.bench) {
    kv("bench", "1");
    kv("bench_rse", num(o.timing.rse));
    kv("bench_max_time", num(o.timing.max_time_s));
    kv("bench_min_reps", std::to_string(o.timing.min_reps));
    kv("bench_max_reps", std::to_string(o.timing.max_reps));
  }
  for (const auto& f : o.faults) kv("fault", f.str());
  kv("fd", std::to_string(fd));
  kv("dir", dir);
  kv("probe", probe ? "1" : "0");
  return os.str();
}

TrialSpec decode_trial(const std::string& text, int* fd, std::string* dir, bool* probe) {
  TrialSpec t;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw InputError("bad trial spec line '" + line + "'");
    const std::string k = line.substr(0, eq), v = pct_unescape(line.substr(eq + 1));
    if (k == "backend") t.backend = v;
    else if (k == "plugin") t.plugin = v;
    else if (k == "combo") t.combo = Combo::parse(v);
    else if (k == "inputs") t.c.inputs_dir = v;
    else if (k == "batch_last") t.c.batch_last = v == "1";
    else if (k == "shape") t.c.shape = Shape::parse(v);
    else if (k == "dist") t.c.dist = v;
    else if (k == "seed") t.c.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "alpha") std::tie(t.c.alpha1, t.c.alpha2) = parse_alphas(v);
    else if (k == "fresh") t.options.fresh = v == "all" ? InputSet::All : InputSet::Activations;
    else if (k == "warmup") t.options.warmup = std::atoi(v.c_str());
    else if (k == "runs") t.options.runs = std::atoi(v.c_str());
    else if (k == "configs") t.options.configs = v == "1";
    else if (k == "instances") t.options.instances = v == "1";
    else if (k == "slow") t.options.slow_seconds = std::atof(v.c_str());
    else if (k == "tune_cache") t.options.plan.tune_cache_dir = v;
    else if (k == "tune_reps") t.options.plan.tune_reps = std::atoi(v.c_str());
    else if (k == "tune_time") t.options.plan.tune_budget_s = std::atof(v.c_str());
    else if (k == "fault") t.options.faults.push_back(Fault::parse(v));
    else if (k == "input_store") t.options.input_store = v;
    else if (k == "bench") t.options.bench = v == "1";
    else if (k == "bench_rse") t.options.timing.rse = std::atof(v.c_str());
    else if (k == "bench_max_time") t.options.timing.max_time_s = std::atof(v.c_str());
    else if (k == "bench_min_reps") t.options.timing.min_reps = std::atoi(v.c_str());
    else if (k == "bench_max_reps") t.options.timing.max_reps = std::atoi(v.c_str());
    else if (k == "fd") { if (fd) *fd = std::atoi(v.c_str()); }
    else if (k == "dir") { if (dir) *dir = v; }
    else if (k == "probe") { if (probe) *probe = v == "1"; }
    else throw InputError("bad trial spec key '" + k + "'");
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// Parent side (the conversation with a child, run_child and workers: worker.cpp).

TrialRunner::TrialRunner(std::string exe) : exe_(std::move(exe)) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/nvfp4-harness-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    throw std::runtime_error("cannot create a private temporary directory under " + tmpl + ": " +
                             std::strerror(errno));
  tmp_ = buf.data();
}

TrialRunner::~TrialRunner() {
  std::error_code ec;
  std::filesystem::remove_all(tmp_, ec);
}

namespace {
// A probe child's spec: no faults, the smallest case (a probe builds no plan).
TrialSpec probe_spec(const TrialOptions& options) {
  TrialSpec t;
  t.options = options;
  t.options.faults.clear();
  t.c.shape = Shape{1, 1, 16, 1};
  t.c.dist = "ones";
  return t;
}
}  // namespace

ChildReport TrialRunner::probe(const std::string& backend, const TrialOptions& options, const EnvOverrides& env) {
  const External* ext = options.external(backend);
  if (ext && ext->kind == External::Submission) {
    ChildReport rep;
    rep.outcome = Outcome::Pass;
    rep.available = true;
    return rep;
  }
  TrialSpec t = probe_spec(options);
  t.backend = backend;
  return run_child(t, true, env);
}

ChildReport TrialRunner::load_probe(const std::string& plugin, const TrialOptions& options) {
  TrialSpec t = probe_spec(options);
  t.plugin = plugin;
  return run_child(t, true);
}

bool reap_within(int pid, int* status, double limit_s) {
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(limit_s));
  for (;;) {
    const pid_t w = waitpid(pid_t(pid), status, WNOHANG);
    if (w == pid_t(pid)) return true;
    if (w < 0 && errno != EINTR) return true;  // not (or no longer) our child: nothing to wait for
    if (Clock::now() >= end) return false;
    usleep(2000);
  }
}

TrialResult TrialRunner::run(const TrialSpec& spec, ReferenceCache& cache) {
  return evaluate_trial(spec, run_child(spec), cache);
}

}  // namespace nvfp4
