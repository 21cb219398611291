// modes.hpp — the harness's modes: one table, so that two modes at once are impossible by construction.
//
//   harness verify all | COMBO[,COMBO...]     staged isolation / just those (docs/design.md §4)
//   harness bisect COMBO                      the minimal failing sub-combinations
//   harness bench COMBO[,COMBO...]            bench trials, timed in stage time (bench.hpp)
//   harness check --inputs DIR [--check C.npy | --save-output C.npy]    an outside output vs the reference
//   harness merge A.json B.json ...           the reports of one run's shards as one
//   harness render REPORT.json ... --html OUT | --junit OUT              reports already written
//   harness list                              backends, optimizations, combinations, distributions
//   harness rehearse gpumode --submission F   the submission run as GPU MODE's evaluator runs it (rehearse.hpp)
// The older spellings stay: `--verify all`, `--bisect COMBO`, `--bench COMBO`, `--inputs DIR --check F`,
// `--merge A B`, `--report-html R`, `--list`. Whatever the spelling, a command line names exactly one
// mode, and every option it gives belongs to one of that mode's option groups (options.hpp); anything
// else is bad usage (exit 2) before any work.
#pragma once
#include <boost/program_options.hpp>
#include <iosfwd>
#include <string>
#include <vector>

#include "options.hpp"

namespace nvfp4::cli {

struct Mode {
  const char* word;      // `harness WORD ...`
  const char* flag;      // the option that also selects it ("" for check: --inputs without a path mode)
  const char* synopsis;  // one line of usage
  const char* summary;   // what it does
  std::vector<Group> groups;
  const char* note = nullptr;  // printed after the groups in `harness WORD --help`, when set
};
const std::vector<Mode>& modes();
const Mode& mode_named(const std::string& word);

// argv with a leading mode word written as its option (`harness verify all` -> `--verify all`;
// `harness merge A B` -> `--merge A B`; `harness render R` -> `--report-html R`). `word` receives the
// mode word, or "" when argv starts with an option.
std::vector<std::string> spell_mode_word(int argc, char** argv, std::string& word);

// Every option of every group and the mode options, for parsing.
boost::program_options::options_description all_options();

// The one mode this command line names (refusing two, or none); then every option the user wrote
// must belong to that mode's groups.
const Mode& select_mode(const boost::program_options::variables_map& vm,
                        const boost::program_options::parsed_options& parsed, const std::string& word);

void print_synopsis(std::ostream& os);
void print_mode_help(std::ostream& os, const Mode& m);

}  // namespace nvfp4::cli
