// gpu_cases.hpp — the small GPU test cases, one table for every tests/gpu suite (their "small"
// test cases, the compute-sanitizer subset tools/gpu_run.sh runs): shape, distribution, seed,
// alphas and what the case is for. A case's name (shape, distribution, seed) reproduces it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cases.hpp"
#include "distributions.hpp"
#include "lattice.hpp"
#include "problem.hpp"

namespace nvfp4::test {

struct GpuCase {
  const char* shape;  // MxNxK[xL]
  const char* dist;   // reference/distributions.hpp
  uint64_t seed;
  float alpha1, alpha2;
  const char* why;

  Problem make() const {
    Problem p = make_problem(Shape::parse(shape), dist, seed);
    p.alpha1 = alpha1;
    p.alpha2 = alpha2;
    return p;
  }
  std::string name() const { return std::string(shape) + " " + dist + " seed " + std::to_string(seed); }
  // The same case as the harness's CaseSpec (its set 0 is make()), for a trial's stages.
  CaseSpec spec() const {
    CaseSpec c;
    c.shape = Shape::parse(shape);
    c.dist = dist;
    c.seed = seed;
    c.alpha1 = alpha1;
    c.alpha2 = alpha2;
    return c;
  }
};

// Every path and combination runs all of them. K % 256 == 0 selects the fused kernel's v5
// family (and its split-K, pair and stream-K candidates where the shape offers them), other K
// the v3 family's cp.async (K % 64 == 0) or generic K path.
inline const std::vector<GpuCase>& small_gpu_cases() {
  static const std::vector<GpuCase> cases = {
      {"1x1x16", "uniform", 2, 1.0f, 1.0f, "one element, one scale block"},
      {"7x13x48", "edge", 3, 1.0f, 1.0f, "K % 64 != 0: the generic K path"},
      {"17x31x48x3", "edge", 3, 1.0f, 1.0f, "L > 1 with K % 64 != 0"},
      {"33x65x160", "normal", 1, 1.0f, 1.0f, "ragged M and N"},
      {"40x24x64", "identity", 6, 1.0f, 1.0f, "exact products"},
      {"17x31x80", "ones", 7, 1.0f, 1.0f, "K % 64 != 0, equal values"},
      {"7x513x272", "gpumode", 5, 1.0f, 1.0f, "N % 8 != 0 and past one tile row"},
      {"64x128x256x2", "normal", 4, 0.5f, 3.0f, "alphas != 1, L > 1, one v5 weight stage"},
      {"128x96x256x2", "normal", 4, 0.5f, 3.0f, "alphas != 1, whole 128 x 96 tiles"},
      {"130x200x192x3", "gpumode", 5, 1.0f, 1.0f, "L = 3, M just past a tile"},
      // K % 256 == 0 with several 256-K weight stages: the v5 kernel, its split-K candidates
      // (ragged M and N, N % 8 != 0, L > 1, several M tiles) and its phase-0 queue.
      {"100x70x1024x2", "normal", 8, 1.0f, 2.0f, "v5 split-K, L > 1"},
      {"300x136x512", "gpumode", 9, 1.0f, 1.0f, "v5 several M tiles, a half-empty pair tile"},
      // Few tiles, many phase-0 chunks: each CTA's batch (16 chunks) is larger than the
      // activation ring it is staged in (8 slots at BM = 128, 4 at BM = 256), so phase 0 goes
      // through several staging groups; ragged M for both tile heights.
      {"520x40x1024", "normal", 10, 1.0f, 1.0f, "v5 phase 0 in several staging groups"},
      // The 256-row tile (M > 128) with L > 1, ragged M and N; with 300x136x512 and 520x40x1024
      // also the 256-row split-K pairs (2-CTA clusters) and stream-K (few tiles, so each CTA gets
      // one or two weight stages: up to 4 parts per tile).
      {"260x72x512x2", "normal", 11, 2.0f, 0.5f, "v5 256-row tiles, pairs and stream-K, L > 1"},
      // The 128 x 96 tiles (three consumer warpgroups) run in every case with K % 256 == 0, their
      // pairs where K >= 512. Here their local start decodes 2 stages beside a phase-0 batch of
      // 6 chunks (4 tiles, 24 chunks), and their pairs' local start hits the box's cap (4 local
      // stages beside a batch of 3).
      {"200x150x768", "normal", 12, 1.0f, 1.0f, "v5 128 x 96 local start and its cap"},
  };
  return cases;
}

// The gpu backend's combinations as the lattice runs them (so a new optimization is tested here
// without editing a list), those with the fused variant or those without.
inline std::vector<std::string> gpu_combos(bool with_fused) {
  std::vector<std::string> out;
  for (const auto& c : lattice_combos("gpu"))
    if (c.has("fused") == with_fused) out.push_back(c.str());
  return out;
}

}  // namespace nvfp4::test
