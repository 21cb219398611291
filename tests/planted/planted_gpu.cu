// planted_gpu.cu — deliberately broken GPU paths for the bug classes only a GPU path has, built
// ONLY into the test's gpu module in tests/planted/paths (tests/planted/CMakeLists.txt, CUDA builds), never
// into the product harness. test_planted_gpu.cpp asserts that the harness fails each of them.
//
// Each bug registers as a Variant optimization of the gpu backend named after it (the CLI token:
// `NVFP4_PATHS_DIR=build/tests/planted/paths harness --backend gpu --verify bug-stale-graph-inputs+graph`). All of them share one
// plan that computes like the gpu plain path's decode route (optimized/gpu/plain.cu): B1 and B2
// decoded once into Bcat = [B1; B2] bf16, and per call A decoded to bf16, one cuBLASLt GEMM
// D = A · Bcat^T in fp32 and the silu·mul kernel, from the same decode, GEMM and epilogue
// functions plain uses. Exactly one thing is broken:
//   bug-stale-graph-inputs    set_inputs() puts the new activations into NEWLY allocated buffers
//                             and points the plan at them (the old ones stay allocated). Eager
//                             calls read the new pointers and are right; a CUDA graph captured
//                             earlier (the graph wrapper) keeps replaying the old buffers, which
//                             hold the inputs of the capture (the warm-up's set).
//   bug-edge-tiles-unwritten  the epilogue covers only whole 16-row tiles of each batch: when
//                             M % 16 != 0 the last M % 16 rows are never written.
//   bug-first-call-cached     the first call's output is copied into a device cache, and every
//                             later call copies the cache into C instead of computing.
#include <cuda_bf16.h>

#include <memory>
#include <string>
#include <vector>

#include "gpu/decode.cuh"
#include "gpu/device_problem.hpp"
#include "gpu/epilogue.cuh"
#include "gpu/gpu_plan.hpp"
#include "gpu/lt_gemm.hpp"
#include "registry.hpp"

namespace nvfp4 {
namespace planted {
namespace {

using gpu::DeviceBuffer;

enum class GpuBug { StaleGraphInputs, EdgeTilesUnwritten, FirstCallCached };

struct GpuBugInfo {
  GpuBug bug;
  const char* name;
  const char* summary;
};

const GpuBugInfo kGpuBugs[] = {
    {GpuBug::StaleGraphInputs, "bug-stale-graph-inputs",
     "planted: set_inputs moves the activations to new buffers (a captured graph reads the old ones)"},
    {GpuBug::EdgeTilesUnwritten, "bug-edge-tiles-unwritten",
     "planted: the epilogue skips the last partial 16-row tile (M % 16 rows unwritten)"},
    {GpuBug::FirstCallCached, "bug-first-call-cached",
     "planted: the first output is cached on the device and returned by every later call"},
};

constexpr int64_t kRowTile = 16;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

class PlantedGpuPlan final : public gpu::GpuPlan {
 public:
  PlantedGpuPlan(const Problem& p, GpuBug bug, std::string name)
      : GpuPlan(p.shape), bug_(bug), name_(std::move(name)), in_(p.shape) {
    p.validate();
    const Shape& s = shape_;
    in_.upload(p, InputSet::All, stream());
    ldd_ = round_up(2 * s.N, 4);
    d_ = DeviceBuffer<float>(size_t(s.L * s.M * ldd_));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(d_.get(), 0xFF, d_.bytes(), stream()));
    a_bf16_ = DeviceBuffer<__nv_bfloat16>(size_t(s.L * s.M * s.K));
    b_bf16_ = DeviceBuffer<__nv_bfloat16>(size_t(s.L * 2 * s.N * s.K));
    gpu::LtGemmShape g;
    g.rows = s.M;
    g.cols = 2 * s.N;
    g.K = s.K;
    g.batch = s.L;
    g.ldd = ldd_;
    g.x_stride = s.M * s.K;
    g.w_stride = 2 * s.N * s.K;
    g.d_stride = s.M * ldd_;
    gemm_ = std::make_unique<gpu::LtGemm>(g, gpu::LtGemm::Input::BF16, CUDA_R_32F, 1);
    if (bug_ == GpuBug::FirstCallCached) cache_ = DeviceBuffer<__half>(size_t(s.c_elems()));
    decode_weights();
    synchronize();
  }

  std::string describe() const override {
    return "PLANTED BUG " + name_ + " (gpu plain decode path otherwise)";
  }

  void set_inputs(const Problem& p, InputSet which) override {
    if (bug_ == GpuBug::StaleGraphInputs) {
      // The bug: fresh buffers for the activations instead of writing into the old ones. The old
      // ones are kept (a graph may still read them), as a leaking engine would keep them.
      retired_.push_back(std::move(in_.a));
      retired_.push_back(std::move(in_.sfa));
      in_.a = DeviceBuffer<uint8_t>(size_t(shape_.a_bytes()));
      in_.sfa = DeviceBuffer<uint8_t>(size_t(shape_.sfa_bytes()));
    }
    in_.upload(p, which, stream());
    if (which == InputSet::All) decode_weights();
    synchronize();
  }

  void enqueue() override {
    const Shape& s = shape_;
    const size_t c_bytes = size_t(s.c_elems()) * sizeof(__half);
    if (bug_ == GpuBug::FirstCallCached && cached_) {
      NVFP4_CUDA_CHECK(
          cudaMemcpyAsync(output(), cache_.get(), c_bytes, cudaMemcpyDeviceToDevice, stream()));
      return;
    }
    gpu::decode_fp4_to_bf16(in_.a.get(), in_.sfa.get(), a_bf16_.get(), s.L, s.M, s.K, s.M * s.K,
                            stream());
    gemm_->enqueue(a_bf16_.get(), b_bf16_.get(), d_.get(), stream());
    if (bug_ == GpuBug::EdgeTilesUnwritten) {
      // The bug: only whole tiles of 16 rows, batch by batch.
      const int64_t rows = s.M - s.M % kRowTile;
      if (rows > 0)
        for (int64_t l = 0; l < s.L; ++l)
          gpu::silu_mul_to_fp16(d_.get() + l * s.M * ldd_, ldd_, output() + l * s.M * s.N, rows,
                                s.N, in_.alpha1, in_.alpha2, stream());
    } else {
      gpu::silu_mul_to_fp16(d_.get(), ldd_, output(), s.L * s.M, s.N, in_.alpha1, in_.alpha2,
                            stream());
    }
    if (bug_ == GpuBug::FirstCallCached) {
      NVFP4_CUDA_CHECK(
          cudaMemcpyAsync(cache_.get(), output(), c_bytes, cudaMemcpyDeviceToDevice, stream()));
      cached_ = true;
    }
  }

 private:
  // Bcat = [B1; B2] in bf16 from the weights in in_ (at init and after InputSet::All).
  void decode_weights() {
    const Shape& s = shape_;
    const int64_t bstride = 2 * s.N * s.K;
    gpu::decode_fp4_to_bf16(in_.b1.get(), in_.sfb1.get(), b_bf16_.get(), s.L, s.N, s.K, bstride,
                            stream());
    gpu::decode_fp4_to_bf16(in_.b2.get(), in_.sfb2.get(), b_bf16_.get() + s.N * s.K, s.L, s.N,
                            s.K, bstride, stream());
  }

  GpuBug bug_;
  std::string name_;
  gpu::DeviceProblem in_;
  int64_t ldd_ = 0;
  DeviceBuffer<float> d_;  // (L, M, ldd): G | U | padding
  DeviceBuffer<__nv_bfloat16> a_bf16_, b_bf16_;
  std::unique_ptr<gpu::LtGemm> gemm_;
  std::vector<DeviceBuffer<uint8_t>> retired_;  // bug-stale-graph-inputs: the abandoned buffers
  DeviceBuffer<__half> cache_;                  // bug-first-call-cached: the first output
  bool cached_ = false;
};

bool register_all() {
  for (const GpuBugInfo& info : kGpuBugs) {
    const GpuBug bug = info.bug;
    const std::string name = info.name;
    register_optimization(Optimization{
        OptimizationManifest{name, info.summary, OptKind::Variant, 0, {}}, "gpu",
        [bug, name](const Problem& p, const PlanOptions&) -> std::unique_ptr<Plan> {
          return std::make_unique<PlantedGpuPlan>(p, bug, name);
        },
        nullptr,
        // The plain path's shape limits (looked up at call time: registration order between
        // files is unspecified).
        [](const Shape& s) {
          const Backend* be = Registry::instance().backend("gpu");
          return be && be->supports ? be->supports(s) : Support::yes();
        }});
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace planted
}  // namespace nvfp4
