// gpu_main.cpp — the main() of every GPU test executable: exit 125 (ctest SKIP) without a GPU, or
// when a test case could not run here (gpu_skip.hpp) and none failed.
// Under ctest with a resource spec file (the gpu tests ask for RESOURCE_GROUPS gpus:1), the test runs
// on the GPU ctest allotted it: CUDA_VISIBLE_DEVICES is set from CTEST_RESOURCE_GROUP_* before any
// CUDA call (harness/trial/pool.hpp reads the same variables), so `ctest -L gpu -j N` spreads the tests
// over the machine's GPUs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "errors.hpp"
#include "gpu_skip.hpp"
#include "pool.hpp"
#include "test_reference_cache.hpp"

namespace {
bool g_skipped = false;
}  // namespace

void nvfp4::test::skip(const std::string& why) {
  g_skipped = true;
  std::printf("SKIP: %s\n", why.c_str());
}

int main(int argc, char** argv) {
  try {
    const auto ids = nvfp4::gpus_from_ctest([](const std::string& k) { return std::getenv(k.c_str()); });
    if (!ids.empty()) setenv("CUDA_VISIBLE_DEVICES", ids.front().c_str(), 1);
  } catch (const nvfp4::InputError& e) {
    std::fprintf(stderr, "bad ctest resource allocation: %s\n", e.what());
    return 2;
  }
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("SKIP: no CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "count 0");
    return 125;
  }
  doctest::Context ctx(argc, argv);
  const int rc = ctx.run();
  // A test case that could not run here makes the executable a SKIP, never a PASS.
  return rc == 0 && g_skipped ? 125 : rc;
}
