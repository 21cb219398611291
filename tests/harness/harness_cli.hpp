// harness_cli.hpp — test helpers that run the REAL harness binary (NVFP4_HARNESS_BIN) as a user
// would: exit code, combined output, wall time, and the trials of its JSON report.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness_cli {

struct Result {
  int rc = -1;
  std::string out;     // stdout and stderr together
  double seconds = 0;  // wall time of the whole command
};

// The harness under test: NVFP4_HARNESS_BIN from the environment when set (to run the same tests
// against another build), else the one built with the tests.
inline std::string harness_bin() {
  const char* env = std::getenv("NVFP4_HARNESS_BIN");
  return env && *env ? env : NVFP4_HARNESS_BIN;
}

// Runs the harness through the shell. NVFP4_HARNESS_EXTRA_ARGS, when set, is appended to every
// such command line: ctest runs a suite a second time in another mode with it (--isolate trial).
inline Result run(const std::string& args) {
  const char* extra = std::getenv("NVFP4_HARNESS_EXTRA_ARGS");
  const std::string cmd = harness_bin() + " " + args + (extra && *extra ? " " + std::string(extra) : "") + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Runs the harness with exactly these arguments (no shell: empty strings stay arguments) in its
// own process group, stdin from /dev/null; past `timeout_s` the whole group is killed (SIGKILL)
// and `timed_out` is set, so a harness that hangs fails the test instead of hanging it.
struct TimedResult : Result {
  bool timed_out = false;
};

inline TimedResult run_argv(const std::vector<std::string>& args, double timeout_s) {
  TimedResult r;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const std::string bin = harness_bin();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(bin.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before any kill below
  close(fds[1]);
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  char buf[4096];
  for (;;) {
    const double left = timeout_s - elapsed();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, int(left * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked at the top
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // every writer closed: the harness (and anything it started) is done
    if (r.out.size() < (1u << 20)) r.out.append(buf, size_t(n));
  }
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (r.timed_out) kill(-pid, SIGKILL);  // children of the group that outlived the leader
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = elapsed();
  return r;
}

// A fresh private directory for one test's files; all of them are removed when the test exits.
inline std::string temp_dir() {
  struct Cleanup {
    std::vector<std::string> dirs;
    ~Cleanup() {
      std::error_code ec;
      for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
    }
  };
  static Cleanup cleanup;
  char tmpl[] = "/tmp/nvfp4-test-XXXXXX";
  const char* d = mkdtemp(tmpl);
  if (!d) throw std::runtime_error("mkdtemp failed");
  cleanup.dirs.push_back(d);
  return d;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The JSON report's trial objects as text, one string per trial (the writer is compact, so each
// trial starts with {"index":).
inline std::vector<std::string> json_trials(const std::string& json) {
  std::vector<std::string> out;
  const std::string mark = "{\"index\":";
  size_t pos = json.find(mark);
  while (pos != std::string::npos) {
    const size_t next = json.find(mark, pos + 1);
    out.push_back(json.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    pos = next;
  }
  return out;
}

inline bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The number after "key": in a JSON object's text (first occurrence), or NaN.
inline double json_number(const std::string& obj, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = obj.find(k);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(obj.c_str() + at + k.size(), nullptr);
}

// The run's seconds in the summary's first line ("Summary (N trials, S s"), or NaN.
inline double summary_seconds(const std::string& out) {
  const size_t at = out.find("\nSummary (");
  const size_t comma = at == std::string::npos ? at : out.find("trials, ", at);
  if (comma == std::string::npos) return std::nan("");
  return std::strtod(out.c_str() + comma + 8, nullptr);
}

// The seconds of one stage in a trial object ("stage":"warmup","seconds":...), or NaN.
inline double stage_seconds(const std::string& trial, const std::string& stage) {
  const std::string k = "{\"stage\":\"" + stage + "\",\"seconds\":";
  const size_t at = trial.find(k);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(trial.c_str() + at + k.size(), nullptr);
}

}  // namespace harness_cli
