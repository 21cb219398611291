// options.hpp — the option groups the modes share (cli/modes.hpp says which mode takes which), and
// the conversion of a parsed command line into the trial options every mode runs with.
//
// One group per concern: paths (what to run), suite (which cases), trials (how each trial calls the
// path), workers, budgets (one --budget-NAME per stage of kStages with a budget of its own, plus
// --budget-trial), drills, case directory, outputs (--json, --junit, --html: the report of every mode).
#pragma once
#include <boost/program_options.hpp>
#include <string>

#include "trial.hpp"

namespace nvfp4::cli {

enum class Group {
  Paths, Suite, Alpha, Shard, Trials, Memory, Workers, Budgets, Drills, CaseDir, Outputs, Bench,
  Rehearse  // harness rehearse's own options (rehearse.hpp)
};

// The options of one group (the bench group lives in bench.hpp's bench_options(), the rehearse group in
// rehearse.hpp's rehearse_options()).
boost::program_options::options_description group_options(Group g);

// The trial options of the command line: counts, --fresh, budgets from kStages, autotune options.
// Ranges are checked first (check_values), so this only converts.
TrialOptions trial_options(const boost::program_options::variables_map& vm);

// "--budget-NAME" for a stage with a budget of its own.
std::string budget_option(Stage s);

// compute-sanitizer: NVFP4_COMPUTE_SANITIZER, else on PATH, else /usr/local/cuda/bin; "" if none.
std::string find_sanitizer();

}  // namespace nvfp4::cli
