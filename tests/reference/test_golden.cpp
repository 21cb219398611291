// test_golden.cpp — the reference against the golden cases in data/golden/ (data/README.md).
//
// The golden G, U (float64) and C (float16) were computed by tools/make_golden.py with an
// independent decoder (ml_dtypes) and numpy float64, with G and U asserted exact there. Here
// every case directory is loaded with load_case(), compute_reference() runs on it, and G, U and
// C must match BIT FOR BIT (NaN matches NaN; zeros must match in sign, C is compared as bits).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "case_dir.hpp"
#include "formats.hpp"
#include "npy.hpp"
#include "reference.hpp"

using namespace nvfp4;
namespace fs = std::filesystem;

namespace {

std::vector<double> read_f64(const std::string& path, const Shape& s) {
  const NpyArray arr = read_npy(path);
  REQUIRE(arr.type == NpyType::F64);
  REQUIRE(arr.count() == s.c_elems());
  std::vector<double> v(size_t(arr.count()));
  std::memcpy(v.data(), arr.data.data(), v.size() * sizeof(double));  // little-endian host
  return v;
}

bool same_bits(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::memcmp(&x, &y, sizeof x) == 0;
}

std::vector<std::string> golden_dirs() {
  std::vector<std::string> v;
  const fs::path root = fs::path(NVFP4_SOURCE_DIR) / "data" / "golden";
  if (fs::is_directory(root))
    for (const auto& e : fs::directory_iterator(root))
      if (e.is_directory()) v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("the golden cases are present") {
  // tools/make_golden.py writes six; an empty directory must not pass silently.
  CHECK(golden_dirs().size() >= 6);
}

TEST_CASE("the reference reproduces every golden case bit for bit") {
  for (const std::string& dir : golden_dirs()) {
    INFO("golden case " << dir);
    const Problem p = load_case(dir);
    const ReferenceResult r = compute_reference(p);
    const std::vector<uint16_t> c = load_output(dir + "/c.npy", p.shape);
    const std::vector<double> g = read_f64(dir + "/g.npy", p.shape);
    const std::vector<double> u = read_f64(dir + "/u.npy", p.shape);
    int64_t g_diff = 0, u_diff = 0, c_diff = 0, nan = 0;
    for (size_t e = 0; e < c.size(); ++e) {
      g_diff += !same_bits(r.g[e], g[e]);
      u_diff += !same_bits(r.u[e], u[e]);
      const bool both_nan = fp16_is_nan(r.c[e]) && fp16_is_nan(c[e]);
      nan += both_nan;
      c_diff += !(both_nan || r.c[e] == c[e]);
    }
    CHECK(g_diff == 0);
    CHECK(u_diff == 0);
    CHECK(c_diff == 0);
    if (dir.find("nan_scale") != std::string::npos) CHECK(nan > 0);
  }
}
