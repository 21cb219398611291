// v5_epilogue.cuh — the v5 kernel's epilogue: silu·mul of the accumulators in registers ->
// fp16 staging tile in shared memory [rows of C][kNT columns] -> 16-byte coalesced, masked stores.
// All accumulators are read in one block after the main loop's last wait (reading part of them
// after a barrier or a store loop made ptxas serialize every wgmma of the main loop: ctest
// ptxas_fused_codegen, docs/fused-kernel.md v5e).
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include "ptx.cuh"
#include "silu.hpp"
#include "v5_config.cuh"
#include "v5_mainloop.cuh"
#include "v5_probe.cuh"
#include "v5_schedule.cuh"

namespace nvfp4::gpu::fused::v5 {

// The division policy of the v5 epilogue's silu_mul (reference/silu.hpp): x / d without the IEEE
// division's slow-path branch, which splits every element into its own basic block and leaves the
// epilogue latency-bound (docs/fused-kernel.md v5b). q = x / d, d = 1 + expf(-x) in [1, inf], is
// rcp.approx plus one FMA correction step. For -88.7 < x < -87.3, 1/d is subnormal, where
// rcp.approx.ftz returns 0 and the non-ftz rcp takes a slow path; so the ftz reciprocal is taken
// of d * 2^-32 (normal for every finite d >= 1) and scaled back by an exact-or-subnormal multiply:
// with r = (1 + e1) / d, |e1| <= 2^-23 (a few ulp more where r is subnormal, x < -87.3: the
// correction step multiplies the error by e1 again), the residual x - d*q0 is formed by one FMA
// and q0 + r*residual is within 0.5 ulp + 2^-42 relative of x / d — the error the harness's
// epilogue bound allows for the division (docs/design.md §4). Selects cover the ends: d = inf
// (x < -88.7) gives x / d = -0, d = 1 (x > ~17, x = +inf included, where the FMA step would make
// inf - inf) gives x; NaN propagates. tests/gpu/test_fused.cu compares it with the IEEE division.
struct RcpDivide {
  __device__ __forceinline__ static float quotient(float x, float d) {
    float rs;
    asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(rs) : "f"(d * 0x1p-32f));
    const float r = rs * 0x1p-32f;
    const float q0 = x * r;
    float q = fmaf(fmaf(-d, q0, x), r, q0);
    q = d == __int_as_float(0x7F800000) ? copysignf(0.0f, x) : q;
    q = d == 1.0f ? x : q;
    return q;
  }
};

// C[l, m0 + r, n0 + c] for the tile of unit x (rows from m_out within the tile: the pair writes
// half of them) = fp16(silu_mul(G, U)) of this thread's accumulators, staged, then stored: each
// thread's 16-byte parts of the staged rows in one unrolled pass (a constant trip count for every
// configuration), the part's words held in registers also where a ragged row's last part is
// written element by element (indexing them with a variable put them in local memory: a
// shared-to-local-to-global round trip per part, docs/fused-kernel.md v5n).
template <class K>
__device__ __forceinline__ void epilogue(const K& k, const ConsumerThread& th,
                                         const float (&acc)[K::Cfg::kAcc], const Unit x,
                                         int m_out, uint32_t it) {
  using Cfg = typename K::Cfg;
  constexpr int BM = Cfg::BM, kNT = Cfg::kNT, kConsumers = Cfg::kConsumers;
  const Args& args = k.args;
  const int tid = th.tid, t = th.t, wrow = th.wrow;
  const uint32_t staging = k.sm.staging;
  consumer_sync(kConsumers);  // the previous tile's staging reads are done
  k.probe.time(tid == 0 && it == uint32_t(x.kb1 - x.kb0), Event::EpilogueSync);
  constexpr int kRowsOut = K::kPair ? BM / 2 : BM;  // rows of C this CTA writes
#pragma unroll
  for (int j = 0; j < kRowsOut / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float y = nvfp4::silu_mul<RcpDivide>(acc[4 * j + e], acc[4 * j + 2 + e], args.alpha1,
                                                 args.alpha2);
      sts16(staging + (8 * j + 2 * t + e) * Cfg::kStRow + wrow * 2,
            __half_as_ushort(__float2half_rn(y)));
    }
  }
  consumer_sync(kConsumers);
  k.probe.time(tid == 0 && it == uint32_t(x.kb1 - x.kb0), Event::Staged);
  k.probe.time(tid == 0, Event::LastStaged);
  const int M = args.M, N = args.N;
  __half* const c = args.c;
  const int m0 = x.mt * BM + m_out, n0 = x.nt * kNT;
  const bool vec_ok = (N % 8) == 0;
  constexpr int kParts = kRowsOut * (kNT / 8);  // 16-byte parts of the staged rows
  static_assert(kParts % kConsumers == 0, "every consumer thread stores as many parts");
#pragma unroll
  for (int i = 0; i < kParts / kConsumers; ++i) {
    const int q = tid + i * kConsumers;
    const int r = q / (kNT / 8), cu = q % (kNT / 8);
    const int m = m0 + r, nn = n0 + 8 * cu;
    if (m >= M || nn >= N) continue;
    const uint4 v = lds128(staging + r * Cfg::kStRow + cu * 16);
    __half* out = c + (int64_t(x.l) * M + m) * N + nn;
    if (vec_ok && nn + 8 <= N) {
      *reinterpret_cast<uint4*>(out) = v;
    } else {
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (nn + e < N)
          reinterpret_cast<uint16_t*>(out)[e] = uint16_t(w[e / 2] >> (16 * (e % 2)));
    }
  }
}

}  // namespace nvfp4::gpu::fused::v5
