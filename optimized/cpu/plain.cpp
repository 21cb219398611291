// plain.cpp — the CPU backend ("cpu") and its plain path: the GPU plain path's three steps on
// the host, so the whole harness (child processes, lattice, bisect, reports) runs without a GPU.
//
//   1. decode A, B1, B2 to fp32 (exact; cpu_common.hpp)
//   2. G = A * B1^T and U = A * B2^T, fp32-accumulated GEMMs (Eigen through reference_gemm.hpp,
//      the best ISA this CPU runs), kept in full as (L, M, N) fp32 so read_intermediates() works
//   3. the fp32 epilogue C = fp16(silu(alpha1*G) * (alpha2*U))
// Everything happens inside enqueue() (synchronize() has nothing to wait for). The GEMMs are cut
// into column chunks of B1 and B2 shared by the worker threads; the epilogue is split by rows.
// Candidates (for the autotune optimization): the number of worker threads.
#include <memory>
#include <string>
#include <vector>

#include "cpu_common.hpp"
#include "autotune.hpp"
#include "registry.hpp"

namespace nvfp4 {
namespace cpu {
namespace {

constexpr int64_t kChunkN = 128;  // rows of B per GEMM work item

class PlainPlan : public HostPlan {
 public:
  explicit PlainPlan(const Problem& p) : HostPlan(p) {
    for (int t = 1; t < hardware_threads(); t *= 2) thread_options_.push_back(t);
    thread_options_.push_back(hardware_threads());
    threads_ = thread_options_.back();
    const Shape& s = problem_.shape;
    g_.assign(size_t(s.c_elems()), 0.0f);
    u_.assign(size_t(s.c_elems()), 0.0f);
    a_.assign(size_t(s.M * s.K), 0.0f);
  }

  std::string describe() const override {
    return std::string("cpu plain: decode to fp32, two fp32 GEMMs (Eigen, ") + kernels_->isa +
           "), fp32 silu*mul epilogue, " + std::to_string(threads_) + " thread(s)";
  }

  void enqueue() override {
    const Shape& s = problem_.shape;
    const int64_t M = s.M, N = s.N, K = s.K, KB = K / kBlock;
    const int64_t chunks = (N + kChunkN - 1) / kChunkN;
    for (int64_t l = 0; l < s.L; ++l) {
      decode_rows_f32(problem_.a.data() + l * M * (K / 2), problem_.sfa.data() + l * M * KB, M, K,
                      a_.data());
      // Items: (which GEMM, column chunk). Each decodes its rows of B and writes its columns.
      parallel_for(2 * chunks, threads_, [&](int64_t item) {
        const bool second = item >= chunks;
        const int64_t n0 = (item % chunks) * kChunkN, nc = std::min(kChunkN, N - n0);
        const auto& b = second ? problem_.b2 : problem_.b1;
        const auto& sfb = second ? problem_.sfb2 : problem_.sfb1;
        std::vector<float> bdec(size_t(nc * K));
        decode_rows_f32(b.data() + (l * N + n0) * (K / 2), sfb.data() + (l * N + n0) * KB, nc, K,
                        bdec.data());
        float* out = (second ? u_ : g_).data() + l * M * N + n0;
        kernels_->f32(a_.data(), bdec.data(), out, M, nc, K, N);
      });
    }
    const int64_t rows = s.L * M;
    parallel_for(std::min<int64_t>(rows, 4 * threads_), threads_, [&](int64_t part) {
      const int64_t parts = std::min<int64_t>(rows, 4 * threads_);
      const int64_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
      for (int64_t e = r0 * N; e < r1 * N; ++e)
        c_[size_t(e)] = epilogue_f32(g_[size_t(e)], u_[size_t(e)], problem_.alpha1, problem_.alpha2);
    });
  }

  bool read_intermediates(std::vector<float>& g, std::vector<float>& u) override {
    g = g_;
    u = u_;
    return true;
  }

  std::vector<std::string> candidates() const override {
    std::vector<std::string> v;
    for (int t : thread_options_) v.push_back("threads=" + std::to_string(t));
    return v;
  }
  void select(size_t index) override { threads_ = thread_options_.at(index); }
  std::string tune_key() const override { return key("plain"); }

 private:
  std::vector<int> thread_options_;
  int threads_ = 1;
  std::vector<float> g_, u_, a_;
};

const bool registered = register_backend(Backend{
    "cpu",
    "host CPU: fp32 decode, fp32 GEMMs (Eigen), fp32 epilogue; mirrors the GPU arithmetic",
    [] { return Support::yes(); },
    [](const Shape&) { return Support::yes(); },
    [](const Problem& p, const PlanOptions&) -> std::unique_ptr<Plan> {
      return std::make_unique<PlainPlan>(p);
    },
    nullptr,
    nullptr,
});
const bool registered_autotune = register_optimization(autotune_for("cpu"));

}  // namespace
}  // namespace cpu
}  // namespace nvfp4
