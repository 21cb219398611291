// test_fused.cu — the gpu backend's fused kernels (optimized/gpu/fused/) and their
// combinations with graph and autotune, in this process (so compute-sanitizer sees every kernel):
//   * every fused combination runs the trial's own stages (the child's pipeline,
//     harness/trial/stages.hpp, through tests/support/in_process.hpp: init, tune, warmup,
//     capture, run on the child's input sets, the output poisoned before the calls that catch
//     unwritten elements) and passes the harness's derived tolerance (compare.hpp) against the
//     exact reference of each call's own input set;
//   * every tile configuration (autotune candidate) passes on its own: the pipeline's stage
//     configs, one poisoned call per configuration, each judged against its set's reference;
//   * on top of the pipeline: graph replays give the same bits as fused's eager calls on the same
//     input sets, and select() is refused after capture;
//   * the in-kernel decoder is right for every E2M1 code times every E4M3 scale byte (NaN and
//     negative scales included), checked through single-term dot products;
//   * a NaN scale poisons exactly the outputs it touches; a negative scale flips signs;
//   * the v5 epilogue's branch-free silu·mul agrees with the IEEE-division one and handles the
//     ends of the range (x = +-inf, huge, NaN).
// Test cases:
//   "small"  the shared small cases (gpu_cases.hpp: ragged shapes, L > 1, alpha != 1, K % 64 != 0,
//            both kernel families, v5's split-K, pairs and stream-K) — the compute-sanitizer
//            subset (tools/gpu_run.sh runs `test_fused -tc='small*'` under memcheck/racecheck/...);
//   "suite"  the harness's default gpu suite (all distributions, ragged shapes, the four GPU MODE
//            benchmark shapes) with every fused combination.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compare.hpp"
#include "distributions.hpp"
#include "formats.hpp"
#include "gpu/fused/v5_epilogue.cuh"
#include "gpu/gpu_plan.hpp"
#include "gpu_cases.hpp"
#include "gpu_skip.hpp"
#include "gpu_trials.hpp"
#include "reference.hpp"
#include "registry.hpp"
#include "suite.hpp"

using namespace nvfp4;

namespace {


std::string describe_failure(const Comparison& c) {
  std::string s = std::to_string(c.over_tolerance) + " over tolerance, " +
                  std::to_string(c.poisoned) + " unwritten, " + std::to_string(c.nan_mismatch) +
                  " NaN mismatches, max ulp " + std::to_string(c.max_ulp);
  if (!c.worst.empty()) {
    const ElementReport& w = c.worst.front();
    s += "; worst at l=" + std::to_string(w.l) + " m=" + std::to_string(w.m) +
         " n=" + std::to_string(w.n) + " got " + std::to_string(fp16_to_double(w.got)) +
         " exact " + std::to_string(w.exact);
  }
  return s;
}

// Stage configs checks every tile of fused alone when `every_tile`.
void check_case(const CaseSpec& c, bool every_tile) {
  const std::string name = c.name();
  const TrialOptions o = test::gpu_trial_options(every_tile);
  std::map<std::string, test::InProcessTrial> trials;
  const std::vector<std::string> combos = nvfp4::test::gpu_combos(true);  // after static registration
  REQUIRE(combos.size() >= 4);
  for (const auto& combo : combos) {
    CAPTURE(name);
    CAPTURE(combo);
    test::InProcessTrial t = test::run_gpu_trial(combo, c, o);
    const std::string path = t.sink.describes.empty() ? "?" : t.sink.describes.back();
    REQUIRE(t.calls.size() == size_t(o.runs));
    for (size_t i = 0; i < t.calls.size(); ++i)
      CHECK_MESSAGE(t.calls[i].pass(),
                    name << ": " << combo << " [" << path << "] call " << i + 1 << ": " << describe_failure(t.calls[i]));
    // Stage configs runs for fused alone (no wrapper) where the shape offers several tiles: then on
    // every one of them.
    if (every_tile && combo == "fused") {
      const size_t tiles = build_plan("gpu", Combo::parse("fused"), c.make(), PlanOptions{})->candidates().size();
      CHECK(t.configs.size() == (tiles > 1 ? tiles : 0));
    }
    for (size_t i = 0; i < t.configs.size(); ++i)
      CHECK_MESSAGE(t.configs[i].pass(),
                    name << " tile " << t.sink.configs[i].name << ": " << describe_failure(t.configs[i]));
    trials.emplace(combo, std::move(t));
  }
  test::check_same_bits(trials.at("fused+graph"), trials.at("fused"));
}

bool have_fused() {
  const Backend* be = Registry::instance().backend("gpu");
  REQUIRE(be);
  const Support s = be->available();
  if (!s.ok) {
    MESSAGE("gpu backend unavailable: " << s.reason);
    return false;
  }
  const Support f = combo_supports("gpu", Combo::parse("fused"), Shape::parse("16x16x16"));
  if (!f.ok) MESSAGE("fused unsupported here: " << f.reason);
  return f.ok;
}

// Runs plan "fused" with tile `tile` once and returns the output.
std::vector<uint16_t> run_fused(const Problem& p, int tile) {
  auto plan = build_plan("gpu", Combo::parse("fused"), p, PlanOptions{});
  plan->select(size_t(tile));
  std::vector<uint16_t> c(size_t(p.shape.c_elems()));
  plan->poison_output(kPoisonBits);
  plan->enqueue();
  plan->read_output(c.data());
  return c;
}

}  // namespace

TEST_CASE("small: fused, fused+graph, autotune+fused(+graph) and every tile on ragged shapes") {
  if (!have_fused()) return nvfp4::test::skip("the fused kernels need sm_90a (Hopper)");
  // Cases that offer (and so ran) the 256-row pairs, stream-K, the 128 x 96 tiles, their pairs.
  int pairs = 0, streams = 0, tiles3 = 0, pairs3 = 0;
  for (const test::GpuCase& c : test::small_gpu_cases()) {
    const Problem p = c.make();
    check_case(c.spec(), true);
    for (const auto& name : build_plan("gpu", Combo::parse("fused"), p, PlanOptions{})->candidates()) {
      const bool pair = name.find("cluster pairs") != std::string::npos;
      const bool x96 = name.find("v5 tile 128x96") != std::string::npos;
      pairs += pair && name.find("v5 tile 256x64") != std::string::npos;
      streams += name.find("stream-K") != std::string::npos;
      tiles3 += x96 && name.find("split-K 1") != std::string::npos;
      pairs3 += x96 && pair;
    }
  }
  // 300x136x512 (ragged: the second tile's upper half is past M), 520x40x1024, 260x72x512x2 and
  // 200x150x768.
  CHECK(pairs == 4);
  CHECK(streams == 4);
  // 64x128x256x2, 128x96x256x2, 100x70x1024x2, 300x136x512, 520x40x1024, 260x72x512x2,
  // 200x150x768; the pairs in all but the first two (one 256-K weight stage).
  CHECK(tiles3 == 7);
  CHECK(pairs3 == 5);
  // Without autotune, the pair replaces 128-row tiles where it is offered (candidates.hpp,
  // default_candidate).
  const Problem p = make_problem(Shape::parse("260x72x512x2"), "normal", 11);
  const std::string d = build_plan("gpu", Combo::parse("fused"), p, PlanOptions{})->describe();
  CHECK_MESSAGE(d.find("2-CTA cluster pairs") != std::string::npos, d);
  // ... and the 128 x 96 tiles where one wave of them fills 3/4 to all of the SMs (on the H100's
  // 132: 128 tiles at 512x3072x7168, 128 pair CTAs at 256x3072x4096), else the previous choice.
  const int sms = gpu::device_info().sm_count;
  if (sms == 132) {
    auto default_of = [](const char* shape) {
      const Problem q = make_problem(Shape::parse(shape), "normal", 1);
      return build_plan("gpu", Combo::parse("fused"), q, PlanOptions{})->describe();
    };
    const std::string d4 = default_of("512x3072x7168"), d3 = default_of("256x3072x4096");
    const std::string d2 = default_of("512x4096x7168");
    CHECK_MESSAGE(d4.find("tile 128x96, split-K 1 (128 units") != std::string::npos, d4);
    CHECK_MESSAGE(d3.find("tile 128x96, split-K 2 as 2-CTA cluster pairs (128 CTAs)") !=
                      std::string::npos,
                  d3);
    CHECK_MESSAGE(d2.find("tile 256x64, split-K 1") != std::string::npos, d2);
  } else {
    MESSAGE("default-candidate check for 132 SMs skipped: this device has " << sms);
  }
}

// Row m of A holds the 16 E2M1 codes 0..15 in its first block with scale byte m (all 256 E4M3
// patterns); the other 15 blocks are zero codes with scale 1. B1 row n and B2 row n hold the
// single code 2 (= 1.0) at k = n with scale 1.0. So G[m, n] = U[m, n] = e2m1(n) * e4m3(m): one
// exact term, and C = silu(G) * G checks the decode of every (code, scale) pair, NaN scales (0x7F,
// 0xFF) and negative ones included. K = 256 takes the TMA kernel with both decoders (candidates).
TEST_CASE("small: the in-kernel decoder, every E2M1 code times every E4M3 scale byte") {
  if (!have_fused()) return nvfp4::test::skip("the fused kernels need sm_90a (Hopper)");
  constexpr int K = 256, kRowBytes = K / 2, kRowScales = K / 16;
  Problem p = Problem::zeros(Shape::parse("256x16x256"));
  for (int m = 0; m < 256; ++m) {
    for (int j = 0; j < 8; ++j) p.a[size_t(m) * kRowBytes + j] = uint8_t((2 * j) | ((2 * j + 1) << 4));
    p.sfa[size_t(m) * kRowScales] = uint8_t(m);
    for (int b = 1; b < kRowScales; ++b) p.sfa[size_t(m) * kRowScales + b] = 0x38;
  }
  for (int n = 0; n < 16; ++n) {
    const uint8_t code = 2;  // 1.0
    p.b1[size_t(n) * kRowBytes + n / 2] = uint8_t((n & 1) ? code << 4 : code);
    p.b2[size_t(n) * kRowBytes + n / 2] = uint8_t((n & 1) ? code << 4 : code);
    for (int b = 0; b < kRowScales; ++b) {
      p.sfb1[size_t(n) * kRowScales + b] = 0x38;  // 1.0
      p.sfb2[size_t(n) * kRowScales + b] = 0x38;
    }
  }
  // alpha2 = 2^10 lifts the tiny products (down to 2^-20) out of fp16's subnormal range.
  p.alpha2 = 1024.0f;
  ReferenceOptions ro;
  ro.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, ro);
  auto plan = build_plan("gpu", Combo::parse("fused"), p, PlanOptions{});
  for (size_t t = 0; t < plan->candidates().size(); ++t) {
    const std::vector<uint16_t> c = run_fused(p, int(t));
    const Comparison cmp = compare_output(ref, p.alpha1, p.alpha2, c.data(), nullptr, nullptr);
    CHECK_MESSAGE(cmp.pass(), "tile " << plan->candidates()[t] << ": " << describe_failure(cmp));
    // A direct statement of the decode, independent of the tolerance: NaN exactly where the
    // scale is NaN, and the sign of every non-zero reference output (silu(x)*x*1024 is never
    // negative, but the reference's rounding to fp16 may give 0 or inf, which it decides).
    int64_t bad = 0;
    for (int m = 0; m < 256; ++m)
      for (int n = 0; n < 16; ++n) {
        const size_t e = size_t(m) * 16 + n;
        const bool nan_expected = std::isnan(e2m1_value(uint8_t(n)) * e4m3_value(uint8_t(m)));
        if (nan_expected != fp16_is_nan(c[e])) ++bad;
        else if (!nan_expected && (ref.c[e] & 0x7FFF) != 0 && (c[e] & 0x8000) != (ref.c[e] & 0x8000)) ++bad;
      }
    CHECK_MESSAGE(bad == 0, "tile " << plan->candidates()[t] << ": " << bad << " decode mismatches");
  }
}

TEST_CASE("small: a NaN scale poisons exactly its rows/columns; a negative scale flips signs") {
  if (!have_fused()) return nvfp4::test::skip("the fused kernels need sm_90a (Hopper)");
  Problem p = make_problem(Shape::parse("70x90x320"), "normal", 21);
  const int64_t kb = 320 / 16;
  p.sfa[3 * kb + 5] = 0x7F;    // A row 3, block 5: row 3 of C is NaN
  p.sfb1[10 * kb + 19] = 0xFF; // B1 row 10, last block: column 10 of C is NaN
  Problem q = p;
  for (int64_t j = 0; j < kb; ++j) q.sfb2[44 * kb + j] ^= 0x80;  // B2 row 44 negated: U[:,44] flips
  const std::vector<uint16_t> cp = run_fused(p, 2), cq = run_fused(q, 2);
  int64_t wrong_nan = 0, wrong_sign = 0;
  for (int m = 0; m < 70; ++m)
    for (int n = 0; n < 90; ++n) {
      const bool expect_nan = m == 3 || n == 10;
      wrong_nan += fp16_is_nan(cp[size_t(m) * 90 + n]) != expect_nan;
      if (!expect_nan) {
        const uint16_t a = cp[size_t(m) * 90 + n], b = cq[size_t(m) * 90 + n];
        wrong_sign += n == 44 ? (a ^ 0x8000) != b && !(a == 0 && b == 0x8000) && !(a == 0x8000 && b == 0)
                              : a != b;
      }
    }
  CHECK(wrong_nan == 0);
  CHECK(wrong_sign == 0);
  ReferenceOptions ro;
  ro.abs_sums = true;
  const Comparison c = compare_output(compute_reference(p, ro), p.alpha1, p.alpha2, cp.data(), nullptr, nullptr);
  CHECK_MESSAGE(c.pass(), describe_failure(c));
}

namespace {
__global__ void silu_pairs(const float* x, float* nb, float* ieee, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  nb[i] = silu_mul<gpu::fused::v5::RcpDivide>(x[i], 1.0f, 1.0f, 1.0f);
  ieee[i] = silu_mul(x[i], 1.0f, 1.0f, 1.0f);
}
}  // namespace

TEST_CASE("small: the v5 epilogue's branch-free silu*mul against the IEEE division, ends included") {
  if (!have_fused()) return nvfp4::test::skip("the fused kernels need sm_90a (Hopper)");
  std::vector<float> x;
  for (int i = -4000; i <= 4000; ++i) x.push_back(float(i) * 0.025f);  // -100 .. 100
  const float inf = INFINITY;
  const std::vector<float> ends = {inf, -inf, NAN, 1e30f, -1e30f, 88.0f, -88.0f, 89.0f, -89.0f,
                                   -103.0f, 1e-30f, -1e-30f, 0.0f, -0.0f, 3.4e38f, -3.4e38f};
  x.insert(x.end(), ends.begin(), ends.end());
  const int n = int(x.size());
  float *dx, *dnb, *die;
  REQUIRE(cudaMalloc(&dx, n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(&dnb, n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(&die, n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  silu_pairs<<<(n + 255) / 256, 256>>>(dx, dnb, die, n);
  std::vector<float> nb(x.size()), ie(x.size());
  REQUIRE(cudaMemcpy(nb.data(), dnb, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(ie.data(), die, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(dx);
  cudaFree(dnb);
  cudaFree(die);
  for (int i = 0; i < n; ++i) {
    CAPTURE(x[size_t(i)]);
    const float a = nb[size_t(i)], b = ie[size_t(i)], v = x[size_t(i)];
    if (std::isnan(v)) {
      CHECK(std::isnan(a));
    } else if (std::isinf(v) || std::fabs(v) >= 1e29f) {
      // The ends: silu(x) -> x for x -> +inf, -> -0 for x -> -inf (the IEEE form gives NaN at
      // x = -inf: -inf / inf).
      if (v > 0) {
        CHECK(a == v);
      } else {
        CHECK(a == 0.0f);
        CHECK(std::signbit(a));
      }
    } else {
      // Finite: within one ulp of the correctly rounded quotient (usually identical).
      const float ulp = std::fabs(std::nextafter(b, INFINITY) - b);
      CHECK(std::fabs(a - b) <= ulp);
    }
  }
}

TEST_CASE("small: candidates, select, tune key and describe") {
  if (!have_fused()) return nvfp4::test::skip("the fused kernels need sm_90a (Hopper)");
  const Problem p = make_problem(Shape::parse("32x64x128"), "normal", 1);
  auto plan = build_plan("gpu", Combo::parse("fused"), p, PlanOptions{});
  const auto cands = plan->candidates();
  CHECK(cands.size() == 5);
  CHECK_THROWS(plan->select(cands.size()));
  const std::string key = plan->tune_key();
  CHECK(key.find(gpu::device_info().name) != std::string::npos);
  CHECK(key.find("32x64x128") != std::string::npos);
  CHECK(key.find("gpu-fused") != std::string::npos);
  CHECK(plan->describe().find("fused") != std::string::npos);
  CHECK(seconds_per_call(*plan, 3) > 0);
}

TEST_CASE("suite: the default gpu suite with every fused combination") {
  if (!have_fused()) return nvfp4::test::skip("the fused kernels need sm_90a (Hopper)");
  for (const CaseSpec& cs : default_suite("gpu")) check_case(cs, false);
}
