// rehearse.cpp — `harness rehearse gpumode` (see rehearse.hpp): the refusals, the children under
// their limits, the verdicts; rehearse_report.cpp prints and writes them.
//
// Length: about 690 lines, over the project's ~600. The refusals, one child's supervision (its report
// pipe, its output pipe, its group and the processes it leaves behind) and the verdicts share one
// child's state; the process accounting ("what a child leaves behind" below) is the part to move
// into a file of its own when this grows.
#include "rehearse.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_checks.hpp"
#include "errors.hpp"
#include "external.hpp"
#include "options.hpp"
#include "outputs.hpp"
#include "rehearse_report.hpp"
#include "user_file.hpp"
#include "worker.hpp"

namespace po = boost::program_options;

namespace nvfp4::cli {

namespace {

const char* const kModes[] = {"test", "benchmark", "leaderboard"};
// The stages a rehearsal's children enter (submission_driver.py rehearse): a budget given for
// any other stage would watch nothing.
const Stage kRehearsalStages[] = {Stage::Load, Stage::Init, Stage::Warmup, Stage::Run, Stage::Time};
// kernelbot draws a leaderboard's secret seed as FLOOR(RANDOM() * 2147483648) (migration
// 20250329_01_7VjJJ-add-a-secret-seed-column.py at 4bdd839).
constexpr uint64_t kSecretSeeds = uint64_t(1) << 31;

// Whether `a` and `b` name one existing file (same device and inode: a symbolic link, a hard link
// or another spelling of the path all count).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string seconds_text(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// What the command line asks for, checked.
struct Plan {
  External sub;
  std::string task_file, task_name, task_source, toggles = "plain", emulate;
  std::vector<std::string> modes;
  double limit[3] = {0, 0, 0}, limit_compile = 0;
  std::optional<uint64_t> secret;
  std::vector<std::pair<Stage, double>> stage_budgets;  // those the user gave (others: the mode's limit)
};

// Runs `args` to completion with stdin from /dev/null (at most `limit_s`, then killed): its exit
// status (-1 when killed or signalled) and its stdout and stderr together.
std::pair<int, std::string> capture(const std::vector<std::string>& args, double limit_s) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int pid = spawn_child(args, {}, null_fd, fds[1], -1);
  ::close(null_fd);
  ::close(fds[1]);
  std::string out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  bool killed = false;
  for (char buf[4096];;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(-pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  if (!reap_within(pid, &status, kReapSeconds)) killed = true;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return {killed || !WIFEXITED(status) ? -1 : WEXITSTATUS(status), out};
}

// The task file checked by the driver (rehearse.py load_task): its name and source line.
void check_task(Plan& p) {
  const std::string why = input_file_problem(p.task_file);
  if (!why.empty()) throw InputError("--task " + p.task_file + ": " + why);
  const auto [status, out] = capture({p.sub.python, p.sub.driver, "task", p.task_file}, 60);
  if (status != 0) throw InputError("--task: " + (out.empty() ? "the driver could not read " + p.task_file : out));
  try {
    const auto task = nlohmann::json::parse(out);
    p.task_name = task.value("task", std::string("?"));
    if (const auto s = task.find("source"); s != task.end() && s->is_object() && s->contains("commit"))
      p.task_source = s->value("repository", std::string()) + " at " + s->value("commit", std::string());
    for (int i = 0; i < 3; ++i)
      if (p.limit[i] == 0) p.limit[i] = task.at("limits_s").at(kModes[i]).get<double>();
    if (p.limit_compile < 0) p.limit_compile = task.at("limits_s").at("compile").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError("--task " + p.task_file + ": the driver's answer is not the task (" + e.what() + ")");
  }
}

double limit_option(const po::variables_map& vm, const char* name, bool zero_ok) {
  if (!vm.count(name)) return zero_ok ? -1 : 0;  // the task's
  const double v = vm[name].as<double>();
  if (!(zero_ok ? v >= 0 : v > 0) || !(v <= 1e6))
    throw InputError(std::string("--") + name + " must be a " + (zero_ok ? "non-negative" : "positive") +
                     " number of seconds, at most 1e6 (got " + seconds_text(v) + ")");
  return v;
}

Plan plan_rehearsal(const po::variables_map& vm) {
  const std::string evaluator = vm["rehearse"].as<std::string>();
  if (evaluator != "gpumode")
    throw InputError("harness rehearse " + evaluator + ": the evaluator rehearsed is gpumode (GPU MODE's, "
                     "gpu-mode/reference-kernels eval_better_bench.py)");
  for (const char* other : {"plugin", "junit", "html", "budget-trial"})
    if (vm.count(other) && !vm[other].defaulted())
      throw InputError(std::string("--") + other + " is not an option of harness rehearse: " +
                       (std::string(other) == "plugin" ? "the evaluator runs a Python submission (--submission FILE.py)"
                        : std::string(other) == "budget-trial"
                            ? "each mode's overall limit is --limit-test, --limit-benchmark, --limit-leaderboard"
                            : "its report is --json"));
  if (!vm["backend"].defaulted())
    throw InputError("--backend is not an option of harness rehearse: the submission is the only path it runs");
  if (!vm.count("submission")) throw InputError("harness rehearse gpumode needs --submission FILE.py");
  const auto subs = vm["submission"].as<std::vector<std::string>>();
  if (subs.size() != 1) throw InputError("harness rehearse takes one --submission (got " + std::to_string(subs.size()) + ")");
  check_paths(vm, false);  // --json

  Plan p;
  p.emulate = emulate_fp4_option(vm);
  for (int i = 0; i < 3; ++i) p.limit[i] = limit_option(vm, (std::string("limit-") + kModes[i]).c_str(), false);
  p.limit_compile = limit_option(vm, "limit-compile", true);
  for (const auto& s : kStages) {
    if (!has_own_budget(s.id)) continue;
    const std::string name = budget_option(s.id);
    if (!vm.count(name) || vm[name].defaulted()) continue;
    bool used = false;
    for (Stage r : kRehearsalStages) used |= r == s.id;
    if (!used)
      throw InputError("--" + name + ": stage " + s.name + " never runs in a rehearsal (its stages: load, warmup, run, "
                       "time; setup and teardown under --budget-init)");
    const double v = vm[name].as<double>();
    if (!(v > 0) || !(v <= 1e6))
      throw InputError("--" + name + " must be a positive number of seconds, at most 1e6 (got " + seconds_text(v) + ")");
    p.stage_budgets.push_back({s.id, v});
  }
  if (vm.count("secret-seed")) {
    const uint64_t s = vm["secret-seed"].as<uint64_t>();
    if (s >= kSecretSeeds)
      throw InputError("--secret-seed " + std::to_string(s) + ": kernelbot's secret seeds lie in [0, 2^31 - 1]");
    p.secret = s;
  }
  std::vector<std::string> modes = list_values(vm, "evaluator-mode");
  for (const auto& m : modes) {
    bool known = m == "all";
    for (const char* k : kModes) known |= m == k;
    if (!known)
      throw InputError("--evaluator-mode '" + m + "': the evaluator's modes are test, benchmark, leaderboard (or all)");
  }
  for (const char* k : kModes)
    for (const auto& m : modes)
      if (m == k || m == "all") {
        p.modes.push_back(k);
        break;
      }

  // The submission: the driver reads its declarations without importing it (InputError: missing
  // file, syntax error, malformed declarations, custom_kernel bound only to a literal or not at
  // all). A path that is no regular file is named as what it is (the driver would block reading a
  // FIFO).
  if (const std::string why = input_file_problem(subs.front()); !why.empty())
    throw InputError("--submission " + subs.front() + ": " + (why == "does not exist" ? "no such file" : why));
  p.sub = describe_submission(subs.front()).first;
  p.toggles = vm["toggles"].as<std::string>();
  if (p.toggles.find(',') != std::string::npos)
    throw InputError("--toggles " + p.toggles + ": one combination, names joined with '+' (e.g. a+b)");
  if (p.toggles != "plain") {
    std::string rest = p.toggles, own;
    for (const auto& t : p.sub.own_toggles) own += (own.empty() ? "" : ", ") + t;
    while (!rest.empty()) {
      const size_t plus = rest.find('+');
      const std::string name = rest.substr(0, plus);
      if (name.empty() || (plus != std::string::npos && plus + 1 == rest.size()))
        throw InputError("--toggles " + p.toggles + ": an empty toggle name (names joined with '+')");
      rest = plus == std::string::npos ? "" : rest.substr(plus + 1);
      bool found = false;
      for (const auto& t : p.sub.own_toggles) found |= t == name;
      if (!found)
        throw InputError("--toggles: '" + name + "' is not a toggle of " + p.sub.path + " (it declares " +
                         (own.empty() ? std::string("none") : own) +
                         " in NVFP4_TOGGLES; the evaluator calls custom_kernel as the module defines it)");
    }
  }
  p.task_file = vm.count("task") ? vm["task"].as<std::string>()
                                 : (std::filesystem::path(p.sub.driver).parent_path() / "nvfp4_driver" / "tasks" /
                                    "nvfp4_dual_gemm.json")
                                       .string();
  // The report is written at the end: never over a file the rehearsal reads. check_paths refused
  // --json over --submission and --task; the driver and the default task file are found here.
  if (vm.count("json"))
    for (const auto& [what, in] : {std::pair<const char*, std::string>{"the submission driver", p.sub.driver},
                                   {"the default task file", vm.count("task") ? std::string() : p.task_file}})
      if (!in.empty() && same_file(vm["json"].as<std::string>(), in))
        throw InputError("--json " + vm["json"].as<std::string>() + ": is " + what + " " + in +
                         "; the report would overwrite it (name another file)");
  check_task(p);
  return p;
}

// ---- what a child leaves behind -----------------------------------------------------------------
// GPU MODE's kernelbot runs each mode as subprocess.run(capture_output=True, timeout=LIMIT): it
// reads the mode's stdout and stderr until every writer has closed them, so a process the
// submission started that still holds them (a Popen or a fork inherits both) makes the mode wait
// until its limit, and the result is a TIMEOUT, whatever eval.py printed. A rehearsal child's
// stdout and stderr are therefore one pipe here too, drained into child.log; after the child
// exits, the pipe still open means such a process exists (rehearse.hpp). Whatever a child leaves
// behind is killed before the next child starts: the processes of its group, and, as the harness
// is a child subreaper (prctl PR_SET_CHILD_SUBREAPER, set by rehearse_mode), the orphans that
// left the group (setsid) but not the harness's descendants.

// One process found after a child's exit: in the child's group, or an orphan the subreaper adopted.
struct Leftover {
  int pid = 0;
  bool in_group = false, zombie = false;  // a zombie has ended: only its exit status is left to reap
};

// The processes of group `pgid`, and the harness's own children other than `except` (orphans the
// subreaper adopted).
std::vector<Leftover> leftovers(int pgid, int except) {
  std::vector<Leftover> out;
  const int self = int(::getpid());
  for (int pid : all_pids()) {
    int ppid = 0, pg = 0;
    char state = 0;
    if (pid == except || !proc_stat(pid, &ppid, &pg, &state)) continue;
    if (pg == pgid || ppid == self) out.push_back({pid, pg == pgid, state == 'Z'});
  }
  return out;
}

// Kills group `pgid` and every adopted orphan (and the group each one leads), reaping the orphans,
// until none is left or `limit_s` passed. Never this process's own group.
void end_leftovers(int pgid, int except, double limit_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  const int own = int(::getpgrp());
  for (;;) {
    if (pgid != own) ::kill(-pid_t(pgid), SIGKILL);
    const auto left = leftovers(pgid, except);
    for (const auto& l : left) {
      int ppid = 0, pg = 0;
      char state = 0;
      if (!proc_stat(l.pid, &ppid, &pg, &state)) continue;
      if (pg == l.pid && pg != own) ::kill(-pid_t(pg), SIGKILL);
      ::kill(pid_t(l.pid), SIGKILL);
      if (ppid == int(::getpid())) ::waitpid(pid_t(l.pid), nullptr, WNOHANG);
    }
    if (left.empty() || std::chrono::steady_clock::now() >= end) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Copies a child's stdout and stderr (one pipe) into its log on a thread of its own, so that the
// child never blocks on a full pipe, and says when every writer has closed it (EOF).
class OutputDrain {
 public:
  OutputDrain(int read_fd, int log_fd) : fd_(read_fd), log_(log_fd), thread_([this] { loop(); }) {}
  ~OutputDrain() { stop(); }
  bool eof() const { return eof_; }
  // Waits until EOF or `limit_s` passed; whether EOF came.
  bool wait_eof(double limit_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    while (!eof_ && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return eof_;
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    char buf[8192];
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, 50);
      if (r < 0 && errno != EINTR) return;
      if (r > 0) {
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n == 0) {
          eof_ = true;
          return;
        }
        if (n > 0) {
          for (ssize_t done = 0; done < n;) {
            const ssize_t w = ::write(log_, buf + done, size_t(n - done));
            if (w <= 0) break;  // a full disk loses log lines, never the child's progress
            done += w;
          }
          continue;  // read on while there is output, even when asked to stop
        }
      }
      if (stop_) return;
    }
  }
  int fd_, log_;
  std::atomic<bool> eof_{false}, stop_{false};
  std::thread thread_;
};

// Ends a conversation whose child has exited: converse() reads the report pipe until `end`, a kill
// or EOF, and EOF does not come while a process the child left behind holds the pipe (a fork
// inherits it). This thread waits (without reaping) for the child's exit and then writes
// "\nend\n" into the pipe through a descriptor of its own (a new open file description of the
// pipe, non-blocking), after every line the child wrote: converse returns at once, the
// conversation complete. (The leading newline ends a line a dying child left half written.)
class ExitWatch {
 public:
  ExitWatch(int pid, int write_fd) : pid_(pid), fd_(write_fd), thread_([this] { loop(); }) {}
  ~ExitWatch() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    for (;;) {
      siginfo_t info{};
      if (::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return;  // not ours: nothing to watch
      if (info.si_pid == pid_) break;
      if (stop_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    static const char kEnd[] = "\nend\n";
    while (!stop_) {
      if (::write(fd_, kEnd, sizeof kEnd - 1) == ssize_t(sizeof kEnd - 1)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // full (EAGAIN): converse drains it
    }
  }
  int pid_, fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Seconds the output pipe may stay open after the child's exit before a process holding it counts
// as held: a helper ending by itself (a compiler's last write) is waited for, a daemon is not. The
// evaluator waits until its limit; the rehearsal reports such a process instead of waiting.
constexpr double kHeldGrace = 5.0;

// Supervises one child: `make_args(fd)` is its command line given the report pipe's descriptor.
// Every stage budget and the child's overall budget is `limit_s`, except the stage budgets in `own`.
template <class MakeArgs>
RehearsalChild supervise(MakeArgs make_args, const EnvOverrides& env, double limit_s,
                         const std::vector<std::pair<Stage, double>>& own, const std::string& dir) {
  RehearsalChild c;
  c.ran = true;
  c.limit_s = limit_s;
  Budgets b;
  for (const auto& s : kStages)
    if (has_own_budget(s.id)) b[s.id] = limit_s;
  for (const auto& [s, v] : own) b[s] = v;
  b.trial = limit_s;

  int report[2], out[2];
  if (pipe2(report, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  // The ExitWatch's own writer of the report pipe: its O_NONBLOCK must not reach the child's end
  // (a shared file description would make the child's writes fail with EAGAIN).
  const int inject_fd = ::open(("/proc/self/fd/" + std::to_string(report[1])).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (inject_fd < 0) throw std::runtime_error(std::string("reopening the report pipe: ") + std::strerror(errno));
  struct stat out_st {};
  ::fstat(out[0], &out_st);
  const std::string log_path = dir + "/child.log";
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  Conversation talk;
  talk.t0 = Conversation::Clock::now();
  const int pid = spawn_child(make_args(report[1]), env, null_fd, out[1], report[1]);
  ::close(report[1]);
  ::close(out[1]);
  ::close(null_fd);
  ChildReport rep;
  std::string pending;
  {
    OutputDrain drain(out[0], log_fd);
    ExitWatch watch(pid, inject_fd);
    try {
      converse(report[0], pid, b, pending, rep, talk);
    } catch (...) {
      ::kill(-pid, SIGKILL);
      int st = 0;
      reap_within(pid, &st, kReapSeconds);
      end_leftovers(pid, pid, 1.0);
      watch.stop();
      drain.stop();
      for (int fd : {report[0], inject_fd, out[0], log_fd}) ::close(fd);
      throw;
    }
    watch.stop();
    int status = 0;
    if (!talk.killed && !reap_within(pid, &status, 10.0)) {
      ::kill(-pid, SIGKILL);  // it closed its end of the pipe but did not exit
      rep.notes.push_back("child did not exit within 10 s after its last message; killed");
    }
    if (!reap_within(pid, &status, kReapSeconds)) {
      rep.notes.push_back("child (pid " + std::to_string(pid) + ") not reaped after SIGKILL; left behind");
      status = SIGKILL;
    }
    c.talk_s = std::chrono::duration<double>(talk.end_of_talk - talk.t0).count();

    // What the child left behind: the output pipe given its grace, then what is still there
    // found and killed.
    if (!talk.killed && !drain.eof()) {
      const double left = limit_s - std::chrono::duration<double>(Conversation::Clock::now() - talk.t0).count();
      c.output_held = !drain.wait_eof(std::max(0.0, std::min(kHeldGrace, left)));
    }
    auto found = leftovers(pid, pid);
    std::vector<int> holders, beyond;  // beyond: holders that are neither in the group nor adopted
    if (c.output_held) holders = pipe_holders(out_st.st_ino);
    for (int h : holders) {
      bool known = false;
      for (const auto& l : found) known |= l.pid == h;
      int ppid = 0, pg = 0;
      char state = 0;
      if (!known && proc_stat(h, &ppid, &pg, &state)) {
        found.push_back({h, pg == pid, state == 'Z'});
        beyond.push_back(h);
      }
    }
    for (const auto& l : found) {
      if (l.zombie) continue;  // ended already (a Popen never waited for): reaped below, not reported
      std::string text = "pid " + std::to_string(l.pid);
      const std::string cmd = command_of(l.pid);
      if (!cmd.empty()) text += " (" + cmd + ")";
      if (!l.in_group) text += ", outside its process group (setsid?)";
      for (int h : holders)
        if (h == l.pid) text += ", holding the output pipe";
      c.left_behind.push_back(text);
    }
    end_leftovers(pid, pid, 2.0);
    for (int h : beyond)  // it holds this child's private pipe: the submission started it
      if (::kill(pid_t(h), SIGKILL) == 0)
        rep.notes.push_back("pid " + std::to_string(h) + " held the output pipe from outside the child's descendants; "
                            "killed");
    if (!c.left_behind.empty()) {
      std::string list;
      for (const auto& l : c.left_behind) list += (list.empty() ? "" : "; ") + l;
      rep.notes.push_back("left behind after the child's " + std::string(talk.killed ? "kill" : "exit") + ": " + list +
                          "; killed");
    }
    if (c.output_held && !drain.wait_eof(1.0))
      rep.notes.push_back("the output pipe is still held after the kill, by a process the harness cannot find");
    drain.stop();
    conclude(rep, talk, status, b, log_path);
    c.died = !talk.killed && talk.stage != "setup" &&
             (WIFSIGNALED(status) || (!talk.done && !talk.error && !talk.skip));
  }
  for (int fd : {report[0], inject_fd, out[0], log_fd}) ::close(fd);
  c.outcome = rep.outcome;
  c.limit_hit = talk.killed && talk.trial_budget_hit;
  c.wall_s = rep.wall;
  c.exit_wait_s = std::max(0.0, c.wall_s - c.talk_s);
  c.stage = rep.stage;
  c.stage_elapsed_s = rep.stage_elapsed;
  c.message = rep.message;
  c.log_tail = rep.child_log;
  c.stages = rep.stages;
  c.notes = rep.notes;
  std::ifstream account(dir + "/rehearse.json");
  if (account) c.account.assign(std::istreambuf_iterator<char>(account), std::istreambuf_iterator<char>());
  return c;
}

std::vector<std::string> common_args(const Plan& p) {
  return {"--submission", p.sub.path, "--toggles", p.toggles, "--emulate-fp4", p.emulate};
}

}  // namespace

po::options_description rehearse_options() {
  po::options_description o("Rehearsal (harness rehearse gpumode; defaults: the evaluator's, from the task)");
  o.add_options()
      ("rehearse", po::value<std::string>(), "harness rehearse gpumode --submission FILE.py")
      ("evaluator-mode", po::value<std::string>()->default_value("all"),
       "test, benchmark, leaderboard (comma list) or all; run in the evaluator's order, stopping after the first "
       "that does not pass, as kernelbot does (run_eval.py:806-819)")
      ("limit-test", po::value<double>(),
       "S: the test mode's overall limit (default: the task's; 180 s, kernelbot consts.py Timeout.TEST)")
      ("limit-benchmark", po::value<double>(),
       "S: the benchmark mode's overall limit (default: the task's; 180 s, Timeout.BENCHMARK)")
      ("limit-leaderboard", po::value<double>(),
       "S: the leaderboard mode's overall limit (default: the task's; 180 s, Timeout.RANKED)")
      ("limit-compile", po::value<double>(),
       "S: the compile run's limit, `python3 FILE.py` before each mode (default: the task's; 120 s, "
       "Timeout.COMPILE); its outcome is reported, and ignored as the evaluator ignores it; 0: no compile run")
      ("secret-seed", po::value<uint64_t>(),
       "N in [0, 2^31): the secret run's seeds, every case's seed paired with N as the evaluator pairs them "
       "(eval_better_bench.py:62-70); default: the task's public seeds")
      ("toggles", po::value<std::string>()->default_value("plain"),
       "COMBO: the submission's own toggles to switch on (NVFP4_TOGGLES, names joined with '+')")
      ("task", po::value<std::string>(),
       "FILE.json: the task (default: GPU MODE's nvfp4_dual_gemm, harness/backends/nvfp4_driver/tasks/)");
  return o;
}

std::string emulate_fp4_option(const po::variables_map& vm) {
  const std::string v = vm["emulate-fp4"].as<std::string>();
  if (v != "auto" && v != "on" && v != "off") throw InputError("--emulate-fp4: must be auto, on or off (got '" + v + "')");
  if (!vm["emulate-fp4"].defaulted() && !vm.count("submission"))
    throw InputError("--emulate-fp4 is about a Python submission's torch._scaled_mm calls; it needs --submission FILE.py");
  return v;
}

int rehearse_mode(const po::variables_map& vm, const std::string& command) {
  const Plan p = plan_rehearsal(vm);  // every refusal before any child runs
  // Orphans of a child's descendants (a fork + setsid escapes the child's process group) become
  // this process's children instead of init's, so that supervise() finds and kills them.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    std::cerr << "harness: warning: prctl(PR_SET_CHILD_SUBREAPER) failed (" << std::strerror(errno)
              << "): a process that leaves the submission's process group is not found\n";
  Rehearsal r;
  r.command = command;
  r.submission = p.sub.path;
  r.toggles = p.toggles;
  r.emulate_fp4 = p.emulate;
  r.task_name = p.task_name;
  r.task_file = p.task_file;
  r.task_source = p.task_source;
  r.secret_seed = p.secret;

  TrialRunner dirs;  // a private directory, removed at the end
  // A fresh compile cache per rehearsal, shared by its children, as on a fresh evaluator machine
  // where the compile run warms it for the mode after it; a cache the user set is kept.
  EnvOverrides env;
  for (const char* var : {"TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"})
    if (!std::getenv(var)) env.push_back(std::string(var) + "=" + dirs.tmp() + "/" + var);

  std::string modes;
  for (const auto& m : p.modes) modes += (modes.empty() ? "" : ", ") + m;
  std::cout << "rehearse gpumode: " << p.sub.path << " (toggles " << p.toggles << "), task " << p.task_name << " ("
            << p.task_file << (p.task_source.empty() ? "" : "; " + p.task_source) << "), "
            << (p.secret ? "secret seed " + std::to_string(*p.secret) : std::string("public seeds")) << "\n"
            << "  modes " << modes << ", one process each, in the evaluator's order; a mode that does not pass ends the "
            << "rehearsal, as kernelbot ends a submission (run_eval.py:806-819)\n"
            << std::flush;  // a mode may take minutes: each report line goes out when known
  bool failed = false, passed = false;
  for (size_t i = 0; i < p.modes.size(); ++i) {
    const std::string& name = p.modes[i];
    const int mi = name == "test" ? 0 : name == "benchmark" ? 1 : 2;
    RehearsalMode m;
    m.name = name;
    if (p.limit_compile > 0) {
      const std::string dir = dirs.new_dir();
      m.compile = supervise(
          [&](int fd) {
            std::vector<std::string> a = {p.sub.python, p.sub.driver, "compile-run", "--fd", std::to_string(fd)};
            for (const auto& x : common_args(p)) a.push_back(x);
            return a;
          },
          env, p.limit_compile, {}, dir);
    }
    const std::string dir = dirs.new_dir();
    m.child = supervise(
        [&](int fd) {
          std::vector<std::string> a = {p.sub.python, p.sub.driver, "rehearse", "--fd", std::to_string(fd), "--dir",
                                        dir, "--task", p.task_file, "--mode", name};
          for (const auto& x : common_args(p)) a.push_back(x);
          if (p.secret) {
            a.push_back("--secret-seed");
            a.push_back(std::to_string(*p.secret));
          }
          return a;
        },
        env, p.limit[mi], p.stage_budgets, dir);
    judge(m);
    print_rehearsal_mode(std::cout, m, p.limit_compile);
    std::cout << std::flush;
    r.modes.push_back(m);
    passed |= m.verdict == "PASS";
    if (m.verdict != "PASS") {
      failed = m.verdict != "SKIP";
      for (size_t j = i + 1; j < p.modes.size(); ++j) r.not_run.push_back(p.modes[j]);
      break;
    }
  }
  r.exit_code = failed ? 1 : passed ? 0 : 125;
  std::cout << "result:";
  for (const auto& m : r.modes) std::cout << " " << m.name << " " << m.verdict << (&m == &r.modes.back() ? "" : ",");
  if (!r.not_run.empty()) {
    std::string rest;
    for (const auto& n : r.not_run) rest += (rest.empty() ? "" : ", ") + n;
    std::cout << "; not run: " << rest;
  }
  std::cout << " -> exit " << r.exit_code << "\n";
  if (vm.count("json")) write_output(vm["json"].as<std::string>(), rehearsal_json(r));
  return r.exit_code;
}

}  // namespace nvfp4::cli
