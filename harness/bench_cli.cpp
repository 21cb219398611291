// bench_cli.cpp — the harness's side of --bench (bench.hpp): the options, the request, the child
// that loads the gpu module and runs the timing there, and the bench watchdog.
#include "bench.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "errors.hpp"
#include "modules.hpp"

namespace po = boost::program_options;

namespace nvfp4 {

BenchWatchdog::BenchWatchdog(double budget_s) : budget_(budget_s), step_budget_(budget_s), thread_([this] { watch(); }) {}

BenchWatchdog::~BenchWatchdog() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BenchWatchdog::step(const std::string& what, double budget_s) {
  {
    std::lock_guard<std::mutex> lock(m_);
    what_ = what;
    armed_ = true;
    step_budget_ = budget_s > 0 ? budget_s : budget_;
    option_ = budget_s > 0 ? "--budget-load" : "--bench-budget";
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(step_budget_));
  }
  cv_.notify_all();
}

void BenchWatchdog::idle() {
  {
    std::lock_guard<std::mutex> lock(m_);
    armed_ = false;
  }
  cv_.notify_all();
}

void BenchWatchdog::watch() {
  std::unique_lock<std::mutex> lock(m_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
        Clock::now() >= deadline_) {
      char line[1024];
      std::snprintf(line, sizeof line,
                    "harness --bench: TIMEOUT: %s exceeded its budget of %.1f s "
                    "(%s); ending the process, exit 1\n",
                    what_.c_str(), step_budget_, option_.c_str());
      std::fputs(line, stdout);
      std::fflush(stdout);
      std::fputs(line, stderr);
      std::fflush(stderr);
      std::_Exit(1);  // the hung step may hold the device: no destructors, no atexit handlers
    }
  }
}

po::options_description bench_options() {
  po::options_description d("Bench mode (--bench COMBO[,COMBO...], GPU only)");
  d.add_options()
      ("bench-shapes", po::value<std::string>()->default_value(
           "256x4096x7168,512x4096x7168,256x3072x4096,512x3072x7168"),
       "comma-separated shapes MxNxK[xL] to time")
      ("bench-dist", po::value<std::string>()->default_value("normal"),
       "input distribution (never all-zero data)")
      ("bench-seed", po::value<uint64_t>()->default_value(1), "input seed")
      ("bench-json", po::value<std::string>(), "write the results as JSON to this file")
      ("bench-rse", po::value<double>()->default_value(0.005),
       "stop when the median's relative standard error is below this")
      ("bench-max-time", po::value<double>()->default_value(2.0),
       "seconds of timed calls per measurement at most")
      ("bench-min-reps", po::value<int>()->default_value(50), "timed calls per measurement at least")
      ("bench-max-reps", po::value<int>()->default_value(5000), "timed calls per measurement at most")
      ("bench-warmup", po::value<int>()->default_value(3), "eager calls before capture and timing")
      ("bench-peak-size", po::value<int>()->default_value(8192),
       "size of the cubic bf16 GEMM that measures the peak (0: skip)")
      ("bench-no-yardstick", po::bool_switch(), "skip the cuBLASLt GEMM-alone yardstick")
      ("bench-budget", po::value<double>()->default_value(120.0),
       "seconds one bench step (a stage of a combination, the yardstick, ...) may take; past it "
       "the bench names the step and exits 1");
  return d;
}

BenchRequest bench_request(const std::vector<std::string>& combos, const po::variables_map& vm) {
  BenchRequest r;
  r.combos = combos;
  r.shapes = vm["bench-shapes"].as<std::string>();
  r.dist = vm["bench-dist"].as<std::string>();
  if (vm.count("bench-json")) r.json = vm["bench-json"].as<std::string>();
  r.seed = vm["bench-seed"].as<uint64_t>();
  r.rse = vm["bench-rse"].as<double>();
  r.max_time = vm["bench-max-time"].as<double>();
  r.budget = vm["bench-budget"].as<double>();
  r.min_reps = vm["bench-min-reps"].as<int>();
  r.max_reps = vm["bench-max-reps"].as<int>();
  r.warmup = vm["bench-warmup"].as<int>();
  r.peak_size = vm["bench-peak-size"].as<int>();
  r.yardstick = !vm["bench-no-yardstick"].as<bool>();
  r.fresh_all = vm.count("fresh") && vm["fresh"].as<std::string>() == "all";
  return r;
}

int run_bench_child(int argc, char** argv, const std::string& exe) {
  std::vector<std::string> args = {exe, "--child-bench"};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 127 ? 1 : WEXITSTATUS(status);
  std::fprintf(stderr, "harness --bench: the bench child was killed by signal %d (%s)\n", WTERMSIG(status),
               strsignal(WTERMSIG(status)));
  return 1;
}

int bench_in_child(const BenchRequest& request, double load_budget) {
  const ModuleDir dir = module_dir();
  const std::string path = module_path(dir, "gpu");
  BenchEntry entry = nullptr;
  {
    BenchWatchdog load_watch(load_budget);
    load_watch.step("loading the gpu paths (" + path + ")", load_budget);
    void* handle = load_module(path);  // throws InputError naming the module and dlerror()
    entry = reinterpret_cast<BenchEntry>(dlsym(handle, kBenchEntry));
    load_watch.idle();
  }
  if (!entry) {
    std::printf("SKIP: bench mode needs the CUDA paths; this build's gpu module has none (%s)\n", path.c_str());
    return 125;
  }
  return entry(&request);
}

}  // namespace nvfp4
