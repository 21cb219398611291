// bench_cli.cpp — bench mode's parent and its extras child (bench.hpp): the options, the bench
// trials through the session (lattice.hpp verify_combos with TrialOptions::bench), the extras child
// under its watchdog, and the bench table and JSON made from the TrialResults.
#include "bench.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "bench_row.hpp"
#include "check_json.hpp"
#include "cli_checks.hpp"
#include "errors.hpp"
#include "html_report.hpp"
#include "json_read.hpp"
#include "lattice.hpp"
#include "modules.hpp"
#include "outputs.hpp"
#include "text.hpp"
#include "report.hpp"
#include "user_file.hpp"
#include "worker.hpp"

namespace po = boost::program_options;

namespace nvfp4 {

namespace {
constexpr const char* kBenchShapes = "256x4096x7168,512x4096x7168,256x3072x4096,512x3072x7168";
}  // namespace

po::options_description bench_options() {
  po::options_description d("Bench mode (--bench COMBO[,COMBO...]: bench trials, timed in a stage time after run)");
  d.add_options()
      ("bench-shapes", po::value<std::string>()->default_value(kBenchShapes),
       "the shapes MxNxK[xL],... timed when --shape is not given (GPU MODE's benchmark shapes)")
      ("bench-dist", po::value<std::string>()->default_value("normal"),
       "the distribution when --dist is not given (never all-zero data)")
      ("bench-seed", po::value<uint64_t>()->default_value(1), "the seed when --seed is not given")
      ("bench-json", po::value<std::string>(), "the same as --json: the bench report")
      ("bench-rse", po::value<double>()->default_value(0.005),
       "stop when the median's relative standard error is below this")
      ("bench-max-time", po::value<double>()->default_value(2.0),
       "seconds of timed calls per measurement at most")
      ("bench-min-reps", po::value<int>()->default_value(50), "timed calls per measurement at least")
      ("bench-max-reps", po::value<int>()->default_value(5000), "timed calls per measurement at most")
      ("bench-warmup", po::value<int>()->default_value(3), "--warmup of a bench trial when --warmup is not given")
      ("bench-peak-size", po::value<int>()->default_value(8192),
       "size of the cubic bf16 GEMM that measures the peak (gpu; 0: skip)")
      ("bench-no-yardstick", po::bool_switch(), "skip the cuBLASLt GEMM-alone yardstick and plain's parts (gpu)")
      ("bench-budget", po::value<double>()->default_value(300.0),
       "seconds the GPU extras child (peak, yardstick, plain's parts) may take; past it it is killed (TIMEOUT)");
  return d;
}

namespace {


std::string num_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// torch.compile (default mode) medians on the H100, quoted from docs/gpu-target.md (not measured here).
double torch_compile_us(const std::string& shape) {
  static const std::map<std::string, double> table = {
      {"256x4096x7168", 197}, {"512x4096x7168", 188}, {"256x3072x4096", 164}, {"512x3072x7168", 324}};
  auto it = table.find(shape);
  return it == table.end() ? NAN : it->second;
}

// One row of the bench table and JSON: a bench trial, or an extra of the gpu module.
struct Row {
  std::string backend, shape, combo, outcome = "PASS", message, describe, check;
  bool emulated = false;  // a submission's torch._scaled_mm on FP4 ran in the driver's emulation
  int64_t max_ulp = -1, gpumode_mismatch = -1;
  std::vector<std::pair<std::string, double>> stages;  // seconds
  Timing t;
  double b2b = NAN;
  double stage(const std::string& name) const {
    for (const auto& s : stages)
      if (s.first == name) return s.second;
    return NAN;
  }
};

Row trial_row(const TrialResult& r) {
  Row row;
  row.backend = r.spec.backend;
  row.shape = r.spec.c.shape.str();
  row.combo = r.spec.combo.str();
  row.outcome = outcome_name(r.outcome);
  row.message = r.message;
  if (r.outcome != Outcome::Pass && !r.stage.empty()) row.message = "stage " + r.stage + ": " + r.message;
  row.describe = r.describe;
  row.emulated = r.describe.find("emulated FP4") != std::string::npos;  // submission_driver.py's describe
  for (const auto& s : r.stages)
    if (s.completed) row.stages.push_back({s.stage, s.seconds});
  if (r.compared) {
    row.max_ulp = r.cmp.max_ulp;
    row.gpumode_mismatch = r.cmp.gpumode_mismatch;
  }
  if (r.outcome == Outcome::Pass && r.timed) {
    row.t = r.timing.t;
    row.b2b = r.timing.b2b;
    row.check = "PASS (" + std::to_string(r.spec.options.runs) + " checked calls and 2 timed outputs on " +
                std::to_string(r.spec.options.runs + 1) + " input sets rotated between timed calls, fresh " +
                input_set_name(r.spec.options.fresh) + "; metrics of call " + std::to_string(r.cmp_call) +
                ": max " + std::to_string(r.cmp.max_ulp) + " ulp)";
  } else {
    row.check = row.outcome;
  }
  return row;
}

Row extras_row(const JsonValue& v, const std::string& shape) {
  Row row;
  row.backend = "gpu";
  row.shape = shape;
  row.combo = v.str_or("combo", "?");
  row.outcome = v.str_or("outcome", "ERROR");
  row.message = v.str_or("message", "");
  row.describe = v.str_or("describe", "");
  row.check = v.str_or("check", "");
  if (const JsonValue* st = v.find("stages_s"); st && st->is_object())
    for (const auto& m : st->members())
      if (m.second.is_number()) row.stages.push_back({m.first, m.second.number()});
  row.t.reps = int(v.number_or("reps", 0));
  row.t.median = v.number_or("median_us", NAN) * 1e-6;
  row.t.min = v.number_or("min_us", NAN) * 1e-6;
  row.t.mean = v.number_or("mean_us", NAN) * 1e-6;
  row.t.stdev = v.number_or("stdev_us", NAN) * 1e-6;
  row.t.rse = v.number_or("median_rse", NAN);
  row.b2b = v.number_or("b2b_us", NAN) * 1e-6;
  return row;
}

double shape_flops(const std::string& text) { return Shape::parse(text).flops(); }

// What the extras child gave (or why it gave nothing).
struct Extras {
  bool ran = false;
  std::string failure;  // the child failed or timed out: every extras row says why
  JsonValue report;
};

// Runs the extras child under its watchdog (bench.hpp).
Extras run_extras(const BenchExtrasRequest& rq, double budget_s, const std::string& dir) {
  Extras ex;
  ex.ran = true;
  const std::string log = dir + "/extras.log";
  std::vector<std::string> args = {"/proc/self/exe", "--child-bench", rq.out, rq.shapes, rq.dist,
                                   std::to_string(rq.seed), num_text(rq.rule.rse), num_text(rq.rule.max_time_s),
                                   std::to_string(rq.rule.min_reps), std::to_string(rq.rule.max_reps),
                                   std::to_string(rq.peak_size), rq.yardstick ? "1" : "0", rq.parts ? "1" : "0"};
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::fflush(nullptr);
  int pid = -1;
  try {
    pid = spawn_child(args, {}, null_fd, log_fd, -1);
  } catch (...) {
    if (log_fd >= 0) ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw;
  }
  if (log_fd >= 0) ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  int status = 0;
  if (!reap_within(pid, &status, budget_s)) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    reap_within(pid, &status, kReapSeconds);
    ex.failure = "TIMEOUT: the GPU extras child exceeded --bench-budget " + fmt_or_dash("%.1f", budget_s) +
                 " s; process group killed";
    return ex;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 125) {
    ex.ran = false;  // no CUDA paths in this build: nothing to report
    return ex;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream f(log);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (text.size() > 2000) text = text.substr(text.size() - 2000);
    ex.failure = std::string(WIFSIGNALED(status) ? "CRASH: the GPU extras child was killed by " +
                                                       std::string(strsignal(WTERMSIG(status)))
                                                 : "ERROR: the GPU extras child exited with status " +
                                                       std::to_string(WEXITSTATUS(status))) +
                 (text.empty() ? "" : ": " + text);
    return ex;
  }
  try {
    ex.report = read_json_file(rq.out);
  } catch (const std::exception& e) {
    ex.failure = std::string("ERROR: the GPU extras' JSON: ") + e.what();
  }
  return ex;
}

void print_table(std::ostream& os, const std::vector<Row>& rows, double peak, const std::map<std::string, double>& yard) {
  os << "\nBench (median_us: median of single timed calls, GPU L2-flushed, CUDA events, CPU host clock; b2b_us: mean "
        "of back-to-back calls, for a submission GPU MODE's method over distinct data objects; x-yard = time / "
        "cuBLASLt GEMM alone, graph-replayed; torch.compile figures from docs/gpu-target.md; load, init, tune, warmup: "
        "the trial's stage seconds, its cold-start cost)\n";
  size_t be = 4;
  for (const auto& r : rows) be = std::max(be, r.backend.size());
  char line[640];
  std::snprintf(line, sizeof line, "%-15s %-*s %-26s %7s %9s %9s %8s %7s %7s %8s %8s %8s %8s %8s\n", "shape", int(be),
                "be", "combo", "result", "median_us", "b2b_us", "TFLOP/s", "%peak", "x-yard", "x-torchc", "load_s",
                "init_s", "tune_s", "warmup_s");
  os << line;
  for (const auto& r : rows) {
    const double tf = shape_flops(r.shape) / r.t.median;
    const auto y = yard.find(r.shape);
    std::snprintf(line, sizeof line, "%-15s %-*s %-26s %7s %9s %9s %8s %7s %7s %8s %8s %8s %8s %8s\n",
                  r.shape.c_str(), int(be), r.backend.c_str(), r.combo.c_str(), r.outcome.c_str(),
                  fmt_or_dash("%.1f", r.t.median * 1e6).c_str(), fmt_or_dash("%.1f", r.b2b * 1e6).c_str(),
                  fmt_or_dash("%.3g", tf * 1e-12).c_str(), fmt_or_dash("%.1f", 100 * tf / peak).c_str(),
                  fmt_or_dash("%.2f", y == yard.end() ? NAN : r.t.median / y->second).c_str(),
                  fmt_or_dash("%.2f", torch_compile_us(r.shape) * 1e-6 / r.t.median).c_str(),
                  fmt_or_dash("%.3f", r.stage("load")).c_str(), fmt_or_dash("%.3f", r.stage("init")).c_str(),
                  fmt_or_dash("%.3f", r.stage("tune")).c_str(), fmt_or_dash("%.3f", r.stage("warmup")).c_str());
    os << line;
    if (r.emulated) os << "    emulated FP4: torch._scaled_mm on FP4 ran in the driver's emulation; not a B200's times\n";
    if (r.outcome != "PASS" && !r.message.empty()) os << "    " << r.outcome << ": " << r.message << "\n";
  }
}

// The bench's cases: --shape/--dist/--seed win over their --bench-* twins (giving both is ambiguous);
// the defaults are GPU MODE's benchmark shapes. `shape_list` gets the shapes as the extras child reads them.
std::vector<CaseSpec> bench_cases(const po::variables_map& vm, std::string& shape_list) {
  // Given means on the command line: --warmup has a default, so it is always in vm.
  auto either = [&](const char* general, const char* bench) {
    const bool general_given = vm.count(general) && !vm[general].defaulted();
    if (general_given && !vm[bench].defaulted())
      throw InputError(std::string("--") + general + " and --" + bench + " both set it; give one");
    return general_given;
  };
  const SuiteFilter filter = cli::suite_filter(vm);
  std::vector<Shape> shapes;
  if (either("shape", "bench-shapes")) {
    shapes = filter.shapes;
  } else {
    for (const auto& t : split_commas(vm["bench-shapes"].as<std::string>())) shapes.push_back(Shape::parse(t));
  }
  std::vector<std::string> dists = {vm["bench-dist"].as<std::string>()};
  if (either("dist", "bench-dist")) dists = filter.dists;
  const uint64_t seed = either("seed", "bench-seed") ? *filter.seed : vm["bench-seed"].as<uint64_t>();
  either("warmup", "bench-warmup");
  std::vector<CaseSpec> cases;
  for (const auto& dist : dists)
    for (const auto& shape : shapes) {
      CaseSpec c;
      c.shape = shape;
      c.shape.validate();
      c.dist = dist;
      c.seed = seed;
      if (filter.alphas) c.alpha1 = filter.alphas->first, c.alpha2 = filter.alphas->second;
      cases.push_back(c);
    }
  if (cases.empty()) throw InputError("--bench-shapes names no shape");
  shape_list.clear();
  for (const auto& sh : shapes) shape_list += (shape_list.empty() ? "" : ",") + sh.str();
  return cases;
}

// The bench's rows, grouped for the table and the JSON.
struct BenchRows {
  std::vector<Row> trials;
  std::map<std::string, std::vector<Row>> yard, parts;  // by shape
  std::map<std::string, double> yard_graph, yard_eager;  // seconds, by shape
  double peak = NAN;
  bool extras_failed = false;
};

BenchRows bench_rows(const Session& session, const Extras& extras) {
  BenchRows b;
  b.extras_failed = !extras.failure.empty();
  if (extras.ran && extras.failure.empty()) {
    b.peak = extras.report.number_or("peak_bf16_tflops", NAN) * 1e12;
    if (const JsonValue* shapes = extras.report.find("shapes"); shapes && shapes->is_array())
      for (const auto& s : shapes->items()) {
        const std::string shape = s.str_or("shape", "?");
        for (const char* group : {"yardstick", "plain_parts"})
          if (const JsonValue* a = s.find(group); a && a->is_array())
            for (const auto& v : a->items()) {
              Row r = extras_row(v, shape);
              b.extras_failed |= r.outcome != "PASS";
              (std::string(group) == "yardstick" ? b.yard : b.parts)[shape].push_back(r);
              if (std::string(group) == "yardstick" && r.outcome == "PASS")
                (r.combo.find("graph") != std::string::npos ? b.yard_graph : b.yard_eager)[shape] = r.t.median;
            }
      }
  }
  for (const auto& r : session.results()) b.trials.push_back(trial_row(r));
  return b;
}

// The bench's own members of the report: device, method, and per shape the yardstick, plain's parts
// and the trials' rows.
void add_bench_members(Json& j, Session& session, const TrialOptions& opt, const Extras& extras,
                       const BenchRows& b, const std::vector<CaseSpec>& cases, bool any_gpu, int peak_size) {
  const std::string dist = cases.front().dist;
  const uint64_t seed = cases.front().seed;
  const double peak = b.peak;
  auto get = [](const std::map<std::string, double>& m, const std::string& k) {
    const auto it = m.find(k);
    return it == m.end() ? NAN : it->second;
  };
  auto rows_of = [](const std::map<std::string, std::vector<Row>>& m, const std::string& k) {
    const auto it = m.find(k);
    return it == m.end() ? std::vector<Row>{} : it->second;
  };
  if (extras.ran && extras.failure.empty() && extras.report.find("device"))
    j["device"] = to_json(extras.report.at("device"));
  else
    j["device"] = {{"name", any_gpu ? "gpu (no extras measured)" : "host CPU"}};
  j["method"] = {
      {"timing", any_gpu ? "CUDA events per call on the plan's stream; 2x L2 written between calls"
                         : "host clock around each call (enqueue + synchronize)"},
      {"stopping_rule_rse", opt.timing.rse},
      {"min_reps", opt.timing.min_reps},
      {"max_reps", opt.timing.max_reps},
      {"max_time_s", opt.timing.max_time_s},
      {"warmup", opt.warmup},
      {"distribution", dist},
      {"seed", seed},
      {"input_sets", opt.runs + 1},
      {"fresh", input_set_name(opt.fresh)},
      {"fresh_inputs", "timed call i gets input set i mod input_sets, written before it (outside the timed region; "
                       "for a Python submission with one element of A negated, and after each batch one more "
                       "call, not counted, on its set as written); the last such call's (or the last timed "
                       "call's) and the last back-to-back call's outputs checked against their own sets' "
                       "references"},
      {"flops", "4*M*N*K*L per call"},
      {"per_call", "gpu plain: decode A + GEMM + silu*mul; B1/B2 decoded at init"},
      {"torch_compile_source", "docs/gpu-target.md (PyTorch 2.11 default mode, not this run)"}};
  j["context_s"] = extras.ran && extras.failure.empty() ? extras.report.number_or("context_s", NAN) : NAN;
  j["peak_bf16_tflops"] = peak * 1e-12;
  j["peak_size"] = peak_size;
  if (!extras.failure.empty()) j["extras_failure"] = extras.failure;
  Json shapes = Json::array();
  for (const auto& c : cases) {
    const std::string shape = c.shape.str();
    const auto info = session.cache().get(c);
    const double yg = get(b.yard_graph, shape);
    const double ye = get(b.yard_eager, shape);
    auto row_json = [&](const Row& r) {
      Json stages = Json::object();
      for (const auto& s : r.stages) stages[s.first] = s.second;
      Json j = {{"backend", r.backend},
                {"combo", r.combo},
                {"outcome", r.outcome},
                {"message", r.message},
                {"describe", r.describe},
                {"emulated_fp4", r.emulated},
                {"check", r.check},
                {"max_ulp", r.max_ulp},
                {"gpumode_mismatch", r.gpumode_mismatch},
                {"stages_s", std::move(stages)}};
      add_timing_members(j, r.t, r.b2b);
      const double tf = shape_flops(shape) / r.t.median;
      j["tflops"] = tf * 1e-12;
      j["pct_peak"] = 100 * tf / peak;
      j["x_yardstick_graph"] = r.t.median / yg;
      j["x_yardstick_eager"] = r.t.median / ye;
      j["speedup_vs_torch_compile"] = torch_compile_us(shape) * 1e-6 / r.t.median;
      return j;
    };
    auto rows = [&](const std::vector<Row>& v, bool only_this_shape) {
      Json a = Json::array();
      for (const auto& r : v)
        if (!only_this_shape || r.shape == shape) a.push_back(row_json(r));
      return a;
    };
    shapes.push_back(Json{{"shape", shape},
                          {"reference_s", info->reference_seconds},
                          {"degenerate", info->degeneracy.degenerate()},
                          {"torch_compile_us", torch_compile_us(shape)},
                          {"yardstick", rows(rows_of(b.yard, shape), false)},
                          {"plain_parts", rows(rows_of(b.parts, shape), false)},
                          {"combos", rows(b.trials, true)}});
  }
  j["shapes"] = std::move(shapes);
}

}  // namespace

int bench_mode(const po::variables_map& vm, TrialOptions opt, const std::vector<std::string>& backends,
               const std::string& program, const std::string& command,
               const std::map<std::string, ChildReport>& probes) {
  if (vm.count("json") && vm.count("bench-json")) throw InputError("--json and --bench-json both name the bench report; give one");
  std::vector<Combo> combos;
  for (const auto& t : cli::list_values(vm, "bench")) combos.push_back(Combo::parse(t));
  if (combos.empty()) throw InputError("--bench needs at least one combination");
  for (const auto& c : combos)
    for (const auto& b : backends) {
      try {
        check_combo(b, c);
      } catch (const InputError& e) {
        throw InputError("--bench: " + std::string(e.what()));
      }
    }
  std::string shape_list;
  const std::vector<CaseSpec> cases = bench_cases(vm, shape_list);
  // Every bench case must fit in memory, as verify's (cli_checks.hpp), before any trial.
  const cli::MemoryLimit memory = cli::memory_limit(vm);
  for (const auto& c : cases) cli::check_memory(c.shape, opt.runs, memory, vm.count("shape") ? "--shape" : "--bench-shapes");
  // The stopping rule's numbers, refused out of range rather than silently replaced (NaN fails
  // every comparison). At least three calls: a median's spread (MAD) needs three. A --bench-max-reps
  // below the default minimum, the minimum not given, lowers the minimum with it.
  const double rse = vm["bench-rse"].as<double>(), max_time = vm["bench-max-time"].as<double>();
  int min_reps = vm["bench-min-reps"].as<int>();
  const int max_reps = vm["bench-max-reps"].as<int>();
  if (vm["bench-min-reps"].defaulted() && !vm["bench-max-reps"].defaulted()) min_reps = std::min(min_reps, max_reps);
  if (!(rse >= 0) || !std::isfinite(rse))
    throw InputError("--bench-rse must be a finite number >= 0 (a relative standard error; got " + std::to_string(rse) + ")");
  if (!(max_time > 0) || !(max_time <= 1e6))
    throw InputError("--bench-max-time must be a positive number of seconds, at most 1e6 (got " +
                     std::to_string(max_time) + ")");
  if (min_reps < 3 || max_reps > 10000000 || max_reps < min_reps)
    throw InputError("--bench-min-reps and --bench-max-reps must satisfy 3 <= min <= max <= 10000000 (a median's "
                     "spread needs three calls; got " + std::to_string(min_reps) + " and " + std::to_string(max_reps) + ")");
  if (vm["bench-warmup"].as<int>() < 0)
    throw InputError("--bench-warmup must be >= 0 (got " + std::to_string(vm["bench-warmup"].as<int>()) + ")");
  if (vm["bench-peak-size"].as<int>() < 0)
    throw InputError("--bench-peak-size must be >= 0 (0 skips the peak; got " +
                     std::to_string(vm["bench-peak-size"].as<int>()) + ")");
  opt.bench = true;
  opt.timing.rse = rse;
  opt.timing.max_time_s = max_time;
  opt.timing.min_reps = min_reps;
  opt.timing.max_reps = max_reps;
  if (vm["warmup"].defaulted()) opt.warmup = vm["bench-warmup"].as<int>();
  const double extras_budget = vm["bench-budget"].as<double>();
  if (!(extras_budget > 0) || !(extras_budget <= 1e6))
    throw InputError("--bench-budget must be a positive number of seconds, at most 1e6");

  Session session(opt, program, &std::cout);
  for (const auto& [b, rep] : probes) session.adopt_probe(b, rep);
  RunPolicy policy = cli::run_policy(vm);
  // Timed trials side by side would time each other: one at a time, except gpu trials on GPUs of
  // their own (--gpus, one slot per GPU).
  bool all_gpu = !backends.empty();
  for (const auto& b : backends) all_gpu &= b == "gpu";
  const bool own_devices = all_gpu && !policy.gpus.empty();
  if (vm.count("jobs") && policy.jobs > 1 && !own_devices)
    throw InputError("--jobs with --bench: timed trials side by side would time each other (give the gpu "
                     "backend --gpus LIST: one slot per GPU)");
  policy.jobs = own_devices ? int(policy.gpus.size()) : 1;
  policy.prestart = false;  // a spare initializing beside a timed trial would disturb its times
  policy.overlap = false;   // so would a comparison on the host
  session.set_policy(policy);
  session.expect(backends.size() * combos.size() * cases.size());
  std::cout << "bench: " << combos.size() << " combination(s) x " << cases.size() << " shape(s) on";
  for (const auto& b : backends) std::cout << " " << b;
  std::cout << "; stopping rule: median rse < " << fmt_or_dash("%.2f", opt.timing.rse * 100) << "%, " << opt.timing.min_reps
            << ".." << opt.timing.max_reps << " calls, " << fmt_or_dash("%.1f", opt.timing.max_time_s) << " s cap\n";
  for (const auto& b : backends) verify_combos(session, b, combos, cases);

  // The GPU extras, when the gpu backend ran and is available here.
  Extras extras;
  bool any_gpu = false;
  for (const auto& b : backends) any_gpu |= b == "gpu";
  const auto gpu = session.backends().find("gpu");
  const bool yard = !vm["bench-no-yardstick"].as<bool>();
  const int peak_size = vm["bench-peak-size"].as<int>();
  if (any_gpu && gpu != session.backends().end() && gpu->second.available && (yard || peak_size > 0)) {
    const std::string tmp = session.new_dir();  // private, removed with the session
    BenchExtrasRequest rq;
    rq.out = tmp + "/extras.json";
    rq.shapes = shape_list;
    rq.dist = cases.front().dist;
    rq.seed = cases.front().seed;
    rq.rule = opt.timing;
    rq.peak_size = peak_size;
    rq.yardstick = rq.parts = yard;
    std::cout << "bench: the GPU extras (bf16 peak, cuBLASLt yardstick, plain's parts) in one child\n";
    extras = run_extras(rq, extras_budget, tmp);
  }

  // ---- rows ----
  const BenchRows b = bench_rows(session, extras);
  std::vector<Row> table;
  for (const auto& c : cases) {
    const std::string shape = c.shape.str();
    if (b.yard.count(shape)) table.insert(table.end(), b.yard.at(shape).begin(), b.yard.at(shape).end());
    for (const auto& r : b.trials)
      if (r.shape == shape) table.push_back(r);
    if (b.parts.count(shape)) table.insert(table.end(), b.parts.at(shape).begin(), b.parts.at(shape).end());
  }
  print_table(std::cout, table, b.peak, b.yard_graph);
  if (!extras.failure.empty()) std::cout << "bench: " << extras.failure << "\n";

  int code = 0;
  bool pass = false, fail = false;
  for (const auto& r : session.results()) {
    fail |= is_failure(r.outcome);
    pass |= r.outcome == Outcome::Pass;
  }
  code = fail || b.extras_failed ? 1 : pass ? 0 : 125;
  print_summary(std::cout, session, code);

  // ---- JSON: the verify report of the run ("mode": "bench", timing per trial) plus the bench's rows ----
  if (vm.count("bench-json") || vm.count("json") || vm.count("junit") || vm.count("html")) {
    Json doc = report_json(session, "bench", command, code);
    add_bench_members(doc, session, opt, extras, b, cases, any_gpu, peak_size);
    const std::string text = json_text(doc) + "\n";
    if (vm.count("bench-json")) cli::write_output(vm["bench-json"].as<std::string>(), text);
    cli::emit(vm, text, "bench");
  }
  return code;
}

int bench_extras_child(int argc, char** argv) {
  if (argc != 11) {
    std::fprintf(stderr, "harness --child-bench: expected 11 fields, got %d\n", argc);
    return 2;
  }
  BenchExtrasRequest rq;
  rq.out = argv[0];
  rq.shapes = argv[1];
  rq.dist = argv[2];
  rq.seed = std::strtoull(argv[3], nullptr, 10);
  rq.rule.rse = std::atof(argv[4]);
  rq.rule.max_time_s = std::atof(argv[5]);
  rq.rule.min_reps = std::atoi(argv[6]);
  rq.rule.max_reps = std::atoi(argv[7]);
  rq.peak_size = std::atoi(argv[8]);
  rq.yardstick = std::string(argv[9]) == "1";
  rq.parts = std::string(argv[10]) == "1";
  const std::string path = module_path(module_dir(), "gpu");
  try {
    void* handle = load_module(path);  // throws InputError naming the module and dlerror()
    auto entry = reinterpret_cast<BenchExtrasEntry>(dlsym(handle, kBenchExtrasEntry));
    if (!entry) {
      std::printf("SKIP: this build's gpu module has no CUDA paths (%s)\n", path.c_str());
      return 125;
    }
    return entry(&rq);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness --child-bench: %s\n", e.what());
    return 1;
  }
}

}  // namespace nvfp4
