// bench.hpp — `harness --bench COMBO[,COMBO...]`: bench mode, a timed mode of the trials
// (docs/design.md §4.1).
//
// A bench trial is an ordinary trial (the same children, stages, watchdogs, budgets and checks of
// every checked call against the exact reference) plus stage `time` after run (trial.hpp): the
// child times the steady state with the one timing helper (optimized/plan.hpp, measure_calls) and
// sends its figures and two timed outputs, which the parent checks like checked calls. So bench
// runs on any backend: `--backend cpu --bench plain,fused` times the CPU paths with the host
// clock; the default backend is gpu. Cold-start figures are the trial's stage times. The parent
// writes the bench table and the bench JSON from the TrialResults: the verify report of the run
// (report.hpp report_json with "mode": "bench" and "timing" per trial) plus "device", "method" and
// "shapes" (rows with median_us, b2b_us, tflops, pct_peak, x_yardstick_*, ...) for the HTML page.
//
// The GPU extras that are not paths — the cuBLASLt GEMM-alone yardstick (eager and graph), plain's
// per-call parts, the bf16 peak — are GPU code in the gpu module (optimized/gpu/bench.cpp). The
// parent runs them in one child, `harness --child-bench FIELDS...` (BenchExtrasRequest), which
// loads the gpu module and calls its entry point nvfp4_gpu_bench_extras; the child writes its rows
// as JSON to a file the parent reads and merges into the same table and JSON. The parent watches
// that child (--bench-budget seconds for all of it; past it the child's process group is killed
// and its rows are TIMEOUT).
#pragma once
#include <boost/program_options.hpp>
#include <cstdint>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include "trial.hpp"

namespace nvfp4 {

// The non-empty items of a comma-separated list (--bench-shapes), for the parent and the extras child.
inline std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Bench-only options (shapes, stopping rule, JSON path, extras).
boost::program_options::options_description bench_options();

// What the gpu module's extras measure, and where they go (a JSON file written by the module).
struct BenchExtrasRequest {
  std::string out;  // the JSON file to write
  std::string shapes, dist;
  uint64_t seed = 1;
  TimingRule rule;
  int peak_size = 8192;  // 0: no bf16 peak
  bool yardstick = true, parts = true;
};
// The module's entry point: writes the extras JSON; returns 0, or 125 when no GPU is usable.
// Throws nothing (a failure of one measurement is an ERROR row).
extern "C" {
typedef int (*BenchExtrasEntry)(const BenchExtrasRequest*);
}
constexpr const char* kBenchExtrasEntry = "nvfp4_gpu_bench_extras";

// The parent: bench mode on `backends` with the trial options of the command line (`opt`);
// prints the progress, the bench table and the summary, writes --bench-json and --html. Returns
// the exit code (0 pass, 1 a verification failure, 125 nothing timed).
// `probes`: the backends' load-probe reports (backends.hpp), adopted by the bench's session.
int bench_mode(const boost::program_options::variables_map& vm, TrialOptions opt,
               const std::vector<std::string>& backends, const std::string& program, const std::string& command,
               const std::map<std::string, ChildReport>& probes = {});

// The extras child: `harness --child-bench FIELDS...` (argv after --child-bench). Returns the
// exit code (0, 1 the module failed to load, 2 bad fields, 125 no gpu module with CUDA paths).
int bench_extras_child(int argc, char** argv);

}  // namespace nvfp4
