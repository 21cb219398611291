// gpu_plan.hpp — the base of every GPU plan (plain, fused, the GEMM yardstick) and the hooks the
// graph wrapper and bench mode use to reach it.
//
// A GpuPlan owns one CUDA stream and the fp16 output C, (L, M, N) row-major. Everything a call
// needs is allocated and prepared in the constructor (stage `init`); enqueue() then only issues
// kernels / library calls on stream(), never allocates, never synchronizes and never queries a
// heuristic, so that the graph wrapper can capture it (cudaStreamBeginCapture on stream()).
//
// Derived plans implement enqueue(), describe() and set_inputs() (writing into the buffers they
// made at init, a DeviceProblem for the six operands; optionally candidates()/select()/tune_key()
// for autotune and read_intermediates()). They write C through output().
//
// Timing (Plan::timed_calls, used by autotune and the bench through measure_calls): one pair of
// CUDA events per call on stream(), around the outer plan's enqueue(), and a write of more than
// the L2 size before each (outside the timed region), so every timed call starts from cold caches.
// A batch is issued without host synchronization between its calls (so a call's launch overlaps
// the flush before it, not the timed region), then synchronized once.
#pragma once
#include <cuda_fp16.h>

#include <functional>
#include <memory>
#include <string>

#include "cuda_util.hpp"
#include "plan.hpp"

namespace nvfp4::gpu {

// Facts about the current device that keys and reports need (queried once per process).
struct DeviceInfo {
  int device = 0;
  std::string name;        // e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t l2_bytes = 0;
  int driver_version = 0;   // cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;  // cudaRuntimeGetVersion
  size_t cublaslt_version = 0;  // cublasLtGetVersion
  // "NVIDIA H100 80GB HBM3|cc9.0|driver13000|cublasLt130100": the device-and-library part of a tune key.
  std::string key() const;
};
// Queries the current device (cached after the first call; throws CudaError without a device).
const DeviceInfo& device_info();

class GpuPlan : public Plan {
 public:
  // Creates the stream and the output buffer for `shape` (output content undefined until a call).
  explicit GpuPlan(const Shape& shape);
  ~GpuPlan() override;

  cudaStream_t stream() const { return stream_.get(); }
  const Shape& shape() const { return shape_; }
  // The output C, L*M*N fp16 values, (L, M, N) row-major.
  __half* output() const { return c_.get(); }

  // Waits for the stream; throws CudaError on an asynchronous device error.
  void synchronize() override;
  // Fills C with `bits` (a tiny kernel on stream(); fp16 patterns are not byte-uniform).
  void poison_output(uint16_t bits) override;
  // Synchronizes and copies C to the host.
  void read_output(uint16_t* c) override;
  // CUDA-event times of `n` calls of outer.enqueue(), L2 flushed before each (see header).
  std::vector<double> timed_calls(Plan& outer, int n, const std::function<void(int)>& before) override;
  // One event pair around `n` back-to-back calls of outer.enqueue() after one untimed call.
  double back_to_back(Plan& outer, int n) override;
  // Enqueues a write of more than the L2 size on stream() (allocates its scratch on first use,
  // so never call it inside a capture).
  void flush_l2();

 protected:
  Shape shape_;

 private:
  Stream stream_;
  DeviceBuffer<__half> c_;
  DeviceBuffer<unsigned char> flush_;  // lazily allocated by flush_l2()
};

// The GpuPlan at the bottom of a (possibly wrapped) plan, or nullptr when it is not a GPU plan.
GpuPlan* gpu_base(Plan& plan);

// Wraps `inner` (whose base() must be a GpuPlan) in the graph optimization: capture() records
// one call into a CUDA graph, enqueue() then replays it. Defined in graph.cu.
std::unique_ptr<Plan> make_graph_plan(std::unique_ptr<Plan> inner);

// The yardstick: the cuBLASLt bf16 GEMM alone over operands decoded ahead of time (A and [B1;B2]
// both decoded in init), fp32 out, no epilogue. Its output C is never written; read_intermediates()
// gives G and U. candidates()/select() walk the same algorithm list as plain. Defined in plain.cu.
std::unique_ptr<GpuPlan> make_gemm_yardstick(const Problem& problem);

// One part of the plain path alone, for the bench's time breakdown: the per-call A decode, or the
// silu*mul epilogue on a D computed at init. Their outputs are not the path's. Defined in plain.cu.
enum class PlainPart { DecodeA, Epilogue };
std::unique_ptr<GpuPlan> make_plain_part(const Problem& problem, PlainPart part);

// The bf16 peak yardstick: times a rows x cols x K bf16 cuBLASLt GEMM (fp32 accumulation, bf16
// out, best of the first few heuristic algorithms, median of `reps` event-timed calls) on
// non-zero data and returns its rate in FLOP/s (2*rows*cols*K per call). Defined in plain.cu.
double measure_bf16_peak_flops(int64_t rows, int64_t cols, int64_t K, int reps);

}  // namespace nvfp4::gpu
