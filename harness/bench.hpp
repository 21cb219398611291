// bench.hpp — `harness --bench COMBO[,COMBO...]`: the GPU benchmark mode (GPU-paths issue).
//
// The harness CLI adds bench_options() to its option set and calls run_bench() when --bench is
// given; everything about timing (CUDA events, L2 flushing / input rotation, stopping rule,
// cold-start stage times, yardsticks, JSON) lives behind this interface.
#pragma once
#include <boost/program_options.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nvfp4 {

// Bench-only options (shapes, repetitions, JSON path, ...).
boost::program_options::options_description bench_options();
// Runs the benchmark for each combination; returns the process exit code (0, 2, or 125 when no
// GPU is present). Prints the table to stdout.
int run_bench(const std::vector<std::string>& combos, const boost::program_options::variables_map& vm);

// The bench's watchdog. Bench times everything in one process (one CUDA context), so it cannot
// kill a hung step the way verify kills a trial's child; instead a thread watches the current
// step (the bf16 peak, a shape's reference, the yardstick, one of plain's parts, one stage of a
// combination) and, when a step exceeds its budget, prints which step hung to stdout and stderr
// and ends the process with exit code 1 (a verification failure: the thing under test hung).
class BenchWatchdog {
 public:
  explicit BenchWatchdog(double budget_s);
  ~BenchWatchdog();
  BenchWatchdog(const BenchWatchdog&) = delete;
  BenchWatchdog& operator=(const BenchWatchdog&) = delete;
  // A new step begins now, with the full budget.
  void step(const std::string& what);
  // No step is running (the watchdog waits without a deadline).
  void idle();

 private:
  using Clock = std::chrono::steady_clock;
  void watch();
  double budget_;
  std::mutex m_;
  std::condition_variable cv_;
  std::string what_;
  bool armed_ = false, stop_ = false;
  Clock::time_point deadline_;
  std::thread thread_;
};

}  // namespace nvfp4
