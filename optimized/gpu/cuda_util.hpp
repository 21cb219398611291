// cuda_util.hpp — CUDA/cuBLASLt error checks and RAII owners shared by every GPU path.
//
// NVFP4_CUDA_CHECK(call) throws CudaError with the call text, file and line; the _NOEXCEPT
// variant (for destructors) only records nothing and swallows the error, since a destructor
// must not throw and the error will resurface at the next checked call.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace nvfp4::gpu {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ") in " +
                  call + " at " + file + ":" + std::to_string(line));
}
[[noreturn]] inline void throw_cublas(cublasStatus_t st, const char* call, const char* file, int line) {
  throw CudaError(std::string("cuBLAS status ") + std::to_string(int(st)) + " (" +
                  cublasLtGetStatusString(st) + ") in " + call + " at " + file + ":" +
                  std::to_string(line));
}

#define NVFP4_CUDA_CHECK(call)                                                     \
  do {                                                                             \
    const cudaError_t nvfp4_err_ = (call);                                         \
    if (nvfp4_err_ != cudaSuccess)                                                 \
      ::nvfp4::gpu::throw_cuda(nvfp4_err_, #call, __FILE__, __LINE__);             \
  } while (0)
#define NVFP4_CUDA_CHECK_NOEXCEPT(call) ((void)(call))
#define NVFP4_CUBLAS_CHECK(call)                                                   \
  do {                                                                             \
    const cublasStatus_t nvfp4_st_ = (call);                                       \
    if (nvfp4_st_ != CUBLAS_STATUS_SUCCESS)                                        \
      ::nvfp4::gpu::throw_cublas(nvfp4_st_, #call, __FILE__, __LINE__);            \
  } while (0)
// After a kernel launch: launch-configuration errors surface here, asynchronous ones at sync.
#define NVFP4_CHECK_LAUNCH() NVFP4_CUDA_CHECK(cudaGetLastError())

// Owns `count` elements of device memory.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count) NVFP4_CUDA_CHECK(cudaMalloc(&ptr_, count * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr_) NVFP4_CUDA_CHECK_NOEXCEPT(cudaFree(ptr_));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(o.count_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) NVFP4_CUDA_CHECK_NOEXCEPT(cudaFree(ptr_));
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = o.count_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  void upload(const T* host, size_t count, cudaStream_t s = nullptr) {
    if (count > count_) throw std::logic_error("DeviceBuffer::upload past the end");
    NVFP4_CUDA_CHECK(cudaMemcpyAsync(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice, s));
  }
  void download(T* host, size_t count, cudaStream_t s = nullptr) const {
    if (count > count_) throw std::logic_error("DeviceBuffer::download past the end");
    NVFP4_CUDA_CHECK(cudaMemcpyAsync(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost, s));
  }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

class Stream {
 public:
  Stream() { NVFP4_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) NVFP4_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(s_));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void synchronize() const { NVFP4_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { NVFP4_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_) NVFP4_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e_));
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { NVFP4_CUDA_CHECK(cudaEventRecord(e_, s)); }
  // Milliseconds from `start` to this event (both recorded and complete).
  float ms_since(const Event& start) const {
    float ms = 0;
    NVFP4_CUDA_CHECK(cudaEventSynchronize(e_));
    NVFP4_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

// Whether a usable CUDA device is present; `why` gets the reason when not.
inline bool device_available(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    // The runtime reports a missing driver and an old one alike ("driver version is insufficient");
    // the driver's own version (0 when none is installed) tells them apart.
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    if (!why) return false;
    if (driver == 0)
      *why = "no NVIDIA driver found";
    else if (err == cudaErrorInsufficientDriver)
      *why = "the NVIDIA driver supports CUDA " + version(driver) + ", older than the CUDA " + version(runtime) +
             " these paths were built with: update the driver";
    else
      *why = std::string("no usable CUDA device (") + cudaGetErrorString(err) + ")";
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device";
    return false;
  }
  return true;
}

}  // namespace nvfp4::gpu
