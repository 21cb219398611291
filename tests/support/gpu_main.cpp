// gpu_main.cpp — the main() of every GPU test executable: exit 125 (ctest SKIP) without a GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdio>

int main(int argc, char** argv) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("SKIP: no CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "count 0");
    return 125;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
