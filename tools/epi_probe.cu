// epi_probe.cu — the measurement behind docs/fused-kernel.md "Where the time goes now" (the 256-row
// epilogue): the v5 epilogue's silu·mul and staging alone, timed in SM clocks; a tool, not part of
// the product.
//
// Each of the SMs' CTAs has the 256-row tiles' thread layout (a producer warpgroup that leaves at
// once, two consumer warpgroups at 216 registers) and 128 fp32 accumulators per consumer thread,
// loaded from global memory and all arrived before the clock starts; it then does what
// v5_epilogue.cuh does for 64 outputs per thread (silu_mul<RcpDivide>, fp16, 16-bit stores into the
// padded staging tile) between two barriers of the 256 consumers, and reports the clocks between
// them (median and maximum over CTAs and 11 launches). Variants: "product"; "paired cvt" (two
// outputs per conversion instruction); "producers take 10/32" (the consumers hand the raw G and U
// of 10 of their 32 output pairs to the producer warps through shared memory, and those compute
// them: three warps per sub-partition share the work); "exp on the FMA pipe" (exp_fma below; its C
// is compared, a few outputs differ by an fp16 ulp); and, timing only, without the exp, without
// the division, without either. The variants that compute the product's outputs are compared with
// its C ("same C").
//
// Build: CMake target epi_probe (with CUDA), carried by tools/gpu_dist.sh; run on the GPU machine.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "gpu/fused/ptx.cuh"
#include "gpu/fused/v5_epilogue.cuh"
#include "silu.hpp"

using namespace nvfp4::gpu::fused;

namespace {

constexpr int kStRow = 64 * 2 + 16;  // the 256 x 64 tiles' padded staging row (v5::Config::kStRow)

// exp(a) on the FMA pipe (variant 6, an experiment): a clamped to [-87, 89] (below, 1 + exp(a) is
// 1 in fp32 anyway; above, 2^128 is inf), a = n ln2 + r with |r| <= ln2/2 (Cody-Waite, two FMAs),
// e^r by its degree-7 Taylor polynomial (truncation below 6e-9 relative), times 2^n built in the
// exponent bits.
__device__ __forceinline__ float exp_fma(float a) {
  a = fminf(fmaxf(a, -87.0f), 89.0f);
  const float big = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  const float nb = fmaf(a, 1.44269504f, big);
  const float n = nb - big;
  float r = fmaf(n, -0.693145752f, a);
  r = fmaf(n, -1.42860677e-6f, r);
  float p = 1.0f / 5040;
  p = fmaf(p, r, 1.0f / 720);
  p = fmaf(p, r, 1.0f / 120);
  p = fmaf(p, r, 1.0f / 24);
  p = fmaf(p, r, 1.0f / 6);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const int e = (__float_as_int(nb) - __float_as_int(big) + 127) << 23;
  return p * __int_as_float(e);
}

// One output of variant V: 0 and 3 the product's silu_mul; 1 without the exp, 2 without the
// division, 4 without either (timing only: the arithmetic left keeps the data flow).
template <int V>
__device__ __forceinline__ float out1(float g, float u, float a1, float a2) {
  if constexpr (V == 0 || V == 3) return nvfp4::silu_mul<v5::RcpDivide>(g, u, a1, a2);
  if constexpr (V == 1) {
    const float x = a1 * g;
    return v5::RcpDivide::quotient(x, 1.0f + x * 1.0001f) * (a2 * u);
  }
  if constexpr (V == 2) {
    const float x = a1 * g;
    return x * (1.0f + expf(-x)) * (a2 * u);
  }
  if constexpr (V == 6) {
    const float x = a1 * g;
    return v5::RcpDivide::quotient(x, 1.0f + exp_fma(-x)) * (a2 * u);
  }
  if constexpr (V == 4) {
    const float x = a1 * g;
    return x * (a2 * u);
  }
  return 0.f;
}
template <int V>
__global__ void __launch_bounds__(384, 1)
    epi(const float* accs, __half* c, unsigned long long* cyc, float a1, float a2) {
  extern __shared__ __align__(16) uint8_t smem[];
  const uint32_t staging = ptx::smem_addr(smem);
  const int tid = threadIdx.x;
  constexpr int J0 = 22;  // variant 5: outputs of j >= J0 (10 of 32) go to the producer warps
  const uint32_t raw = staging + 256 * kStRow;  // [j - J0][consumer thread] float4 (g0, u0, g1, u1)
  if (tid < 128) {
    ptx::setmaxnreg_dec<64>();
    if constexpr (V == 5) {
      ptx::bar_sync<2>(384);  // the consumers' raw accumulators are in shared memory
#pragma unroll
      for (int k = 0; k < (32 - J0) * 2; ++k) {
        const int item = tid + 128 * k;
        const int j = J0 + item / 256, ct = item % 256;
        const int wg = ct / 128, w = (ct % 128) / 32, lane = ct % 32, g = lane / 4, t = lane % 4;
        const int wrow = wg * 32 + 8 * w + g;
        const uint4 r = ptx::lds128(raw + item * 16);
        const float y0 =
            nvfp4::silu_mul<v5::RcpDivide>(__uint_as_float(r.x), __uint_as_float(r.y), a1, a2);
        const float y1 =
            nvfp4::silu_mul<v5::RcpDivide>(__uint_as_float(r.z), __uint_as_float(r.w), a1, a2);
        ptx::sts16(staging + (8 * j + 2 * t) * kStRow + wrow * 2,
                   __half_as_ushort(__float2half_rn(y0)));
        ptx::sts16(staging + (8 * j + 2 * t + 1) * kStRow + wrow * 2,
                   __half_as_ushort(__float2half_rn(y1)));
      }
      ptx::bar_sync<3>(384);
    }
    return;
  }
  ptx::setmaxnreg_inc<216>();
  const int ct = tid - 128, wg = ct / 128, w = (ct % 128) / 32, lane = ct % 32, g = lane / 4,
            t = lane % 4;
  const int wrow = wg * 32 + 8 * w + g;
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = accs[(blockIdx.x * 256 + ct) * 128 % (1 << 20) + i];
  float sum = 0.f;  // every load has arrived before the clock starts
#pragma unroll
  for (int i = 0; i < 128; ++i) sum += acc[i];
  if (sum == 1234.5f) acc[0] = 0.f;
  ptx::consumer_sync(256);
  const unsigned long long c0 = clock64();
  if constexpr (V == 5) {
#pragma unroll
    for (int j = J0; j < 32; ++j)
      ptx::sts128(raw + ((j - J0) * 256 + ct) * 16,
                  make_uint4(__float_as_uint(acc[4 * j]), __float_as_uint(acc[4 * j + 2]),
                             __float_as_uint(acc[4 * j + 1]), __float_as_uint(acc[4 * j + 3])));
    ptx::bar_arrive<2>(384);
#pragma unroll
    for (int j = 0; j < J0; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float y = out1<0>(acc[4 * j + e], acc[4 * j + 2 + e], a1, a2);
        ptx::sts16(staging + (8 * j + 2 * t + e) * kStRow + wrow * 2,
                   __half_as_ushort(__float2half_rn(y)));
      }
    ptx::bar_sync<3>(384);
  } else if constexpr (V != 3) {
#pragma unroll
    for (int j = 0; j < 32; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float y = out1<V>(acc[4 * j + e], acc[4 * j + 2 + e], a1, a2);
        ptx::sts16(staging + (8 * j + 2 * t + e) * kStRow + wrow * 2,
                   __half_as_ushort(__float2half_rn(y)));
      }
  } else {
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const float y0 = out1<V>(acc[4 * j], acc[4 * j + 2], a1, a2);
      const float y1 = out1<V>(acc[4 * j + 1], acc[4 * j + 3], a1, a2);
      const __half2 h = __floats2half2_rn(y0, y1);
      const uint32_t p = *reinterpret_cast<const uint32_t*>(&h);
      ptx::sts16(staging + (8 * j + 2 * t) * kStRow + wrow * 2, uint16_t(p));
      ptx::sts16(staging + (8 * j + 2 * t + 1) * kStRow + wrow * 2, uint16_t(p >> 16));
    }
  }
  ptx::consumer_sync(256);
  const unsigned long long c1 = clock64();
  if (ct == 0) cyc[blockIdx.x] = c1 - c0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int q = ct + i * 256, r = q / 8, cu = q % 8;
    const uint4 v = ptx::lds128(staging + r * kStRow + cu * 16);
    *reinterpret_cast<uint4*>(c + (size_t(blockIdx.x) * 256 + r) * 64 + 8 * cu) = v;
  }
}
std::vector<uint16_t> product_c;  // C of the first "product" run

template <int V>
void run(const char* name, const float* d_acc, __half* d_c, unsigned long long* d_cyc, int sms) {
  const int smem = 256 * kStRow + 10 * 256 * 16;
  cudaFuncSetAttribute(epi<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  std::vector<unsigned long long> all;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> us;
  for (int r = 0; r < 11; ++r) {
    cudaEventRecord(e0);
    epi<V><<<sms, 384, smem>>>(d_acc, d_c, d_cyc, 0.7f, 1.3f);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    us.push_back(ms * 1000);
    std::vector<unsigned long long> cyc(sms);
    cudaMemcpy(cyc.data(), d_cyc, sms * 8, cudaMemcpyDeviceToHost);
    all.insert(all.end(), cyc.begin(), cyc.end());
  }
  std::sort(all.begin(), all.end());
  std::sort(us.begin(), us.end());
  // The product's C (first run) is the reference of the variants that compute the same outputs.
  std::vector<uint16_t>& ref = product_c;
  std::vector<uint16_t> out(size_t(sms) * 256 * 64);
  cudaMemcpy(out.data(), d_c, out.size() * 2, cudaMemcpyDeviceToHost);
  if (V == 0 && ref.empty()) ref = out;
  size_t differ = 0;
  for (size_t i = 0; i < out.size(); ++i) differ += out[i] != ref[i];
  char same[64] = "";
  if (V == 0 || V == 3 || V == 5 || V == 6)
    std::snprintf(same, sizeof same, differ ? "%zu elements of C differ" : "same C", differ);
  printf("  %-22s staged in %6llu clk (median), max %6llu; kernel %.1f us  %s  %s\n", name,
         all[all.size() / 2], all.back(), us[5], cudaGetErrorString(cudaGetLastError()), same);
}
}  // namespace

int main() {
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  std::vector<float> acc(1 << 20 | 256);
  std::mt19937 gen(1);
  std::normal_distribution<float> nd(0.f, 4.f);
  for (auto& x : acc) x = nd(gen);
  float* d_acc;
  __half* d_c;
  unsigned long long* d_cyc;
  cudaMalloc(&d_acc, acc.size() * 4);
  cudaMalloc(&d_c, size_t(sms) * 256 * 64 * 2);
  cudaMalloc(&d_cyc, sms * 8);
  cudaMemcpy(d_acc, acc.data(), acc.size() * 4, cudaMemcpyHostToDevice);
  for (int rep = 0; rep < 2; ++rep) {
    run<0>("product", d_acc, d_c, d_cyc, sms);
    run<3>("paired cvt", d_acc, d_c, d_cyc, sms);
    run<1>("no exp (timing)", d_acc, d_c, d_cyc, sms);
    run<2>("no divide (timing)", d_acc, d_c, d_cyc, sms);
    run<4>("neither (timing)", d_acc, d_c, d_cyc, sms);
    run<5>("producers take 10/32", d_acc, d_c, d_cyc, sms);
    run<6>("exp on the FMA pipe", d_acc, d_c, d_cyc, sms);
  }
}
