// suite.cpp — the embedded default suite (see suite.hpp).
#include "suite.hpp"

#include <algorithm>

#include "distributions.hpp"
#include "gpu/fused/candidates.hpp"

namespace nvfp4 {

namespace {
constexpr uint64_t kSuiteSeed = 7;        // small cases
constexpr uint64_t kGpuModeSeed = 1111;   // the competition's task.yml seed

// The small shapes every distribution runs on (also for --dist without --shape). 1x1x16x4 is
// M = N = 1 with one K block, in 4 batches: a single output per batch, and four of them, so that
// one output that happens to be zero does not make the whole check vacuous.
const char* const kSmallShapes[] = {"1x1x16x4", "7x13x48", "33x65x160", "128x96x256x2"};

// Global scales (alpha1, alpha2): negative, non-powers of two; a very small alpha1 with a very
// large alpha2 (silu(alpha1*G) ~ alpha1*G/2, so C stays of order G*U: a path that applies alpha
// after silu, or drops it, is far off). Kept away from outputs that would be mostly zero or inf.
const std::pair<float, float> kAlphas[] = {
    {-1.5f, 0.3f}, {0.7f, -2.25f}, {1.0f / 3000.0f, 6000.0f}, {-0.01f, 250.5f}};

void add(std::vector<CaseSpec>& v, const char* shape, const std::string& dist, uint64_t seed,
         std::pair<float, float> alphas = {1.0f, 1.0f}) {
  CaseSpec c;
  c.shape = Shape::parse(shape);
  c.dist = dist;
  c.seed = seed;
  c.alpha1 = alphas.first;
  c.alpha2 = alphas.second;
  v.push_back(c);
}
}  // namespace

std::vector<CaseSpec> default_suite(const std::string& backend) {
  std::vector<CaseSpec> v;
  // Small and ragged: one element per batch; odd M and N; a few tiles with ragged edges; batches.
  for (const char* shape : kSmallShapes)
    for (const auto& d : distribution_names()) add(v, shape, d, kSuiteSeed);
  // Every finite E4M3 scale code on every operand where a wrong decode shows: `scales` covers all
  // of its 258 slots with 12 batches of at least 22 rows (+1 for its saturation pattern); the small
  // shapes above cover part of them (tests/harness/test_lattice_units.cpp checks the coverage).
  add(v, "24x24x64x12", "scales", kSuiteSeed);
  // K not a multiple of 64, 128 or 256; M, N multiples of no tile; batches whose inputs differ.
  for (const char* shape : {"17x9x80x3", "129x97x144", "65x33x272x2", "9x129x1040"})
    for (const char* d : {"normal", "uniform", "suspicious"}) add(v, shape, d, kSuiteSeed);
  // Global scales != 1, on a ragged shape, a batched ragged-K shape, NaN/negative scales, long K.
  for (const auto& a : kAlphas) add(v, "33x65x160", "normal", kSuiteSeed, a);
  add(v, "65x33x272x2", "uniform", kSuiteSeed, kAlphas[0]);
  add(v, "65x33x272x2", "gpumode", kSuiteSeed, kAlphas[2]);
  add(v, "129x97x144", "suspicious", kSuiteSeed, kAlphas[1]);
  add(v, "64x96x4096", "normal", kSuiteSeed, kAlphas[3]);
  // Long K: the accumulation bound matters (K = 4096 terms per element). `pow2` keeps every
  // element certified there (exact in fp32 in any order), so precision lost in an intermediate
  // (an fp16 partial sum, a short accumulator, a truncating conversion) fails by the certificate
  // even where the worst-case bound and the statistics allow it.
  for (const char* d : {"normal", "uniform", "gpumode", "pow2"}) add(v, "64x96x4096", d, kSuiteSeed);
  // The GPU MODE K (7168) at a size the CPU lattice affords.
  for (const char* d : {"normal", "gpumode", "pow2"}) add(v, "128x256x7168", d, kGpuModeSeed);
  if (backend == "gpu") {
    // The GPU MODE benchmark shapes (M x N x K), realistic and competition data.
    for (const char* shape : {"256x4096x7168", "512x4096x7168", "256x3072x4096", "512x3072x7168"})
      for (const char* d : {"normal", "gpumode"}) add(v, shape, d, kGpuModeSeed);
    add(v, "512x3072x7168", "pow2", kGpuModeSeed);  // every element certified at the fused kernels' K
    // NaN and negative scales, and global scales, at GPU MODE sizes (the fused kernels' main
    // paths run only there).
    add(v, "256x3072x4096", "suspicious", kGpuModeSeed);
    add(v, "512x4096x7168", "suspicious", kGpuModeSeed, kAlphas[0]);
    add(v, "256x4096x7168", "normal", kGpuModeSeed, kAlphas[2]);
    // Every configuration class the fused kernel's selection rules can offer gets a shape that
    // offers it (stage configs then verifies it there).
    for (const auto& shape : config_cover_shapes(v)) {
      CaseSpec c;
      c.shape = shape;
      c.dist = "normal";
      c.seed = kGpuModeSeed;
      v.push_back(c);
    }
  }
  return v;
}

std::map<std::string, Shape> config_classes(const std::vector<Shape>& shapes, int sms) {
  std::map<std::string, Shape> out;
  for (const auto& s : shapes)
    for (const auto& c : gpu::fused::candidates(s, sms)) {
      const std::string cls = gpu::fused::config_class(c, s);
      out.emplace(cls, s);
      for (const auto& facet : gpu::fused::config_facets(c, s)) out.emplace(cls + ", " + facet, s);
    }
  return out;
}

std::vector<OfferedConfig> offered_configs(const Shape& s, int sms) {
  const auto cands = gpu::fused::candidates(s, sms);
  const size_t def = gpu::fused::default_candidate(cands, s, sms);
  std::vector<OfferedConfig> out;
  for (size_t i = 0; i < cands.size(); ++i) out.push_back({gpu::fused::config_class(cands[i], s), i == def});
  return out;
}

std::vector<Shape> config_grid(bool dense) {
  const std::vector<int64_t> ms = dense ? std::vector<int64_t>{1, 64, 128, 129, 192, 256, 300, 384, 512, 768, 1024}
                                        : std::vector<int64_t>{64, 192, 256, 512};
  // N: multiples of 32 and of 64 or 96 (whole tiles) and not (80, 200: a partial last tile of every width).
  const std::vector<int64_t> ns = dense ? std::vector<int64_t>{64, 80, 96, 192, 200, 512, 1024, 3072, 4096}
                                        : std::vector<int64_t>{80, 96, 1024, 3072};
  const std::vector<int64_t> ks = dense ? std::vector<int64_t>{48, 208, 256, 512, 768, 1024, 1280, 2048, 3840, 4096, 7168}
                                        : std::vector<int64_t>{208, 256, 768, 2048, 3840};
  std::vector<Shape> out;
  for (int64_t l : {1, 2})
    for (int64_t k : ks)
      for (int64_t m : ms)
        for (int64_t n : ns) out.push_back(Shape{m, n, k, l});
  // Smallest first, so each class is covered by the cheapest shape that offers it.
  std::stable_sort(out.begin(), out.end(),
                   [](const Shape& a, const Shape& b) { return a.L * a.M * a.N * a.K < b.L * b.M * b.N * b.K; });
  return out;
}

std::vector<Shape> config_cover_shapes(const std::vector<CaseSpec>& suite) {
  std::vector<Shape> have;
  for (const auto& c : suite) have.push_back(c.shape);
  const auto covered = config_classes(have, kConfigSms);
  std::vector<Shape> add;
  for (const auto& [cls, shape] : config_classes(config_grid(false), kConfigSms))
    if (!covered.count(cls) && std::find(add.begin(), add.end(), shape) == add.end()) add.push_back(shape);
  return add;
}

std::vector<CaseSpec> narrow_suite(const std::vector<CaseSpec>& suite, const SuiteFilter& f) {
  std::vector<CaseSpec> out;
  auto push = [&](CaseSpec c) {
    if (f.seed) c.seed = *f.seed;
    if (f.alphas) c.alpha1 = f.alphas->first, c.alpha2 = f.alphas->second;
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
      for (const char* shape : kSmallShapes) {
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
