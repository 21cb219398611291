// v3.cuh — the fused kernel's general-K family (v3) for Hopper (sm_90a), device side: the only
// fused kernel for K % 256 != 0, an autotune candidate elsewhere (docs/fused-kernel.md v3).
//
//   C[l] = fp16_rn( silu(alpha1 * A[l]·B1[l]^T) * (alpha2 * A[l]·B2[l]^T) )
//
// Inputs as in docs/design.md §1 / reference/problem.hpp, read straight from global memory:
//   A (L, M, K/2) packed E2M1 (element 2j in the low nibble of byte j), SFA (L, M, K/16) E4M3;
//   B1, B2 (L, N, K/2), SFB1, SFB2 (L, N, K/16); C (L, M, N) fp16.
//
// Two kernels share the tile, decode, wgmma and epilogue code:
//   dual_gemm_tma_kernel  (K % 256 == 0, the benchmark shapes): a producer warp loads each
//     64-wide K stage of packed bytes and scales by TMA into a 4-deep ring (mbarriers full/empty);
//   dual_gemm_kernel      (any K % 16 == 0): each thread cp.async's its own share (or, when
//     K % 64 != 0, loads it with bounds checks), see the section before it.
// One CTA computes a 128 x BN tile of C (128 rows of A, BN columns = rows of B1 and of B2):
//   * 256 consumer threads = 2 warpgroups; warpgroup w owns A rows [64w, 64w+64) of the tile.
//   * Every stage, the 256 threads decode the packed stage after the one the tensor cores work on
//     into a ring of fp16 tiles (128B-swizzled, K-major), which both warpgroups feed to
//     wgmma m64n(2BN)k16 as one B operand [B1 tile; B2 tile]: accumulator columns [0, BN) are
//     G = A·B1^T and [BN, 2BN) are U = A·B2^T, so the same thread holds G and U of an element
//     and the epilogue is register-only.
//   * Decode is exact, to fp16, with either decoder of fp4_decode.cuh (decode_item):
//     decode8 (an E2M1 nibble re-packed as an E4M3 byte, converted by cvt.rn.f16x2.e4m3x2) or
//     decode8_int (integer ops and fp16 multiplies only). A and B go through the same decoder,
//     so both see the same permutation of K.
//   * Pipeline per stage kb: issue 4 wgmma on stage kb (async) | decode stage kb+1 | wait for
//     wgmma(kb+2-depth) | fence.proxy.async + barrier of the 256 consumers.
//   * Edges: rows past M or N are zero-filled by TMA or read the last valid row (cp.async kernel);
//     results there are discarded and stores are masked. Blocks past K are zero codes with zero
//     scales (add 0).
//   * Epilogue: silu_mul (reference/silu.hpp) with the IEEE division, then one round to fp16.
#pragma once
#include <cuda.h>  // CUtensorMap and its enums
#include <cuda_fp16.h>

#include <cstdint>

#include "fp4_decode.cuh"
#include "ptx.cuh"
#include "silu.hpp"
#include "tensor_map.cuh"
#include "wgmma.cuh"

namespace nvfp4::gpu::fused::v3 {

struct KernelArgs {
  const uint8_t* a;     // (L, M, K/2)
  const uint8_t* b1;    // (L, N, K/2)
  const uint8_t* b2;    // (L, N, K/2)
  const uint8_t* sfa;   // (L, M, K/16)
  const uint8_t* sfb1;  // (L, N, K/16)
  const uint8_t* sfb2;  // (L, N, K/16)
  __half* c;            // (L, M, N)
  int M, N, K;          // per batch; L = gridDim.z
  float alpha1, alpha2;
};

constexpr int kBM = 128;        // rows of A per CTA (2 warpgroups x 64)
constexpr int kBK = 64;         // K elements per pipeline stage (one 128-byte fp16 row)
constexpr int kThreads = 256;   // 2 warpgroups
constexpr int kDecStages = 3;   // decoded fp16 tiles in flight
constexpr int kRawStages = 4;   // packed stages in flight (cp.async runs 3 stages ahead)

// Everything that follows from the tile width BN (columns of C per CTA).
template <int BN_>
struct TileConfig {
  static constexpr int BN = BN_;
  static constexpr int kWgN = 2 * BN;          // wgmma N: B1 tile rows, then B2 tile rows
  static constexpr int kRows = kBM + kWgN;     // decoded rows per stage: A, B1, B2
  static constexpr int kHalves = 2 * kRows;    // work items: 32 elements (16 bytes) of one row
  static constexpr int kSlots = (kHalves + kThreads - 1) / kThreads;  // work items per thread
  static constexpr int kAcc = kWgN / 2;        // fp32 accumulators per thread (64 x kWgN / 128)
  static constexpr int kDecBytes = kRows * 128;       // one decoded stage
  static constexpr int kRawBytes = kHalves * 20;      // 16 data bytes + 4 scale bytes per item
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + kDecStages * kDecBytes +
                                    kRawStages * kRawBytes;
  static_assert(BN % 8 == 0, "G and U blocks of 8 columns must not straddle: BN % 8 == 0");
  static_assert(kWgN >= 16 && kWgN <= 256, "wgmma N must lie in [16, 256]");
  static_assert(kDecBytes % 1024 == 0, "128B-swizzle atoms (8 rows) must stay 1024-aligned");
  static_assert(kRawBytes % 16 == 0, "raw stages must stay 16-byte aligned for cp.async");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90 is at most 227 KiB");
};

namespace detail {
using namespace ptx;

// Decodes one work item — 32 elements (16 packed bytes `x`) of decoded row r, half `half` of the
// 64-element stage — into the decoded stage at `dec`. `sc4` holds the row's 4 scale bytes of the
// stage (blocks 0..3); this half uses bytes 2*half and 2*half+1. Unit u (8 elements, 16 bytes)
// of the 128-byte row is stored at unit u ^ (r % 8): the 128B swizzle wgmma expects.
// kIntDecode picks decode8_int, else decode8 (E4M3 re-packing + cvt). Both operands of a GEMM
// must use the same decoder (each has its own order of the 8 elements).
template <bool kIntDecode>
__device__ __forceinline__ void decode_item(uint32_t dec, int r, int half, uint4 x, uint32_t sc4) {
  // Bytes [s0 s0 s1 s1] of the item's two scales -> (s0, s0) and (s1, s1) in fp16.
  const uint32_t dup = __byte_perm(sc4, 0, half ? 0x3322 : 0x1100);
  uint32_t s0 = e4m3x2_lo_to_f16x2(dup), s1 = e4m3x2_hi_to_f16x2(dup);
  const uint32_t row = dec + r * 128;
  const int sw = r & 7, u0 = half * 4;
  uint4 d0, d1, d2, d3;
  if constexpr (kIntDecode) {
    d0 = decode8_int(x.x, s0);
    d1 = decode8_int(x.y, s0);
    d2 = decode8_int(x.z, s1);
    d3 = decode8_int(x.w, s1);
  } else {
    s0 = hmul2(s0, 0x54005400u);  // times 64.0 (0x5400): decode8 yields value*2^-6
    s1 = hmul2(s1, 0x54005400u);
    d0 = decode8(x.x, s0);
    d1 = decode8(x.y, s0);
    d2 = decode8(x.z, s1);
    d3 = decode8(x.w, s1);
  }
  sts128(row + (((u0 + 0) ^ sw) << 4), d0);
  sts128(row + (((u0 + 1) ^ sw) << 4), d1);
  sts128(row + (((u0 + 2) ^ sw) << 4), d2);
  sts128(row + (((u0 + 3) ^ sw) << 4), d3);
}

// The epilogue of one warpgroup: accumulator columns [0, BN) hold G, [BN, 2BN) hold U of rows
// [row0, row0 + 64) and columns [n0, n0 + BN) of C[l]; stores are masked to M x N.
template <int BN, int R>
__device__ __forceinline__ void store_tile(const float (&acc)[R], const KernelArgs& args, int64_t l,
                                           int row0, int n0, int t) {
  static_assert(R == BN, "2*BN columns x 64 rows over 128 threads");
  const int M = args.M, N = args.N;
  const int warp = t / 32, lane = t % 32;
  const int rbase = row0 + warp * 16 + lane / 4;
  const bool pair_ok = (N % 2) == 0;  // half2 stores stay 4-byte aligned
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int n = n0 + 8 * j + 2 * (lane % 4);
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int m = rbase + 8 * hh;
      const float y0 = nvfp4::silu_mul(acc[4 * j + 2 * hh], acc[4 * (j + BN / 8) + 2 * hh],
                                       args.alpha1, args.alpha2);
      const float y1 = nvfp4::silu_mul(acc[4 * j + 2 * hh + 1],
                                       acc[4 * (j + BN / 8) + 2 * hh + 1], args.alpha1, args.alpha2);
      if (m < M) {
        __half* out = args.c + (l * M + m) * int64_t(N) + n;
        if (pair_ok && n + 1 < N) {
          *reinterpret_cast<__half2*>(out) =
              __halves2half2(__float2half_rn(y0), __float2half_rn(y1));
        } else {
          if (n < N) out[0] = __float2half_rn(y0);
          if (n + 1 < N) out[1] = __float2half_rn(y1);
        }
      }
    }
  }
}

}  // namespace detail

// grid = (ceil(N/BN), ceil(M/128), L), block = 256, dynamic shared memory TileConfig<BN>::kSmemBytes.
template <int BN, bool kFastK>
__global__ void __launch_bounds__(kThreads, 1) dual_gemm_kernel(const KernelArgs args) {
#if defined(NVFP4_FUSED_SM90A)
  using Cfg = TileConfig<BN>;
  using namespace detail;
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t dec_base = base;
  const uint32_t raw_base = base + kDecStages * Cfg::kDecBytes;

  const int tid = threadIdx.x;
  const int M = args.M, N = args.N, K = args.K;
  const int64_t l = blockIdx.z;
  const int n0 = blockIdx.x * BN;
  const int m0 = blockIdx.y * kBM;
  const int nk = (K + kBK - 1) / kBK;
  const int64_t row_bytes = K / 2, row_scales = K / 16;

  // Work items of this thread: item h = tid + 256*i is half (h & 1) of decoded row r = h >> 1;
  // rows [0, 128) are A, [128, 128+BN) B1, then B2. Out-of-range rows read the last valid one.
  const uint8_t* src_data[Cfg::kSlots];
  const uint8_t* src_scale[Cfg::kSlots];
#pragma unroll
  for (int i = 0; i < Cfg::kSlots; ++i) {
    const int h = tid + i * kThreads;
    const int r = (h < Cfg::kHalves ? h : 0) >> 1;
    const uint8_t* d;
    const uint8_t* s;
    int64_t row;
    if (r < kBM) {
      row = l * M + min(m0 + r, M - 1);
      d = args.a;
      s = args.sfa;
    } else if (r < kBM + BN) {
      row = l * N + min(n0 + r - kBM, N - 1);
      d = args.b1;
      s = args.sfb1;
    } else {
      row = l * N + min(n0 + r - kBM - BN, N - 1);
      d = args.b2;
      s = args.sfb2;
    }
    src_data[i] = d + row * row_bytes + (h & 1) * 16;
    src_scale[i] = s + row * row_scales;
  }

  // Copies the packed bytes and scales of stage kb into raw ring slot kb % kRawStages.
  // Always commits one cp.async group (possibly empty) so the group count stays in step.
  auto load_raw = [&](int kb) {
    if (kb < nk) {
      const uint32_t raw = raw_base + (kb % kRawStages) * Cfg::kRawBytes;
#pragma unroll
      for (int i = 0; i < Cfg::kSlots; ++i) {
        const int h = tid + i * kThreads;
        if (h < Cfg::kHalves) {
          const uint32_t dst_d = raw + h * 16, dst_s = raw + Cfg::kHalves * 16 + h * 4;
          if constexpr (kFastK) {
            cp_async16(dst_d, src_data[i] + kb * 32);
            cp_async4(dst_s, src_scale[i] + kb * 4);
          } else {
            // K % 64 != 0: 8-byte aligned rows only, and blocks past K are zero-filled.
            const int k0 = kb * kBK + (h & 1) * 32;  // first element of this item
            uint2 d0 = make_uint2(0, 0), d1 = make_uint2(0, 0);
            uint32_t sc = 0;
            const int sh = (h & 1) * 16;  // the item's scales sit in bytes 2*(h&1), 2*(h&1)+1
            if (k0 < K) {
              d0 = *reinterpret_cast<const uint2*>(src_data[i] + kb * 32);
              sc |= uint32_t(src_scale[i][k0 / 16]) << sh;
            }
            if (k0 + 16 < K) {
              d1 = *reinterpret_cast<const uint2*>(src_data[i] + kb * 32 + 8);
              sc |= uint32_t(src_scale[i][k0 / 16 + 1]) << (sh + 8);
            }
            sts128(dst_d, make_uint4(d0.x, d0.y, d1.x, d1.y));
            sts32(dst_s, sc);
          }
        }
      }
    }
    cp_async_commit();
  };

  // Decodes raw stage kb into decoded stage kb % kDecStages (row r, 16-byte unit u of the
  // 128-byte row stored at unit u ^ (r % 8): the 128B swizzle wgmma expects).
  auto decode = [&](int kb) {
    const uint32_t raw = raw_base + (kb % kRawStages) * Cfg::kRawBytes;
    const uint32_t dec = dec_base + (kb % kDecStages) * Cfg::kDecBytes;
#pragma unroll
    for (int i = 0; i < Cfg::kSlots; ++i) {
      const int h = tid + i * kThreads;
      if (h < Cfg::kHalves) {
        decode_item<true>(dec, h >> 1, h & 1, lds128(raw + h * 16),
                          lds32(raw + Cfg::kHalves * 16 + h * 4));
      }
    }
  };

  float acc[Cfg::kAcc];
#pragma unroll
  for (int i = 0; i < Cfg::kAcc; ++i) acc[i] = 0.0f;

  // Prologue: raw stages 0..2 in flight, stage 0 decoded.
#pragma unroll
  for (int j = 0; j < kRawStages - 1; ++j) load_raw(j);
  cp_async_wait<kRawStages - 2>();
  decode(0);
  fence_proxy_async();
  __syncthreads();

  const int wg = tid / 128;
  for (int kb = 0; kb < nk; ++kb) {
    const uint32_t dec = dec_base + (kb % kDecStages) * Cfg::kDecBytes;
    const uint64_t desc_a = sw128_desc(dec + wg * 64 * 128);
    const uint64_t desc_b = sw128_desc(dec + kBM * 128);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kBK / 16; ++s)  // 16 K-elements = 32 bytes = 2 in descriptor units
      Wgmma<Cfg::kWgN>::mma(acc, desc_a + 2 * s, desc_b + 2 * s);
    wgmma_commit();

    load_raw(kb + kRawStages - 1);
    cp_async_wait<kRawStages - 2>();  // this thread's raw stage kb+1 has landed
    // Decoded stage (kb+1) % 3 was last read by wgmma(kb-2), finished before the last barrier.
    if (kb + 1 < nk) decode(kb + 1);
    wgmma_wait<1>(acc);  // this warpgroup's wgmma(kb-1) is done
    fence_proxy_async();
    __syncthreads();
  }
  wgmma_wait<0>(acc);

  store_tile<BN>(acc, args, l, m0 + wg * 64, n0, tid % 128);
#else
  // Built for another target (the compute_90 PTX pass): the host never launches this.
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// The TMA kernel (K % 256 == 0): the same tile, decode, wgmma and epilogue, but the packed bytes
// and scales arrive by TMA, issued by a ninth, producer warp, so the 256 decoding threads have no
// global loads of their own in flight. (In the cp.async kernel above, the proxy fence each stage
// ends with waits for the thread's outstanding cp.async copies, i.e. for the stage just
// requested — the copies stop running ahead.)
//
// Raw stage layout (48 bytes per decoded row r): bytes [32r, 32r+32) are the row's 32 packed
// bytes of the stage; bytes [32R + 16r, 32R + 16r + 16) are the row's 16 scale bytes of the
// group of 4 stages holding this one (a TMA box is >= 16 bytes wide and starts on 16 bytes);
// stage kb uses the 4 bytes at 4*(kb % 4).
// R = 128 + 2*BN rows: A, then B1, then B2. TMA zero-fills rows past M or N and scale bytes past
// K/16 (zero codes times zero scales add 0).
// Barriers: full[s] (producer's expect_tx + TMA bytes), empty[s] (256 consumer arrivals after
// decoding from slot s).

struct TmaMaps {
  CUtensorMap a, b1, b2;        // uint8 (K/2, rows, L), box (32, 128 or BN, 1)
  CUtensorMap sfa, sfb1, sfb2;  // uint8 (K/16, rows, L), box (16, 128 or BN, 1)
};

constexpr int kTmaThreads = kThreads + 32;  // 8 consumer warps + 1 producer warp

// Dynamic shared memory of the TMA kernel (alignment slack, decoded stages, raw ring, barriers).
constexpr int tma_smem_bytes(int bn, int depth) {
  return 1024 + depth * (kBM + 2 * bn) * 128 + kRawStages * (kBM + 2 * bn) * 48 + 2 * kRawStages * 8;
}

template <int BN_, int kDepth_ = kDecStages>
struct TmaTileConfig {
  static constexpr int BN = BN_;
  static constexpr int kDepth = kDepth_;  // decoded stages; wgmma groups in flight = kDepth - 1
  static constexpr int kWgN = 2 * BN;
  static constexpr int kRows = kBM + kWgN;
  static constexpr int kHalves = 2 * kRows;
  static constexpr int kSlots = (kHalves + kThreads - 1) / kThreads;
  static constexpr int kAcc = kWgN / 2;
  static constexpr int kDecBytes = kRows * 128;
  static constexpr int kRawBytes = kRows * 48;  // TMA transaction bytes per stage, too
  static constexpr int kSmemBytes = tma_smem_bytes(BN, kDepth);
  static_assert(kDepth == 3 || kDepth == 4, "3 or 4 decoded stages");
  static_assert(BN % 8 == 0 && kWgN <= 256, "see TileConfig");
  static_assert(kDecBytes % 1024 == 0, "128B-swizzle atoms must stay 1024-aligned");
  static_assert((kBM * 32) % 128 == 0 && (BN * 32) % 128 == 0 && (BN * 16) % 128 == 0 &&
                    (kRows * 32) % 128 == 0 && kRawBytes % 128 == 0,
                "TMA destinations must be 128-byte aligned");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90 is at most 227 KiB");
};

// grid = (ceil(N/BN), ceil(M/128), L), block = 288, dynamic shared memory
// TmaTileConfig<BN, kDepth>::kSmemBytes. Requires K % 256 == 0 (16-byte aligned scale rows).
// kDepth decoded stages (3: up to 2 wgmma stages queued; 4: up to 3). kIntDecode: decoder choice
// (decode_item).
template <int BN, int kDepth, bool kIntDecode>
__global__ void __launch_bounds__(kTmaThreads, 1)
    dual_gemm_tma_kernel(const __grid_constant__ TmaMaps maps, const KernelArgs args) {
#if defined(NVFP4_FUSED_SM90A)
  using Cfg = TmaTileConfig<BN, kDepth>;
  using namespace detail;
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t dec_base = base;
  const uint32_t raw_base = base + kDepth * Cfg::kDecBytes;
  const uint32_t full_bar = raw_base + kRawStages * Cfg::kRawBytes;  // kRawStages x 8 bytes
  const uint32_t empty_bar = full_bar + kRawStages * 8;

  const int tid = threadIdx.x;
  const int l = blockIdx.z;
  const int n0 = blockIdx.x * BN;
  const int m0 = blockIdx.y * kBM;
  const int nk = args.K / kBK;

  if (tid == 0) {
    for (int s = 0; s < kRawStages; ++s) {
      mbar_init(full_bar + 8 * s, 1);
      mbar_init(empty_bar + 8 * s, kThreads);
    }
    mbar_init_fence();
    fence_proxy_async();
  }
  __syncthreads();

  if (tid >= kThreads) {
    // Producer warp: one lane issues the six TMA boxes of each stage, up to 4 stages ahead.
    if (tid == kThreads) {
      prefetch_tensormap(&maps.a);
      prefetch_tensormap(&maps.b1);
      prefetch_tensormap(&maps.b2);
      prefetch_tensormap(&maps.sfa);
      prefetch_tensormap(&maps.sfb1);
      prefetch_tensormap(&maps.sfb2);
      for (int kb = 0; kb < nk; ++kb) {
        const int s = kb % kRawStages;
        if (kb >= kRawStages) mbar_wait(empty_bar + 8 * s, ((kb / kRawStages) - 1) & 1);
        const uint32_t full = full_bar + 8 * s;
        mbar_arrive_expect_tx(full, Cfg::kRawBytes);
        const uint32_t raw = raw_base + s * Cfg::kRawBytes;
        const uint32_t sc = raw + Cfg::kRows * 32;
        tma_load_3d(raw, &maps.a, kb * 32, m0, l, full);
        tma_load_3d(raw + kBM * 32, &maps.b1, kb * 32, n0, l, full);
        tma_load_3d(raw + (kBM + BN) * 32, &maps.b2, kb * 32, n0, l, full);
        // A box's first coordinate must sit on 16 bytes: load the 16 scale bytes of stages
        // 4*(kb/4) .. 4*(kb/4)+3; stage kb uses bytes 4*(kb%4) .. 4*(kb%4)+3 of each row.
        const int sc0 = (kb / 4) * 16;
        tma_load_3d(sc, &maps.sfa, sc0, m0, l, full);
        tma_load_3d(sc + kBM * 16, &maps.sfb1, sc0, n0, l, full);
        tma_load_3d(sc + (kBM + BN) * 16, &maps.sfb2, sc0, n0, l, full);
      }
    }
    return;
  }

  // Consumers: decode raw stage kb into decoded stage kb % kDepth, then release the raw slot.
  auto decode = [&](int kb) {
    const int s = kb % kRawStages;
    const uint32_t raw = raw_base + s * Cfg::kRawBytes;
    const uint32_t dec = dec_base + (kb % kDepth) * Cfg::kDecBytes;
    mbar_wait(full_bar + 8 * s, (kb / kRawStages) & 1);
#pragma unroll
    for (int i = 0; i < Cfg::kSlots; ++i) {
      const int h = tid + i * kThreads;
      if (h < Cfg::kHalves) {
        const int r = h >> 1;
        decode_item<kIntDecode>(dec, r, h & 1, lds128(raw + h * 16),
                                lds32(raw + Cfg::kRows * 32 + r * 16 + (kb % 4) * 4));
      }
    }
    mbar_arrive(empty_bar + 8 * s);
  };

  float acc[Cfg::kAcc];
#pragma unroll
  for (int i = 0; i < Cfg::kAcc; ++i) acc[i] = 0.0f;

  decode(0);
  fence_proxy_async();
  consumer_sync(kThreads);

  const int wg = tid / 128;
  for (int kb = 0; kb < nk; ++kb) {
    const uint32_t dec = dec_base + (kb % kDepth) * Cfg::kDecBytes;
    const uint64_t desc_a = sw128_desc(dec + wg * 64 * 128);
    const uint64_t desc_b = sw128_desc(dec + kBM * 128);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kBK / 16; ++s)
      Wgmma<Cfg::kWgN>::mma(acc, desc_a + 2 * s, desc_b + 2 * s);
    wgmma_commit();
    // Decoded stage (kb+1) % kDepth was last read by wgmma(kb+1-kDepth), which the wait below
    // in the previous iteration finished before its barrier.
    if (kb + 1 < nk) decode(kb + 1);
    wgmma_wait<kDepth - 2>(acc);  // this warpgroup's wgmma(kb+2-kDepth) is done
    fence_proxy_async();
    consumer_sync(kThreads);
  }
  wgmma_wait<0>(acc);
  store_tile<BN>(acc, args, l, m0 + wg * 64, n0, tid % 128);
#else
  __trap();
#endif
}

// The six tensor maps of the TMA kernel for tile width `bn` over the buffers named in `a`.
inline TmaMaps make_tma_maps(const KernelArgs& a, int L, int bn) {
  auto make = [&](const uint8_t* ptr, int64_t width, int64_t rows, uint32_t box_w, uint32_t box_rows) {
    return make_tensor_map(ptr, 1, width, rows, L, box_w, box_rows, CU_TENSOR_MAP_SWIZZLE_NONE);
  };
  TmaMaps t;
  t.a = make(a.a, a.K / 2, a.M, 32, kBM);
  t.b1 = make(a.b1, a.K / 2, a.N, 32, uint32_t(bn));
  t.b2 = make(a.b2, a.K / 2, a.N, 32, uint32_t(bn));
  t.sfa = make(a.sfa, a.K / 16, a.M, 16, kBM);
  t.sfb1 = make(a.sfb1, a.K / 16, a.N, 16, uint32_t(bn));
  t.sfb2 = make(a.sfb2, a.K / 16, a.N, 16, uint32_t(bn));
  return t;
}

}  // namespace nvfp4::gpu::fused::v3
