// cpu_common.hpp — pieces shared by the CPU backend's plans (plain.cpp, fused.cpp): decoding to
// fp32, the fp32 epilogue, a small thread pool loop, and the plan boilerplate around a host
// output buffer.
//
// The CPU backend mirrors the GPU's arithmetic, not the reference's: FP4 and E4M3 decode exactly
// to fp32 (a value e2m1 * e4m3 has at most 6 significant bits, within fp32's range), the GEMMs
// accumulate in fp32 (Eigen, FMA where the ISA has it, summation order of the blocked kernel),
// and the epilogue silu(alpha1*g) * (alpha2*u) runs in fp32 and rounds once to fp16 (RNE).
// Layouts as in problem.hpp: A (L, M, K/2), B (L, N, K/2), scales (L, rows, K/16), C (L, M, N).
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "errors.hpp"
#include "formats.hpp"
#include "plan.hpp"
#include "reference_gemm.hpp"
#include "silu.hpp"

namespace nvfp4 {
namespace cpu {

// Decodes `rows` rows of packed (rows, K/2) E2M1 with (rows, K/16) E4M3 scales into a (rows, K)
// row-major fp32 matrix. A NaN scale gives NaN values (so every dot product it touches is NaN).
inline void decode_rows_f32(const uint8_t* packed, const uint8_t* sf, int64_t rows, int64_t K,
                            float* out) {
  static const struct Tables {
    float e2m1[16];
    float e4m3[256];
    Tables() {
      for (int c = 0; c < 16; ++c) e2m1[c] = float(e2m1_value(uint8_t(c)));
      for (int b = 0; b < 256; ++b) e4m3[b] = float(e4m3_value(uint8_t(b)));
    }
  } t;
  const int64_t kb = K / kBlock;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* p = packed + r * (K / 2);
    const uint8_t* s = sf + r * kb;
    float* o = out + r * K;
    for (int64_t b = 0; b < kb; ++b) {
      const float scale = t.e4m3[s[b]];
      for (int j = 0; j < kBlock / 2; ++j) {
        const uint8_t byte = p[b * (kBlock / 2) + j];
        o[b * kBlock + 2 * j] = t.e2m1[byte & 0x0F] * scale;
        o[b * kBlock + 2 * j + 1] = t.e2m1[byte >> 4] * scale;
      }
    }
  }
}

// The fp32 epilogue, as the GPU kernels compute it: silu_mul (reference/silu.hpp) in fp32 with
// the IEEE division, rounded once to fp16.
inline uint16_t epilogue_f32(float g, float u, float alpha1, float alpha2) {
  return fp16_from_float(silu_mul(g, u, alpha1, alpha2));
}

inline int hardware_threads() { return std::max(1, int(std::thread::hardware_concurrency())); }

// Runs work(i) for i in [0, n) on up to `threads` threads (the caller's included); rethrows the
// first exception after all threads stopped.
template <typename F>
void parallel_for(int64_t n, int threads, F&& work) {
  if (n <= 0) return;
  threads = int(std::max<int64_t>(1, std::min<int64_t>(threads, n)));
  if (threads == 1) {
    for (int64_t i = 0; i < n; ++i) work(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto body = [&] {
    for (;;) {
      const int64_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        work(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(n);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(body);
  body();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

// A plan whose output lives in host memory and whose calls complete inside enqueue().
class HostPlan : public Plan {
 public:
  explicit HostPlan(const Problem& p)
      : problem_(p), c_(size_t(p.shape.c_elems()), 0), kernels_(&detail::gemm_kernels()) {
    problem_.validate();
  }
  // Every call reads problem_ afresh, so new inputs are a copy into it (same vectors, same sizes).
  void set_inputs(const Problem& p, InputSet which) override {
    if (p.shape != problem_.shape) throw InputError("set_inputs: shape " + p.shape.str() + " differs from the plan's " + problem_.shape.str());
    p.validate();
    std::copy(p.a.begin(), p.a.end(), problem_.a.begin());
    std::copy(p.sfa.begin(), p.sfa.end(), problem_.sfa.begin());
    if (which == InputSet::All) {
      std::copy(p.b1.begin(), p.b1.end(), problem_.b1.begin());
      std::copy(p.b2.begin(), p.b2.end(), problem_.b2.begin());
      std::copy(p.sfb1.begin(), p.sfb1.end(), problem_.sfb1.begin());
      std::copy(p.sfb2.begin(), p.sfb2.end(), problem_.sfb2.begin());
      problem_.alpha1 = p.alpha1;
      problem_.alpha2 = p.alpha2;
    }
  }
  void synchronize() override {}
  void poison_output(uint16_t bits) override { std::fill(c_.begin(), c_.end(), bits); }
  void read_output(uint16_t* c) override { std::copy(c_.begin(), c_.end(), c); }

 protected:
  // "cpu-<variant>|<isa>|<hardware threads>|<shape>": what a cached tuning result depends on.
  std::string key(const std::string& variant) const {
    return "cpu-" + variant + "|" + kernels_->isa + "|threads " + std::to_string(hardware_threads()) +
           "|" + problem_.shape.str();
  }
  Problem problem_;
  std::vector<uint16_t> c_;
  const detail::GemmKernels* kernels_;
};

}  // namespace cpu
}  // namespace nvfp4
