// suite.hpp — the embedded default suite of `harness --verify all` and its narrowing options.
//
// Every backend gets the docs/design.md §4 distributions (normal, uniform, edge, gpumode, ones, identity)
// on small and ragged shapes (M, N not multiples of anything; L = 2), plus long-K shapes for the
// accumulation bound (K = 4096, and the GPU MODE K = 7168 at a CPU-affordable M, N). The gpu backend also gets the four GPU MODE benchmark shapes (seed 1111, as
// the competition uses). The cpu suite is kept small enough that the whole CPU lattice runs in well
// under two minutes on a 2-core machine.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cases.hpp"

namespace nvfp4 {

std::vector<CaseSpec> default_suite(const std::string& backend);

// --shape / --dist / --seed. A given shape list replaces the suite's shapes (each crossed with
// the suite's distributions, or the given ones); a given distribution list keeps only those; a
// given seed replaces every case's seed. Duplicates are dropped; order is kept.
struct SuiteFilter {
  std::vector<Shape> shapes;
  std::vector<std::string> dists;
  std::optional<uint64_t> seed;
  bool empty() const { return shapes.empty() && dists.empty() && !seed; }
};
std::vector<CaseSpec> narrow_suite(const std::vector<CaseSpec>& suite, const SuiteFilter& f);

}  // namespace nvfp4
