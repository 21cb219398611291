// cli_checks.hpp — what the harness CLI refuses before any work starts (docs/design.md §4: exit 2).
//
// main.cpp parses the command line with boost::program_options and calls these before it builds a
// case, computes a reference or starts a trial, so bad usage costs a fraction of a second and ends
// in one line naming the option or file and what is wrong (InputError; main maps it to exit 2):
//   tokens      no stray positional arguments (each option takes one value; lists use commas), no
//               empty option values, unsigned integers written as decimal digits that fit
//               (--seed -1 is refused, not wrapped to 2^64-1)
//   values      lists with no empty item, known shapes and distributions, faults whose :if=COMBO
//               is a combination some backend has, ranges of counts, budgets and limits
//   paths       outputs (--json, --save-output, --junit, --html, --bench-json): an existing regular
//               file or a new name in an existing directory, never a directory, FIFO, socket or device
//               (the type is named), never a file the run reads (case files, c.npy where harness check
//               reads it, --check, plugins, submissions, --task, reports merged or rendered: by file
//               identity; the autotune cache, which the run also writes: as an output) and never
//               another output's file (by identity, else by absolute path with the symbolic links of
//               the final component followed, dangling ones too, and those of the existing directories);
//               inputs (--inputs, --check, a c.npy in the case directory, --tune-cache and the
//               cache file in it): existing, readable and of the right type
//   memory      the bytes a shape needs (the parent's exact reference with its abs sums, a trial
//               child, the outputs read back) against what this machine has available
//               (/proc/meminfo MemAvailable, or the cgroup's limit when lower; --max-memory sets it)
// Each check reads only what it names (a directory entry, six .npy headers), never data (but for
// the sample of an operand that may be unpacked FP4, reference/case_dir.cpp).
#pragma once
#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "cases.hpp"
#include "faults.hpp"
#include "pool.hpp"
#include "suite.hpp"

namespace nvfp4::cli {

// The raw tokens, before they are stored: no positional arguments, no empty values, and every
// unsigned integer option (--seed, --bench-seed) a decimal number below 2^64.
void check_tokens(const boost::program_options::parsed_options& parsed);

// The most checked calls a trial makes (--runs): each has an input set and an exact reference of
// its own, which the parent builds and stores before the trial starts, outside any watchdog.
constexpr int kMaxRuns = 1000;

// Ranges of every numeric option, each refusal naming its option (--runs in [1, kMaxRuns], budgets in (0, 1e6],
// --max-memory > 0, ...), and the options that only make sense together (--batch-last, --check
// and --save-output need --inputs; --verify and --bisect are separate modes; --shape/--dist/--seed
// describe generated cases, not with --inputs).
void check_values(const boost::program_options::variables_map& vm);

// The paths the user named (see the file comment). `reads_case_output`: this run reads the case
// directory's c.npy (harness check without --backend), so no output may be it; verify and bisect
// never read it, and --save-output DIR/c.npy there writes the path's output where the user asked.
void check_paths(const boost::program_options::variables_map& vm, bool reads_case_output);
void check_case_output(const std::string& inputs_dir, const std::string& c_npy);

// The items of a comma-separated list option (one string, or repeatable); an empty list or an
// empty item is refused, naming the option. Absent option: {}.
std::vector<std::string> list_values(const boost::program_options::variables_map& vm, const char* option);

// --isolate, --jobs and --gpus as a run policy (pool.hpp): --jobs in [1, 1024]; --gpus LIST or
// 'all' (count_gpus; none found is refused); without --gpus, the GPUs ctest's resource spec
// gave (CTEST_RESOURCE_GROUP_*). --jobs defaults to the number of GPUs, else 1.
RunPolicy run_policy(const boost::program_options::variables_map& vm);

// --shape, --dist and --seed as a suite filter (each bad item named with its option).
SuiteFilter suite_filter(const boost::program_options::variables_map& vm);

// --inject: each fault parsed, and its :if=COMBO a valid combination on at least one backend
// (a condition naming no registered optimization would never fire, and the drill would pass
// while testing nothing).
std::vector<Fault> faults(const boost::program_options::variables_map& vm);

// ---- memory ----
struct MemoryLimit {
  double bytes = 0;
  std::string source;  // "MemAvailable", "the cgroup's memory.max", "--max-memory"
};
// --max-memory GiB when given, else what this machine has available now.
MemoryLimit memory_limit(const boost::program_options::variables_map& vm);

// The peak bytes one case needs (an estimate, erring high): the parent's problem and exact
// reference with abs sums and its workspace; one trial child's problem, plan and outputs; the
// `runs` outputs, the configurations' outputs (stage configs) and the intermediates read back by the
// parent (runs = 0: no trial, only the reference, as --inputs DIR --check does).
struct MemoryEstimate {
  double reference = 0;  // parent: problem, G, U, |G|, |U| sums, C, reference workspace
  double trial = 0;      // child plus what the parent reads back from it
  double total() const { return reference + trial; }
};
MemoryEstimate estimate_memory(const Shape& s, int runs);

// Throws InputError "WHAT: shape S needs about X GiB (...), more than the Y GiB available (...)"
// when the estimate exceeds the limit.
void check_memory(const Shape& s, int runs, const MemoryLimit& limit, const std::string& what);

}  // namespace nvfp4::cli
