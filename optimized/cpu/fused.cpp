// fused.cpp — the "fused" optimization of the CPU backend: one pass over blocks of rows of A.
//
// Per call and batch: decode B1 and B2 into one stacked (2N, K) fp32 matrix [B1; B2]; then, for
// each block of R rows of A (in parallel): decode those rows, run ONE fp32 GEMM of the block with
// [B1; B2]^T giving an (R, 2N) tile = [G rows | U rows], and apply the fp32 epilogue to the tile
// at once. Full G and U are never materialized (read_intermediates() returns false), as in the
// GPU fused kernel. R is the tunable: candidates() offers several block heights for autotune.
// Same arithmetic as plain (exact decode, fp32 GEMM, fp32 epilogue); only blocking and summation
// order differ.
#include <memory>
#include <string>
#include <vector>

#include "cpu_common.hpp"
#include "registry.hpp"

namespace nvfp4 {
namespace cpu {
namespace {

class FusedPlan : public HostPlan {
 public:
  explicit FusedPlan(const Problem& p) : HostPlan(p) {
    const Shape& s = problem_.shape;
    // Block heights: the fixed menu, clipped to M (heights >= M are all "one block").
    for (int64_t r : {8, 32, 64, 128, 256}) {
      const int64_t h = std::min<int64_t>(r, s.M);
      if (std::find(rows_options_.begin(), rows_options_.end(), h) == rows_options_.end())
        rows_options_.push_back(h);
    }
    // Default: the largest height that still gives every thread a block of its own.
    rows_ = rows_options_.front();
    for (int64_t h : rows_options_)
      if ((s.M + h - 1) / h >= hardware_threads()) rows_ = h;
    b_.assign(size_t(2 * s.N * s.K), 0.0f);
  }

  std::string describe() const override {
    return std::string("cpu fused: per block of ") + std::to_string(rows_) +
           " rows of A, one fp32 GEMM with [B1;B2] (Eigen, " + kernels_->isa +
           ") and the fp32 epilogue on the tile";
  }

  void enqueue() override {
    const Shape& s = problem_.shape;
    const int64_t M = s.M, N = s.N, K = s.K, KB = K / kBlock;
    const int threads = hardware_threads();
    const int64_t blocks = (M + rows_ - 1) / rows_;
    for (int64_t l = 0; l < s.L; ++l) {
      // Decode [B1; B2] for this batch, split into row ranges over the threads.
      const int64_t parts = std::min<int64_t>(2 * N, 4 * threads);
      parallel_for(parts, threads, [&](int64_t part) {
        const int64_t r0 = 2 * N * part / parts, r1 = 2 * N * (part + 1) / parts;
        for (int64_t r = r0; r < r1; ++r) {
          const bool second = r >= N;
          const int64_t n = second ? r - N : r;
          const auto& b = second ? problem_.b2 : problem_.b1;
          const auto& sfb = second ? problem_.sfb2 : problem_.sfb1;
          decode_rows_f32(b.data() + (l * N + n) * (K / 2), sfb.data() + (l * N + n) * KB, 1, K,
                          b_.data() + r * K);
        }
      });
      parallel_for(blocks, threads, [&](int64_t blk) {
        const int64_t m0 = blk * rows_, mr = std::min(rows_, M - m0);
        std::vector<float> a(size_t(mr * K)), tile(size_t(mr * 2 * N));
        decode_rows_f32(problem_.a.data() + (l * M + m0) * (K / 2),
                        problem_.sfa.data() + (l * M + m0) * KB, mr, K, a.data());
        kernels_->f32(a.data(), b_.data(), tile.data(), mr, 2 * N, K, 2 * N);
        for (int64_t i = 0; i < mr; ++i) {
          const float* g = tile.data() + i * 2 * N;
          const float* u = g + N;
          uint16_t* c = c_.data() + (l * M + m0 + i) * N;
          for (int64_t n = 0; n < N; ++n)
            c[n] = epilogue_f32(g[n], u[n], problem_.alpha1, problem_.alpha2);
        }
      });
    }
  }

  std::vector<std::string> candidates() const override {
    std::vector<std::string> v;
    for (int64_t h : rows_options_) v.push_back("rows=" + std::to_string(h));
    return v;
  }
  void select(size_t index) override { rows_ = rows_options_.at(index); }
  std::string tune_key() const override { return key("fused"); }

 private:
  std::vector<int64_t> rows_options_;
  int64_t rows_ = 64;
  std::vector<float> b_;  // [B1; B2] decoded, (2N, K), rewritten by every call
};

const bool registered = register_optimization(Optimization{
    OptimizationManifest{"fused",
                         "single pass over row blocks of A: both GEMMs and the epilogue per block, no full G/U",
                         OptKind::Variant, 0, {}},
    "cpu",
    [](const Problem& p, const PlanOptions&) -> std::unique_ptr<Plan> {
      return std::make_unique<FusedPlan>(p);
    },
    nullptr,
    nullptr,
});

}  // namespace
}  // namespace cpu
}  // namespace nvfp4
