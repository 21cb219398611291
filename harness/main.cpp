// main.cpp — the harness CLI (docs/design.md §4). The only place that prints usage and maps outcomes to
// exit codes:
//   0    everything that ran passed
//   1    a verification failure (FAIL, ERROR, CRASH, TIMEOUT, BLOCKED; a bisect found a culprit)
//   2    bad usage or bad input (InputError)
//   125  nothing could be tested here (every trial SKIP), so `git bisect run` and ctest's
//        SKIP_RETURN_CODE work unchanged
// Modes: --verify all | COMBO[,COMBO...], --bisect COMBO, --inputs DIR (--check / --save-output),
// --bench COMBO[,...] (bench.hpp), --list, --report-html REPORT.json (render reports: junit.hpp,
// html_report.hpp), --merge A.json B.json ... (the reports of --shard I/N runs: shard.hpp,
// merge.hpp). `harness --child-trial SPEC` is the hidden entry point of trial children
// (trial.hpp), handled before option parsing; `harness --child-bench FIELDS...` that of the bench's
// GPU extras child (bench.hpp). This process never loads path code: the built-in backends are modules that
// children load (modules.hpp); here they are known by their file names and their load probes. Bad usage and bad input are refused before any
// work by cli_checks.hpp (tokens, values, paths, memory), in one line.
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <iostream>
#include <sstream>
#include <sys/stat.h>

#include "backends.hpp"
#include "bench.hpp"
#include "case_dir.hpp"
#include "casemode.hpp"
#include "cli_checks.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "external.hpp"
#include "html_report.hpp"
#include "json_read.hpp"
#include "junit.hpp"
#include "lattice.hpp"
#include "merge.hpp"
#include "modules.hpp"
#include "registry.hpp"
#include "report.hpp"
#include "shard.hpp"
#include "suite.hpp"
#include "trial.hpp"
#include "user_file.hpp"
#include "worker.hpp"

namespace po = boost::program_options;
using namespace nvfp4;

namespace {

// Maps trial outcomes to the exit code: any failure 1; else any PASS 0; else 125.
int exit_code_for(const std::vector<TrialResult>& results) {
  bool pass = false;
  for (const auto& r : results) {
    if (is_failure(r.outcome)) return 1;
    pass |= r.outcome == Outcome::Pass;
  }
  return pass ? 0 : 125;
}

// The backends a combination runs on: the named one (where it must be valid), or every backend
// that has all its optimizations.
std::vector<std::string> backends_for(const Combo& combo, const std::vector<std::string>& backends,
                                      bool explicit_backend) {
  std::vector<std::string> out;
  std::string first_error;
  for (const auto& b : backends) {
    try {
      check_combo(b, combo);
      out.push_back(b);
    } catch (const InputError& e) {
      if (explicit_backend) throw;
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (out.empty()) throw InputError(first_error.empty() ? "no backend for " + combo.str() : first_error);
  return out;
}

void print_list(std::ostream& os, Session& s) {
  const Registry& reg = Registry::instance();
  for (const auto* b : reg.backends()) {
    os << "backend " << b->name << ": " << b->summary << "\n";
    const BackendStatus& st = s.probe(b->name);
    os << "  here: " << (st.available ? "available" : "not available (" + st.reason + ")") << "\n";
    for (const auto* o : reg.optimizations(b->name)) {
      std::string stages;
      for (Stage st2 : o->stages) stages += std::string(stages.empty() ? "" : ",") + stage_name(st2);
      os << "  " << o->name << "  (" << (o->kind == OptKind::Variant ? "variant" : "wrapper, order " + std::to_string(o->order))
         << (stages.empty() ? "" : "; adds stage " + stages) << ")  " << o->summary << "\n";
    }
    os << "  combinations: ";
    std::string combos;
    for (const auto& c : lattice_combos(b->name)) combos += (combos.empty() ? "" : ", ") + c.str();
    os << combos << "\n";
  }
  os << "distributions: ";
  std::string d;
  for (const auto& n : distribution_names()) d += (d.empty() ? "" : ", ") + n;
  os << d << "\n";
}

// Writes FILE with `write`, or throws InputError.
template <class Write>
void write_file(const std::string& path, Write write) {
  std::ostringstream f;
  write(f);
  write_text_file(path, f.str());  // non-blocking open; special files refused (user_file.hpp)
}

// --json, --junit, --html of a run: all from the one JSON report, parsed back, so that rendering
// a run and rendering a report file (--report-html) are the same code. A shard run's report
// carries its shard record (merge.hpp).
void write_reports(const po::variables_map& vm, const Session& session, const std::string& mode,
                   const std::string& command, int code, const ShardRecord* shard = nullptr) {
  std::ostringstream out;
  write_json(out, session, mode, command, code);
  const std::string json = shard ? add_shard_record(out.str(), *shard) : out.str();
  if (vm.count("json")) write_file(vm["json"].as<std::string>(), [&](std::ostream& f) { f << json; });
  if (!vm.count("junit") && !vm.count("html")) return;
  const JsonValue report = JsonValue::parse(json);
  if (vm.count("junit")) write_file(vm["junit"].as<std::string>(), [&](std::ostream& f) { write_junit(f, report); });
  if (vm.count("html"))
    write_file(vm["html"].as<std::string>(), [&](std::ostream& f) { write_html(f, {report}, {"this run"}); });
}

// --report-html REPORT.json [...]: renders reports already written (verify, bisect or bench); runs nothing.
int render_reports(const po::variables_map& vm) {
  for (const char* mode : {"verify", "bisect", "bench", "inputs", "list"})
    if (vm.count(mode)) throw InputError(std::string("--report-html renders reports; not with --") + mode);
  if (!vm.count("html") && !vm.count("junit")) throw InputError("--report-html needs --html OUT.html (or --junit OUT.xml)");
  std::vector<JsonValue> reports;
  const auto paths = vm["report-html"].as<std::vector<std::string>>();
  for (const auto& p : paths) reports.push_back(read_json_file(p));
  if (vm.count("junit")) {
    std::vector<const JsonValue*> verify;
    for (const auto& r : reports)
      if (!is_bench_report(r)) verify.push_back(&r);
    if (verify.size() != 1) throw InputError("--junit with --report-html needs exactly one verify/bisect report");
    write_file(vm["junit"].as<std::string>(), [&](std::ostream& f) { write_junit(f, *verify.front()); });
  }
  if (vm.count("html")) write_file(vm["html"].as<std::string>(), [&](std::ostream& f) { write_html(f, reports, paths); });
  return 0;
}

// --merge A.json B.json ...: the shard reports of one --verify run as one summary, one exit code
// and (--json/--junit/--html) one report; runs nothing.
int merge_mode(const po::variables_map& vm, const std::string& command) {
  for (const char* mode : {"verify", "bisect", "bench", "inputs", "list", "report-html", "shard"})
    if (vm.count(mode)) throw InputError(std::string("--merge combines reports already written; not with --") + mode);
  cli::check_paths(vm);
  const auto paths = vm["merge"].as<std::vector<std::string>>();
  std::vector<JsonValue> reports;
  for (const auto& p : paths) reports.push_back(read_json_file(p));
  const MergedReport m = merge_reports(reports, paths, command);
  std::cout << "merge: " << paths.size() << " shard report" << (paths.size() == 1 ? "" : "s") << " of --verify "
            << m.report.at("shard").at("verify").str() << "\n";
  print_report_summary(std::cout, m.report);
  if (vm.count("json")) write_file(vm["json"].as<std::string>(), [&](std::ostream& f) { f << m.json; });
  if (vm.count("junit")) write_file(vm["junit"].as<std::string>(), [&](std::ostream& f) { write_junit(f, m.report); });
  if (vm.count("html"))
    write_file(vm["html"].as<std::string>(), [&](std::ostream& f) { write_html(f, {m.report}, {"merged shards"}); });
  return m.exit_code;
}

void print_case_check(std::ostream& os, const CheckResult& r, const std::string& file) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f", r.info->reference_seconds);
  os << "case: " << r.info->spec.name() << ", shape " << r.info->ref.shape.str() << " (exact reference in "
     << secs << " s)\n";
  for (const auto& w : r.info->warnings) os << "warning: suspicious data: " << w << "\n";
  if (r.info->degeneracy.degenerate())
    os << "DEGENERATE reference: " << r.info->degeneracy.describe()
       << " (this check cannot tell a right kernel from a wrong one)\n";
  os << "check of " << file << " against the exact reference: " << (r.cmp.pass() ? "PASS" : "FAIL") << "\n";
  print_comparison(os, r.cmp, "  ");
}

int run(int argc, char** argv) {
  TrialOptions d;  // defaults, shared with the reproducer strings (report.cpp)
  po::options_description modes("Modes");
  modes.add_options()
      ("help,h", "show this help")
      ("list", "list backends (with availability here), optimizations, combinations, distributions")
      ("verify", po::value<std::string>(),
       "'all' (staged isolation on the embedded suite) or COMBO[,COMBO...], e.g. plain,fused+autotune")
      ("bisect", po::value<std::string>(), "find the minimal failing sub-combinations of COMBO")
      ("bench", po::value<std::string>(),
       "time COMBO[,COMBO...]: bench trials (verified, then timed in stage time) on --backend (default gpu)")
      ("backend", po::value<std::string>()->default_value("all"),
       "cpu, gpu or all (with --plugin/--submission the default is theirs alone; 'all' adds the built-in ones)")
      ("plugin", po::value<std::vector<std::string>>()->composing(),
       "LIB.so: a C-ABI plugin (optimized/plugin/nvfp4_plugin.h) as backend plugin:NAME, loaded only in trial "
       "children (stage load); repeatable")
      ("submission", po::value<std::vector<std::string>>()->composing(),
       "FILE.py: a GPU MODE style Python submission, custom_kernel(data), as backend submission:NAME, run by "
       "harness/submission_driver.py in trial children (import in stage load); repeatable")
      ("json", po::value<std::string>(), "also write the full report as JSON to FILE")
      ("junit", po::value<std::string>(), "also write the results as JUnit XML to FILE (one testcase per trial)")
      ("html", po::value<std::string>(),
       "also write one self-contained HTML page to FILE (lattice grid, ULP histograms, stage times; "
       "with --bench: the bench chart, needs --bench-json)")
      ("report-html", po::value<std::vector<std::string>>()->composing(),
       "render REPORT.json (repeatable: verify and --bench-json reports) with --html OUT and/or --junit OUT; runs nothing")
      ("merge", po::value<std::vector<std::string>>()->multitoken()->composing(),
       "combine the --json reports of the shards of one --verify run (A.json B.json ...) into one summary and "
       "exit code (and --json/--junit/--html OUT); runs nothing");
  po::options_description suite("Suite narrowing (each replaces that dimension of the suite)");
  suite.add_options()
      ("shape", po::value<std::vector<std::string>>()->composing(), "MxNxK[xL][,...] (repeatable)")
      ("dist", po::value<std::vector<std::string>>()->composing(), "distribution name[,...] (repeatable)")
      ("seed", po::value<uint64_t>(), "seed for every case")
      ("alpha", po::value<std::string>(), "A1,A2: the global scales alpha1, alpha2 of every case (also with --inputs)")
      ("shard", po::value<std::string>(),
       "I/N: run shard I (0-based) of N: every combination on its part of the cases (shard.hpp); default: "
       "GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS when set");
  po::options_description trial("Trials");
  trial.add_options()
      ("warmup", po::value<int>()->default_value(d.warmup), "eager calls in stage warmup")
      ("runs", po::value<int>()->default_value(d.runs), "checked calls in stage run (each one checked)")
      ("fresh", po::value<std::string>()->default_value(input_set_name(d.fresh)),
       "what each checked call gets new: 'activations' (A and SFA, as in an engine) or 'all' (all six inputs and the alphas)")
      ("tune-cache", po::value<std::string>(),
       "directory of the on-disk autotune cache (default: none, in-process only, so stage tune really tunes)")
      ("tune-reps", po::value<int>()->default_value(d.plan.tune_reps), "timed calls per autotune candidate")
      ("tune-time", po::value<double>()->default_value(d.plan.tune_budget_s),
       "autotune stops trying new candidates after this many seconds")
      ("max-memory", po::value<double>(),
       "GiB a case may need (reference, trial, outputs; default: what this machine has available)");
  po::options_description parallel("Workers and parallel trials (pool.hpp)");
  parallel.add_options()
      ("isolate", po::value<std::string>(),
       "'worker' (default: one child runs a combination's trials one after another; any failure ends it and the "
       "next trial starts a fresh one) or 'trial' (one child per trial)")
      ("jobs", po::value<int>(), "trials at once, each slot its own child (default: one per --gpus device, else 1)")
      ("gpus", po::value<std::string>(),
       "LIST (0,1,...) or 'all': slot k runs with CUDA_VISIBLE_DEVICES = entry k mod the list's length "
       "(default: the GPUs a ctest resource spec gives, else unchanged)");
  po::options_description watch("Watchdog budgets in seconds (past one: the child's process group is killed, TIMEOUT)");
  watch.add_options()
      ("budget-load", po::value<double>()->default_value(d.budget.load), "stage load (a plugin's load, a submission's import)")
      ("budget-init", po::value<double>()->default_value(d.budget.init), "stage init (also the harness's setup/teardown)")
      ("budget-tune", po::value<double>()->default_value(d.budget.tune), "stage tune")
      ("budget-warmup", po::value<double>()->default_value(d.budget.warmup), "stage warmup")
      ("budget-capture", po::value<double>()->default_value(d.budget.capture), "stage capture")
      ("budget-run", po::value<double>()->default_value(d.budget.run), "stage run")
      ("budget-trial", po::value<double>()->default_value(d.budget.trial), "the whole trial");
  // --budget-time (stage time, bench mode) is among the bench options.
  po::options_description drills("Fault drills");
  drills.add_options()
      ("inject", po::value<std::vector<std::string>>()->composing(),
       "FAULT@STAGE[:if=COMBO][:case=SHAPE], repeatable; FAULT: hang crash error slow nan corrupt unwritten "
       "(the last three take @run and hit the last checked call)")
      ("slow-seconds", po::value<double>()->default_value(d.slow_seconds), "how long the slow fault sleeps");
  po::options_description casedir("Case directories (a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy [c.npy])");
  casedir.add_options()
      ("inputs", po::value<std::string>(), "run on this case directory instead of the suite")
      ("batch-last", "arrays are (rows, cols, L) instead of (L, rows, cols)")
      ("check", po::value<std::string>(), "compare this fp16 .npy output with the exact reference")
      ("save-output", po::value<std::string>(),
       "write C as .npy: the reference's, or the path's when --verify COMBO / --backend names one");
  po::options_description all("harness: verify NVFP4 dual-GEMM paths against the exact reference\n"
                              "  harness --verify all | --verify COMBO[,...] | --bisect COMBO | --list\n"
                              "  harness --inputs DIR [--check C.npy | --save-output C.npy]\n"
                              "exit codes: 0 passed, 1 verification failure, 2 bad usage/input, 125 nothing testable here");
  all.add(modes).add(suite).add(trial).add(parallel).add(watch).add(drills).add(casedir).add(bench_options());

  po::variables_map vm;
  const po::parsed_options parsed = po::command_line_parser(argc, argv).options(all).run();
  po::store(parsed, vm);
  po::notify(vm);

  if (vm.count("help")) {
    std::cout << all << "\n";
    return 0;
  }
  // Everything the user wrote is checked before any work (cli_checks.hpp); refusals exit 2.
  cli::check_tokens(parsed);
  // As GoogleTest does: tell the runner (Bazel) that this program understands the sharding variables.
  if (const char* status = std::getenv("GTEST_SHARD_STATUS_FILE"); status && *status)
    write_text_file(status, "");
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  if (vm.count("merge")) return merge_mode(vm, command);
  for (const char* mode : {"report-html", "bench", "list", "bisect"})
    if (vm.count("shard") && vm.count(mode))
      throw InputError(std::string("--shard splits a --verify run by case; not with --") + mode);
  if (vm.count("report-html")) return render_reports(vm);
  if (vm.count("bench") && vm.count("html") && !vm.count("bench-json"))
    throw InputError("--html with --bench needs --bench-json FILE");

  cli::check_values(vm);
  cli::check_paths(vm);
  TrialOptions opt;
  opt.warmup = vm["warmup"].as<int>();
  opt.runs = vm["runs"].as<int>();
  const std::string fresh = vm["fresh"].as<std::string>();
  if (fresh != "activations" && fresh != "all")
    throw InputError("--fresh: must be 'activations' or 'all', not '" + fresh + "'");
  opt.fresh = fresh == "all" ? InputSet::All : InputSet::Activations;
  opt.budget.load = vm["budget-load"].as<double>();
  opt.budget.init = vm["budget-init"].as<double>();
  opt.budget.tune = vm["budget-tune"].as<double>();
  opt.budget.warmup = vm["budget-warmup"].as<double>();
  opt.budget.capture = vm["budget-capture"].as<double>();
  opt.budget.run = vm["budget-run"].as<double>();
  opt.budget.trial = vm["budget-trial"].as<double>();
  opt.budget.time = vm["budget-time"].as<double>();
  opt.slow_seconds = vm["slow-seconds"].as<double>();
  if (vm.count("tune-cache")) opt.plan.tune_cache_dir = vm["tune-cache"].as<std::string>();
  opt.plan.tune_reps = vm["tune-reps"].as<int>();
  opt.plan.tune_budget_s = vm["tune-time"].as<double>();
  SuiteFilter filter = cli::suite_filter(vm);
  if (vm.count("alpha")) {
    try {
      filter.alphas = parse_alphas(vm["alpha"].as<std::string>());
    } catch (const InputError& e) {
      throw InputError(std::string("--alpha: ") + e.what());
    }
  }

  // Outside paths: registered as manifests (external.hpp); their code runs only in trial children.
  // A plugin whose load probe fails is that probe's result (TIMEOUT, CRASH or ERROR in stage
  // load), recorded once the session exists; the other backends still run.
  std::vector<std::string> external_backends;
  std::vector<TrialResult> failed_loads;
  if (vm.count("submission"))
    for (const auto& path : vm["submission"].as<std::vector<std::string>>()) {
      const auto [ext, manifest] = describe_submission(path);
      if (opt.external(ext.backend)) throw InputError("--submission: two submissions are named " + ext.backend);
      register_manifest(manifest);
      opt.externals.push_back(ext);
      external_backends.push_back(ext.backend);
    }
  if (vm.count("plugin")) {
    TrialRunner loader;
    for (const auto& path : vm["plugin"].as<std::vector<std::string>>()) {
      ChildReport probe = loader.load_probe(path, opt);
      TrialSpec spec;
      spec.backend = "plugin:" + std::filesystem::path(path).filename().string();
      spec.plugin = path;
      spec.options = opt;
      if (probe.outcome == Outcome::Pass) {
        const Manifest m = probe_manifest(probe);
        if (Registry::instance().backend(m.backend))
          throw InputError("--plugin " + path + ": backend " + m.backend + " is already registered");
        register_manifest(m);
        opt.externals.push_back({External::Plugin, path, m.backend, "", ""});
        external_backends.push_back(m.backend);
        continue;
      }
      const auto suite = narrow_suite(default_suite(spec.backend), filter);
      if (!suite.empty()) spec.c = suite.front();
      ReferenceCache unused;
      TrialResult r = evaluate_trial(spec, std::move(probe), unused);
      r.message = "plugin " + path + " did not load: " + r.message;
      failed_loads.push_back(std::move(r));
    }
  }
  const bool explicit_backend = !vm["backend"].defaulted();
  const bool benching = vm.count("bench") > 0;
  const bool only_external = !explicit_backend && (vm.count("plugin") || vm.count("submission"));
  const ModuleDir modules = module_dir();
  const std::vector<std::string> builtins = builtin_backends(modules);
  std::vector<std::string> backends =
      only_external ? external_backends
      : benching && !explicit_backend ? std::vector<std::string>{"gpu"}  // bench's default: the GPU paths
                                      : chosen_backends(cli::list_values(vm, "backend"), builtins, external_backends, modules);
  // Case-directory mode runs a path (trials) or only checks/saves against the reference.
  const bool verify = vm.count("verify") > 0, bisecting = vm.count("bisect") > 0;
  const bool path_mode = verify || bisecting || explicit_backend;
  // Every case must fit in memory: a case directory's shape comes from its headers alone.
  const cli::MemoryLimit memory = cli::memory_limit(vm);
  if (vm.count("inputs")) {
    const std::string dir = vm["inputs"].as<std::string>();
    cli::check_memory(read_case_shape(dir, vm.count("batch-last") > 0), path_mode ? opt.runs : 0, memory,
                      "--inputs " + dir);
  } else {
    for (const auto& b : backends)
      for (const auto& c : narrow_suite(default_suite(b), filter))
        cli::check_memory(c.shape, opt.runs, memory, filter.shapes.empty() ? "suite case" : "--shape");
  }
  // The built-in backends' manifests, only when paths will run (or be listed): a bad input above,
  // a --check or a --save-output of the reference never starts a load probe.
  const bool runs_paths = verify || bisecting || benching || vm.count("list") || (vm.count("inputs") && path_mode);
  std::map<std::string, ChildReport> load_probes;
  const RunPolicy policy = cli::run_policy(vm);
  if (runs_paths) load_builtins(backends, builtins, opt, filter, failed_loads, load_probes, policy.env(0));
  opt.faults = cli::faults(vm);  // after the manifests: a fault's if=COMBO may name their optimizations
  if (benching) {
    for (const char* mode : {"verify", "inputs"})
      if (vm.count(mode)) throw InputError(std::string("--bench times its own shapes; not with --") + mode);
    if (!failed_loads.empty()) {
      for (const auto& r : failed_loads)
        std::cout << outcome_name(r.outcome) << ": " << trial_name(r.spec) << ": " << r.message << "\n";
      return 1;
    }
    return bench_mode(vm, opt, backends, argv[0], command, load_probes);
  }
  if (!opt.faults.empty() && vm.count("submission"))
    throw InputError("--inject: fault drills run in the harness's own children; submission_driver.py has none");
  // The combinations to run, checked against the backends before any case is built.
  const std::string what = verify ? vm["verify"].as<std::string>() : "plain";
  const std::vector<std::string> names = bisecting  ? std::vector<std::string>{vm["bisect"].as<std::string>()}
                                         : verify     ? cli::list_values(vm, "verify")
                                                      : std::vector<std::string>{"plain"};
  std::vector<Combo> combos;
  std::map<std::string, std::vector<Combo>> per_backend;
  try {
    if (backends.empty() || !runs_paths) {
      // Every path failed to load (recorded below), or none runs: nothing to check here.
    } else if (bisecting) {
      combos.push_back(Combo::parse(names.front()));
      for (const auto& b : backends_for(combos.front(), backends, explicit_backend)) per_backend[b] = combos;
    } else if (what != "all") {
      for (const auto& t : names) combos.push_back(Combo::parse(t));
      for (const auto& c : combos)
        for (const auto& b : backends_for(c, backends, explicit_backend)) per_backend[b].push_back(c);
    }
  } catch (const InputError& e) {
    throw InputError(std::string(bisecting ? "--bisect: " : "--verify: ") + e.what());
  }
  Session session(opt, argv[0], &std::cout);
  session.set_policy(policy);
  for (const auto& [b, rep] : load_probes) session.adopt_probe(b, rep);
  const bool load_failed = !failed_loads.empty();
  for (auto& r : failed_loads) session.record(std::move(r));

  if (vm.count("list")) {
    Session quiet(opt, argv[0], nullptr);
    for (const auto& [b, rep] : load_probes) quiet.adopt_probe(b, rep);
    print_list(std::cout, quiet);
    return 0;
  }

  // ---- case-directory mode ----
  std::vector<CaseSpec> dir_cases;
  std::string save_path;
  if (vm.count("save-output")) save_path = vm["save-output"].as<std::string>();
  if (vm.count("inputs")) {
    CaseSpec c;
    c.inputs_dir = vm["inputs"].as<std::string>();
    c.batch_last = vm.count("batch-last") > 0;
    if (filter.alphas) c.alpha1 = filter.alphas->first, c.alpha2 = filter.alphas->second;
    std::string check = vm.count("check") ? vm["check"].as<std::string>() : "";
    if (!check.empty() && path_mode)
      throw InputError("--check compares an outside output; to run a path on the case use --verify COMBO without --check");
    if (check.empty() && !path_mode && save_path.empty()) {
      struct stat st;
      if (::lstat((c.inputs_dir + "/c.npy").c_str(), &st) == 0) {
        check = c.inputs_dir + "/c.npy";
        cli::check_case_output(c.inputs_dir, check);  // never opened when it is a FIFO or a device
      }
    }
    if (check.empty() && save_path.empty() && !path_mode)
      throw InputError("--inputs needs --check FILE, --save-output FILE, a c.npy in the directory, or --verify COMBO");
    const Problem p = c.make();  // reads the data (the headers were checked above)
    if (!path_mode) {
      if (vm.count("shard")) throw InputError("--shard splits a --verify run by case; not with --check/--save-output");
      int code = 0;
      if (!check.empty()) {
        const CheckResult r = check_output_file(c, check);
        print_case_check(std::cout, r, check);
        code = r.cmp.pass() ? 0 : 1;
      }
      if (!save_path.empty()) {
        for (const auto& w : save_reference_output(c, save_path))
          std::cout << "warning: suspicious data: " << w << "\n";
        std::cout << "wrote the reference output (" << p.shape.str() << ") to " << save_path << "\n";
      }
      return code;
    }
    dir_cases.push_back(c);
  }
  // A --verify run is split by case when --shard (or the GTEST variables) name a shard; a bisect
  // needs every case and ignores the variables.
  std::optional<ShardSpec> shard;
  if (vm.count("shard")) shard = parse_shard(vm["shard"].as<std::string>());
  else if (!bisecting) shard = shard_from_env(std::getenv("GTEST_SHARD_INDEX"), std::getenv("GTEST_TOTAL_SHARDS"));
  auto suite_for = [&](const std::string& backend) {
    return dir_cases.empty() ? narrow_suite(default_suite(backend), filter) : dir_cases;
  };
  auto cases_for = [&](const std::string& backend) {
    return shard ? shard_cases(suite_for(backend), *shard) : suite_for(backend);
  };
  ShardRecord record;
  if (shard) {
    record.shard = *shard;
    record.verify = verify ? vm["verify"].as<std::string>() : "plain";
    std::cout << "shard " << shard->str() << " (by case):";
    for (const auto& b : backends) {
      ShardRecord::Backend rb{b, {}, {}};
      for (const auto& c : suite_for(b)) rb.suite.push_back(c.name());
      for (const auto& c : cases_for(b)) rb.owned.push_back(c.name());
      std::cout << (record.backends.empty() ? " " : ", ") << b << " " << rb.owned.size() << " of "
                << rb.suite.size() << " cases";
      record.backends.push_back(rb);
    }
    std::cout << "\n";
  }

  if (!verify && !bisecting && dir_cases.empty()) {
    std::cerr << "harness: nothing to do (give --verify, --bisect, --inputs, --bench or --list)\n\n" << all << "\n";
    return 2;
  }
  std::string mode;
  int code = 0;
  if (bisecting) {
    mode = "bisect";
    session.set_details(false);  // the verdict names the culprit; its reproducer shows the details
    const Combo combo = combos.front();
    std::vector<std::string> bs;
    for (const auto& kv : per_backend) bs.push_back(kv.first);
    std::cout << "bisect " << combo.str() << " on " << bs.size() << " backend(s); trials:\n";
    bool culprit = false, passed = false;
    for (const auto& b : bs) {
      const BisectVerdict v = bisect(session, b, combo, cases_for(b));
      std::string line = (bs.size() > 1 ? b + ": " : "") + v.line;
      if (!v.reproducer.empty()) line += "\n  reproduce: " + v.reproducer;
      session.verdicts.push_back(line);
      culprit |= v.kind == BisectVerdict::Culprit;
      passed |= v.kind == BisectVerdict::Passed;
    }
    code = culprit || load_failed ? 1 : passed ? 0 : 125;
  } else {
    mode = "verify";
    if (what == "all") {
      std::map<std::string, std::vector<CaseSpec>> cases;
      for (const auto& b : backends) {
        cases[b] = cases_for(b);
        session.expect(lattice_combos(b).size() * cases[b].size());
      }
      std::cout << "verify all: staged isolation (plain, each optimization alone, pairs, ...) on";
      for (const auto& b : backends) std::cout << " " << b << " (" << cases[b].size() << " cases)";
      std::cout << "\n";
      for (const auto& b : backends) verify_lattice(session, b, cases[b]);
    } else {
      for (const auto& kv : per_backend) session.expect(kv.second.size() * cases_for(kv.first).size());
      std::vector<uint16_t> first_output;
      for (const auto& b : backends)
        if (per_backend.count(b))
          verify_combos(session, b, per_backend[b], cases_for(b), save_path.empty() ? nullptr : &first_output);
      if (!save_path.empty()) {
        // Case-directory mode: the path's output on the case's own inputs (the first checked call
        // of the first trial that ran).
        if (first_output.empty()) {
          std::cout << "no output written to " << save_path << ": no trial ran to completion\n";
        } else {
          const CaseSpec& c = dir_cases.front();
          write_output_npy(save_path, read_case_shape(c.inputs_dir, c.batch_last), first_output, c.batch_last);
          std::cout << "wrote the path's output to " << save_path << "\n";
        }
      }
    }
    code = exit_code_for(session.results());
  }
  print_summary(std::cout, session, code, !bisecting);
  write_reports(vm, session, mode, command, code, shard ? &record : nullptr);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--child-trial") return child_main(argv[2]);
  if (argc == 2 && std::string(argv[1]) == "--child-worker") return worker_main();
  if (argc >= 2 && std::string(argv[1]) == "--child-bench") return bench_extras_child(argc - 2, argv + 2);
  try {
    return run(argc, argv);
  } catch (const po::error& e) {
    std::cerr << "harness: " << e.what() << " (see harness --help)\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "harness: bad input: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "harness: internal error: " << e.what() << "\n";
    return 1;
  }
}
