// merge.hpp — reports of sharded runs (shard.hpp) and `harness --merge A.json B.json ...`.
//
// A shard run adds one member to its JSON report (report.cpp write_json), "shard":
//   {"index": I, "count": N, "verify": "all",
//    "backends": [{"name": "cpu", "suite": [every case name, suite order], "cases": [the cases it owns]}]}
// so that a merge can prove the N reports are the N parts of ONE run: the same mode, trial options,
// --verify selection, backends and case list; shard indices 0..N-1 each exactly once; owned cases
// disjoint and covering the suite; every trial on a case its shard owns, none twice, none missing.
// Anything else is refused with the reason (InputError: exit 2), never merged into a wrong verdict.
//
// The merged report has the shape of a run's report (the JUnit and HTML writers render it
// unchanged): trials renumbered and ordered by backend, combination (first-seen order, which is
// the lattice's) and the case's place in the suite; the cases, backends and summary counts of
// all shards; "elapsed_s" the sum of the shards' times, "overhead_s" of their trials' overheads; "shard" keeps count, suite and the
// merged file names ("merged_from") and drops "index". Its exit code follows the rules of a run
// (docs/design.md §4): any FAIL, ERROR, CRASH, TIMEOUT or BLOCKED 1, else any PASS 0, else 125.
#pragma once
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "json_read.hpp"
#include "shard.hpp"

namespace nvfp4 {

// What a shard run records about itself.
struct ShardRecord {
  ShardSpec shard;
  std::string verify;  // the --verify selection ("all" or COMBO,...)
  struct Backend {
    std::string name;
    std::vector<std::string> suite;  // every case of the (narrowed) suite, in suite order
    std::vector<std::string> owned;  // the cases this shard runs, in suite order
  };
  std::vector<Backend> backends;  // the chosen backends, in order
};

// `report` (the text write_json wrote) with `record` added as its member "shard", after "options".
std::string add_shard_record(const std::string& report, const ShardRecord& record);

struct MergedReport {
  std::string json;  // the merged report (compact JSON, one line)
  JsonValue report;  // the same, parsed
  int exit_code = 125;
};

// Merges the shard reports `reports` (read from the files `names`, used in messages); `command`
// is recorded as the merged report's command. InputError naming the reason when they are not the
// complete, consistent set of shards of one run.
MergedReport merge_reports(const std::vector<JsonValue>& reports, const std::vector<std::string>& names,
                           const std::string& command);

}  // namespace nvfp4
