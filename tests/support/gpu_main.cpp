// gpu_main.cpp — the main() of every GPU test executable: exit 125 (ctest SKIP) without a GPU.
// Under ctest with a resource spec file (the gpu tests ask for RESOURCE_GROUPS gpus:1), the test runs
// on the GPU ctest allotted it: CUDA_VISIBLE_DEVICES is set from CTEST_RESOURCE_GROUP_* before any
// CUDA call (harness/pool.hpp reads the same variables), so `ctest -L gpu -j N` spreads the tests
// over the machine's GPUs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "errors.hpp"
#include "pool.hpp"

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
  return ctx.run();
}
