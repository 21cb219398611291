// trial.cpp — the SPEC encoding, the parent's side of a trial (fork/exec, the stage watchdog,
// reading the child's report) and trial evaluation (see trial.hpp). The child's side is
// trial_child.cpp.
//
// Parent and child agree on: the SPEC encoding (encode_trial/decode_trial), the message lines on
// the pipe (tab-separated, fields backslash-escaped) and the files in the trial directory:
//   out<i>.f16   the output of checked call i+1 (L*M*N fp16 bit patterns, (L, M, N))
//   g.f32 u.f32  the path's intermediates after the last checked call, when it exposes them
//                (fp32, (L, M, N), alpha not applied)
//   child.log    the child's stdout and stderr
#include "trial.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

double Budgets::of(const std::string& stage) const {
  if (stage == "load") return load;
  if (stage == "tune") return tune;
  if (stage == "warmup") return warmup;
  if (stage == "capture") return capture;
  if (stage == "run") return run;
  return init;  // init, and the harness's own setup and teardown
}

const External* TrialOptions::external(const std::string& backend) const {
  for (const auto& e : externals)
    if (e.backend == backend) return &e;
  return nullptr;
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
  kv("slow", num(o.slow_seconds));
  kv("tune_cache", o.plan.tune_cache_dir);
  kv("tune_reps", std::to_string(o.plan.tune_reps));
  kv("tune_time", num(o.plan.tune_budget_s));
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
    else if (k == "slow") t.options.slow_seconds = std::atof(v.c_str());
    else if (k == "tune_cache") t.options.plan.tune_cache_dir = v;
    else if (k == "tune_reps") t.options.plan.tune_reps = std::atoi(v.c_str());
    else if (k == "tune_time") t.options.plan.tune_budget_s = std::atof(v.c_str());
    else if (k == "fault") t.options.faults.push_back(Fault::parse(v));
    else if (k == "fd") { if (fd) *fd = std::atoi(v.c_str()); }
    else if (k == "dir") { if (dir) *dir = v; }
    else if (k == "probe") { if (probe) *probe = v == "1"; }
    else throw InputError("bad trial spec key '" + k + "'");
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// Parent side.

namespace {

// A message line split into its fields (trial_child.cpp escapes them).
std::vector<std::string> split_line(const std::string& line) {
  std::vector<std::string> fields(1);
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (ch == '\t') {
      fields.emplace_back();
    } else if (ch == '\\' && i + 1 < line.size()) {
      const char nx = line[++i];
      fields.back() += nx == 'n' ? '\n' : nx == 't' ? '\t' : nx;
    } else {
      fields.back() += ch;
    }
  }
  return fields;
}

bool read_file(const std::string& path, void* data, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  const size_t n = std::fread(data, 1, bytes, f);
  const bool exact = n == bytes && std::fgetc(f) == EOF;
  std::fclose(f);
  return exact;
}

std::string signal_text(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGINT: return "SIGINT";
    case SIGSYS: return "SIGSYS";
    default: return "signal " + std::to_string(sig);
  }
}

std::string one_decimal(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

// The last `max_lines` lines of a log file.
std::string log_tail(const std::string& path, size_t max_lines = 12) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 4000);
  f.seekg(from);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::vector<std::string> lines;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) lines.push_back(line);
  if (from > 0 && !lines.empty()) lines.erase(lines.begin());  // a partial first line
  std::string out;
  for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : "\n") + lines[i];
  return out;
}

}  // namespace

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

ChildReport TrialRunner::probe(const std::string& backend, const TrialOptions& options) {
  const External* ext = options.external(backend);
  if (ext && ext->kind == External::Submission) {
    ChildReport rep;
    rep.outcome = Outcome::Pass;
    rep.available = true;
    return rep;
  }
  TrialSpec t;
  t.backend = backend;
  t.options = options;
  t.options.faults.clear();
  t.c.shape = Shape{1, 1, 16, 1};
  t.c.dist = "ones";
  return run_child(t, true);
}

ChildReport TrialRunner::load_probe(const std::string& plugin, const TrialOptions& options) {
  TrialSpec t;
  t.plugin = plugin;
  t.options = options;
  t.options.faults.clear();
  t.c.shape = Shape{1, 1, 16, 1};
  t.c.dist = "ones";
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

namespace {
// Closes a file descriptor when the scope ends, unless closed before.
struct FdGuard {
  int fd = -1;
  ~FdGuard() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};
}  // namespace

ChildReport TrialRunner::run_child(const TrialSpec& spec, bool probe) {
  ChildReport rep;
  const std::string dir = tmp_ + "/t" + std::to_string(counter_++);
  if (mkdir(dir.c_str(), 0700) != 0)
    throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
  const std::string log_path = dir + "/child.log";

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  // Every descriptor is closed on every path out of here, exceptions included.
  FdGuard read_end{fds[0]}, write_end{fds[1]};
  FdGuard log_guard{::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
  FdGuard null_guard{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  const int log_fd = log_guard.fd, null_fd = null_guard.fd;
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  const std::string encoded = encode_trial(spec, fds[1], dir, probe);
  std::vector<std::string> args = {exe_, "--child-trial", encoded};
  const External* ext = spec.options.external(spec.backend);
  if (ext && ext->kind == External::Submission) {
    write_submission_inputs(spec, dir);  // the driver reads its input sets from the trial directory
    args = submission_child_args(*ext, spec, fds[1], dir);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();

  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the harness
    if (getppid() != parent) _exit(120);
    if (null_fd >= 0) dup2(null_fd, 0);
    if (log_fd >= 0) {
      dup2(log_fd, 1);
      dup2(log_fd, 2);
    }
    fcntl(fds[1], F_SETFD, 0);  // the write end survives exec
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no window in which a kill(-pid) misses the group
  write_end.close();
  log_guard.close();
  null_guard.close();

  const Budgets& b = spec.options.budget;
  const auto trial_deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(b.trial));
  std::string stage = "setup";
  auto stage_t0 = t0;
  auto stage_deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(b.of("setup")));
  bool got_done = false, got_skip = false, got_error = false, killed = false, trial_budget_hit = false;
  std::string skip_reason, error_message;
  int outputs = 0;
  std::vector<int> output_sets;
  size_t mid_g = 0, mid_u = 0;
  std::string pending;

  auto handle = [&](const std::string& line) {
    const auto f = split_line(line);
    const std::string& kind = f[0];
    const auto now = Clock::now();
    if (kind == "enter" && f.size() > 1) {
      stage = f[1];
      stage_t0 = now;
      stage_deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(b.of(stage)));
      rep.stages.push_back({stage, 0.0, false});
    } else if (kind == "leave" && f.size() > 2) {
      for (auto& s : rep.stages)
        if (s.stage == f[1] && !s.completed) {
          s.seconds = std::atof(f[2].c_str());
          s.completed = true;
        }
    } else if (kind == "describe" && f.size() > 1) {
      rep.describe = f[1];
    } else if (kind == "note" && f.size() > 1) {
      rep.notes.push_back(f[1]);
    } else if (kind == "skip") {
      got_skip = true;
      skip_reason = f.size() > 1 ? f[1] : "";
    } else if (kind == "error") {
      got_error = true;
      error_message = f.size() > 1 ? f[1] : "";
    } else if (kind == "output") {
      ++outputs;
      output_sets.push_back(f.size() > 2 ? std::atoi(f[2].c_str()) : -1);
    } else if (kind == "intermediates" && f.size() > 2) {
      rep.have_intermediates = true;
      mid_g = size_t(std::atoll(f[1].c_str()));
      mid_u = size_t(std::atoll(f[2].c_str()));
    } else if (kind == "available") {
      rep.available = true;
    } else if (kind == "manifest") {
      rep.manifest.emplace_back(f.begin() + 1, f.end());
    } else if (kind == "done") {
      got_done = true;
    }
  };

  // From here on the child exists: if anything below throws, it is killed (not left running).
  struct ChildGuard {
    pid_t pid;
    bool armed = true;
    ~ChildGuard() {
      if (!armed) return;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      int st = 0;
      reap_within(int(pid), &st, kReapSeconds);
    }
  } child_guard{pid};

  for (;;) {
    const auto now = Clock::now();
    const auto deadline = std::min(stage_deadline, trial_deadline);
    if (now >= deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      killed = true;
      trial_budget_hit = trial_deadline <= stage_deadline;
      break;
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    struct pollfd p = {fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<int64_t>(ms, 1000)));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    if (r == 0) continue;  // re-check the deadline
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    if (n == 0) break;  // EOF: the child exited (or closed its end)
    pending.append(buf, size_t(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      handle(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
  }
  read_end.close();
  child_guard.armed = false;
  const auto end_of_talk = Clock::now();

  // Reap the child. After its pipe closed it has little left to do; give it a grace period.
  // A killed child is waited for at most kReapSeconds (see reap_within).
  int status = 0;
  const std::string left_behind = "child (pid " + std::to_string(pid) + ") not reaped within " +
                                  one_decimal(kReapSeconds) +
                                  " s after SIGKILL (stuck in an uninterruptible call?); left behind";
  if (killed) {
    if (!reap_within(int(pid), &status, kReapSeconds)) rep.notes.push_back(left_behind);
  } else if (!reap_within(int(pid), &status, 10.0)) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    rep.notes.push_back("child did not exit within 10 s after its last message; killed");
    if (!reap_within(int(pid), &status, kReapSeconds)) {
      rep.notes.push_back(left_behind);
      status = SIGKILL;  // reported as killed (WIFSIGNALED) since it never exited by itself
    }
  }
  rep.wall = std::chrono::duration<double>(Clock::now() - t0).count();
  rep.stage = stage;
  rep.stage_elapsed = std::chrono::duration<double>(end_of_talk - stage_t0).count();
  for (auto& s : rep.stages)
    if (!s.completed) s.seconds = std::chrono::duration<double>(end_of_talk - stage_t0).count();

  if (killed) {
    rep.outcome = Outcome::Timeout;
    const double elapsed = rep.stage_elapsed;
    if (trial_budget_hit)
      rep.message = "trial exceeded its budget of " + one_decimal(b.trial) + " s (in stage " + stage +
                    " after " + one_decimal(elapsed) + " s); process group killed";
    else
      rep.message = "stage " + stage + " exceeded its budget of " + one_decimal(b.of(stage)) +
                    " s (killed after " + one_decimal(elapsed) + " s)";
  } else if (WIFSIGNALED(status)) {
    rep.outcome = Outcome::Crash;
    rep.message = signal_text(WTERMSIG(status)) + " in stage " + stage;
    rep.child_log = log_tail(log_path);
  } else if (got_error) {
    rep.outcome = Outcome::Error;
    rep.message = error_message;
    rep.child_log = log_tail(log_path);
  } else if (got_skip) {
    rep.outcome = Outcome::Skip;
    rep.message = skip_reason;
  } else if (got_done && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    rep.outcome = Outcome::Pass;  // completed: outputs to check
  } else {
    rep.outcome = Outcome::Error;
    rep.message = "child exited with status " +
                  std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " in stage " + stage +
                  " without reporting why";
    rep.child_log = log_tail(log_path);
  }

  if (rep.outcome == Outcome::Pass && !probe) {
    const int64_t elems = spec.c.from_dir() ? -1 : spec.c.shape.c_elems();
    for (int i = 0; i < outputs; ++i) {
      const std::string path = dir + "/out" + std::to_string(i) + ".f16";
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0 || st.st_size % 2 != 0 ||
          (elems >= 0 && st.st_size != elems * 2)) {
        rep.outcome = Outcome::Error;
        rep.message = "output file of call " + std::to_string(i + 1) + " is missing or has the wrong size";
        break;
      }
      std::vector<uint16_t> c(size_t(st.st_size / 2));
      read_file(path, c.data(), c.size() * 2);
      rep.outputs.push_back(std::move(c));
    }
    rep.output_sets = output_sets;
    if (rep.have_intermediates) {
      rep.g.resize(mid_g);
      rep.u.resize(mid_u);
      if (!read_file(dir + "/g.f32", rep.g.data(), mid_g * 4) ||
          !read_file(dir + "/u.f32", rep.u.data(), mid_u * 4)) {
        rep.have_intermediates = false;
        rep.notes.push_back("intermediates announced but unreadable");
      }
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rep;
}

TrialResult TrialRunner::run(const TrialSpec& spec, ReferenceCache& cache) {
  return evaluate_trial(spec, run_child(spec), cache);
}

}  // namespace nvfp4
