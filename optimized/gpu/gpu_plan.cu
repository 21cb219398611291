// gpu_plan.cu — GpuPlan: stream, output buffer, poisoning, read-back, event timing with L2
// flushing; device facts for tune keys and reports. See gpu_plan.hpp.
#include "gpu_plan.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace nvfp4::gpu {

std::string DeviceInfo::key() const {
  return name + "|cc" + std::to_string(cc_major) + "." + std::to_string(cc_minor) + "|driver" +
         std::to_string(driver_version) + "|runtime" + std::to_string(runtime_version) +
         "|cublasLt" + std::to_string(cublaslt_version);
}

const DeviceInfo& device_info() {
  static std::once_flag once;
  static DeviceInfo info;
  static std::string error;
  std::call_once(once, [] {
    try {
      DeviceInfo d;
      NVFP4_CUDA_CHECK(cudaGetDevice(&d.device));
      cudaDeviceProp prop{};
      NVFP4_CUDA_CHECK(cudaGetDeviceProperties(&prop, d.device));
      d.name = prop.name;
      d.cc_major = prop.major;
      d.cc_minor = prop.minor;
      d.sm_count = prop.multiProcessorCount;
      d.l2_bytes = size_t(prop.l2CacheSize);
      NVFP4_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
      NVFP4_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
      d.cublaslt_version = cublasLtGetVersion();
      info = d;
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw CudaError(error);
  return info;
}

namespace {

// c[i] = bits for i in [0, n): one 16-bit store per element (n is small enough for a
// grid-stride loop; the output is at most a few hundred MB).
__global__ void fill_u16(uint16_t* c, int64_t n, uint16_t bits) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    c[i] = bits;
}

}  // namespace

GpuPlan::GpuPlan(const Shape& shape) : shape_(shape), c_(size_t(shape.c_elems())) {}

GpuPlan::~GpuPlan() = default;

void GpuPlan::synchronize() {
  NVFP4_CUDA_CHECK(cudaStreamSynchronize(stream()));
  // Sticky errors from earlier launches surface at the sync; this also catches launch errors
  // that a caller did not check.
  NVFP4_CUDA_CHECK(cudaGetLastError());
}

void GpuPlan::poison_output(uint16_t bits) {
  const int64_t n = shape_.c_elems();
  const int threads = 256;
  const int64_t blocks64 = (n + threads - 1) / threads;
  const int blocks = int(blocks64 < 4096 ? blocks64 : 4096);
  fill_u16<<<blocks, threads, 0, stream()>>>(reinterpret_cast<uint16_t*>(c_.get()), n, bits);
  NVFP4_CHECK_LAUNCH();
}

void GpuPlan::read_output(uint16_t* c) {
  NVFP4_CUDA_CHECK(cudaMemcpyAsync(c, c_.get(), c_.bytes(), cudaMemcpyDeviceToHost, stream()));
  synchronize();
}

void GpuPlan::flush_l2() {
  if (!flush_.get()) {
    // Twice the L2 size (at least 64 MiB): writing it evicts whatever the last call left in L2.
    size_t bytes = 2 * device_info().l2_bytes;
    if (bytes < (size_t(64) << 20)) bytes = size_t(64) << 20;
    flush_ = DeviceBuffer<unsigned char>(bytes);
  }
  NVFP4_CUDA_CHECK(cudaMemsetAsync(flush_.get(), 0x5A, flush_.bytes(), stream()));
}

std::vector<double> GpuPlan::timed_calls(Plan& outer, int n, const std::function<void(int)>& before) {
  std::vector<std::unique_ptr<Event>> start, stop;
  for (int i = 0; i < n; ++i) {
    start.push_back(std::make_unique<Event>());
    stop.push_back(std::make_unique<Event>());
  }
  for (int i = 0; i < n; ++i) {
    if (before) before(i);
    flush_l2();
    start[size_t(i)]->record(stream());
    outer.enqueue();
    stop[size_t(i)]->record(stream());
  }
  synchronize();
  std::vector<double> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[size_t(i)] = double(stop[size_t(i)]->ms_since(*start[size_t(i)])) * 1e-3;
  return t;
}

double GpuPlan::back_to_back(Plan& outer, int n) {
  if (n < 1) n = 1;
  Event b0, b1;
  outer.enqueue();  // one untimed call, so the first timed one does not start on a flushed L2
  b0.record(stream());
  for (int i = 0; i < n; ++i) outer.enqueue();
  b1.record(stream());
  synchronize();
  return double(b1.ms_since(b0)) * 1e-3 / n;
}

GpuPlan* gpu_base(Plan& plan) { return dynamic_cast<GpuPlan*>(plan.base()); }

}  // namespace nvfp4::gpu
