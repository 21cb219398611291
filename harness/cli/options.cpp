// options.cpp — the shared option groups and the trial options (see options.hpp).
#include "options.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "bench.hpp"
#include "rehearse.hpp"
#include "cases.hpp"
#include "errors.hpp"

namespace po = boost::program_options;

namespace nvfp4::cli {

std::string budget_option(Stage s) { return std::string("budget-") + stage_name(s); }

std::string find_sanitizer() {
  if (const char* env = std::getenv("NVFP4_COMPUTE_SANITIZER"); env && *env) return ::access(env, X_OK) == 0 ? env : "";
  if (const char* path = std::getenv("PATH"))
    for (std::string dirs = path; !dirs.empty();) {
      const size_t colon = dirs.find(':');
      const std::string dir = dirs.substr(0, colon);
      dirs = colon == std::string::npos ? "" : dirs.substr(colon + 1);
      const std::string candidate = (dir.empty() ? "." : dir) + "/compute-sanitizer";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  const char* fixed = "/usr/local/cuda/bin/compute-sanitizer";
  return ::access(fixed, X_OK) == 0 ? fixed : "";
}

po::options_description group_options(Group g) {
  const TrialOptions d;  // defaults, shared with the reproducer strings (report.cpp)
  switch (g) {
    case Group::Paths: {
      po::options_description o("Paths");
      o.add_options()
          ("backend", po::value<std::string>()->default_value("all"),
           "cpu, gpu or all (bench: gpu; with --plugin/--submission: theirs alone, 'all' adds the built-in ones)")
          ("plugin", po::value<std::vector<std::string>>()->composing(),
           "LIB.so: a C-ABI plugin as backend plugin:NAME, loaded only in trial children (stage load); repeatable")
          ("submission", po::value<std::vector<std::string>>()->composing(),
           "FILE.py: a GPU MODE style Python submission, custom_kernel(data), as backend submission:NAME "
           "(imported in stage load); repeatable")
          ("emulate-fp4", po::value<std::string>()->default_value("auto"),
           "auto|on|off, with --submission (torch data): torch._scaled_mm on FP4 computed by the driver's emulation "
           "where the GPU has no FP4 tensor cores (auto), always (on) or never (off); times under it are labelled "
           "'emulated FP4'");
      return o;
    }
    case Group::Suite: {
      po::options_description o("Suite narrowing (each replaces that dimension of the suite)");
      o.add_options()
          ("shape", po::value<std::vector<std::string>>()->composing(), "MxNxK[xL][,...] (repeatable)")
          ("dist", po::value<std::vector<std::string>>()->composing(), "distribution name[,...] (repeatable)")
          ("seed", po::value<uint64_t>(), "seed for every case");
      return o;
    }
    case Group::Alpha: {
      po::options_description o("Global scales");
      o.add_options()("alpha", po::value<std::string>(), "A1,A2: alpha1, alpha2 of every case (also with --inputs)");
      return o;
    }
    case Group::Shard: {
      po::options_description o("Shards");
      o.add_options()("shard", po::value<std::string>(),
                      "I/N: run shard I (0-based) of N, every combination on its part of the cases; default: "
                      "GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS when set");
      return o;
    }
    case Group::Trials: {
      po::options_description o("Trials");
      o.add_options()
          ("warmup", po::value<int>()->default_value(d.warmup), "eager calls in stage warmup")
          ("runs", po::value<int>()->default_value(d.runs), "checked calls in stage run (each one checked; 1 to 1000)")
          ("fresh", po::value<std::string>()->default_value(input_set_name(d.fresh)),
           "what each checked call gets new: 'activations' (A and SFA, as in an engine) or 'all' (all six "
           "inputs and the alphas)")
          ("configs", po::value<std::string>()->default_value("all"),
           "'all': in trials of plain or a variant alone, also every configuration the path offers for the shape "
           "(stage configs, one checked call each); 'chosen': only the one the path picks")
          ("instances", po::value<std::string>()->default_value("on"),
           "'on': every trial (not in bench mode, not a Python submission) also builds a second plan of its path "
           "on other weights and calls the two in turn (stage instances); 'off': not")
          ("sanitize", po::value<std::string>(),
           "TOOL: run every trial child under compute-sanitizer --tool TOOL (memcheck, racecheck, initcheck, "
           "synccheck), one process per trial, budgets x20; its first report is the trial's ERROR")
          ("tune-cache", po::value<std::string>(),
           "directory of the on-disk autotune cache (default: none, so stage tune really tunes)")
          ("tune-reps", po::value<int>()->default_value(d.plan.tune_reps), "timed calls per autotune candidate")
          ("tune-time", po::value<double>()->default_value(d.plan.tune_budget_s),
           "autotune stops trying new candidates after this many seconds");
      return o;
    }
    case Group::Memory: {
      po::options_description o("Memory and the reference cache");
      o.add_options()("max-memory", po::value<double>(),
                      "GiB a case may need (reference, trial, outputs; default: what this machine has available)")
          ("reference-cache", po::value<std::string>(),
           "DIR or 'off': the on-disk cache of exact references, shared by runs and shards (default: "
           "NVFP4_REFERENCE_CACHE, else $XDG_CACHE_HOME/nvfp4-dual/references or ~/.cache/nvfp4-dual/references); "
           "a DIR given here that cannot be used is refused (exit 2)");
      return o;
    }
    case Group::Workers: {
      po::options_description o("Workers");
      o.add_options()
          ("isolate", po::value<std::string>(),
           "'worker' (default: one child runs a combination's trials in a row; any failure ends it) or "
           "'trial' (one child per trial)")
          ("jobs", po::value<int>(), "trials at once, each in a child of its own (default: on each GPU of --gpus, or the one the driver picks, a quarter of the host's cores per GPU, 1 to 4, at most 8 in all but one per GPU; bench: one per --gpus device)")
          ("gpus", po::value<std::string>(),
           "LIST (0,1,...) or 'all': slot k runs with CUDA_VISIBLE_DEVICES = entry k mod the list's length");
      return o;
    }
    case Group::Budgets: {
      po::options_description o("Watchdog budgets in seconds (past one, the child's process group is killed: TIMEOUT)");
      for (const auto& s : kStages) {
        if (!has_own_budget(s.id)) continue;
        std::string help = std::string("stage ") + s.name + ": " + s.help;
        if (s.id == Stage::Init) help += " (also the harness's setup and teardown)";
        o.add_options()(budget_option(s.id).c_str(), po::value<double>()->default_value(d.budget[s.id]),
                        help.c_str());
      }
      o.add_options()("budget-trial", po::value<double>()->default_value(d.budget.trial), "the whole trial");
      return o;
    }
    case Group::Drills: {
      po::options_description o("Fault drills");
      o.add_options()
          ("inject", po::value<std::vector<std::string>>()->composing(),
           "FAULT@STAGE[:if=COMBO][:case=SHAPE], repeatable; FAULT: hang crash error slow nan corrupt unwritten "
           "(the last three take @run and hit the last checked call)")
          ("slow-seconds", po::value<double>()->default_value(d.slow_seconds), "how long the slow fault sleeps");
      return o;
    }
    case Group::CaseDir: {
      po::options_description o("Case directories (a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy [c.npy])");
      o.add_options()
          ("inputs", po::value<std::string>(), "the case directory (instead of the suite)")
          ("batch-last", "arrays are (rows, cols, L) instead of (L, rows, cols)")
          ("check", po::value<std::string>(), "compare this fp16 .npy output with the exact reference")
          ("save-output", po::value<std::string>(),
           "write C as .npy: the reference's, or the path's when --verify COMBO / --backend names one");
      return o;
    }
    case Group::Outputs: {
      po::options_description o("Outputs (each checked before any work)");
      o.add_options()
          ("json", po::value<std::string>(), "write the report as JSON to FILE (every other format renders from it)")
          ("junit", po::value<std::string>(), "write the results as JUnit XML to FILE (one testcase per trial)")
          ("html", po::value<std::string>(), "write one self-contained HTML page to FILE");
      return o;
    }
    case Group::Bench:
      return bench_options();
    case Group::Rehearse:
      return rehearse_options();
  }
  throw std::logic_error("group_options: unknown group");
}

TrialOptions trial_options(const po::variables_map& vm) {
  TrialOptions opt;
  opt.warmup = vm["warmup"].as<int>();
  opt.runs = vm["runs"].as<int>();
  const std::string fresh = vm["fresh"].as<std::string>();
  if (fresh != "activations" && fresh != "all")
    throw InputError("--fresh: must be 'activations' or 'all', not '" + fresh + "'");
  opt.fresh = fresh == "all" ? InputSet::All : InputSet::Activations;
  const std::string configs = vm["configs"].as<std::string>();
  if (configs != "all" && configs != "chosen")
    throw InputError("--configs: must be 'all' or 'chosen', not '" + configs + "'");
  opt.configs = configs == "all";
  const std::string instances = vm["instances"].as<std::string>();
  if (instances != "on" && instances != "off")
    throw InputError("--instances: must be 'on' or 'off', not '" + instances + "'");
  opt.instances = instances == "on";
  if (vm.count("sanitize")) {
    opt.sanitize = vm["sanitize"].as<std::string>();
    if (opt.sanitize != "memcheck" && opt.sanitize != "racecheck" && opt.sanitize != "initcheck" &&
        opt.sanitize != "synccheck")
      throw InputError("--sanitize: '" + opt.sanitize + "' is not a compute-sanitizer tool (memcheck, racecheck, "
                       "initcheck, synccheck)");
    opt.sanitizer = find_sanitizer();
    if (opt.sanitizer.empty())
      throw InputError("--sanitize: compute-sanitizer not found (on PATH, in /usr/local/cuda/bin, or "
                       "NVFP4_COMPUTE_SANITIZER)");
  }
  for (const auto& s : kStages)
    if (has_own_budget(s.id) && vm.count(budget_option(s.id))) opt.budget[s.id] = vm[budget_option(s.id)].as<double>();
  opt.budget.trial = vm["budget-trial"].as<double>();
  opt.slow_seconds = vm["slow-seconds"].as<double>();
  if (vm.count("tune-cache")) opt.plan.tune_cache_dir = vm["tune-cache"].as<std::string>();
  opt.plan.tune_reps = vm["tune-reps"].as<int>();
  opt.plan.tune_budget_s = vm["tune-time"].as<double>();
  if (!opt.sanitize.empty()) {
    // A sanitized child runs its kernels many times slower: every watchdog budget grows with it.
    for (const auto& s : kStages)
      if (has_own_budget(s.id)) opt.budget[s.id] = std::min(1e6, opt.budget[s.id] * TrialOptions::kSanitizeSlowdown);
    opt.budget.trial = std::min(1e6, opt.budget.trial * TrialOptions::kSanitizeSlowdown);
  }
  return opt;
}

}  // namespace nvfp4::cli
