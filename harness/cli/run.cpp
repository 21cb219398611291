// run.cpp — the modes that run paths or the reference (see run.hpp). This process never loads path
// code: the built-in backends are modules that trial children load (modules.hpp); here they are known
// by their file names and their load probes. Bad usage and bad input are refused before any work by
// cli_checks.hpp (tokens, values, paths, memory), in one line.
#include "run.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "backends.hpp"
#include "bench.hpp"
#include "case_dir.hpp"
#include "casemode.hpp"
#include "check_report.hpp"
#include "cli_checks.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "external.hpp"
#include "bisect.hpp"
#include "lattice.hpp"
#include "merge.hpp"
#include "modules.hpp"
#include "outputs.hpp"
#include "rehearse.hpp"
#include "registry.hpp"
#include "report.hpp"
#include "shard.hpp"
#include "suite.hpp"

namespace po = boost::program_options;

namespace nvfp4::cli {

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

// The configurations stage configs verifies, where the harness can compute them without a device:
// the fused kernel's (gpu/fused/candidates.hpp). With no --shape, every class the selection rules
// offer on a 132-SM device, each with the GPU suite's first shape that runs it; with --shape, the
// configurations offered on each shape, the default marked. The plain path's are cuBLASLt's
// heuristic algorithms, known only on the device; each trial records the one it ran.
void print_configs(std::ostream& os, const std::vector<Shape>& shapes) {
  if (shapes.empty()) {
    std::vector<Shape> suite;
    for (const auto& c : default_suite("gpu")) suite.push_back(c.shape);
    const auto classes = config_classes(suite, kConfigSms);
    os << "  configurations of fused (" << classes.size() << " classes on a " << kConfigSms
       << "-SM device; each with the suite shape that runs it; --shape S lists a shape's):\n";
    for (const auto& [cls, shape] : classes) os << "    " << cls << "  [" << shape.str() << "]\n";
  } else {
    for (const Shape& shape : shapes) {
      os << "  configurations of fused on " << shape.str() << " (" << kConfigSms << " SMs):\n";
      for (const auto& c : offered_configs(shape, kConfigSms))
        os << "    " << c.config_class << (c.is_default ? "  (default)" : "") << "\n";
    }
  }
  os << "  configurations of plain: cuBLASLt's heuristic algorithms for the shape, enumerated on the device "
        "(stage configs runs each; every trial records the one it ran)\n";
}

void print_list(std::ostream& os, Session& s, const std::vector<Shape>& shapes) {
  const Registry& reg = Registry::instance();
  for (const auto* b : reg.backends()) {
    os << "backend " << b->name << ": " << b->summary << "\n";
    const BackendStatus& st = s.probe(b->name);
    os << "  here: " << (st.available ? "available" : "not available (" + st.reason + ")") << "\n";
    for (const auto* o : reg.optimizations(b->name)) {
      std::string stages;
      for (Stage st2 : o->stages) stages += std::string(stages.empty() ? "" : ",") + stage_name(st2);
      os << "  " << o->name << "  ("
         << (o->kind == OptKind::Variant ? "variant" : "wrapper, order " + std::to_string(o->order))
         << (stages.empty() ? "" : "; adds stage " + stages) << ")  " << o->summary << "\n";
    }
    os << "  combinations: ";
    std::string combos;
    for (const auto& c : lattice_combos(b->name)) combos += (combos.empty() ? "" : ", ") + c.str();
    os << combos << "\n";
    if (b->name == "gpu") print_configs(os, shapes);
  }
  os << "distributions: ";
  std::string d;
  for (const auto& n : distribution_names()) d += (d.empty() ? "" : ", ") + n;
  os << d << "\n";
}

// What every mode that runs something shares: the trial options, the suite filter, the outside
// paths registered, the run's backends, and the built-in backends' load probes.
struct Setup {
  TrialOptions opt;
  SuiteFilter filter;
  std::vector<std::string> backends;
  std::vector<TrialResult> failed_loads;  // plugins and modules whose load failed: already results
  std::map<std::string, ChildReport> load_probes;
  RunPolicy policy;
  bool explicit_backend = false;
  bool path_mode = false;  // paths run (not only the reference, as check does)
  // When the run began: before the load probes, whose time (a hang until --budget-load) is the run's.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// Outside paths: registered as manifests (external.hpp); their code runs only in trial children.
// A library the plugin loader refuses (not a shared library, or it cannot be opened here; no
// nvfp4_plugin_v1_get; another ABI version; a malformed table) is not a plugin: bad input, exit 2
// before any trial, with the loader's reason. A plugin whose load itself fails (its static
// initialization hangs or crashes) is that probe's result (TIMEOUT or CRASH in stage load),
// recorded once the session exists; the other backends still run.
std::vector<std::string> register_outside(const po::variables_map& vm, Setup& s) {
  std::vector<std::string> external_backends;
  const std::string emulate = emulate_fp4_option(vm);
  if (vm.count("submission"))
    for (const auto& path : vm["submission"].as<std::vector<std::string>>()) {
      auto [ext, manifest] = describe_submission(path);
      ext.emulate_fp4 = emulate;
      if (s.opt.external(ext.backend)) throw InputError("--submission: two submissions are named " + ext.backend);
      register_manifest(manifest);
      s.opt.externals.push_back(ext);
      external_backends.push_back(ext.backend);
    }
  if (!vm.count("plugin")) return external_backends;
  TrialRunner loader;
  for (const auto& path : vm["plugin"].as<std::vector<std::string>>()) {
    ChildReport probe = loader.load_probe(path, s.opt);
    TrialSpec spec;
    spec.backend = "plugin:" + std::filesystem::path(path).filename().string();
    spec.plugin = path;
    spec.options = s.opt;
    if (probe.outcome == Outcome::Pass) {
      const Manifest m = probe_manifest(probe);
      if (Registry::instance().backend(m.backend))
        throw InputError("--plugin " + path + ": backend " + m.backend + " is already registered");
      register_manifest(m);
      s.opt.externals.push_back({External::Plugin, path, m.backend, "", ""});
      external_backends.push_back(m.backend);
      continue;
    }
    static const std::string kRefused = "InputError: ";  // the child's report of a loader refusal
    if (probe.outcome == Outcome::Error && probe.message.compare(0, kRefused.size(), kRefused) == 0)
      throw InputError("--plugin " + path + ": not a usable plugin: " + probe.message.substr(kRefused.size()));
    const auto suite = narrow_suite(default_suite(spec.backend), s.filter);
    if (!suite.empty()) spec.c = suite.front();
    ReferenceCache unused;
    TrialResult r = evaluate_trial(spec, std::move(probe), unused);
    r.message = "plugin " + path + " did not load: " + r.message;
    s.failed_loads.push_back(std::move(r));
  }
  return external_backends;
}

// The reference store's directory (reference_store.hpp: option, else environment, else the
// user's cache directory; "" when off). One named with --reference-cache that cannot be used is bad
// input; one from the environment or the default is a warning, and the run goes on uncached.
std::string reference_cache_dir(const po::variables_map& vm) {
  const std::string given = vm.count("reference-cache") ? vm["reference-cache"].as<std::string>() : "";
  const ReferenceStoreChoice c = choose_reference_store(vm.count("reference-cache") ? &given : nullptr,
                                                        [](const char* name) { return std::getenv(name); });
  if (c.dir.empty()) return "";
  std::string why;
  if (ReferenceStore::open(c.dir, &why)) return c.dir;
  if (c.source == "--reference-cache") throw InputError("--reference-cache " + c.dir + ": " + why);
  std::cerr << "warning: reference cache " << c.dir << " (" << (c.source == "default" ? "the default" : c.source)
            << "): " << why << "; references are computed and not stored (--reference-cache DIR|off)\n";
  return "";
}

Setup prepare(const po::variables_map& vm, const Mode& mode) {
  check_values(vm);
  Setup s;
  const std::string m = mode.word;
  s.explicit_backend = !vm["backend"].defaulted();
  s.path_mode = m != "check" || s.explicit_backend;
  check_paths(vm, !s.path_mode);  // only check_mode reads the case's c.npy
  s.opt = trial_options(vm);
  s.filter = suite_filter(vm);
  if (vm.count("alpha")) {
    try {
      s.filter.alphas = parse_alphas(vm["alpha"].as<std::string>());
    } catch (const InputError& e) {
      throw InputError(std::string("--alpha: ") + e.what());
    }
  }
  // Only runs of paths keep references (check computes one, list none).
  if (s.path_mode && m != "list") s.opt.reference_cache = reference_cache_dir(vm);
  const std::vector<std::string> external_backends = register_outside(vm, s);
  const bool only_external = !s.explicit_backend && (vm.count("plugin") || vm.count("submission"));
  const ModuleDir modules = module_dir();
  const std::vector<std::string> builtins = builtin_backends(modules);
  s.backends = only_external                          ? external_backends
               : m == "bench" && !s.explicit_backend ? std::vector<std::string>{"gpu"}  // bench's default
                                                      : chosen_backends(list_values(vm, "backend"), builtins,
                                                                        external_backends, modules);
  // Every case must fit in memory: a case directory's shape comes from its headers alone.
  const MemoryLimit memory = memory_limit(vm);
  if (vm.count("inputs")) {
    const std::string dir = vm["inputs"].as<std::string>();
    check_memory(read_case_shape(dir, vm.count("batch-last") > 0), s.path_mode ? s.opt.runs : 0, memory,
                 "--inputs " + dir);
  } else if (m != "bench") {
    for (const auto& b : s.backends)
      for (const auto& c : narrow_suite(default_suite(b), s.filter))
        check_memory(c.shape, s.opt.runs, memory, s.filter.shapes.empty() ? "suite case" : "--shape");
  }
  // The built-in backends' manifests, only when paths will run (or be listed): a bad input above,
  // a check or a save of the reference never starts a load probe.
  s.policy = run_policy(vm);
  // A sanitizer's report must belong to one trial: one process per trial. Its slowdown would make
  // a bench's times meaningless.
  if (!s.opt.sanitize.empty()) {
    if (m == "bench") throw InputError("--sanitize: bench times paths, and a sanitizer slows them down many times; "
                                       "verify under the sanitizer instead");
    if (vm.count("isolate") && vm["isolate"].as<std::string>() == "worker")
      throw InputError("--sanitize runs one process per trial; not with --isolate worker");
    s.policy.isolate = Isolation::Trial;
  }
  if (s.path_mode) load_builtins(s.backends, builtins, s.opt, s.filter, s.failed_loads, s.load_probes, s.policy.env(0));
  s.opt.faults = faults(vm);  // after the manifests: a fault's if=COMBO may name their optimizations
  if (!s.opt.faults.empty() && vm.count("submission"))
    throw InputError("--inject: fault drills run in the harness's own children; submission_driver.py has none");
  return s;
}

// harness check: an outside output (or none: --save-output of the reference) on a case directory.
int check_mode(const po::variables_map& vm, const CaseSpec& c) {
  if (vm.count("junit") || vm.count("html"))
    throw InputError("harness check writes its report with --json; --junit and --html are for runs of paths");
  std::string check = vm.count("check") ? vm["check"].as<std::string>() : "";
  const std::string save_path = vm.count("save-output") ? vm["save-output"].as<std::string>() : "";
  // A c.npy in the directory is checked whenever no --check names another output, --save-output
  // or not (check_paths refused a --save-output or --json that is this c.npy).
  const std::string case_c = c.inputs_dir + (c.inputs_dir.empty() || c.inputs_dir.back() == '/' ? "" : "/") + "c.npy";
  struct stat st;
  if (::lstat(case_c.c_str(), &st) == 0) {
    ::stat(case_c.c_str(), &st);  // the file a link names, to compare with --check's
    if (check.empty()) {
      check = case_c;
      check_case_output(c.inputs_dir, check);  // never opened when it is a FIFO or a device
    } else if (struct stat cs; ::stat(check.c_str(), &cs) != 0 || cs.st_dev != st.st_dev || cs.st_ino != st.st_ino) {
      std::cout << "note: " << case_c << " not checked (--check names " << check << ")\n";
    }
  }
  if (check.empty() && save_path.empty())
    throw InputError("--inputs needs --check FILE, --save-output FILE, a c.npy in the directory, or --verify COMBO");
  if (vm.count("json") && check.empty()) throw InputError("--json is the report of a --check; there is none here");
  const Problem p = c.make();  // reads the data (the headers were checked above)
  int code = 0;
  if (!check.empty()) {
    const CheckResult r = check_output_file(c, check);
    write_check_text(std::cout, *r.info, r.cmp, r.info->spec.name(), check);
    code = r.cmp.pass() ? 0 : 1;
    if (vm.count("json")) {
      std::ostringstream os;
      write_check_json(os, *r.info, r.cmp, r.info->spec.name(), check);
      write_output(vm["json"].as<std::string>(), os.str());
    }
  }
  if (!save_path.empty()) {
    for (const auto& w : save_reference_output(c, save_path)) std::cout << "warning: suspicious data: " << w << "\n";
    std::cout << "wrote the reference output (" << p.shape.str() << ") to " << save_path << "\n";
  }
  return code;
}

// The shard a verify run covers: --shard, or the GoogleTest variables (verify only).
std::optional<ShardSpec> shard_of(const po::variables_map& vm, const Mode& mode) {
  if (vm.count("shard")) return parse_shard(vm["shard"].as<std::string>());
  if (std::string(mode.word) != "verify") return std::nullopt;
  return shard_from_env(std::getenv("GTEST_SHARD_INDEX"), std::getenv("GTEST_TOTAL_SHARDS"));
}

// harness verify and harness bisect, on the suite or a case directory.
int verify_or_bisect(const po::variables_map& vm, const Mode& mode, Setup& s, const std::string& program,
                     const std::string& command) {
  const bool bisecting = std::string(mode.word) == "bisect";
  const std::string what = vm.count("verify") ? vm["verify"].as<std::string>() : "plain";
  const std::vector<std::string> names = bisecting ? std::vector<std::string>{vm["bisect"].as<std::string>()}
                                         : vm.count("verify") ? list_values(vm, "verify")
                                                              : std::vector<std::string>{"plain"};
  // The combinations to run, checked against the backends before any case is built.
  std::vector<Combo> combos;
  std::map<std::string, std::vector<Combo>> per_backend;
  try {
    if (s.backends.empty()) {
      // Every path failed to load (recorded below): nothing to check here.
    } else if (bisecting || what != "all") {
      for (const auto& t : names) combos.push_back(Combo::parse(t));
      for (const auto& c : combos)
        for (const auto& b : backends_for(c, s.backends, s.explicit_backend)) per_backend[b].push_back(c);
    }
  } catch (const InputError& e) {
    throw InputError(std::string(bisecting ? "--bisect: " : "--verify: ") + e.what());
  }
  Session session(s.opt, program, &std::cout);
  session.count_from(s.started);
  RunPolicy policy = s.policy;
  if (bisecting) policy.kept_spares = size_t(policy.jobs);  // each step needs fresh workers at once
  session.set_policy(policy);
  for (const auto& [b, rep] : s.load_probes) session.adopt_probe(b, rep);
  const bool load_failed = !s.failed_loads.empty();
  for (auto& r : s.failed_loads) session.record(std::move(r));

  std::vector<CaseSpec> dir_cases;
  const std::string save_path = vm.count("save-output") ? vm["save-output"].as<std::string>() : "";
  if (!save_path.empty() && (bisecting || what == "all" || names.size() != 1))
    throw InputError("--save-output writes the output of one path: give verify COMBO with one combination");
  if (vm.count("inputs")) {
    if (vm.count("check"))
      throw InputError("--check compares an outside output; to run a path on the case use --verify COMBO without --check");
    CaseSpec c;
    c.inputs_dir = vm["inputs"].as<std::string>();
    c.batch_last = vm.count("batch-last") > 0;
    if (s.filter.alphas) c.alpha1 = s.filter.alphas->first, c.alpha2 = s.filter.alphas->second;
    c.make();  // reads and validates the data (the headers were checked already)
    dir_cases.push_back(c);
  }
  const std::optional<ShardSpec> shard = shard_of(vm, mode);
  auto suite_for = [&](const std::string& backend) {
    return dir_cases.empty() ? narrow_suite(default_suite(backend), s.filter) : dir_cases;
  };
  auto cases_for = [&](const std::string& backend) {
    return shard ? shard_cases(suite_for(backend), *shard) : suite_for(backend);
  };
  ShardRecord record;
  if (shard) {
    record.shard = *shard;
    record.verify = what;
    std::cout << "shard " << shard->str() << " (by case):";
    for (const auto& b : s.backends) {
      ShardRecord::Backend rb{b, {}, {}};
      for (const auto& c : suite_for(b)) rb.suite.push_back(c.name());
      for (const auto& c : cases_for(b)) rb.owned.push_back(c.name());
      std::cout << (record.backends.empty() ? " " : ", ") << b << " " << rb.owned.size() << " of "
                << rb.suite.size() << " cases";
      record.backends.push_back(rb);
    }
    std::cout << "\n";
  }

  int code = 0;
  if (bisecting && combos.empty()) {
    code = 1;  // every path failed to load: those failures are the run's results
  } else if (bisecting) {
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
  } else if (what == "all" && vm.count("verify")) {
    std::map<std::string, std::vector<CaseSpec>> cases;
    for (const auto& b : s.backends) {
      cases[b] = cases_for(b);
      session.expect(lattice_combos(b).size() * cases[b].size());
    }
    std::cout << "verify all: staged isolation (plain, each optimization alone, pairs, ...) on";
    for (const auto& b : s.backends) std::cout << " " << b << " (" << cases[b].size() << " cases)";
    std::cout << "\n";
    for (const auto& b : s.backends) verify_lattice(session, b, cases[b]);
    code = exit_code_for(session.results());
  } else {
    for (const auto& kv : per_backend) session.expect(kv.second.size() * cases_for(kv.first).size());
    std::vector<uint16_t> first_output;
    for (const auto& b : s.backends)
      if (per_backend.count(b))
        verify_combos(session, b, per_backend[b], cases_for(b), save_path.empty() ? nullptr : &first_output);
    if (!save_path.empty()) {
      // Case-directory mode: the path's output on the case's own inputs (the first checked call of
      // the first trial that ran).
      if (first_output.empty()) {
        std::cout << "no output written to " << save_path << ": no trial ran to completion\n";
      } else {
        const CaseSpec& c = dir_cases.front();
        write_output_npy(save_path, read_case_shape(c.inputs_dir, c.batch_last), first_output, c.batch_last);
        std::cout << "wrote the path's output to " << save_path << "\n";
      }
    }
    code = exit_code_for(session.results());
  }
  print_summary(std::cout, session, code, !bisecting);
  std::ostringstream out;
  write_json(out, session, bisecting ? "bisect" : "verify", command, code);
  emit(vm, shard ? add_shard_record(out.str(), record) : out.str(), "this run");
  return code;
}

}  // namespace

int run_mode(const po::variables_map& vm, const Mode& mode, const std::string& program, const std::string& command) {
  const std::string m = mode.word;
  if (vm.count("shard") && m != "verify") throw InputError("--shard splits a verify run by case; not with " + m);
  Setup s = prepare(vm, mode);
  if (m == "check" && !s.path_mode) {
    // Only the reference runs: options about trials would be ignored.
    for (Group g : {Group::Trials, Group::Workers, Group::Budgets, Group::Drills}) {
      const po::options_description d = group_options(g);
      for (const auto& o : d.options())
        if (vm.count(o->long_name()) && !vm[o->long_name()].defaulted())
          throw InputError("--" + o->long_name() + " is about runs of paths; harness check runs none (give --backend "
                           "NAME to run a path on the case)");
    }
    CaseSpec c;
    c.inputs_dir = vm["inputs"].as<std::string>();
    c.batch_last = vm.count("batch-last") > 0;
    if (s.filter.alphas) c.alpha1 = s.filter.alphas->first, c.alpha2 = s.filter.alphas->second;
    return check_mode(vm, c);
  }
  if (m == "list") {
    Session quiet(s.opt, program, nullptr);
    for (const auto& [b, rep] : s.load_probes) quiet.adopt_probe(b, rep);
    if (!s.filter.dists.empty() || s.filter.seed)
      throw InputError("harness list takes --shape (the configurations offered on it), not --dist or --seed");
    print_list(std::cout, quiet, s.filter.shapes);
    return 0;
  }
  if (m == "bench") {
    if (!s.failed_loads.empty()) {
      for (const auto& r : s.failed_loads)
        std::cout << outcome_name(r.outcome) << ": " << trial_name(r.spec) << ": " << r.message << "\n";
      return 1;
    }
    return bench_mode(vm, s.opt, s.backends, program, command, s.load_probes);
  }
  return verify_or_bisect(vm, mode, s, program, command);
}

}  // namespace nvfp4::cli
