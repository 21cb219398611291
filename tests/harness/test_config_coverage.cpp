// test_config_coverage.cpp — every configuration class of the fused kernel that its selection rules
// can offer on the target (132 SMs) has a shape in the GPU suite that offers it, so that stage
// configs verifies it (docs/design.md §3.2). A dense grid of shapes stands for "any shape a user may
// have"; a class found only there means the suite's own (coarse) grid must widen.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "gpu/fused/candidates.hpp"
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
}
