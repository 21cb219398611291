// test_planted_gpu.cpp — the GPU half of the planted-bug suite (label gpu): runs the REAL harness
// binary with the planted variants (NVFP4_PATHS_DIR: tests/planted/paths; the GPU ones in tests/planted/planted_gpu.cu)
// on the gpu backend, on small shapes whose M is not a multiple of 16 (so the last row tile is
// partial), and asserts that each GPU-specific bug FAILs with its diagnosis while the correct
// plain path passes on the same shapes:
//   bug-stale-graph-inputs+graph  FAIL, every output matches the warm-up set's reference (stale
//                                 inputs); the variant alone passes, and --bisect names the pair
//   bug-edge-tiles-unwritten      FAIL, elements unwritten
//   bug-first-call-cached         FAIL, every output matches the warm-up set's reference
// Exits 125 (ctest SKIP) when no CUDA device of compute capability >= 9.0 is present: the gpu
// backend runs nothing there (optimized/gpu/plain.cu).
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "harness_cli.hpp"

namespace {

// Two cases, one per shape, of the normal distribution (whose input sets all differ). With 3
// warm-up and 3 checked calls, the checked calls get input sets 0, 1, 2 and set 3 serves init,
// the warm-up and the graph's capture (harness/check/cases.hpp).
const char* const kCases = "--shape 33x65x160,129x97x144 --dist normal --warmup 3 --runs 3";
const char* const kWarmupSet = "input set 3 (the warm-up's)";

struct Run {
  int rc = -1;
  std::string out;
  std::vector<std::string> trials;  // the JSON report's trial objects
};

Run harness(const std::string& mode, const std::string& combo) {
  const std::string json = harness_cli::temp_dir() + "/report.json";
  const auto r = harness_cli::run("--backend gpu " + mode + " " + combo + " " + kCases + " --json " + json);
  Run run;
  run.rc = r.rc;
  run.out = r.out;
  run.trials = harness_cli::json_trials(harness_cli::read_text(json));
  return run;
}

std::string tail(const std::string& s) { return s.substr(s.size() > 3000 ? s.size() - 3000 : 0); }

// Every trial of a --verify run FAILs with a message containing each of `what`; the run exits 1.
Run expect_every_trial_fails(const std::string& combo, const std::vector<std::string>& what) {
  const Run r = harness("--verify", combo);
  INFO(combo << "\n" << tail(r.out));
  CHECK(r.rc == 1);
  REQUIRE(r.trials.size() == 2);
  for (const auto& t : r.trials) {
    CHECK(harness_cli::has(t, "\"outcome\":\"FAIL\""));
    for (const auto& w : what) CHECK_MESSAGE(harness_cli::has(t, w), "missing: " << w);
  }
  return r;
}

const std::vector<std::string> kStale = {std::string("matches the reference of ") + kWarmupSet,
                                         "stale inputs or a cached result?"};

}  // namespace

TEST_SUITE("planted-gpu") {
TEST_CASE("the correct plain and graph paths pass with the planted modules on the ragged shapes") {
  for (const char* combo : {"plain", "graph"}) {
    const Run r = harness("--verify", combo);
    INFO(combo << "\n" << tail(r.out));
    CHECK(r.rc == 0);
    REQUIRE(r.trials.size() == 2);
    for (const auto& t : r.trials) CHECK(harness_cli::has(t, "\"outcome\":\"PASS\""));
  }
}

TEST_CASE("bug-stale-graph-inputs: eager calls pass, the graph replays the capture's buffers") {
  const Run alone = harness("--verify", "bug-stale-graph-inputs");
  INFO(tail(alone.out));
  CHECK(alone.rc == 0);
  CHECK(alone.trials.size() == 2);
  for (const auto& t : alone.trials) CHECK(harness_cli::has(t, "\"outcome\":\"PASS\""));

  expect_every_trial_fails("bug-stale-graph-inputs+graph", kStale);
}

TEST_CASE("bug-stale-graph-inputs: --bisect names the pair, each alone passes") {
  const Run r = harness("--bisect", "bug-stale-graph-inputs+graph");
  INFO(tail(r.out));
  CHECK(r.rc == 1);
  CHECK(harness_cli::has(r.out, "culprit: bug-stale-graph-inputs+graph ("));
  CHECK(harness_cli::has(r.out, "each alone passes"));
}

TEST_CASE("bug-edge-tiles-unwritten: the last partial row tile stays poisoned") {
  const Run r = expect_every_trial_fails("bug-edge-tiles-unwritten", {" unwritten"});
  // M % 16 == 1 on both shapes: the last row, N elements, is never written (65 and 97).
  double sum = 0;
  for (const auto& t : r.trials) {
    const double n = harness_cli::json_number(t, "unwritten");
    CHECK((n == 65 || n == 97));
    sum += n;
  }
  CHECK(sum == 65 + 97);
}

TEST_CASE("bug-first-call-cached: later calls return the warm-up's output") {
  expect_every_trial_fails("bug-first-call-cached", kStale);
}
}

// ctest SKIP (125) without a usable GPU: none, or older than Hopper.
int main(int argc, char** argv) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("SKIP: no CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "count 0");
    return 125;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major < 9) {
    std::printf("SKIP: the gpu backend needs compute capability >= 9.0 (%s is %d.%d)\n", prop.name,
                prop.major, prop.minor);
    return 125;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
