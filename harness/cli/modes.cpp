// modes.cpp — the mode table, mode words, and the one-mode rule (see modes.hpp).
#include "modes.hpp"

#include <map>
#include <ostream>

#include "errors.hpp"

namespace po = boost::program_options;

namespace nvfp4::cli {

namespace {

using G = Group;

const std::vector<Group> kRunGroups = {G::Paths, G::Suite,   G::Alpha,  G::Trials, G::Memory,
                                       G::Workers, G::Budgets, G::Drills, G::CaseDir, G::Outputs};

po::options_description mode_options() {
  po::options_description o("Modes (as options: the older spelling)");
  o.add_options()
      ("help,h", "show the synopsis, or with a mode word that mode's options")
      ("list", "harness list")
      ("verify", po::value<std::string>(), "harness verify all | COMBO[,COMBO...]")
      ("bisect", po::value<std::string>(), "harness bisect COMBO")
      ("bench", po::value<std::string>(), "harness bench COMBO[,COMBO...]")
      ("report-html", po::value<std::vector<std::string>>()->composing(), "harness render REPORT.json (repeatable)")
      ("merge", po::value<std::vector<std::string>>()->multitoken()->composing(), "harness merge A.json B.json ...");
  // --rehearse EVALUATOR is in the rehearse group (rehearse.hpp), so that its mode table entry and
  // options stay in one file.
  return o;
}

constexpr Group kAllGroups[] = {G::Paths,   G::Suite,   G::Alpha,  G::Shard,   G::Trials,  G::Memory, G::Workers,
                                G::Budgets, G::Drills, G::CaseDir, G::Outputs, G::Bench,  G::Rehearse};

// Which group each option belongs to (the mode options map to no group).
const std::map<std::string, Group>& option_groups() {
  static const std::map<std::string, Group> m = [] {
    std::map<std::string, Group> out;
    for (Group g : kAllGroups) {
      const po::options_description d = group_options(g);
      for (const auto& o : d.options()) out[o->long_name()] = g;
    }
    return out;
  }();
  return m;
}

bool takes(const Mode& m, Group g) {
  for (Group x : m.groups)
    if (x == g) return true;
  return false;
}

}  // namespace

const std::vector<Mode>& modes() {
  static const std::vector<Mode> m = [] {
    std::vector<Group> verify = kRunGroups;
    verify.push_back(G::Shard);
    // Bench times its own generated cases: no case directory.
    const std::vector<Group> bench = {G::Paths,   G::Suite,   G::Alpha,  G::Trials,  G::Memory,
                                      G::Workers, G::Budgets, G::Drills, G::Outputs, G::Bench};
    return std::vector<Mode>{
        {"verify", "verify", "harness verify all | COMBO[,COMBO...]",
         "every path and combination (or just those) against the exact reference, staged: plain, each "
         "optimization alone, pairs, ...",
         verify},
        {"bisect", "bisect", "harness bisect COMBO", "the minimal sub-combinations of COMBO that fail", kRunGroups},
        {"bench", "bench", "harness bench COMBO[,COMBO...]",
         "bench trials: verified, then timed in stage time (default backend gpu, GPU MODE's benchmark shapes)",
         bench},
        {"check", "", "harness check --inputs DIR [--check C.npy | --save-output C.npy]",
         "an output made elsewhere against the exact reference of a case directory (runs no path)", kRunGroups},
        {"merge", "merge", "harness merge A.json B.json ...",
         "the --json reports of one run's shards as one summary, exit code and report", {G::Outputs}},
        {"render", "report-html", "harness render REPORT.json ... [--html OUT] [--junit OUT]",
         "reports already written, as HTML or JUnit (runs nothing)", {G::Outputs}},
        {"list", "list", "harness list [--shape S]",
         "backends (with availability here), optimizations, combinations, configurations, distributions",
         {G::Paths, G::Suite}},
        {"rehearse", "rehearse", "harness rehearse gpumode --submission FILE.py",
         "a Python submission run as GPU MODE's evaluator runs it, mode by mode under each mode's limit: pass, fail "
         "or would time out, and where the time went",
         {G::Paths, G::Rehearse, G::Budgets, G::Outputs},
         "In a rehearsal: of the paths options only --submission (one) and --emulate-fp4 apply; of the budgets only\n"
         "--budget-load, --budget-init (setup, teardown), --budget-warmup, --budget-run and --budget-time, each only\n"
         "when given (the evaluator has no stage limits: by default a stage may use its mode's whole limit, and\n"
         "--limit-MODE takes the place of --budget-trial); the report is --json.\n"
         "exit codes: 0 every mode run passed, 1 one failed or would time out, 2 bad usage or a bad submission\n"
         "(missing, a syntax error, no custom_kernel), 125 every mode SKIP (no torch or GPU for a torch submission)"},
    };
  }();
  return m;
}

const Mode& mode_named(const std::string& word) {
  for (const auto& m : modes())
    if (word == m.word) return m;
  throw InputError("unknown mode '" + word + "'");
}

std::vector<std::string> spell_mode_word(int argc, char** argv, std::string& word) {
  std::vector<std::string> args(argv, argv + argc);
  word.clear();
  if (args.size() < 2 || args[1].empty() || args[1][0] == '-') return args;
  const Mode* mode = nullptr;
  for (const auto& m : modes())
    if (args[1] == m.word) mode = &m;
  if (!mode) return args;  // not a mode word: check_tokens refuses it as a stray argument
  word = mode->word;
  std::vector<std::string> out = {args[0]};
  size_t i = 2;
  auto operand = [&] { return i < args.size() && !args[i].empty() && args[i][0] != '-'; };
  const std::string m = word;
  if (m == "verify") {
    out.push_back("--verify");
    out.push_back(operand() ? args[i++] : "all");
  } else if (m == "bisect" || m == "bench" || m == "rehearse") {
    if (!operand() && !(i < args.size() && (args[i] == "--help" || args[i] == "-h")))
      throw InputError(m == "rehearse" ? std::string("harness rehearse needs the evaluator's name (harness rehearse gpumode "
                                                     "--submission FILE.py)")
                                       : "harness " + m + " needs COMBO" + (m == "bench" ? "[,COMBO...]" : "") +
                                             " (e.g. harness " + m + " fused+graph)");
    if (operand()) {
      out.push_back("--" + m);
      out.push_back(args[i++]);
    }
  } else if (m == "merge") {
    if (operand()) out.push_back("--merge");
    while (operand()) out.push_back(args[i++]);
  } else if (m == "render") {
    while (operand()) {
      out.push_back("--report-html");
      out.push_back(args[i++]);
    }
  } else if (m == "list") {
    out.push_back("--list");
  }
  out.insert(out.end(), args.begin() + long(i), args.end());
  return out;
}

po::options_description all_options() {
  po::options_description all;
  all.add(mode_options());
  for (Group g : kAllGroups) all.add(group_options(g));
  return all;
}

const Mode& select_mode(const po::variables_map& vm, const po::parsed_options& parsed, const std::string& word) {
  // The modes the options name (a mode word became its option, except check's).
  std::vector<const Mode*> named;
  for (const auto& m : modes())
    if (*m.flag && vm.count(m.flag)) named.push_back(&m);
  auto spelled = [](const Mode& m) {
    return *m.flag ? std::string("--") + m.flag : std::string("check");
  };
  if (word == "check" && !named.empty())
    throw InputError("two modes: check and " + spelled(*named.front()) + "; give one");
  // --check FILE is check mode's own (an outside output compared; no path runs).
  if (vm.count("check") && vm.count("inputs") && !named.empty())
    throw InputError("two modes: check (--check FILE compares an outside output) and " + spelled(*named.front()) +
                     "; give one (to run a path on the case: --inputs DIR --verify COMBO)");
  if (named.size() > 1)
    throw InputError("two modes: " + spelled(*named[0]) + " and " + spelled(*named[1]) + "; give one");
  const Mode* mode = named.empty() ? nullptr : named.front();
  if (mode && !word.empty() && word != mode->word)  // `harness merge --verify plain`: two modes
    throw InputError("two modes: " + word + " and " + spelled(*mode) + "; give one");
  if (!mode && (word == "check" || vm.count("inputs"))) mode = &mode_named("check");
  if (mode && std::string(mode->word) == "check" && !vm.count("inputs"))
    throw InputError("harness check needs --inputs DIR (the case directory)");
  if (!mode) throw InputError("nothing to do: name a mode (harness verify all; harness --help lists the modes)");
  for (const auto& o : parsed.options) {
    const auto it = option_groups().find(o.string_key);
    if (it == option_groups().end() || takes(*mode, it->second)) continue;
    throw InputError("--" + o.string_key + " is not an option of harness " + mode->word + " (harness " + mode->word +
                     " --help lists its options)");
  }
  return *mode;
}

void print_synopsis(std::ostream& os) {
  os << "harness: NVFP4 dual-GEMM paths verified against the exact reference\n\n";
  for (const auto& m : modes()) {
    os << "  " << m.synopsis << "\n      " << m.summary << "\n";
  }
  os << "\n`harness MODE --help` lists a mode's options. The older spellings (--verify all, --bisect COMBO,\n"
        "--bench COMBO, --inputs DIR --check F, --merge A B, --report-html R, --list) still work.\n"
        "exit codes: 0 passed, 1 verification failure, 2 bad usage or input, 125 nothing testable here\n";
}

void print_mode_help(std::ostream& os, const Mode& m) {
  os << m.synopsis << "\n  " << m.summary << "\n";
  for (Group g : m.groups) os << "\n" << group_options(g);
  if (m.note) os << "\n" << m.note << "\n";
}

}  // namespace nvfp4::cli
