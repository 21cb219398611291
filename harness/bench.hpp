// bench.hpp — `harness --bench COMBO[,COMBO...]`: the GPU benchmark mode (GPU-paths issue).
//
// The harness CLI adds bench_options() to its option set and calls run_bench() when --bench is
// given; everything about timing (CUDA events, L2 flushing / input rotation, stopping rule,
// cold-start stage times, yardsticks, JSON) lives behind this interface.
#pragma once
#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace nvfp4 {

// Bench-only options (shapes, repetitions, JSON path, ...).
boost::program_options::options_description bench_options();
// Runs the benchmark for each combination; returns the process exit code (0, 2, or 125 when no
// GPU is present). Prints the table to stdout.
int run_bench(const std::vector<std::string>& combos, const boost::program_options::variables_map& vm);

}  // namespace nvfp4
