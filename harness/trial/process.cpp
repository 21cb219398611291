// process.cpp — starting, killing and reaping children (process.hpp).
#include "process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace nvfp4 {

namespace {

// PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not when the process does.
// A spare worker (pool.hpp) outlives the slot thread that asked for it, so every child is forked by
// one thread that lasts as long as the harness (never destroyed: it may still wait at exit).
class Spawner {
 public:
  static Spawner& get() {
    static Spawner* s = new Spawner;
    return *s;
  }
  int run(const std::function<int()>& fork_child) {
    std::packaged_task<int()> task(fork_child);
    auto done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(&task);
    }
    ready_.notify_one();
    return done.get();  // the fork's exception, if any, is rethrown here
  }

 private:
  Spawner() { std::thread([this] { loop(); }).detach(); }
  void loop() {
    for (;;) {
      std::packaged_task<int()>* task = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [&] { return !queue_.empty(); });
        task = queue_.front();
        queue_.pop_front();
      }
      (*task)();
    }
  }
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<int()>*> queue_;
};

}  // namespace

// Everything is prepared by the caller: after fork only async-signal-safe calls. The fork happens on
// the Spawner's thread.
int spawn_prepared(std::vector<std::string>& args, std::vector<std::string>& env, int in_fd, int log_fd, int keep_fd) {
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  return Spawner::get().run([&]() -> int {
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the harness (the Spawner's thread lasts as long)
      if (getppid() != parent) _exit(120);
      if (in_fd >= 0) dup2(in_fd, 0);
      if (log_fd >= 0) {
        dup2(log_fd, 1);
        dup2(log_fd, 2);
      }
      if (keep_fd >= 0) fcntl(keep_fd, F_SETFD, 0);  // the report pipe's write end survives exec
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    setpgid(pid, pid);  // also here: no window in which a kill(-pid) misses the group
    return int(pid);
  });
}

void kill_group(int pid) {
  kill(-pid_t(pid), SIGKILL);
  kill(pid_t(pid), SIGKILL);
}

namespace {

// Reaps killed workers in the background: a worker that ended cleanly (its combination done, a
// spare no longer wanted) takes the driver some time to tear down (a GPU context: up to a second,
// serialized across the host), and no slot should wait for that. Like the Spawner, it lasts as long
// as the harness; children it has not reaped yet die with the harness (PR_SET_PDEATHSIG).
class Reaper {
 public:
  static Reaper& get() {
    static Reaper* r = new Reaper;
    return *r;
  }
  void adopt(int pid) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pids_.push_back(pid);
    }
    more_.notify_one();
  }

 private:
  Reaper() { std::thread([this] { loop(); }).detach(); }
  void loop() {
    for (;;) {
      std::vector<int> pids;
      {
        std::unique_lock<std::mutex> lock(mu_);
        more_.wait(lock, [&] { return !pids_.empty(); });
        pids.swap(pids_);
      }
      std::vector<int> left;
      for (int pid : pids) {
        int status = 0;
        const pid_t w = waitpid(pid_t(pid), &status, WNOHANG);
        if (w == 0 || (w < 0 && errno == EINTR)) left.push_back(pid);  // still dying
      }
      if (left.empty()) continue;
      {
        std::lock_guard<std::mutex> lock(mu_);
        pids_.insert(pids_.end(), left.begin(), left.end());
      }
      usleep(5000);
    }
  }
  std::mutex mu_;
  std::condition_variable more_;
  std::vector<int> pids_;
};

}  // namespace

void reap_in_background(int pid) { Reaper::get().adopt(pid); }

int spawn_child(std::vector<std::string> args, const EnvOverrides& env, int in_fd, int log_fd, int keep_fd) {
  std::vector<std::string> environment = child_environment(env);
  return spawn_prepared(args, environment, in_fd, log_fd, keep_fd);
}

std::vector<std::string> child_environment(const EnvOverrides& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& x : extra) replaced |= x.substr(0, x.find('=')) == name;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}


// ---- what /proc says about other processes ----------------------------------------------------

// "sleep 77": /proc/PID/cmdline with spaces for NULs and '?' for any byte that is not printable
// ASCII (the report is JSON text), at most 80 characters; "" when gone.
std::string command_of(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& ch : text)
    if (ch == '\0') ch = ' ';
    else if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) > 0x7e) ch = '?';
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// A process's parent and process group from /proc/PID/stat (the fields after the command, which is
// in parentheses and may hold any character); false when it is gone.
bool proc_stat(int pid, int* ppid, int* pgid, char* state) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  char st = 0;
  int pp = 0, pg = 0;
  if (!(rest >> st >> pp >> pg)) return false;
  *ppid = pp;
  *pgid = pg;
  *state = st;
  return true;
}

std::vector<int> all_pids() {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) pids.push_back(std::atoi(name.c_str()));
  }
  return pids;
}

// The processes that hold a descriptor of the pipe whose inode is `ino` ("pipe:[ino]" in
// /proc/PID/fd), other than this one.
std::vector<int> pipe_holders(unsigned long ino) {
  std::vector<int> out;
  const std::string want = "pipe:[" + std::to_string(ino) + "]";
  const int self = int(::getpid());
  for (int pid : all_pids()) {
    if (pid == self) continue;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
      std::error_code ec2;
      if (std::filesystem::read_symlink(e.path(), ec2).string() == want) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

}  // namespace nvfp4
