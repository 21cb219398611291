// bisect.hpp — `harness bisect COMBO`: the minimal sub-combinations of a failing combination
// (docs/design.md §4.4).
//
// The search runs where the failure is, then confirms on the suite:
//   1. COMBO on every case, in one batch through the session's workers (--isolate, --jobs, --gpus):
//      which cases fail. None: the verdict is "pass".
//   2. On the smallest failing case alone, every sub-combination, smallest first, one level (one
//      size) per batch, skipping supersets of the failing ones: a superset of a failing subset is
//      never minimal. Up to 6 optimizations; delta debugging (ddmin, 1-minimal) beyond.
//   3. Confirmation on the rest of the suite, in one batch: each culprit and every proper
//      sub-combination of it. A sub-combination that fails on another case is a culprit there:
//      step 2 runs again on that case, and the culprits are the minimal ones of both.
// Each (combination, case) trial runs at most once. The verdict line names the culprits, how the
// first failed, and on how many cases the verdict was confirmed.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "lattice.hpp"

namespace nvfp4 {

// The minimal failing subsets of `opts`, given an oracle that judges a batch of subsets at once
// (one call per size, smallest first; supersets of failing subsets are not asked about).
std::vector<Combo> minimal_failing_subsets_batched(
    const std::vector<std::string>& opts, const std::function<std::vector<bool>(const std::vector<Combo>&)>& fails);
// The same with an oracle for one subset at a time.
std::vector<Combo> minimal_failing_subsets(const std::vector<std::string>& opts,
                                           const std::function<bool(const Combo&)>& fails);
// Delta debugging (Zeller & Hildebrandt, TSE 2002): a 1-minimal failing subset of `opts`, given
// that `opts` fails and the empty set passes.
Combo ddmin_failing(const std::vector<std::string>& opts, const std::function<bool(const Combo&)>& fails);

struct BisectVerdict {
  enum Kind { Passed, Culprit, Skipped } kind = Skipped;
  std::vector<Combo> culprits;  // minimal failing combinations
  std::string line;             // the one-line verdict
  std::string reproducer;       // re-runs the first culprit's failing trial
};
// `harness bisect COMBO` for one backend.
BisectVerdict bisect(Session& s, const std::string& backend, const Combo& combo,
                     const std::vector<CaseSpec>& cases);

}  // namespace nvfp4
