// xs_probe.cu — the measurement behind docs/fused-kernel.md v5p: the fused kernel's 128 x 96 main
// loop with the weight decode shared by the two CTAs of a cluster; a tool, not part of the product.
//
// The product's 128 x 96 tiles decode every weight fragment in the consumer threads, and the four
// tiles of one column block (M = 512) decode the same weight rows four times; the decode is exposed
// (their loop runs at ~80% of the tensor rate). Here the two CTAs of a 2-CTA cluster compute the
// tiles of the same columns and consecutive activation rows, so each consumer thread of one needs
// exactly the fragments its twin (same thread index) in the other needs. CTA rank r decodes only
// operand r (B1 or B2): its fragment rows g (the wgmma A operand's rows g of each warp) come from
// its own decode, rows g + 8 from the twin's, which sends its 32 decoded bytes per stage straight
// into this CTA's shared-memory mailbox with st.async (completing on a per-warp mbarrier). Rank 1
// therefore holds U in the accumulator slots where rank 0 holds G. Each CTA loads, and decodes,
// half the weight bytes.
//
// Own halves are decoded A stages ahead (A + 1 register fragment sets); with a mailbox ring of 2A
// stages no "slot free" signal is needed: a thread writes its twin's slot for stage i + A only after
// it has received the twin's half of stage i, which the twin sent after reading its slot for stage
// i - A, the slot's previous use (2A stages back), and those loads had returned (the wgmma that
// consumed them was issued before the send).
//
// Only the main loop is built (activations are fp16 in global memory already, in the v5 K order;
// the epilogue stores G·U). Variants (template kMode, kA):
//   own1   the product's loop (each CTA decodes B1 and B2, one stage ahead; no cluster)
//   own2   the same, two stages ahead (three fragment sets)
//   pairA  the shared decode, A stages ahead (A = 1, 2)
//   half2  timing only: each CTA decodes its half and uses it twice, no exchange (pair's floor)
//   nodec  timing only: no weight loads, no decode (the loop's ceiling)
//   helpD  the producer warpgroup decodes the B2 half of every fragment (its warp h for the
//          consumer warps of SM sub-partition h) into a D-stage ring in shared memory, from which
//          the consumers load it; they decode the B1 half themselves; lane 0 of producer warps
//          0 and 1 issue the TMA loads between the helper's steps
//   q3, q1 timing only: the product's loop with three or one of each thread's four decode8 per
//          stage (the others' words are copies): how the loop's rate follows the decode's share
// Registers: producer / consumer 56 / 152 as in the product, 24 / 160 for the pair variants (their
// third fragment set spilled at 152).
// "+chk" runs also compare G and U of 4096 sampled outputs with a double-precision sum on the host
// (the decode and the products are exact, so only fp32 summation error may remain).
//
//   xs_probe [MxNxK ...]   (default 512x3072x7168; M % 256 == 0, N % 96 == 0, K % 256 == 0)
//   XS_ONLY=own1 xs_probe  runs one variant (e.g. under ncu)
//
// Per variant it prints the kernel time (CUDA events after a 256 MB memset, median of 15), the main
// loop's µs per 64-K stage and SM clock (per-CTA stamps, median over CTAs) and that rate against
// the tensor rate at the measured clock (768 tensor clocks per 128 x 192 x 64 stage).
//
// Build: CMake target xs_probe (with CUDA), carried by tools/gpu_dist.sh; run on the GPU machine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/fused/fp4_decode.cuh"
#include "gpu/fused/ptx.cuh"
#include "gpu/fused/tensor_map.cuh"
#include "gpu/fused/wgmma.cuh"
#include "probe_host.hpp"

using namespace nvfp4::gpu::fused;

namespace {


enum Mode { kOwn = 0, kPair = 1, kHalf = 2, kNoDec = 3, kOwnQ3 = 4, kOwnQ1 = 5, kHelp = 6 };

constexpr int BM = 128;                     // activation rows per tile
constexpr int BN = 96;                      // columns of C per tile (three consumer warpgroups)
constexpr int kThreads = 512;               // producer warpgroup + 3 consumer warpgroups
constexpr int SA = 6;                       // activation ring (64-K stages)
constexpr int WS = 3;                       // packed weight ring (256-K stages)
constexpr int kActBytes = BM * 128;         // 128 rows x 64 fp16
constexpr int kWBytes = BN * 128;           // packed bytes of 256 K, one operand
constexpr int kSBytes = BN * 16;            // scale bytes of 256 K, one operand
constexpr int kWStage = 2 * kWBytes + 2 * kSBytes;  // both operands (27 KB; one operand uses half)
constexpr int kWarps = 12;                  // consumer warps
constexpr int kMboxStage = kWarps * 1024;   // per warp: 32 lanes x 32 bytes
constexpr int kMaxR = 4;                    // mailbox stages (2A)
constexpr int kBars = 2 * SA + 2 * WS + kMaxR * kWarps;
constexpr int kSmem = 1024 + SA * kActBytes + WS * kWStage + kMaxR * kMboxStage + 8 * kBars;
static_assert(kSmem <= 227 * 1024, "shared memory per CTA");

struct Maps {
  CUtensorMap act, pack, scale;
};
struct Args {
  int M, N, K;
  __half* c;
  float* dbg;                  // [M][2N]: G at column n, U at N + n; or null
  unsigned long long* stamps;  // per CTA: t0, t1, clk0, clk1
};

struct Smem {
  uint32_t act, wst, mbox, bars;
  __device__ explicit Smem(uint32_t base)
      : act(base),
        wst(base + SA * kActBytes),
        mbox(base + SA * kActBytes + WS * kWStage),
        bars(base + SA * kActBytes + WS * kWStage + kMaxR * kMboxStage) {}
  __device__ uint32_t full_a(int s) const { return bars + 8 * s; }
  __device__ uint32_t empty_a(int s) const { return bars + 8 * (SA + s); }
  __device__ uint32_t wfull(int s) const { return bars + 8 * (2 * SA + s); }
  __device__ uint32_t wempty(int s) const { return bars + 8 * (2 * SA + WS + s); }
  __device__ uint32_t mbar(int slot, int warp) const {
    return bars + 8 * (2 * SA + 2 * WS + slot * kWarps + warp);
  }
};

__device__ __forceinline__ void st_async16(uint32_t addr, uint4 v, uint32_t bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(addr),
      "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(bar)
      : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// A consumer thread's fragments for one 64-K stage: o = its fragment rows g (own operand), p = rows
// g + 8 (the other operand, or the twin's decode); [0] from the low packed word, [1] the high.
struct Frag {
  uint4 o[2], p[2];
};

template <int kMode, int kA>
__global__ void __launch_bounds__(kThreads, 1)
    xs_kernel(const __grid_constant__ Maps maps, const Args args) {
#if defined(NVFP4_FUSED_SM90A)
  using namespace ptx;
  constexpr bool kCluster = kMode == kPair || kMode == kHalf;
  constexpr int R = kMode == kHelp ? kA : 2 * kA;  // mailbox (pair) or helper ring depth
  constexpr int kLa = kMode == kHelp ? 1 : kA;     // stages a consumer decodes ahead
  constexpr bool kBothOps = kMode == kOwn || kMode == kOwnQ3 || kMode == kOwnQ1 || kMode == kHelp;
  constexpr int kProdRegs = kMode == kPair ? 24 : 56, kConsRegs = kMode == kPair ? 160 : 152;
  static_assert(R <= kMaxR, "mailbox depth");
  extern __shared__ __align__(1024) uint8_t smem[];
  const Smem sm((smem_addr(smem) + 1023u) & ~1023u);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int n_tiles = args.N / BN;
  // Pairs of tiles: same columns, activation row blocks 2p' and 2p' + 1 (rank 0 and 1).
  const int rank = kCluster ? int(cluster_rank()) : int(blockIdx.x % 2);
  const int pair = blockIdx.x / 2;
  const int nt = pair % n_tiles, mt = 2 * (pair / n_tiles) + rank;
  const int nk = args.K / 64;
  if (tid == 0) {
    for (int s = 0; s < SA; ++s) {
      mbar_init(sm.full_a(s), 1);
      mbar_init(sm.empty_a(s), kWarps);
    }
    for (int s = 0; s < WS; ++s) {
      mbar_init(sm.wfull(s), 1);
      mbar_init(sm.wempty(s), kMode == kHelp ? kWarps + 4 : kWarps);
    }
    // Pair: per slot and consumer warp, the twin's 1 KB arrived. Helper: per slot and helper warp
    // h, its fragments are written (mbar(s, h), count 1) and read by its three consumer warps
    // (mbar(s, 4 + h), count 3).
    for (int s = 0; s < R; ++s)
      for (int w = 0; w < kWarps; ++w)
        mbar_init(sm.mbar(s, w), kMode == kHelp && w >= 4 && w < 8 ? 3 : 1);
    mbar_init_fence();
  }
  if constexpr (kCluster) {
    cluster_sync_all();  // the twin's barriers exist before anything is sent to them
  } else {
    __syncthreads();
  }
  // Activation stage j and weight stage w by TMA (one lane), each once its slot is free.
  auto issue_act = [&](int j) {
    const int s = j % SA;
    if (j >= SA) mbar_wait(sm.empty_a(s), ((j / SA) - 1) & 1);
    mbar_arrive_expect_tx(sm.full_a(s), kActBytes);
    tma_load_3d(sm.act + s * kActBytes, &maps.act, 64 * j, mt * BM, 0, sm.full_a(s));
  };
  auto issue_w = [&](int w) {
    const int s = w % WS;
    const uint32_t st = sm.wst + s * kWStage;
    if (w >= WS) mbar_wait(sm.wempty(s), ((w / WS) - 1) & 1);
    if constexpr (kBothOps) {  // [packed B1 | packed B2 | scales B1 | scales B2]
      mbar_arrive_expect_tx(sm.wfull(s), kWStage);
      tma_load_3d(st, &maps.pack, 128 * w, nt * BN, 0, sm.wfull(s));
      tma_load_3d(st + kWBytes, &maps.pack, 128 * w, args.N + nt * BN, 0, sm.wfull(s));
      tma_load_3d(st + 2 * kWBytes, &maps.scale, 16 * w, nt * BN, 0, sm.wfull(s));
      tma_load_3d(st + 2 * kWBytes + kSBytes, &maps.scale, 16 * w, args.N + nt * BN, 0,
                  sm.wfull(s));
    } else {  // [packed operand `rank` | its scales]
      mbar_arrive_expect_tx(sm.wfull(s), kWBytes + kSBytes);
      tma_load_3d(st, &maps.pack, 128 * w, rank * args.N + nt * BN, 0, sm.wfull(s));
      tma_load_3d(st + kWBytes, &maps.scale, 16 * w, rank * args.N + nt * BN, 0, sm.wfull(s));
    }
  };
  if (tid < 128 && kMode == kHelp) {  // producer warpgroup as TMA issuer and decode helper
    setmaxnreg_dec<kProdRegs>();
    // Lane 0 of warp 0 issues the activation stages, lane 0 of warp 1 the weight stages, with
    // blocking waits placed so that they only wait for consumers that need nothing more from
    // this warp: after producing stage i, activation stage i + SA - 2 (its slot's previous stage,
    // i - 2, is released once the consumers have issued stage i - 1), and after the last K block
    // of weight stage w, weight stage w + WS - 1 (slot of stage w - 1, done by everyone once the
    // consumers have decoded stage 4w - 1). A spinning helper would take issue slots from the
    // consumers of its sub-partition, so every wait is mbarrier.try_wait.
    if (lane == 0 && warp == 0)
      for (int j = 0; j < SA && j < nk; ++j) issue_act(j);
    if (lane == 0 && warp == 1)
      for (int w = 0; w < WS && w < nk / 4; ++w) issue_w(w);
    // Helper warp h decodes the B2 rows (fragment rows g + 8) of consumer warps h, h + 4, h + 8
    // (same SM sub-partition): rows 32j + 8h + g, j = 0..2, and writes each consumer thread's
    // 32 bytes where that thread reads them: slot + 1024 * (consumer warp) + 512 * half + 16 * lane.
    const int h = warp, g = lane / 4, t = lane % 4;
    for (int i = 0; i < nk; ++i) {
      const int q = i % 4, slot = i % R;
      const uint32_t wv = uint32_t(i / 4), ws = wv % WS;
      if (i >= R) mbar_wait(sm.mbar(slot, 4 + h), uint32_t((i / R) - 1) & 1);
      if (q == 0) mbar_wait(sm.wfull(ws), (wv / WS) & 1);
      const uint32_t st = sm.wst + ws * kWStage;
      uint2 pk[3];
      uint32_t sc[3];
#pragma unroll
      for (int j = 0; j < 3; ++j) {
        const int row = 32 * j + 8 * h + g;
        pk[j] = lds64(st + kWBytes + row * 128 + ((((2 * q + (t >> 1)) ^ (row & 7))) << 4) +
                      8 * (t & 1));
        sc[j] = lds8(st + 2 * kWBytes + kSBytes + row * 16 + q * 4 + t);
      }
#pragma unroll
      for (int j = 0; j < 3; ++j) {
        const uint32_t s64 = scale64(sc[j]);
        const uint32_t dst = sm.mbox + slot * kMboxStage + (4 * j + h) * 1024 + lane * 16;
        sts128(dst, decode8(pk[j].x, s64));
        sts128(dst + 512, decode8(pk[j].y, s64));
      }
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(sm.mbar(slot, h));
        if (q == 3) mbar_arrive(sm.wempty(ws));
        if (warp == 0 && i + SA - 2 >= SA && i + SA - 2 < nk) issue_act(i + SA - 2);
        if (warp == 1 && q == 3 && int(wv) + WS - 1 >= WS && int(wv) + WS - 1 < nk / 4)
          issue_w(int(wv) + WS - 1);
      }
      __syncwarp();
    }
  } else if (tid < 128) {  // producer warpgroup
    setmaxnreg_dec<kProdRegs>();
    if (warp == 0 && lane == 0) {
      for (int i = 0; i < nk; ++i) issue_act(i);
    } else if (warp == 1 && lane == 0 && kMode != kNoDec) {
      for (int w = 0; w < nk / 4; ++w) issue_w(w);
    }
  } else {  // consumers
    setmaxnreg_inc<kConsRegs>();
    const int ct = tid - 128, cw = ct / 128, w = (ct % 128) / 32, cwarp = ct / 32;
    const int g = lane / 4, t = lane % 4, wrow = cw * 32 + 8 * w + g;
    const uint32_t mine = sm.mbox + cwarp * 1024 + lane * 16;  // + slot * kMboxStage + 512 h
    // The twin's shared window is this CTA's shifted by a constant (mapa is linear in the offset).
    uint32_t delta = 0;
    if constexpr (kMode == kPair) delta = peer_smem(mine, uint32_t(rank ^ 1)) - mine;
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
    Frag F[kLa + 1];
    auto release = [&](uint32_t bar) {
      __syncwarp();
      if (lane == 0) mbar_arrive(bar);
    };
    // This thread's own half of stage i (and, for kOwn, the other half too).
    auto decode = [&](Frag& f, int i) {
      if constexpr (kMode == kNoDec) {
        f.o[0] = f.o[1] = f.p[0] = f.p[1] = make_uint4(0x3C003C00u, 0x3C003C00u, 0, 0);
        return;
      }
      const int q = i % 4;
      const uint32_t wv = uint32_t(i / 4), ws = wv % WS;
      if (q == 0) mbar_wait(sm.wfull(ws), (wv / WS) & 1);
      const uint32_t st = sm.wst + ws * kWStage;
      const uint32_t off = wrow * 128 + ((((2 * q + (t >> 1)) ^ (wrow & 7))) << 4) + 8 * (t & 1);
      constexpr bool kBoth = kMode == kOwn || kMode == kOwnQ3 || kMode == kOwnQ1;
      const uint32_t sco = (kBothOps ? 2 * kWBytes : kWBytes) + wrow * 16 + q * 4 + t;
      const uint2 p1 = lds64(st + off);
      const uint32_t s1 = scale64(lds8(st + sco));
      uint2 p2 = make_uint2(0, 0);
      uint32_t s2 = 0;
      if constexpr (kBoth) {
        p2 = lds64(st + kWBytes + off);
        s2 = scale64(lds8(st + sco + kSBytes));
      }
      if (q == 3) release(sm.wempty(ws));
      f.o[0] = decode8(p1.x, s1);
      if constexpr (kMode == kOwnQ1) {  // timing only: one decode8 of four
        f.o[1] = f.p[0] = f.p[1] = make_uint4(f.o[0].x ^ p1.y, f.o[0].y ^ p2.x, f.o[0].z ^ p2.y, f.o[0].w ^ s2);
        return;
      }
      f.o[1] = decode8(p1.y, s1);
      if constexpr (kMode == kOwnQ3) {  // timing only: three decode8 of four
        f.p[0] = decode8(p2.x, s2);
        f.p[1] = make_uint4(f.p[0].x ^ p2.y, f.p[0].y, f.p[0].z, f.p[0].w);
      } else if constexpr (kMode == kOwn) {
        f.p[0] = decode8(p2.x, s2);
        f.p[1] = decode8(p2.y, s2);
      } else if constexpr (kMode == kHalf) {
        f.p[0] = f.o[0];
        f.p[1] = f.o[1];
      } else if constexpr (kMode == kPair) {
        const uint32_t slot = uint32_t(i % R);
        const uint32_t bar = sm.mbar(int(slot), cwarp) + delta;
        st_async16(mine + slot * kMboxStage + delta, f.o[0], bar);
        st_async16(mine + slot * kMboxStage + 512 + delta, f.o[1], bar);
      }
    };
    // The twin's half of stage i, from this CTA's mailbox.
    auto receive = [&](Frag& f, int i) {
      if constexpr (kMode == kHelp) {
        const int slot = i % R;
        mbar_wait(sm.mbar(slot, cwarp % 4), uint32_t(i / R) & 1);
        f.p[0] = lds128(mine + slot * kMboxStage);
        f.p[1] = lds128(mine + slot * kMboxStage + 512);
      }
      if constexpr (kMode == kPair) {
        const int slot = i % R;
        const uint32_t bar = sm.mbar(slot, cwarp);
        if (lane == 0) mbar_arrive_expect_tx(bar, 1024);
        mbar_wait(bar, uint32_t(i / R) & 1);
        f.p[0] = lds128(mine + slot * kMboxStage);
        f.p[1] = lds128(mine + slot * kMboxStage + 512);
      }
    };
    auto issue = [&](const Frag& f, int i) {
      const int s = i % SA;
      mbar_wait(sm.full_a(s), uint32_t(i / SA) & 1);
      if (i == 0 && ct == 0) {  // stored at once: nothing 64-bit stays live over the loop
        args.stamps[4 * blockIdx.x + 0] = gtimer();
        args.stamps[4 * blockIdx.x + 2] = clock64();
      }
      const uint64_t desc = sw128_desc(sm.act + s * kActBytes);
      const uint32_t a0[4] = {f.o[0].x, f.p[0].x, f.o[0].y, f.p[0].y};
      const uint32_t a1[4] = {f.o[0].z, f.p[0].z, f.o[0].w, f.p[0].w};
      const uint32_t a2[4] = {f.o[1].x, f.p[1].x, f.o[1].y, f.p[1].y};
      const uint32_t a3[4] = {f.o[1].z, f.p[1].z, f.o[1].w, f.p[1].w};
      wgmma_fence();
      WgmmaRs<128>::mma(acc, a0, desc);
      WgmmaRs<128>::mma(acc, a1, desc + 2);
      WgmmaRs<128>::mma(acc, a2, desc + 4);
      WgmmaRs<128>::mma(acc, a3, desc + 6);
      wgmma_commit();
    };
#pragma unroll
    for (int a = 0; a < kLa; ++a) decode(F[a], a);
    for (int i0 = 0; i0 < nk; i0 += kLa + 1) {
#pragma unroll
      for (int u = 0; u <= kLa; ++u) {
        const int i = i0 + u;
        if (i < nk) {
          receive(F[u], i);
          issue(F[u], i);
          if constexpr (kMode == kHelp) release(sm.mbar(i % R, 4 + cwarp % 4));
          wgmma_wait<1>(acc);
          if (i >= 1) release(sm.empty_a((i - 1) % SA));
          if (i + kLa < nk) decode(F[(u + kLa) % (kLa + 1)], i + kLa);
        }
      }
    }
    wgmma_wait<0>(acc);
    if (ct == 0) {
      args.stamps[4 * blockIdx.x + 1] = gtimer();
      args.stamps[4 * blockIdx.x + 3] = clock64();
    }
    // d[4j + 2h + e] = D[fragment row 16w + g + 8h][activation row 8j + 2t + e]; h = 0 holds the
    // own operand (B1 on rank 0 and without a cluster, B2 on rank 1).
    const bool swap = kMode == kPair && rank == 1;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int m = mt * BM + 8 * j + 2 * t + e, n = nt * BN + wrow;
        const float x0 = acc[4 * j + e], x1 = acc[4 * j + 2 + e];
        const float gv = swap ? x1 : x0, uv = swap ? x0 : x1;
        args.c[int64_t(m) * args.N + n] = __float2half(gv * uv);
        if (args.dbg) {
          args.dbg[int64_t(m) * 2 * args.N + n] = gv;
          args.dbg[int64_t(m) * 2 * args.N + args.N + n] = uv;
        }
      }
    }
  }
  if constexpr (kCluster) cluster_sync_all();  // nothing in flight into a CTA that has left
#else
  __trap();
#endif
}

struct Shape {
  int M, N, K;
};

void run_shape(const Shape& sh, int sms) {
  const int M = sh.M, N = sh.N, K = sh.K;
  const probe::HostProblem hp(M, N, K);
  const std::vector<float>& act = hp.act;
  // The v5 K order: logical column 8j + 2t + h of a 64-K block holds physical element
  // 16t + P[j][h] (decode8's pair order, docs/fused-kernel.md "One scale block per thread").
  static const int P[8][2] = {{0, 2}, {4, 6}, {1, 3}, {5, 7}, {8, 10}, {12, 14}, {9, 11}, {13, 15}};
  std::vector<__half> act_h(act.size());
  for (int m = 0; m < M; ++m)
    for (int kb = 0; kb < K; kb += 64)
      for (int j = 0; j < 8; ++j)
        for (int t = 0; t < 4; ++t)
          for (int h = 0; h < 2; ++h)
            act_h[size_t(m) * K + kb + 8 * j + 2 * t + h] =
                __float2half(act[size_t(m) * K + kb + 16 * t + P[j][h]]);
  const int tiles = (M / BM) * (N / BN);
  const probe::DeviceProblem dp(hp, act_h, tiles);
  Maps maps;
  maps.act = make_tensor_map(dp.act, 2, K, M, 1, 64, BM, CU_TENSOR_MAP_SWIZZLE_128B);
  maps.pack = make_tensor_map(dp.pack, 1, K / 2, 2 * N, 1, 128, BN, CU_TENSOR_MAP_SWIZZLE_128B);
  maps.scale = make_tensor_map(dp.scale, 1, K / 16, 2 * N, 1, 16, BN, CU_TENSOR_MAP_SWIZZLE_NONE);
  std::printf("shape %dx%dx%d: %d tiles of %d x %d on %d SMs\n", M, N, K, tiles, BM, BN, sms);

  // XS_ONLY=name runs only the variants of that name (e.g. under ncu).
  const char* only = std::getenv("XS_ONLY");
  auto time_variant = [&](auto kernel, bool cluster, const char* name, bool check) {
    if (only && std::strcmp(only, name) != 0) return;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    Args a{M, N, K, dp.c, check ? dp.dbg : nullptr, dp.stamps};
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(tiles));
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = kSmem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster ? 2 : 1;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    probe::time_variant(
        name, hp, dp, tiles, 768.0, check, [&] { CK(cudaLaunchKernelEx(&cfg, kernel, maps, a)); },
        [&](int m, int n, int which) { return size_t(m) * 2 * N + size_t(which) * N + n; });
  };
  time_variant(xs_kernel<kOwn, 1>, false, "own1+chk", true);
  time_variant(xs_kernel<kOwn, 2>, false, "own2+chk", true);
  time_variant(xs_kernel<kPair, 1>, true, "pair1+chk", true);
  time_variant(xs_kernel<kPair, 2>, true, "pair2+chk", true);
  time_variant(xs_kernel<kHelp, 2>, false, "help2+chk", true);
  time_variant(xs_kernel<kHelp, 4>, false, "help4+chk", true);
  for (int rep = 0; rep < 2; ++rep) {
    time_variant(xs_kernel<kOwn, 1>, false, "own1", false);
    time_variant(xs_kernel<kOwn, 2>, false, "own2", false);
    time_variant(xs_kernel<kPair, 1>, true, "pair1", false);
    time_variant(xs_kernel<kPair, 2>, true, "pair2", false);
    time_variant(xs_kernel<kHalf, 2>, true, "half2", false);
    time_variant(xs_kernel<kNoDec, 1>, false, "nodec", false);
    time_variant(xs_kernel<kOwnQ3, 1>, false, "q3", false);
    time_variant(xs_kernel<kOwnQ1, 1>, false, "q1", false);
    time_variant(xs_kernel<kHelp, 2>, false, "help2", false);
    time_variant(xs_kernel<kHelp, 4>, false, "help4", false);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    Shape s;
    if (std::sscanf(argv[i], "%dx%dx%d", &s.M, &s.N, &s.K) != 3 || s.M <= 0 || s.N <= 0 ||
        s.K <= 0 || s.M % (2 * BM) || s.N % BN || s.K % 256) {
      std::fprintf(stderr, "xs_probe: bad shape '%s' (MxNxK, M %% 256, N %% 96, K %% 256 == 0)\n",
                   argv[i]);
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) shapes.push_back({512, 3072, 7168});
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each variant's line survives a later hang
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  for (const auto& s : shapes) run_shape(s, sms);
  return 0;
}
