// worker.cpp — the parent's side of trial children: reading a child's report under the stage
// watchdog, classifying how it ended, a one-process trial (TrialRunner::run_child) and a worker
// (see worker.hpp; the SPEC encoding is trial.cpp, the child's side trial_child.cpp).
//
// Files in a trial's directory:
//   out<i>.f16   the output of checked call i+1 (L*M*N fp16 bit patterns, (L, M, N))
//   timed<i>.f16 bench mode: timed output i of stage time (0: the last timed call, 1: the last
//                back-to-back call)
//   config<i>.f16 stage configs: the output of the i-th configuration's checked call
//   g.f32 u.f32  the path's intermediates after the last checked call, when it exposes them
//                (fp32, (L, M, N), alpha not applied)
//   child.log    the child's stdout and stderr (a worker's: while it ran this trial)
#include "worker.hpp"

#include "process.hpp"
#include "sanitizer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "external.hpp"

namespace nvfp4 {

using Clock = Conversation::Clock;

namespace {

Clock::duration secs(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

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

// Closes a file descriptor when the scope ends, unless closed before.
struct FdGuard {
  int fd = -1;
  ~FdGuard() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

std::string left_behind(int pid) {
  return "child (pid " + std::to_string(pid) + ") not reaped within " + one_decimal(kReapSeconds) +
         " s after SIGKILL (stuck in an uninterruptible call?); left behind";
}

}  // namespace

// The budget of the stage a child named; a name outside kStages is watched by the trial's budget
// alone (converse has already made the trial an ERROR for it).
double budget_of(const Budgets& b, const std::string& stage) {
  const StageInfo* s = find_stage(stage);
  return s ? b.of(s->id) : b.trial;
}

std::string bounded_text(const std::string& text, bool line_cut) {
  if (text.size() <= kMaxMessageText) return line_cut ? text + " ... [the rest of its line left out]" : text;
  size_t cut = kMaxMessageText;
  // Not inside a UTF-8 character: back over at most three continuation bytes (invalid text keeps its bytes).
  for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80; ++i) --cut;
  return text.substr(0, cut) + " ... [" + (line_cut ? "at least " : "") + std::to_string(text.size() - cut) +
         " more bytes left out]";
}

void converse(int fd, int pid, const Budgets& b, std::string& pending, ChildReport& rep, Conversation& talk,
              bool reap) {
  const auto trial_deadline = talk.t0 + secs(b.trial);
  talk.stage_t0 = talk.t0;
  auto stage_deadline = talk.t0 + secs(budget_of(b, talk.stage));
  bool line_cut = false;  // the line being handled is the start of one longer than kMaxMessageLine
  auto bounded = [&](const std::string& text) { return bounded_text(text, line_cut); };
  auto handle = [&](const std::string& line) {
    const auto f = split_line(line);
    const std::string& kind = f[0];
    const auto now = Clock::now();
    if (kind == "enter" && f.size() > 1) {
      talk.stage = bounded(f[1]);
      talk.stage_t0 = now;
      stage_deadline = now + secs(budget_of(b, talk.stage));
      if (!find_stage(talk.stage) && !talk.error) {
        talk.error = true;
        talk.error_message = "the child entered an unknown stage '" + talk.stage + "' (the trial protocol knows only kStages)";
      }
      if (rep.stages.size() < kMaxStages) rep.stages.push_back({talk.stage, 0.0, false});
    } else if (kind == "leave" && f.size() > 2) {
      for (auto& s : rep.stages)
        if (s.stage == f[1] && !s.completed) {
          s.seconds = std::atof(f[2].c_str());
          s.completed = true;
          s.ahead = f.size() > 3 && f[3] == "ahead";
        }
    } else if (kind == "describe" && f.size() > 1) {
      rep.describe = bounded(f[1]);
    } else if (kind == "note" && f.size() > 1) {
      // A note that carries a verdict (external.hpp's markers, evaluate.cpp) is kept past the cap,
      // up to one per possible output: other notes cannot crowd it out.
      if (rep.notes.size() < kMaxNotes || (carries_verdict(f[1]) && rep.notes.size() < kMaxNotes + kMaxOutputs))
        rep.notes.push_back(bounded(f[1]));
      else
        ++talk.notes_dropped;
    } else if (kind == "skip") {
      talk.skip = true;
      talk.skip_reason = f.size() > 1 ? bounded(f[1]) : "";
    } else if (kind == "error") {
      talk.error = true;
      talk.error_message = f.size() > 1 ? bounded(f[1]) : "";
    } else if (kind == "output") {
      ++talk.outputs;
      if (talk.output_sets.size() < kMaxOutputs) talk.output_sets.push_back(f.size() > 2 ? std::atoi(f[2].c_str()) : -1);
    } else if (kind == "late-output" && f.size() > 3) {
      if (talk.late_sets.size() < kMaxOutputs) {
        talk.late_sets.push_back(std::atoi(f[2].c_str()));
        talk.late_calls.push_back(std::atoi(f[3].c_str()));
      }
    } else if (kind == "timed-output" && f.size() > 2) {
      if (talk.timed_sets.size() < kMaxOutputs) talk.timed_sets.push_back(std::atoi(f[2].c_str()));
    } else if (kind == "instance-output" && f.size() > 4) {
      if (talk.instance_sets.size() < kMaxOutputs) {
        talk.instance_plans.push_back(std::atoi(f[2].c_str()));
        talk.instance_sets.push_back(std::atoi(f[3].c_str()));
        talk.instance_modes.push_back(f[4] == "all" ? InputSet::All : InputSet::Activations);
      }
    } else if (kind == "config-output" && f.size() > 3) {
      if (talk.config_sets.size() < kMaxOutputs) {
        talk.config_sets.push_back(std::atoi(f[2].c_str()));
        talk.config_names.push_back(bounded(f[3]));
      }
    } else if (kind == "timing" && f.size() > 8) {
      rep.timed = true;
      rep.timing.t.reps = std::atoi(f[1].c_str());
      rep.timing.t.median = std::atof(f[2].c_str());
      rep.timing.t.min = std::atof(f[3].c_str());
      rep.timing.t.mean = std::atof(f[4].c_str());
      rep.timing.t.stdev = std::atof(f[5].c_str());
      rep.timing.t.rse = std::atof(f[6].c_str());
      rep.timing.b2b = std::atof(f[7].c_str());
      rep.timing.b2b_calls = std::atoi(f[8].c_str());
    } else if (kind == "intermediates" && f.size() > 2) {
      rep.have_intermediates = true;
      talk.mid_g = size_t(std::atoll(f[1].c_str()));
      talk.mid_u = size_t(std::atoll(f[2].c_str()));
    } else if (kind == "available") {
      rep.available = true;
    } else if (kind == "manifest") {
      if (rep.manifest.size() < kMaxOutputs) {
        std::vector<std::string> entry;
        for (size_t i = 1; i < f.size(); ++i) entry.push_back(bounded(f[i]));
        rep.manifest.push_back(std::move(entry));
      }
    } else if (kind == "device" && f.size() > 1) {
      rep.device = bounded(f[1]);
    } else if (kind == "done") {
      talk.done = true;
    } else if (kind == "end") {
      talk.end = true;
    }
  };
  auto drain = [&] {  // the complete lines received so far, up to a worker's `end`
    size_t nl;
    while (!talk.end && (nl = pending.find('\n')) != std::string::npos) {
      if (!talk.dropping_line) handle(pending.substr(0, nl));
      talk.dropping_line = false;
      pending.erase(0, nl + 1);
    }
    if (!talk.end && pending.size() > kMaxMessageLine) {  // no newline yet: handle the start, drop the rest
      if (!talk.dropping_line) {
        line_cut = true;
        handle(pending.substr(0, kMaxMessageLine));
        line_cut = false;
      }
      talk.dropping_line = true;
      pending.clear();
    }
  };
  drain();
  while (!talk.end) {
    const auto now = Clock::now();
    const auto deadline = std::min(stage_deadline, trial_deadline);
    if (now >= deadline) {
      kill_group(pid);
      talk.killed = true;
      talk.trial_budget_hit = trial_deadline <= stage_deadline;
      break;
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    struct pollfd p = {fd, POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<int64_t>(ms, reap ? 100 : 1000)));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    if (r == 0) {  // nothing to read: re-check the deadline, and whether the child is gone
      siginfo_t info{};
      if (reap && ::waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_t(pid)) {
        // Gone (a zombie, not reaped: its pid and group id stay its own until the caller reaps
        // it). What it wrote before exiting is in the pipe: read it all, within the deadline; EOF
        // then means nobody else holds the write end, no EOF means somebody does.
        talk.exited = true;
        talk.pipe_held = true;
        char buf[4096];
        while (!talk.end && Clock::now() < deadline) {
          struct pollfd q = {fd, POLLIN, 0};
          const int ready = ::poll(&q, 1, 0);
          if (ready < 0 && errno == EINTR) continue;
          if (ready <= 0) break;
          const ssize_t n = ::read(fd, buf, sizeof buf);
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          if (n <= 0) {
            talk.pipe_held = n < 0;
            break;
          }
          pending.append(buf, size_t(n));
          drain();
        }
        break;
      }
      continue;
    }
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    if (n == 0) break;  // EOF: the child exited (or closed its end)
    pending.append(buf, size_t(n));
    drain();
  }
  talk.end_of_talk = Clock::now();
}

void conclude(ChildReport& rep, const Conversation& talk, int status, const Budgets& b, const std::string& log_path) {
  const std::string& stage = talk.stage;
  if (talk.notes_dropped)
    rep.notes.push_back(std::to_string(talk.notes_dropped) + " more notes from the child left out (" +
                        std::to_string(kMaxNotes) + " kept)");
  rep.wall = std::chrono::duration<double>(Clock::now() - talk.t0).count();
  rep.stage = stage;
  rep.stage_elapsed = std::chrono::duration<double>(talk.end_of_talk - talk.stage_t0).count();
  for (auto& s : rep.stages)
    if (!s.completed) s.seconds = rep.stage_elapsed;

  if (talk.killed) {
    rep.outcome = Outcome::Timeout;
    const double elapsed = rep.stage_elapsed;
    if (talk.trial_budget_hit)
      rep.message = "trial exceeded its budget of " + one_decimal(b.trial) + " s (in stage " + stage +
                    " after " + one_decimal(elapsed) + " s); process group killed";
    else
      rep.message = "stage " + stage + " exceeded its budget of " + one_decimal(budget_of(b, stage)) +
                    " s (killed after " + one_decimal(elapsed) + " s)";
  } else if (WIFSIGNALED(status)) {
    rep.outcome = Outcome::Crash;
    rep.message = signal_text(WTERMSIG(status)) + " in stage " + stage;
    rep.child_log = log_tail(log_path);
  } else if (talk.error) {
    rep.outcome = Outcome::Error;
    rep.message = talk.error_message;
    rep.child_log = log_tail(log_path);
  } else if (talk.skip) {
    rep.outcome = Outcome::Skip;
    rep.message = talk.skip_reason;
  } else if (talk.done && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    rep.outcome = Outcome::Pass;  // completed: outputs to check
  } else {
    rep.outcome = Outcome::Error;
    rep.message = "child exited with status " +
                  std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + " in stage " + stage +
                  " without reporting why";
    rep.child_log = log_tail(log_path);
  }
}

namespace {
// Reads the n output files PREFIX<i>.f16 of a trial's directory into `into`; the first that is
// missing, of odd size or of the wrong size (elems >= 0) makes the report an ERROR named by what(i).
template <class What>
void read_outputs(ChildReport& rep, const std::string& dir, const char* prefix, size_t n, int64_t elems,
                  std::vector<std::vector<uint16_t>>& into, What what) {
  for (size_t i = 0; i < n && rep.outcome == Outcome::Pass; ++i) {
    const std::string path = dir + "/" + prefix + std::to_string(i) + ".f16";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || st.st_size % 2 != 0 || (elems >= 0 && st.st_size != elems * 2)) {
      rep.outcome = Outcome::Error;
      rep.message = what(i) + " is missing or has the wrong size";
      return;
    }
    std::vector<uint16_t> c(size_t(st.st_size / 2));
    read_file(path, c.data(), c.size() * 2);
    into.push_back(std::move(c));
  }
}
}  // namespace

void collect_outputs(ChildReport& rep, const Conversation& talk, const TrialSpec& spec, const std::string& dir) {
  const int64_t elems = spec.c.from_dir() ? -1 : spec.c.shape.c_elems();
  read_outputs(rep, dir, "out", size_t(talk.outputs), elems, rep.outputs,
               [](size_t i) { return "output file of call " + std::to_string(i + 1); });
  rep.output_sets = talk.output_sets;
  read_outputs(rep, dir, "timed", talk.timed_sets.size(), elems, rep.timed_outputs,
               [](size_t i) { return "timed output " + std::to_string(i); });
  rep.timed_sets = talk.timed_sets;
  read_outputs(rep, dir, "late", talk.late_sets.size(), elems, rep.late_outputs,
               [&](size_t i) { return "the output of call " + std::to_string(talk.late_calls[i]); });
  rep.late_sets = talk.late_sets;
  rep.late_calls = talk.late_calls;
  read_outputs(rep, dir, "instance", talk.instance_sets.size(), elems, rep.instance_outputs,
               [](size_t i) { return "the output of stage instances' call " + std::to_string(i + 1); });
  rep.instance_sets = talk.instance_sets;
  rep.instance_plans = talk.instance_plans;
  rep.instance_modes = talk.instance_modes;
  read_outputs(rep, dir, "config", talk.config_sets.size(), elems, rep.config_outputs,
               [&](size_t i) { return "the output of configuration " + talk.config_names[i]; });
  rep.config_sets = talk.config_sets;
  rep.config_names = talk.config_names;
  if (rep.have_intermediates) {
    rep.g.resize(talk.mid_g);
    rep.u.resize(talk.mid_u);
    if (!read_file(dir + "/g.f32", rep.g.data(), talk.mid_g * 4) ||
        !read_file(dir + "/u.f32", rep.u.data(), talk.mid_u * 4)) {
      rep.have_intermediates = false;
      rep.notes.push_back("intermediates announced but unreadable");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// One process per trial.

std::string TrialRunner::new_dir() {
  const std::string dir = tmp_ + "/t" + std::to_string(counter_++);
  if (mkdir(dir.c_str(), 0700) != 0)
    throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
  return dir;
}

ChildReport TrialRunner::run_child(const TrialSpec& spec, bool probe, const EnvOverrides& env) {
  ChildReport rep;
  const std::string dir = new_dir();
  const std::string log_path = dir + "/child.log";

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  // Every descriptor is closed on every path out of here, exceptions included.
  FdGuard read_end{fds[0]}, write_end{fds[1]};
  FdGuard log_guard{::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
  FdGuard null_guard{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  std::vector<std::string> args = {exe_, "--child-trial", encode_trial(spec, fds[1], dir, probe)};
  const External* ext = spec.options.external(spec.backend);
  if (ext && ext->kind == External::Submission) {
    write_submission_inputs(spec, dir);  // the driver reads its input sets from the trial directory
    args = submission_child_args(*ext, spec, fds[1], dir);
  }
  const bool sanitized = !spec.options.sanitize.empty() && !probe;
  if (sanitized) args = sanitized_args(spec.options, dir, args);
  std::vector<std::string> environment = child_environment(env);

  Conversation talk;
  talk.t0 = Clock::now();
  const int pid = spawn_prepared(args, environment, null_guard.fd, log_guard.fd, fds[1]);
  rep.pid = pid;
  write_end.close();
  log_guard.close();
  null_guard.close();

  // From here on the child exists: if anything below throws, it is killed (not left running).
  struct ChildGuard {
    int pid;
    bool armed = true;
    ~ChildGuard() {
      if (!armed) return;
      kill_group(pid);
      int st = 0;
      reap_within(pid, &st, kReapSeconds);
    }
  } child_guard{pid};
  std::string pending;
  const Budgets& b = spec.options.budget;
  converse(fds[0], pid, b, pending, rep, talk, true);
  struct stat pipe_st {};
  const bool have_pipe_st = ::fstat(fds[0], &pipe_st) == 0;  // (its holders are sought below)
  read_end.close();
  child_guard.armed = false;

  // Reap the child. After its pipe closed it has little left to do; give it a grace period.
  // A killed child is waited for at most kReapSeconds (see reap_within).
  int status = 0;
  if (talk.exited) {
    if (talk.pipe_held) {
      // Processes it started (a fork that outlives it) keep the report pipe open: its group goes
      // while the unreaped child still holds the group's id, then whoever holds the pipe from
      // outside the group (setsid); each is named.
      kill(-pid_t(pid), SIGKILL);
      std::string held;
      if (have_pipe_st)
        for (int h : pipe_holders((unsigned long)pipe_st.st_ino)) {
          int ppid = 0, pgid = 0;
          char state = 0;
          // (Members of the group are dying of the kill above but may not have closed it yet.)
          if (!proc_stat(h, &ppid, &pgid, &state) || pgid == pid || state == 'Z') continue;
          const std::string cmd = command_of(h);
          held += (held.empty() ? "" : ", ") + std::string("pid ") + std::to_string(h) + (cmd.empty() ? "" : " (" + cmd + ")");
          ::kill(pid_t(h), SIGKILL);
        }
      rep.notes.push_back("the child exited while a process it started still held its report pipe (a fork that "
                          "outlives its parent): its process group was killed" +
                          (held.empty() ? std::string() : ", and " + held + ", holding the pipe from outside it"));
    }
    if (!reap_within(pid, &status, kReapSeconds)) rep.notes.push_back(left_behind(pid));
  } else if (talk.killed) {  } else if (talk.killed) {
    if (!reap_within(pid, &status, kReapSeconds)) rep.notes.push_back(left_behind(pid));
  } else if (!reap_within(pid, &status, 10.0)) {
    kill_group(pid);
    rep.notes.push_back("child did not exit within 10 s after its last message; killed");
    if (!reap_within(pid, &status, kReapSeconds)) {
      rep.notes.push_back(left_behind(pid));
      status = SIGKILL;  // reported as killed (WIFSIGNALED) since it never exited by itself
    }
  }
  conclude(rep, talk, status, b, log_path);
  if (sanitized && !talk.killed && WIFEXITED(status) && WEXITSTATUS(status) == kSanitizerExit) {
    rep.outcome = Outcome::Error;  // the sanitizer's verdict, whatever the outputs say
    rep.message = sanitizer_report(spec.options.sanitize, dir + "/sanitizer.log");
  }
  if (rep.outcome == Outcome::Pass && !probe) collect_outputs(rep, talk, spec, dir);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rep;
}

// ---------------------------------------------------------------------------------------------
// Workers.

Worker::Worker(std::string exe, std::string dir, EnvOverrides env, std::string preload)
    : exe_(std::move(exe)), dir_(std::move(dir)), env_(std::move(env)), preload_(std::move(preload)) {}

Worker::~Worker() { end(); }

void Worker::start() {
  int report[2], input[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  FdGuard report_read{report[0]}, report_write{report[1]};
  // The SPECs go over a socket: send() with MSG_NOSIGNAL to a worker that died fails with EPIPE
  // instead of raising SIGPIPE in the harness.
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input) != 0)
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  FdGuard input_read{input[0]}, input_write{input[1]};
  FdGuard log_guard{::open((dir_ + "/worker.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)};
  std::vector<std::string> args = {exe_, "--child-worker"};
  if (!preload_.empty()) {
    // The report pipe's write end keeps its number across exec (spawn's keep_fd).
    args.insert(args.end(), {"--preload", preload_, "--report-fd", std::to_string(report[1])});
  }
  std::vector<std::string> environment = child_environment(env_);
  forked_ = Clock::now();
  pid_ = spawn_prepared(args, environment, input[0], log_guard.fd, report[1]);
  ++started_;
  first_ = true;
  child_fd_ = report[1];
  from_child_ = report_read.fd;
  to_child_ = input_write.fd;
  report_read.fd = input_write.fd = -1;  // kept open while the worker lives
  pending_.clear();
}

void Worker::end() {
  if (pid_ <= 0) return;
  kill_group(pid_);
  reap_in_background(pid_);  // its report does not matter any more: no need to wait
  ::close(to_child_);
  ::close(from_child_);
  pid_ = to_child_ = from_child_ = -1;
}

namespace {
// `before_first`: it had run no trial yet (a worker started ahead, loading its backend).
std::string idle_death(int pid, int status, bool before_first) {
  const std::string how =
      WIFSIGNALED(status) ? signal_text(WTERMSIG(status)) : "exit " + std::to_string(WEXITSTATUS(status));
  if (before_first)
    return "the worker started ahead (pid " + std::to_string(pid) + ") died before its first trial (" + how +
           "): this trial ran in a fresh worker";
  return "the previous worker (pid " + std::to_string(pid) + ") died while idle (" + how +
         "), after its last trial ended: this trial ran in a fresh worker";
}
}  // namespace

void Worker::drop_dead(ChildReport& rep) {
  int status = 0;
  if (pid_ <= 0 || waitpid(pid_, &status, WNOHANG) != pid_) return;
  // It died after its last trial ended (`end`) and before this one was handed to it: not this
  // trial's doing. Said in the trial's notes; the trial runs in a fresh worker.
  rep.notes.push_back(idle_death(pid_, status, first_));
  ::close(to_child_);
  ::close(from_child_);
  pid_ = to_child_ = from_child_ = -1;
}

ChildReport Worker::run(const TrialSpec& spec, const std::string& trial_dir) {
  ChildReport rep;
  drop_dead(rep);
  if (pid_ <= 0) start();
  Conversation talk;
  const Budgets& b = spec.options.budget;
  auto send_spec = [&] {
    rep.pid = pid_;
    // A worker's start is its first trial's cost, unless it was preloaded ahead (worker.hpp).
    talk.t0 = first_ && preload_.empty() ? forked_ : Clock::now();
    first_ = false;
    const std::string text = encode_trial(spec, child_fd_, trial_dir, false) + "\n";
    for (size_t at = 0; at < text.size();) {
      const ssize_t n = ::send(to_child_, text.data() + at, text.size() - at, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;  // the worker is gone: its exit status says why
      at += size_t(n);
    }
    return true;
  };
  const bool was_first = first_;
  bool sent = send_spec();
  if (!sent) {
    // The spec could not even be handed over: the worker died while idle, after drop_dead looked.
    // Reap it and hand the trial to a fresh worker, once.
    int st = 0;
    if (reap_within(pid_, &st, 10.0)) {
      rep.notes.push_back(idle_death(pid_, st, was_first));
      ::close(to_child_);
      ::close(from_child_);
      pid_ = to_child_ = from_child_ = -1;
      start();
      sent = send_spec();
    }
  }
  if (sent) converse(from_child_, pid_, b, pending_, rep, talk);
  else talk.end_of_talk = Clock::now();

  int status = 0;  // a worker that said `end` is alive and counts as exited normally
  if (!talk.end) {
    // It died, or the watchdog killed it: reap it (as run_child does) and start afresh next time.
    const int pid = pid_;
    if (!talk.killed && !reap_within(pid, &status, 10.0)) {
      kill_group(pid);
      rep.notes.push_back("child did not exit within 10 s after its last message; killed");
      if (!reap_within(pid, &status, kReapSeconds)) {
        rep.notes.push_back(left_behind(pid));
        status = SIGKILL;
      }
    } else if (talk.killed && !reap_within(pid, &status, kReapSeconds)) {
      rep.notes.push_back(left_behind(pid));
    }
    ::close(to_child_);
    ::close(from_child_);
    pid_ = to_child_ = from_child_ = -1;
  }
  conclude(rep, talk, status, b, trial_dir + "/child.log");
  if (rep.outcome == Outcome::Pass) collect_outputs(rep, talk, spec, trial_dir);
  if (rep.outcome != Outcome::Pass && rep.outcome != Outcome::Skip) end();  // fail-stop
  return rep;
}

}  // namespace nvfp4
