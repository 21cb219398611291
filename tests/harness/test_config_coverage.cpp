// test_config_coverage.cpp — every configuration class of the fused kernel that its selection rules
// can offer on the target (132 SMs) has a shape in the GPU suite that offers it, so that stage
// configs verifies it (docs/design.md §3.2). A dense grid of shapes stands for "any shape a user may
// have"; a class found only there means the suite's own (coarse) grid must widen.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "gpu/fused/candidates.hpp"
#include "harness_cli.hpp"
#include "suite.hpp"

using namespace nvfp4;

TEST_CASE("config coverage: every fused configuration class on a dense grid has a covering GPU suite case") {
  std::vector<Shape> suite_shapes;
  for (const auto& c : default_suite("gpu")) suite_shapes.push_back(c.shape);
  const auto covered = config_classes(suite_shapes, kConfigSms);
  const auto offered = config_classes(config_grid(true), kConfigSms);
  CHECK(offered.size() >= 20);
  int missing = 0;
  for (const auto& [cls, shape] : offered)
    if (!covered.count(cls)) {
      ++missing;
      MESSAGE("no GPU suite case offers [" << cls << "]; e.g. " << shape.str());
    }
  CHECK(missing == 0);
}

TEST_CASE("config coverage: the classes that stand for code paths of their own are there") {
  std::vector<Shape> suite_shapes;
  for (const auto& c : default_suite("gpu")) suite_shapes.push_back(c.shape);
  const auto covered = config_classes(suite_shapes, kConfigSms);
  auto has = [&](const std::string& part) {
    for (const auto& [cls, shape] : covered)
      if (cls.find(part) != std::string::npos) return true;
    return false;
  };
  CHECK(has("(2-CTA cluster pairs), K stages not divisible by the splits"));
  CHECK(has("(2-CTA cluster pairs), K stages divisible"));
  CHECK(has("stream-K, odd K stages"));
  CHECK(has("stream-K, even K stages"));
  CHECK(has("int-decode"));
  CHECK(has("cvt-decode"));
  // Each class across a partial last tile of rows and of columns and across batches
  // (gpu/fused/candidates.hpp config_facets): the edge masks and batch offsets of every kernel.
  for (const char* cls : {"v5 tile 256x64 split-K 1", "v5 tile 256x64 stream-K, odd K stages",
                          "v5 tile 256x64 stream-K, even K stages", "v5 tile 128x96 split-K 1",
                          "v5 tile 256x64 split-K 2 (2-CTA cluster pairs), K stages divisible",
                          "v5 tile 128x96 split-K 2 (2-CTA cluster pairs), K stages divisible",
                          "v5 tile 128x64 split-K 3, K stages not divisible by the splits",
                          "tile 128x32 cvt-decode", "tile 128x32 int-decode", "tile 128x128 cvt-decode",
                          "tile 128x48, K % 64 != 0"})
    for (const char* facet : {"ragged rows", "ragged columns", "batched"}) {
      INFO(cls << ", " << facet);
      CHECK(covered.count(std::string(cls) + ", " + facet) == 1);
    }
}

TEST_CASE("config coverage: harness list names every configuration class with the suite shape that runs it") {
  const auto r = harness_cli::run("list");
  REQUIRE(r.rc == 0);
  std::vector<Shape> suite_shapes;
  for (const auto& c : default_suite("gpu")) suite_shapes.push_back(c.shape);
  const auto covered = config_classes(suite_shapes, kConfigSms);
  REQUIRE(!covered.empty());
  for (const auto& [cls, shape] : covered) {
    INFO(cls);
    CHECK(r.out.find("    " + cls + "  [" + shape.str() + "]\n") != std::string::npos);
  }
  CHECK(r.out.find("configurations of plain") != std::string::npos);
}

TEST_CASE("config coverage: harness list --shape lists the configurations offered there, one the default") {
  const Shape s{256, 96, 768, 1};
  const auto r = harness_cli::run("list --shape " + s.str());
  REQUIRE(r.rc == 0);
  const auto offered = offered_configs(s, kConfigSms);
  REQUIRE(offered.size() > 1);
  int defaults = 0;
  for (const auto& c : offered) {
    INFO(c.config_class);
    CHECK(r.out.find("    " + c.config_class + (c.is_default ? "  (default)" : "") + "\n") != std::string::npos);
    defaults += c.is_default;
  }
  CHECK(defaults == 1);
  const auto bad = harness_cli::run("list --dist normal");
  CHECK(bad.rc == 2);
  CHECK(bad.out.find("takes --shape") != std::string::npos);
}

TEST_CASE("the fused default on a 132-SM device: the benchmark shapes' choices, the 128 x 96 tiles over several waves, the 128 x 96 pairs where they outnumber the 256-row ones") {
  auto default_of = [](const char* shape) {
    const Shape s = Shape::parse(shape);
    const auto cands = gpu::fused::candidates(s, 132);
    return cands.at(gpu::fused::default_candidate(cands, s, 132)).name(true);
  };
  // GPU MODE's benchmark shapes (docs/fused-kernel.md, "Configurations and the default").
  CHECK(default_of("256x4096x7168") == "v5 tile 256x64 split-K 2 (2-CTA cluster pairs)");
  CHECK(default_of("512x4096x7168") == "v5 tile 256x64 split-K 1");
  CHECK(default_of("256x3072x4096") == "v5 tile 128x96 split-K 2 (2-CTA cluster pairs)");
  CHECK(default_of("512x3072x7168") == "v5 tile 128x96 split-K 1");
  // Several waves where the 128 x 96 tiles' estimate is the lowest (three of GPU MODE's test
  // shapes, where autotune chose them too, RESULTS-GPU run J) ...
  CHECK(default_of("3072x1024x1536") == "v5 tile 128x96 split-K 1");
  CHECK(default_of("7168x384x2304") == "v5 tile 128x96 split-K 1");
  CHECK(default_of("4096x768x512") == "v5 tile 128x96 split-K 1");
  // ... also where K is one weight stage (the 256-row tiles' fixed part weighs there: 34.1 against
  // 39.1 µs in the probe, docs/fused-kernel.md v5n) ...
  CHECK(default_of("7168x1024x256") == "v5 tile 128x96 split-K 1");
  // ... and where the 256-row tiles' is.
  CHECK(default_of("7168x2304x2048") == "v5 tile 256x64 split-K 1");
  CHECK(default_of("4608x384x7168") == "v5 tile 256x64 split-K 1");
  // Where the 128-row tiles win: the 128 x 96 pairs where one wave of them has more CTAs than the
  // 256-row pairs' (the probe, docs/fused-kernel.md v5n: 45.7 against 56.3 µs at 512x768x7168,
  // 54.5 against 62.2 at 1024x512x7168, 31.3 against 34.7 at 512x768x4096), else the 256-row pairs
  // (1536x512x7168: 144 CTAs of 128 x 96 pairs would not fit; 256x96x768: as many CTAs).
  CHECK(default_of("512x768x7168") == "v5 tile 128x96 split-K 2 (2-CTA cluster pairs)");
  CHECK(default_of("1024x512x7168") == "v5 tile 128x96 split-K 2 (2-CTA cluster pairs)");
  CHECK(default_of("512x768x4096") == "v5 tile 128x96 split-K 2 (2-CTA cluster pairs)");
  CHECK(default_of("1536x512x7168") == "v5 tile 256x64 split-K 2 (2-CTA cluster pairs)");
  CHECK(default_of("256x96x768") == "v5 tile 256x64 split-K 2 (2-CTA cluster pairs)");
  // ... and where 96-wide tiles would be a third padding (N = 64), whatever their count.
  CHECK(default_of("512x64x7168") == "v5 tile 256x64 split-K 2 (2-CTA cluster pairs)");
}
