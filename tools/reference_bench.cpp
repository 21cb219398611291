// reference_bench.cpp — times the exact CPU reference (compute_reference) on one problem and
// reports seconds per call and peak memory. Used by tools/bench_reference.py, which compares it
// with numpy float64 on the same inputs.
//
//   reference_bench --shape 512x4096x7168 --dist normal --seed 1 [--reps 3] [--abs-sums]
//                   [--threads N] [--isa x86-64-v4] [--write-case DIR] [--save-output C.npy]
//   reference_bench --inputs DIR [--batch-last] ...      (a case directory instead of a generator)
//
// Output: one "key value" per line (shape, isa, threads, seconds of each repetition, best, the
// certification tier counts, resident memory before the first call and the process's peak), so
// a script can parse it. Exit codes: 0 ok, 2 bad usage or input.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include <boost/program_options.hpp>

#include "case_dir.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "reference.hpp"

namespace po = boost::program_options;
using namespace nvfp4;

namespace {

// Current resident set size in MiB (from /proc/self/statm), or -1 if unavailable.
double current_rss_mib() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (!(f >> pages_total >> pages_resident)) return -1;
  return double(pages_resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// Peak resident set size of this process image in MiB: VmHWM from /proc/self/status. (Not
// getrusage's ru_maxrss: on Linux that survives fork+exec, so a child started by a big Python
// process would report the parent's peak.)
double peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // in kB
  return -1;
}

int run(int argc, char** argv) {
  std::string shape_text, dist, inputs, write_case, save_output, isa;
  uint64_t seed = 1;
  int reps = 1, threads = 0;
  bool abs_sums = false, batch_last = false;
  po::options_description desc("reference_bench: time the exact CPU reference");
  desc.add_options()("help,h", "this help")(
      "shape", po::value(&shape_text)->default_value("512x4096x7168"), "MxNxK[xL] for --dist")(
      "dist", po::value(&dist)->default_value("normal"), "input distribution (distributions.hpp)")(
      "seed", po::value(&seed)->default_value(1), "seed of the distribution")(
      "inputs", po::value(&inputs), "case directory to load instead of generating")(
      "batch-last", po::bool_switch(&batch_last), "the case directory is batch-last")(
      "write-case", po::value(&write_case), "write the inputs as a case directory (created)")(
      "save-output", po::value(&save_output), "write C (fp16 .npy) of the last repetition")(
      "reps", po::value(&reps)->default_value(1), "timed repetitions (0: only --write-case)")(
      "threads", po::value(&threads)->default_value(0), "worker threads (0: all cores)")(
      "isa", po::value(&isa)->default_value(""), "GEMM kernels: baseline, x86-64-v3, x86-64-v4")(
      "abs-sums", po::bool_switch(&abs_sums), "also compute sum |terms| (as the harness does)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(e.what());
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }

  Problem p = inputs.empty() ? make_problem(Shape::parse(shape_text), dist, seed)
                             : load_case(inputs, batch_last);
  if (!write_case.empty()) {
    ::mkdir(write_case.c_str(), 0777);  // an existing directory is fine; save_case reports errors
    save_case(write_case, p);
  }
  std::cout << "shape " << p.shape.str() << "\n";
  std::cout << "inputs " << (inputs.empty() ? dist + " seed " + std::to_string(seed) : inputs) << "\n";
  if (reps < 1) return 0;

  ReferenceOptions opt;
  opt.abs_sums = abs_sums;
  opt.threads = threads;
  opt.isa = isa;
  std::cout << "isa " << (isa.empty() ? reference_isas().front() : isa) << "\n";
  std::cout << "threads " << (threads > 0 ? threads : int(std::thread::hardware_concurrency())) << "\n";
  std::cout << "abs_sums " << (abs_sums ? 1 : 0) << "\n";
  std::cout << "rss_before_mib " << current_rss_mib() << "\n";
  double best = 1e300;
  ReferenceResult r;
  for (int i = 0; i < reps; ++i) {
    r = ReferenceResult{};  // free the previous result so it does not count twice in the peak
    const auto t0 = std::chrono::steady_clock::now();
    r = compute_reference(p, opt);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "seconds " << s << std::endl;
    best = std::min(best, s);
  }
  std::cout << "best_seconds " << best << "\n";
  std::cout << "gflops " << p.shape.flops() / best * 1e-9 << "\n";
  std::cout << "tier2_elements " << r.certified_by_abs_gemm << "\n";
  std::cout << "tier3_elements " << r.integer_fallback << "\n";
  std::cout << "peak_rss_mib " << peak_rss_mib() << "\n";
  if (!save_output.empty()) nvfp4::save_output(save_output, p.shape, r.c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::cerr << "reference_bench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "reference_bench: error: " << e.what() << "\n";
    return 1;
  }
}
