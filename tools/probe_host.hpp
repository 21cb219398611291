// probe_host.hpp — host-side pieces shared by the main-loop probes (tools/ss_probe.cu,
// tools/xs_probe.cu; CK also tools/fused_probe.cu): the CUDA error check, the
// FP4/FP8 values of the host check, the per-CTA stamps turned into a main-loop rate, and the check
// of sampled G and U against a double-precision sum. Tools, not part of the product.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

namespace probe {

// E4M3 (FN) byte and E2M1 code as doubles, written here for the probes' own check.
inline double e4m3(uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -v : v;
}
inline double e2m1(int c) {
  static const double t[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (c & 8) ? -t[c & 7] : t[c & 7];
}

template <class T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-CTA stamps (global-timer start, end, clock64 start, end) of one launch, appended as µs per
// 64-K stage and GHz.
inline void add_stage_rates(const std::vector<unsigned long long>& st, int ctas, int stages,
                            std::vector<double>& per_stage, std::vector<double>& ghz) {
  for (int b = 0; b < ctas; ++b) {
    const double ns = double(st[4 * b + 1] - st[4 * b]);
    per_stage.push_back(ns / 1000.0 / stages);
    ghz.push_back(double(st[4 * b + 3] - st[4 * b + 2]) / ns);
  }
}

// The worst relative error (against max(1, |ref|)) of 4096 sampled G (which = 0) and U (1) values
// got(m, n, which) against the double-precision dual GEMM of act (M x K, logical order) with the
// packed rows [B1; B2] (2N x K/2, element 2j in the low nibble) and their scales (2N x K/16); NaN
// counts as wrong.
template <class Got>
double sampled_gu_error(const std::vector<float>& act, const std::vector<uint8_t>& pack,
                        const std::vector<uint8_t>& scale, int M, int N, int K, Got got) {
  double worst = 0;
  std::mt19937 pick(7);
  for (int s = 0; s < 4096; ++s) {
    const int m = int(pick() % M), n = int(pick() % N), which = int(pick() % 2);
    const int row = which * N + n;
    double ref = 0;
    for (int k = 0; k < K; ++k) {
      const uint8_t byte = pack[size_t(row) * (K / 2) + k / 2];
      ref += double(act[size_t(m) * K + k]) * e2m1((k & 1) ? byte >> 4 : byte & 15) *
             e4m3(scale[size_t(row) * (K / 16) + k / 16]);
    }
    const double g = got(m, n, which);
    worst = std::isnan(g) ? 1e30
                          : std::max(worst, std::fabs(g - ref) / std::max(1.0, std::fabs(ref)));
  }
  return worst;
}

// Random operands of an M x N x K probe shape, drawn in this order from one generator:
// activations (exact E2M1 x E4M3 products, as phase 0 would produce; logical K order), packed rows
// [B1; B2] (2N x K/2) and their scale bytes (2N x K/16, E4M3 0x30..0x3F).
struct HostProblem {
  int M, N, K;
  std::vector<float> act;
  std::vector<uint8_t> pack, scale;
  HostProblem(int M_, int N_, int K_) : M(M_), N(N_), K(K_), act(size_t(M_) * K_) {
    std::mt19937 gen(12345);
    for (auto& x : act) x = float(e2m1(gen() % 16) * e4m3(uint8_t(0x30 + gen() % 16)));
    pack.resize(size_t(2) * N * K / 2);
    scale.resize(size_t(2) * N * K / 16);
    for (auto& x : pack) x = uint8_t(gen());
    for (auto& x : scale) x = uint8_t(0x30 + gen() % 16);
  }
};

// The device side of a HostProblem: the activations in the kernel's K order (act_h), the packed
// rows and scales, C (M x N), the G/U debug buffer (M x 2N floats), per-CTA stamps, a 256 MB
// buffer whose memset leaves the L2 cold and dirty before each launch, and two events.
struct DeviceProblem {
  __half* act = nullptr;
  uint8_t *pack = nullptr, *scale = nullptr;
  __half* c = nullptr;
  float* dbg = nullptr;
  unsigned long long* stamps = nullptr;
  void* flush = nullptr;
  static constexpr size_t kFlush = size_t(256) << 20;
  cudaEvent_t e0, e1;
  DeviceProblem(const HostProblem& h, const std::vector<__half>& act_h, int ctas) {
    CK(cudaMalloc(&act, act_h.size() * 2));
    CK(cudaMalloc(&pack, h.pack.size()));
    CK(cudaMalloc(&scale, h.scale.size()));
    CK(cudaMalloc(&c, size_t(h.M) * h.N * 2));
    CK(cudaMalloc(&dbg, size_t(h.M) * 2 * h.N * 4));
    CK(cudaMalloc(&stamps, size_t(ctas) * 4 * 8));
    CK(cudaMalloc(&flush, kFlush));
    CK(cudaMemcpy(act, act_h.data(), act_h.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(pack, h.pack.data(), h.pack.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(scale, h.scale.data(), h.scale.size(), cudaMemcpyHostToDevice));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
  }
  ~DeviceProblem() {
    cudaFree(act);
    cudaFree(pack);
    cudaFree(scale);
    cudaFree(c);
    cudaFree(dbg);
    cudaFree(stamps);
    cudaFree(flush);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;
};

// Launches a main-loop probe kernel 15 times (`launch` enqueues one), each after the flush, and
// prints the median kernel time (CUDA events) and, from the per-CTA stamps, the main loop's median
// µs per 64-K stage, SM clock and share of the tensor rate (`tensor_clocks` per stage). With
// `check`, the debug buffer is cleared to NaN before each launch and 4096 sampled G and U values
// (element dbg_index(m, n, which) of it) are compared with a double-precision sum.
template <class Launch, class Index>
void time_variant(const char* name, const HostProblem& hp, const DeviceProblem& dp, int ctas,
                  double tensor_clocks, bool check, Launch launch, Index dbg_index) {
  const int M = hp.M, N = hp.N, K = hp.K;
  std::vector<float> us;
  std::vector<double> per_stage, clk;
  for (int r = 0; r < 15; ++r) {
    CK(cudaMemsetAsync(dp.flush, r, dp.kFlush));
    if (check) CK(cudaMemsetAsync(dp.dbg, 0xFF, size_t(M) * 2 * N * 4));
    CK(cudaEventRecord(dp.e0));
    launch();
    CK(cudaEventRecord(dp.e1));
    CK(cudaEventSynchronize(dp.e1));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, dp.e0, dp.e1));
    us.push_back(ms * 1000.0f);
    std::vector<unsigned long long> st(size_t(ctas) * 4);
    CK(cudaMemcpy(st.data(), dp.stamps, st.size() * 8, cudaMemcpyDeviceToHost));
    add_stage_rates(st, ctas, K / 64, per_stage, clk);
  }
  const double ps = median(per_stage), ghz = median(clk);
  const double ideal = tensor_clocks / ghz / 1000.0;  // µs per stage at the tensor rate
  std::printf("  %-9s %7.1f us   main loop %.4f us/stage at %.3f GHz = %.1f%% of the tensor rate",
              name, median(us), ps, ghz, 100.0 * ideal / ps);
  if (check) {
    std::vector<float> dbg(size_t(M) * 2 * N);
    CK(cudaMemcpy(dbg.data(), dp.dbg, dbg.size() * 4, cudaMemcpyDeviceToHost));
    const double worst =
        sampled_gu_error(hp.act, hp.pack, hp.scale, M, N, K,
                         [&](int m, int n, int which) { return double(dbg[dbg_index(m, n, which)]); });
    std::printf("   check: max rel err %.3g over 4096 G/U samples %s", worst,
                worst < 1e-5 ? "OK" : "WRONG");
  }
  std::printf("\n");
}

}  // namespace probe
