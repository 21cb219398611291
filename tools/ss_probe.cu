// ss_probe.cu — the measurement behind docs/fused-kernel.md v5o: a main-loop design for the fused
// kernel's 128 x 96 tiles that was built, timed and dropped; a tool, not part of the product.
//
// The product's 128 x 96 tiles (v5, three consumer warpgroups) decode each weight fragment in the
// consumer threads straight into wgmma's register-sourced A operand; their main loop reaches ~80%
// of the tensor rate because that decode is exposed. This probe times the other split of the same
// work: a decoder warpgroup decodes each 64-K weight stage into a 128B-swizzled fp16 tile in
// shared memory, and two consumer warpgroups issue shared-memory-sourced wgmma m64n192k16
// (activations as A, 64 rows each; the decoded [B1 rows; B2 rows] tile as B, 96 + 96 rows), so
// the consumers decode nothing and hold no fragment registers. Only the main loop is built: the
// activations are fp16 in global memory already (no phase 0), and the epilogue writes G·U.
//
//   ss_probe [MxNxK ...]   (default 512x3072x7168; M % 128 == 0, N % 96 == 0, K % 256 == 0)
//
// Per shape and decoder (cvt: decode8; int: decode8_int; mix: one of each per 16-K block) it
// prints for each variant the kernel time (CUDA events after a 256 MB memset, median of 15), the
// main loop's µs per 64-K stage and SM clock (per-CTA global-timer and clock64 stamps, median
// over CTAs) and that rate against the tensor rate at the measured clock (768 tensor clocks for a
// 128 x 192 x 64 stage). Variants (all but the first two are timing only, their outputs
// undefined): "+chk" also checks G and U of 4096 sampled outputs against a double-precision sum
// on the host (the decode is exact and the products are exact in fp32, so the error must be 0 up
// to fp32 summation); "nodecode": the decoder warps only signal (the loop's ceiling with both
// operands in shared memory and the same synchronization); "nosts": the decoder decodes but does
// not store; "nomma": the consumers issue no wgmma (the decoder's own rate).
//
// Build: CMake target ss_probe (with CUDA), carried by tools/gpu_dist.sh; run on the GPU machine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/fused/fp4_decode.cuh"
#include "gpu/fused/ptx.cuh"
#include "gpu/fused/tensor_map.cuh"
#include "gpu/fused/wgmma.cuh"
#include "probe_host.hpp"

using namespace nvfp4::gpu::fused;

namespace {


constexpr int BM = 128;              // activation rows per tile (two consumer warpgroups of 64)
constexpr int BN = 96;               // columns of C per tile
constexpr int WR = 2 * BN;           // decoded weight rows per tile (B1 rows, then B2 rows)
constexpr int SA = 4;                // activation ring (64-K stages)
constexpr int SD = 3;                // decoded weight ring (64-K stages)
constexpr int SW = 2;                // packed weight ring (256-K stages)
constexpr int kActBytes = BM * 128;  // 128 rows x 64 fp16
constexpr int kDecBytes = WR * 128;  // 192 rows x 64 fp16
constexpr int kPackBytes = WR * 128;           // 192 rows x 256 codes
constexpr int kWStage = kPackBytes + WR * 16;  // + 192 rows x 16 scale bytes
constexpr int kSmem = SA * kActBytes + SD * kDecBytes + SW * kWStage + 1024 + 256;

struct Maps {
  CUtensorMap act, pack, scale;
};
struct Args {
  int M, N, K;
  __half* c;
  float* dbg;                     // [M][2N] (G of tile nt at 192*nt.., U at 192*nt + 96..), or null
  unsigned long long* stamps;     // per CTA: t0, t1, clk0, clk1
};

struct Smem {
  uint32_t act, dec, wst, bars;
  __device__ explicit Smem(uint32_t base)
      : act(base),
        dec(base + SA * kActBytes),
        wst(base + SA * kActBytes + SD * kDecBytes),
        bars(base + SA * kActBytes + SD * kDecBytes + SW * kWStage) {}
  __device__ uint32_t full_a(int s) const { return bars + 8 * s; }
  __device__ uint32_t empty_a(int s) const { return bars + 8 * (SA + s); }
  __device__ uint32_t dfull(int s) const { return bars + 8 * (2 * SA + s); }
  __device__ uint32_t dempty(int s) const { return bars + 8 * (2 * SA + SD + s); }
  __device__ uint32_t wfull(int s) const { return bars + 8 * (2 * SA + 2 * SD + s); }
  __device__ uint32_t wempty(int s) const { return bars + 8 * (2 * SA + 2 * SD + SW + s); }
};

template <int kDecWGs>
constexpr int threads() {  // producer, decoder warpgroups, two consumer warpgroups
  return 128 * (3 + kDecWGs);
}

// kDecode = false: the decoder warps only signal (the loop's ceiling); kFence = false (timing
// only, outputs undefined): no proxy fence before a decoded stage is signalled.
// kDec: 0 = decode8 (cvt) for both 8-element halves of a 16-K block, 1 = decode8_int for both,
// 2 = decode8 for the first half and decode8_int for the second. kProbe (timing only): 0 = the
// design, 1 = the decoder does not store (its words are folded into one register), 2 = the
// consumers issue no wgmma (the decoder's own rate).
template <int kDecWGs, bool kDecode, bool kFence, bool kCheck, int kDec = 0, int kProbe = 0>
__global__ void __launch_bounds__(threads<kDecWGs>(), 1)
    ss_kernel(const __grid_constant__ Maps maps, const Args args) {
#if defined(NVFP4_FUSED_SM90A)
  using namespace ptx;
  extern __shared__ __align__(1024) uint8_t smem[];
  const Smem sm((smem_addr(smem) + 1023u) & ~1023u);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int n_tiles = args.N / BN;
  const int mt = blockIdx.x / n_tiles, nt = blockIdx.x % n_tiles;
  const int nk = args.K / 64;
  if (tid == 0) {
    for (int s = 0; s < SA; ++s) {
      mbar_init(sm.full_a(s), 1);
      mbar_init(sm.empty_a(s), 8);
    }
    for (int s = 0; s < SD; ++s) {
      mbar_init(sm.dfull(s), 4 * kDecWGs);
      mbar_init(sm.dempty(s), 8);
    }
    for (int s = 0; s < SW; ++s) {
      mbar_init(sm.wfull(s), 1);
      mbar_init(sm.wempty(s), 4 * kDecWGs);
    }
    mbar_init_fence();
  }
  __syncthreads();
  if (tid < 128) {  // producer warpgroup
    setmaxnreg_dec<40>();
    if (warp == 0 && lane == 0) {
      for (int i = 0; i < nk; ++i) {
        const int s = i % SA;
        if (i >= SA) mbar_wait(sm.empty_a(s), ((i / SA) - 1) & 1);
        mbar_arrive_expect_tx(sm.full_a(s), kActBytes);
        tma_load_3d(sm.act + s * kActBytes, &maps.act, 64 * i, mt * BM, 0, sm.full_a(s));
      }
    } else if (warp == 1 && lane == 0) {
      for (int w = 0; w < nk / 4; ++w) {
        const int s = w % SW;
        if (w >= SW) mbar_wait(sm.wempty(s), ((w / SW) - 1) & 1);
        mbar_arrive_expect_tx(sm.wfull(s), kWStage);
        const uint32_t st = sm.wst + s * kWStage;
        tma_load_3d(st, &maps.pack, 128 * w, nt * BN, 0, sm.wfull(s));
        tma_load_3d(st + BN * 128, &maps.pack, 128 * w, args.N + nt * BN, 0, sm.wfull(s));
        tma_load_3d(st + kPackBytes, &maps.scale, 16 * w, nt * BN, 0, sm.wfull(s));
        tma_load_3d(st + kPackBytes + BN * 16, &maps.scale, 16 * w, args.N + nt * BN, 0,
                    sm.wfull(s));
      }
    }
  } else if (tid < 128 * (1 + kDecWGs)) {  // decoder warpgroups
    if constexpr (kDecWGs > 1) setmaxnreg_dec<80>();
    const int dt = tid - 128;
    uint32_t sink = 0;
    for (int i = 0; i < nk; ++i) {
      const int w = i / 4, kb = i % 4, ws = w % SW, ds = i % SD;
      if (kb == 0) mbar_wait(sm.wfull(ws), (w / SW) & 1);
      if (i >= SD) mbar_wait(sm.dempty(ds), ((i / SD) - 1) & 1);
      if constexpr (kDecode) {
        const uint32_t st = sm.wst + ws * kWStage, dst = sm.dec + ds * kDecBytes;
        // All of this thread's loads first: a shared-memory store is a compiler barrier for the
        // loads after it (ptx.cuh's sts128 clobbers memory), which left one item's load latency
        // exposed per item.
        constexpr int kItems = WR * 4 / (128 * kDecWGs);  // (row, 16-K block) items per thread
        uint2 pk[kItems];
        uint32_t sbs[kItems];
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
          const int item = dt + 128 * kDecWGs * j, r = item / 4, b = item % 4;
          // Bytes 32 kb + 8 b .. +8 of packed row r (16-byte unit 2 kb + b / 2, swizzled).
          pk[j] = lds64(st + r * 128 + (((2 * kb + (b >> 1)) ^ (r & 7)) << 4) + 8 * (b & 1));
          sbs[j] = lds8(st + kPackBytes + r * 16 + 4 * kb + b);
        }
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
          const int item = dt + 128 * kDecWGs * j, r = item / 4, b = item % 4;
          const uint2 p = pk[j];
          const uint32_t sb = sbs[j];
          uint4 lo, hi;
          if constexpr (kDec == 0) {
            const uint32_t s64 = scale64(sb);
            lo = decode8(p.x, s64);
            hi = decode8(p.y, s64);
          } else if constexpr (kDec == 1) {
            const uint32_t s1 = ptx::e4m3x2_lo_to_f16x2(sb * 0x0101u);
            lo = decode8_int(p.x, s1);
            hi = decode8_int(p.y, s1);
          } else {
            const uint32_t s1 = ptx::e4m3x2_lo_to_f16x2(sb * 0x0101u);
            lo = decode8(p.x, ptx::hmul2(s1, 0x54005400u));
            hi = decode8_int(p.y, s1);
          }
          if constexpr (kProbe == 1) {
            sink ^= lo.x ^ lo.y ^ lo.z ^ lo.w ^ hi.x ^ hi.y ^ hi.z ^ hi.w;
          } else {
            sts128(dst + r * 128 + (((2 * b) ^ (r & 7)) << 4), lo);
            sts128(dst + r * 128 + (((2 * b + 1) ^ (r & 7)) << 4), hi);
          }
        }
      }
      if constexpr (kFence) fence_proxy_async();
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(sm.dfull(ds));
        if (kb == 3) mbar_arrive(sm.wempty(ws));
      }
    }
    if (kProbe == 1 && sink == 0x12345678u) args.c[0] = __float2half(1.0f);  // keeps the decode
  } else {  // consumer warpgroups: 64 activation rows each
    setmaxnreg_inc<152>();
    const int cw = (tid - 128 * (1 + kDecWGs)) / 128, ct = tid % 128, w = ct / 32, g = lane / 4, t = lane % 4;
    float acc[96];
#pragma unroll
    for (int i = 0; i < 96; ++i) acc[i] = 0.0f;
    unsigned long long t0 = 0, c0 = 0;
    for (int i = 0; i < nk; ++i) {
      const int sa = i % SA, ds = i % SD;
      mbar_wait(sm.full_a(sa), (i / SA) & 1);
      mbar_wait(sm.dfull(ds), (i / SD) & 1);
      if (i == 0) {
        t0 = gtimer();
        c0 = clock64();
      }
      const uint64_t da = sw128_desc(sm.act + sa * kActBytes + cw * 64 * 128);
      const uint64_t db = sw128_desc(sm.dec + ds * kDecBytes);
      if constexpr (kProbe != 2) {
        wgmma_fence();
#pragma unroll
        for (int s = 0; s < 4; ++s) Wgmma<192>::mma(acc, da + 2 * s, db + 2 * s);
        wgmma_commit();
        wgmma_wait<1>(acc);
      }
      if (i >= 1) {
        __syncwarp();
        if (lane == 0) {
          mbar_arrive(sm.empty_a((i - 1) % SA));
          mbar_arrive(sm.dempty((i - 1) % SD));
        }
      }
    }
    if constexpr (kProbe != 2) wgmma_wait<0>(acc);
    if (ct == 0 && cw == 0) {
      args.stamps[4 * blockIdx.x + 0] = t0;
      args.stamps[4 * blockIdx.x + 1] = gtimer();
      args.stamps[4 * blockIdx.x + 2] = c0;
      args.stamps[4 * blockIdx.x + 3] = clock64();
    }
    // d[4j + 2h + e] = D[row 16w + g + 8h][col 8j + 2t + e]; cols < 96 are G, the rest U.
#pragma unroll
    for (int j = 0; j < 12; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = mt * BM + cw * 64 + 16 * w + g + 8 * h;
        const int n = nt * BN + 8 * j + 2 * t;
        const float g0 = acc[4 * j + 2 * h], g1 = acc[4 * j + 2 * h + 1];
        const float u0 = acc[4 * (j + 12) + 2 * h], u1 = acc[4 * (j + 12) + 2 * h + 1];
        const __half2 v = __floats2half2_rn(g0 * u0, g1 * u1);
        *reinterpret_cast<__half2*>(args.c + int64_t(m) * args.N + n) = v;
        if constexpr (kCheck) {
          float* row = args.dbg + int64_t(m) * 2 * args.N + nt * WR;
          row[8 * j + 2 * t] = g0;
          row[8 * j + 2 * t + 1] = g1;
          row[BN + 8 * j + 2 * t] = u0;
          row[BN + 8 * j + 2 * t + 1] = u1;
        }
      }
    }
  }
#else
  __trap();
#endif
}

struct Shape {
  int M, N, K;
};

void run_shape(const Shape& sh, int sms, int dec) {
  const int M = sh.M, N = sh.N, K = sh.K;
  const probe::HostProblem hp(M, N, K);
  const std::vector<float>& act = hp.act;
  // Stored in the decoder's order within each group of 8 (position p holds element perm[p]):
  // decode8's, or decode8_int's (kDec 1; kDec 2: decode8_int's in the second half of each 16).
  static const int kCvt[8] = {0, 2, 4, 6, 1, 3, 5, 7}, kInt[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  auto perm = [&](int k) { return (dec == 1 || (dec == 2 && (k & 8))) ? kInt[k & 7] : kCvt[k & 7]; };
  std::vector<__half> act_h(act.size());
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      act_h[size_t(m) * K + k] = __float2half(act[size_t(m) * K + (k & ~7) + perm(k)]);
  const int tiles = (M / BM) * (N / BN);
  const probe::DeviceProblem dp(hp, act_h, tiles);
  Maps maps;
  maps.act = make_tensor_map(dp.act, 2, K, M, 1, 64, BM, CU_TENSOR_MAP_SWIZZLE_128B);
  maps.pack = make_tensor_map(dp.pack, 1, K / 2, 2 * N, 1, 128, BN, CU_TENSOR_MAP_SWIZZLE_128B);
  maps.scale = make_tensor_map(dp.scale, 1, K / 16, 2 * N, 1, 16, BN, CU_TENSOR_MAP_SWIZZLE_NONE);
  std::printf("shape %dx%dx%d: %d tiles of %d x %d on %d SMs\n", M, N, K, tiles, BM, BN, sms);

  auto time_variant = [&](auto kernel, int nthreads, const char* name, bool check) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    Args a{M, N, K, dp.c, check ? dp.dbg : nullptr, dp.stamps};
    probe::time_variant(
        name, hp, dp, tiles, 768.0, check, [&] { kernel<<<tiles, nthreads, kSmem>>>(maps, a); },
        [&](int m, int n, int which) {
          return size_t(m) * 2 * N + (n / BN) * WR + which * BN + n % BN;
        });
  };
  if (dec == 0) {
    time_variant(ss_kernel<1, true, true, true, 0>, threads<1>(), "cvt+chk", true);
    for (int rep = 0; rep < 2; ++rep) {
      time_variant(ss_kernel<1, true, true, false, 0>, threads<1>(), "cvt", false);
      time_variant(ss_kernel<1, false, true, false, 0>, threads<1>(), "nodecode", false);
      time_variant(ss_kernel<1, true, true, false, 0, 1>, threads<1>(), "cvt-nosts", false);
      time_variant(ss_kernel<1, true, true, false, 0, 2>, threads<1>(), "cvt-nomma", false);
    }
  } else if (dec == 1) {
    time_variant(ss_kernel<1, true, true, true, 1>, threads<1>(), "int+chk", true);
    time_variant(ss_kernel<1, true, true, false, 1>, threads<1>(), "int", false);
    time_variant(ss_kernel<1, true, true, false, 1>, threads<1>(), "int", false);
  } else {
    time_variant(ss_kernel<1, true, true, true, 2>, threads<1>(), "mix+chk", true);
    time_variant(ss_kernel<1, true, true, false, 2>, threads<1>(), "mix", false);
    time_variant(ss_kernel<1, true, true, false, 2>, threads<1>(), "mix", false);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    Shape s;
    if (std::sscanf(argv[i], "%dx%dx%d", &s.M, &s.N, &s.K) != 3 || s.M % BM || s.N % BN ||
        s.K % 256 || s.M <= 0 || s.N <= 0 || s.K <= 0) {
      std::fprintf(stderr, "ss_probe: bad shape '%s' (MxNxK, M %% 128, N %% 96, K %% 256 == 0)\n",
                   argv[i]);
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) shapes.push_back({512, 3072, 7168});
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  for (const auto& s : shapes)
    for (int dec = 0; dec < 3; ++dec) run_shape(s, sms, dec);
  return 0;
}
