// suite.hpp — the embedded default suite of `harness --verify all` and its narrowing options.
//
// Every backend gets (suite.cpp lists them):
//   - every distribution of reference/distributions.hpp (including `suspicious`: negative, -0 and
//     NaN 0x7F/0xFF scale bytes) on small shapes: one element per batch (1x1x16x4), ragged M
//     and N (7x13, 33x65), a tile-aligned batch of 2 (128x96x256x2);
//   - K not a multiple of 64, 128 or 256 (80, 144, 272, 1040) on M and N that are multiples of no
//     tile (odd sizes such as 129x97), with batches (L = 2, 3) whose inputs differ per batch;
//   - global scales alpha1, alpha2 != 1 (a case property, cases.hpp): negative, non-powers of two,
//     very small with very large;
//   - long K for the accumulation bound (K = 4096, and the GPU MODE K = 7168 at a CPU-affordable
//     M, N).
// The gpu backend also gets the four GPU MODE benchmark shapes (seed 1111, as the competition
// uses), plus NaN/negative scales and alphas at GPU MODE sizes. No case of the default suite has
// a degenerate reference in any input set its checked calls use (tests/harness/
// test_fresh_inputs.cpp checks it); the DEGENERATE flag is tested on purpose-built cases
// (tests/harness/test_casemode.cpp). The cpu suite is kept small enough that the whole CPU
// lattice runs in well under a minute on a 2-core machine.
#pragma once
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cases.hpp"

namespace nvfp4 {

std::vector<CaseSpec> default_suite(const std::string& backend);

// --shape / --dist / --seed / --alpha. A given shape list replaces the suite's shapes (each
// crossed with the suite's distributions, or the given ones); a given distribution list keeps
// only those; a given seed replaces every case's seed, given alphas every case's alphas.
// Duplicates are dropped; order is kept.
struct SuiteFilter {
  std::vector<Shape> shapes;
  std::vector<std::string> dists;
  std::optional<uint64_t> seed;
  std::optional<std::pair<float, float>> alphas;  // also applies to a case directory
  // No shape, distribution or seed narrowing (the ones that describe generated cases).
  bool empty() const { return shapes.empty() && dists.empty() && !seed; }
};
std::vector<CaseSpec> narrow_suite(const std::vector<CaseSpec>& suite, const SuiteFilter& f);

// Configuration coverage (stage configs, docs/design.md §3.2): the fused kernel's configuration
// classes (gpu/fused/candidates.hpp config_class) offered on `shapes` for a device of `sms` SMs,
// each with the first shape that offers it. The GPU suite is computed for the target's 132 SMs.
constexpr int kConfigSms = 132;
std::map<std::string, Shape> config_classes(const std::vector<Shape>& shapes, int sms);
// A grid of shapes, smallest first: the suite's generator uses the coarse one, the coverage test
// the dense one (a class only the dense grid finds fails the test: widen the coarse grid).
std::vector<Shape> config_grid(bool dense);
// The shapes to add to `suite` so that every class the coarse grid offers is covered.
std::vector<Shape> config_cover_shapes(const std::vector<CaseSpec>& suite);
// The fused kernel's configurations offered on `s` for a device of `sms` SMs (the autotune
// candidates; stage configs runs each), in candidate order: each one's class and whether it is the
// one the plan runs without autotune (the default table).
struct OfferedConfig {
  std::string config_class;
  bool is_default = false;
};
std::vector<OfferedConfig> offered_configs(const Shape& s, int sms);

}  // namespace nvfp4
