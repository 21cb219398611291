// cases.hpp — what a trial's inputs are, and the parent's cache of exact references.
//
// A case is either generated (shape, distribution, seed: docs/design.md §4, reference/distributions.hpp)
// or loaded from a case directory (docs/design.md §1). Children rebuild the same bytes from the CaseSpec;
// the parent computes the exact reference (with abs sums, for the tolerance) once per case and
// keeps it in a least-recently-used cache with a byte budget.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "compare.hpp"
#include "problem.hpp"
#include "reference.hpp"

namespace nvfp4 {

struct CaseSpec {
  Shape shape;
  std::string dist;   // distribution name (generated cases)
  uint64_t seed = 0;
  std::string inputs_dir;  // non-empty: loaded from this case directory instead
  bool batch_last = false;

  bool from_dir() const { return !inputs_dir.empty(); }
  // "33x65x160 edge seed 7" or "case dir /path (MxNxK)".
  std::string name() const;
  // Builds the problem: generates it, or loads (and validates) the case directory.
  Problem make() const;
  bool operator==(const CaseSpec& o) const;
};

// Everything the parent knows about a case once its reference is computed.
struct CaseInfo {
  CaseSpec spec;
  float alpha1 = 1, alpha2 = 1;
  ReferenceResult ref;                // with abs sums
  Degeneracy degeneracy;
  std::vector<std::string> warnings;  // suspicious scale bytes
  double reference_seconds = 0;
  size_t bytes() const;
};

// Computes the reference for a problem, with abs sums, and the case's flags.
std::shared_ptr<const CaseInfo> analyse_case(const CaseSpec& spec, const Problem& p);

class ReferenceCache {
 public:
  explicit ReferenceCache(size_t max_bytes = size_t(2) << 30) : max_bytes_(max_bytes) {}
  // The case's reference, computed on first use (may throw InputError for a bad case directory).
  std::shared_ptr<const CaseInfo> get(const CaseSpec& spec);
  // Every case analysed so far, in first-use order (for the report).
  const std::vector<std::shared_ptr<const CaseInfo>>& seen() const { return seen_summary_; }

 private:
  size_t max_bytes_, bytes_ = 0;
  std::list<std::shared_ptr<const CaseInfo>> lru_;  // front: most recent
  std::vector<std::shared_ptr<const CaseInfo>> seen_summary_;  // light copies: no arrays
};

}  // namespace nvfp4
