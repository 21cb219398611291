// bench.hpp — `harness --bench COMBO[,COMBO...]`: the GPU benchmark mode.
//
// The timing itself (CUDA events, L2 flushing and input rotation, the stopping rule, cold-start
// stage times, yardsticks, the table and the JSON) is GPU code: it lives in the gpu backend's
// module (optimized/gpu/bench.cpp), never in the harness process. `harness --bench` starts a child
// (`harness --child-bench ARGS...`, the same arguments) and returns its exit code; the child parses
// the options into a BenchRequest, loads the gpu module under a watchdog (a load that hangs is
// named and ends the child, exit 1), and calls the module's entry point `nvfp4_gpu_bench`.
#pragma once
#include <boost/program_options.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nvfp4 {

// Bench-only options (shapes, repetitions, JSON path, ...).
boost::program_options::options_description bench_options();

// What the module's bench runs: the parsed options (field by field the --bench-* options).
struct BenchRequest {
  std::vector<std::string> combos;
  std::string shapes, dist, json;  // json: empty for none
  uint64_t seed = 1;
  double rse = 0.005, max_time = 2.0, budget = 120.0;
  int min_reps = 50, max_reps = 5000, warmup = 3, peak_size = 8192;
  bool yardstick = true, fresh_all = false;
};
// The request from parsed options.
BenchRequest bench_request(const std::vector<std::string>& combos,
                           const boost::program_options::variables_map& vm);
// The module's entry point: returns the exit code (0, 1 a check failed or a step hung, 2 bad
// arguments, 125 no usable GPU). Prints the table to stdout.
extern "C" {
typedef int (*BenchEntry)(const BenchRequest*);
}
constexpr const char* kBenchEntry = "nvfp4_gpu_bench";

// The parent's side: runs `exe --child-bench ARGV[1..]` with inherited stdout/stderr and returns
// its exit code (a child killed by a signal: 1, with the signal named on stderr).
int run_bench_child(int argc, char** argv, const std::string& exe = "/proc/self/exe");
// The child's side: loads the gpu module (stage load, under `load_budget` seconds) and runs the
// request. Returns the exit code.
int bench_in_child(const BenchRequest& request, double load_budget);

// The bench's watchdog. Bench times everything in one process (one CUDA context), so it cannot
// kill a hung step the way verify kills a trial's child; instead a thread watches the current
// step (loading the module, the bf16 peak, a shape's reference, the yardstick, one of plain's
// parts, one stage of a combination) and, when a step exceeds its budget, prints which step hung
// to stdout and stderr and ends the process with exit code 1 (a verification failure: the thing
// under test hung).
class BenchWatchdog {
 public:
  explicit BenchWatchdog(double budget_s);
  ~BenchWatchdog();
  BenchWatchdog(const BenchWatchdog&) = delete;
  BenchWatchdog& operator=(const BenchWatchdog&) = delete;
  // A new step begins now, with the full budget (or `budget_s` when given).
  void step(const std::string& what, double budget_s = 0);
  // No step is running (the watchdog waits without a deadline).
  void idle();

 private:
  using Clock = std::chrono::steady_clock;
  void watch();
  double budget_, step_budget_;
  std::mutex m_;
  std::condition_variable cv_;
  std::string what_, option_;
  bool armed_ = false, stop_ = false;
  Clock::time_point deadline_;
  std::thread thread_;
};

}  // namespace nvfp4
