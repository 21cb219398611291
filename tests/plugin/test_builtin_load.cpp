// test_builtin_load.cpp — built-in backends are modules loaded only in children (harness/backends/modules.hpp):
// whatever a module does at load time is that child's stage `load`, never the harness's.
// The paths folders (NVFP4_FAULTY_DIR/faulty_<defect>, tests/plugin/CMakeLists.txt) each hold the
// real cpu module and a gpu module that hangs, crashes, or registers nothing at load
// (faulty_module.cpp); NVFP4_PATHS_DIR points the harness at one of them.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "harness_cli.hpp"

using namespace harness_cli;

namespace {

std::string faulty(const std::string& defect) { return std::string(NVFP4_FAULTY_DIR) + "/faulty_" + defect; }

// Runs the harness with NVFP4_PATHS_DIR=dir.
TimedResult run_with_paths(const std::string& dir, const std::vector<std::string>& args, double timeout_s) {
  setenv("NVFP4_PATHS_DIR", dir.c_str(), 1);
  TimedResult r = run_argv(args, timeout_s);
  unsetenv("NVFP4_PATHS_DIR");
  return r;
}

int count_lines_with(const std::string& out, const std::string& a, const std::string& b) {
  std::istringstream is(out);
  std::string line;
  int n = 0;
  while (std::getline(is, line)) n += has(line, a) && has(line, b);
  return n;
}

}  // namespace

TEST_CASE("a gpu module that hangs at load: TIMEOUT in stage load; the cpu backend runs and passes") {
  const TimedResult r = run_with_paths(
      faulty("hang"), {"--verify", "all", "--shape", "7x13x48", "--budget-load", "3"}, 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "backend gpu did not load"));
  CHECK(count_lines_with(r.out, "TIMEOUT", "stage load") >= 1);
  CHECK(has(r.out, "--budget-load"));
  CHECK(count_lines_with(r.out, "cpu ", "PASS") >= 4);  // plain, autotune, fused, autotune+fused
  CHECK(has(r.out, " PASS 1 TIMEOUT -> exit 1"));  // every cpu trial passed
  CHECK(r.seconds < 60);
  // The load probes run before the trials' session: the 3 s of the hang are the run's all the
  // same, in the summary (it said 0.1 s) and in the TIMEOUT's progress line.
  CHECK(summary_seconds(r.out) >= 3.0);
  // The TIMEOUT's progress line, "[   k/n    S.S s] gpu plain ...  TIMEOUT", at S >= 3 (a loaded
  // machine may add to it; it said 0.0 before).
  double at = -1;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (line.find("gpu plain 7x13x48 normal seed 7  TIMEOUT") != std::string::npos && line.find(" s]") != std::string::npos) {
      const size_t end = line.find(" s]"), start = line.rfind(' ', end - 1);
      at = std::atof(line.substr(start + 1, end - start - 1).c_str());
    }
  CHECK(at >= 3.0);
}

TEST_CASE("a gpu module that crashes at load: CRASH in stage load; the cpu backend still passes") {
  const TimedResult r = run_with_paths(faulty("crash"), {"--verify", "all", "--shape", "7x13x48"}, 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(count_lines_with(r.out, "CRASH", "stage load") >= 1);
  CHECK(has(r.out, "SIGSEGV"));
  CHECK(count_lines_with(r.out, "cpu ", "PASS") >= 4);
}

TEST_CASE("a module that registers no backend of its name is an ERROR in stage load, named") {
  const TimedResult r = run_with_paths(faulty("slow"), {"--verify", "all", "--shape", "7x13x48"}, 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "backend gpu did not load"));
  CHECK(has(r.out, "loaded but registered no backend 'gpu'"));
  CHECK(count_lines_with(r.out, "ERROR gpu plain", "in stage load") >= 1);
  CHECK(count_lines_with(r.out, "cpu ", "PASS") >= 4);
}

// The output of a shell command.
std::string command_output(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST_CASE("the harness binary holds no CUDA: no CUDA library needed, no CUDA symbol defined") {
  // In a CUDA build the gpu module holds cudart (static) and needs cublasLt; the harness neither.
  const std::string bin = harness_bin();
  const std::string needed = command_output("readelf -d '" + bin + "' 2>&1");
  INFO(needed);
  REQUIRE(has(needed, "NEEDED"));
  CHECK_FALSE(has(needed, "cublas"));
  CHECK_FALSE(has(needed, "libcuda"));
  const std::string symbols = command_output("nm -D --defined-only '" + bin + "' 2>&1");
  REQUIRE(has(symbols, "register_backend"));  // the registry the modules bind to is exported
  CHECK_FALSE(has(symbols, " cuda"));
  CHECK_FALSE(has(symbols, " cublas"));
}

TEST_CASE("the harness never loads a module itself: --help, --backend cpu, and its own memory map") {
  // --help and a run that names only the cpu backend never touch the hanging gpu module.
  const TimedResult help = run_with_paths(faulty("hang"), {"--help"}, 20);
  CHECK(help.rc == 0);
  CHECK(help.seconds < 5);
  const TimedResult cpu = run_with_paths(faulty("hang"), {"--backend", "cpu", "--verify", "plain", "--shape", "7x13x48"}, 60);
  INFO(cpu.out);
  CHECK(cpu.rc == 0);
  CHECK(cpu.seconds < 30);

  // While the gpu module's load probe hangs, the harness process has printed its first line and
  // maps no module (and no CUDA library); its load-probe child is the one stuck.
  setenv("NVFP4_PATHS_DIR", faulty("hang").c_str(), 1);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const std::string bin = harness_bin();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    execl(bin.c_str(), bin.c_str(), "--verify", "all", "--shape", "7x13x48", "--budget-load", "8", (char*)nullptr);
    _exit(127);
  }
  unsetenv("NVFP4_PATHS_DIR");
  close(fds[1]);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[256];
  const ssize_t n = read(fds[0], buf, sizeof buf);  // the first output
  const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(n > 0);
  CHECK(first < 2.0);
  usleep(500 * 1000);
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  const std::string m((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  CHECK(!m.empty());
  CHECK_FALSE(has(m, "libnvfp4_paths_"));
  CHECK_FALSE(has(m, "libcublas"));
  CHECK_FALSE(has(m, "libcudart"));
  CHECK_FALSE(has(m, "libcuda."));
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  close(fds[0]);
}

TEST_CASE("--bench with a gpu module that hangs at load: its load probe is a TIMEOUT in stage load, exit 1") {
  const TimedResult r = run_with_paths(faulty("hang"), {"--bench", "plain", "--budget-load", "2"}, 60);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "TIMEOUT: gpu plain"));
  CHECK(has(r.out, "did not load"));
  CHECK(has(r.out, "stage load exceeded its budget of 2.0 s"));
}
