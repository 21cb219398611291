// suite.cpp — the embedded default suite (see suite.hpp).
#include "suite.hpp"

#include <algorithm>

#include "distributions.hpp"

namespace nvfp4 {

namespace {
constexpr uint64_t kSuiteSeed = 7;        // small cases
constexpr uint64_t kGpuModeSeed = 1111;   // the competition's task.yml seed

void add(std::vector<CaseSpec>& v, const char* shape, const std::string& dist, uint64_t seed) {
  CaseSpec c;
  c.shape = Shape::parse(shape);
  c.dist = dist;
  c.seed = seed;
  v.push_back(c);
}
}  // namespace

std::vector<CaseSpec> default_suite(const std::string& backend) {
  std::vector<CaseSpec> v;
  // Small and ragged: one block of K; odd M and N; a few tiles with ragged edges; a batch of 2.
  for (const char* shape : {"1x1x16", "7x13x48", "33x65x160", "128x96x256x2"})
    for (const auto& d : distribution_names()) add(v, shape, d, kSuiteSeed);
  // Long K: the accumulation bound matters (K = 4096 terms per element).
  for (const char* d : {"normal", "uniform", "gpumode"}) add(v, "64x96x4096", d, kSuiteSeed);
  // The GPU MODE K (7168) at a size the CPU lattice affords: where the competition's generator
  // once produced all-inf outputs, so the degenerate-reference flag is exercised on real data.
  for (const char* d : {"normal", "gpumode"}) add(v, "128x256x7168", d, kGpuModeSeed);
  if (backend == "gpu") {
    // The GPU MODE benchmark shapes (M x N x K), realistic and competition data.
    for (const char* shape : {"256x4096x7168", "512x4096x7168", "256x3072x4096", "512x3072x7168"})
      for (const char* d : {"normal", "gpumode"}) add(v, shape, d, kGpuModeSeed);
  }
  return v;
}

std::vector<CaseSpec> narrow_suite(const std::vector<CaseSpec>& suite, const SuiteFilter& f) {
  std::vector<CaseSpec> out;
  auto push = [&](CaseSpec c) {
    if (f.seed) c.seed = *f.seed;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  auto dist_ok = [&](const std::string& d) {
    return f.dists.empty() || std::find(f.dists.begin(), f.dists.end(), d) != f.dists.end();
  };
  if (!f.shapes.empty()) {
    // The suite's distributions (first-seen order) and their seeds, or the given distributions.
    std::vector<std::pair<std::string, uint64_t>> dists;
    if (!f.dists.empty()) {
      for (const auto& d : f.dists) dists.push_back({d, kSuiteSeed});
    } else {
      for (const auto& c : suite) {
        bool seen = false;
        for (const auto& d : dists) seen |= d.first == c.dist;
        if (!seen) dists.push_back({c.dist, c.seed});
      }
    }
    for (const auto& s : f.shapes)
      for (const auto& d : dists) {
        CaseSpec c;
        c.shape = s;
        c.dist = d.first;
        c.seed = d.second;
        push(c);
      }
    return out;
  }
  for (const auto& c : suite)
    if (dist_ok(c.dist)) push(c);
  // Distributions asked for but absent from the suite still get the suite's small shapes.
  for (const auto& d : f.dists) {
    bool present = false;
    for (const auto& c : suite) present |= c.dist == d;
    if (!present)
      for (const char* shape : {"1x1x16", "7x13x48", "33x65x160", "128x96x256x2"}) {
        CaseSpec c;
        c.shape = Shape::parse(shape);
        c.dist = d;
        c.seed = kSuiteSeed;
        push(c);
      }
  }
  return out;
}

}  // namespace nvfp4
