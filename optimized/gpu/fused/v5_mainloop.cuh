// v5_mainloop.cuh — the v5 kernel's consumers' main loop over one unit: per 64-K activation stage,
// decode this thread's weight fragments from the weight ring into registers and issue four
// register-sourced wgmma m64nBMk16 on the activation stage in shared memory.
//
// Fragment rows: warp w of consumer warpgroup wg holds rows 16w+g (B1 row n0+32wg+8w+g) and
// 16w+g+8 (B2 row of the same n), g = lane/4; so accumulator elements d[4j+e] (G) and d[4j+2+e]
// (U) of one thread belong to the same output element, and the silu·mul epilogue is register only.
// K order: thread t = lane%4 decodes its rows' physical elements [16t, 16t+16) of each 64-wide K
// block — exactly one scale block, 8 packed bytes — and uses them over the block's four k16 steps
// at the logical columns kLogicalWord gives; phase 0 writes the activations in the same permuted
// order, so the dot products are unchanged (fp32 accumulation of exact products).
// Invariants: no proxy fence and no CTA barrier in the loop; one wgmma group stays queued while a
// thread decodes the next stage (with two queued the decode ran slower, docs/fused-kernel.md v5);
// no non-wgmma instruction reads the accumulators between the first wgmma and the last wait (else
// ptxas serializes every wgmma: ctest ptxas_fused_codegen, docs/fused-kernel.md v5e).
#pragma once
#include <cstdint>

#include "fp4_decode.cuh"
#include "ptx.cuh"
#include "v5_config.cuh"
#include "v5_probe.cuh"
#include "v5_schedule.cuh"
#include "wgmma.cuh"

namespace nvfp4::gpu::fused::v5 {

// A consumer thread's coordinates: warpgroup wg, warp w in it, lane, fragment row group g and
// column group t, and its weight row within the tile.
struct ConsumerThread {
  int tid, wg, w, lane, g, t, wrow;
  __device__ __forceinline__ explicit ConsumerThread(int tid_)
      : tid(tid_),
        wg(tid_ / 128),
        w((tid_ % 128) / 32),
        lane(tid_ % 32),
        g(lane / 4),
        t(lane % 4),
        wrow(wg * 32 + 8 * w + g) {}
};

// The main loop of unit `x`: acc (zeroed by the caller) += this thread's part of the unit's dual
// GEMM. `it` and `wit` count the activation and weight stages this thread has consumed (over the
// CTA's units); both rings' stages are released as soon as they are read.
template <class K>
__device__ __forceinline__ void consumer_mainloop(const K& k, const ConsumerThread& th,
                                                  const Unit& x, float (&acc)[K::Cfg::kAcc],
                                                  uint32_t& it, uint32_t& wit) {
  using Cfg = typename K::Cfg;
  constexpr int BM = Cfg::BM, S = Cfg::S;
  const int lane = th.lane, t = th.t, wrow = th.wrow, tid = th.tid;
  const int n = x.kb1 - x.kb0;  // a multiple of 4
  uint32_t f0[4][4], f1[4][4];

  auto release = [&](uint32_t bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };
  // Decodes this thread's 16 + 16 weight elements of stage i (K block kb0 + i) into f. The
  // weight stage is waited for at its first K block and released after its last one is in
  // registers (the tensor cores never read it).
  auto load_frag = [&](uint32_t(&f)[4][4], int i) {
    const int q = i % 4;
    const uint32_t w = wit + uint32_t(i / 4);
    const uint32_t ws = w % Cfg::WS;
    if (q == 0) mbar_wait(k.sm.wfull_bar + 8 * ws, (w / Cfg::WS) & 1);
    const uint32_t wst = k.sm.wring + ws * Cfg::kWStageBytes;
    // 16-byte unit 2q + t/2 of row wrow, stored at unit ^ (wrow % 8) (128B swizzle).
    const uint32_t off = wrow * 128 + ((((2 * q + (t >> 1)) ^ (wrow & 7))) << 4) + 8 * (t & 1);
    const uint2 p1 = lds64(wst + off), p2 = lds64(wst + Cfg::kWBytes + off);
    const uint32_t sb = wst + 2 * Cfg::kWBytes + wrow * 16 + q * 4 + t;
    const uint32_t s1 = scale64(lds8(sb)), s2 = scale64(lds8(sb + Cfg::kSBytes));
    if (q == 3) release(k.sm.wempty_bar + 8 * ws);
    const uint4 b1lo = decode8(p1.x, s1);
    const uint4 b1hi = decode8(p1.y, s1);
    const uint4 b2lo = decode8(p2.x, s2);
    const uint4 b2hi = decode8(p2.y, s2);
    // Step j/2 uses decoded pairs j (cols 2t..) and j+1 (cols 2t+8..) of B1 (row g) and B2
    // (row g+8).
    f[0][0] = b1lo.x; f[0][1] = b2lo.x; f[0][2] = b1lo.y; f[0][3] = b2lo.y;
    f[1][0] = b1lo.z; f[1][1] = b2lo.z; f[1][2] = b1lo.w; f[1][3] = b2lo.w;
    f[2][0] = b1hi.x; f[2][1] = b2hi.x; f[2][2] = b1hi.y; f[2][3] = b2hi.y;
    f[3][0] = b1hi.z; f[3][1] = b2hi.z; f[3][2] = b1hi.w; f[3][3] = b2hi.w;
  };
  // Issues the four k16 steps of activation stage i with fragments f.
  auto issue = [&](const uint32_t(&f)[4][4], int i) {
    const uint32_t q = it + uint32_t(i);
    mbar_wait(k.sm.full_bar + 8 * (q % S), (q / S) & 1);
    k.probe.time(tid == 0 && q == 0, Event::FirstWgmma);
    k.probe.clock(tid == 0 && q == 0, Event::FirstWgmmaClock);
    const uint64_t desc = sw128_desc(k.sm.ring + (q % S) * Cfg::kActBytes);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < 4; ++s) WgmmaRs<BM>::mma(acc, f[s], desc + 2 * s);
    wgmma_commit();
  };
  // One step: issue stage i from `cur`; once wgmma(i-1) is done, release its activation stage
  // and decode stage i+1 into `next` (the set wgmma(i-1) read).
  auto step = [&](const uint32_t(&cur)[4][4], uint32_t(&next)[4][4], int i) {
    issue(cur, i);
    wgmma_wait<1>(acc);
    if (i >= 1) release(k.sm.empty_bar + 8 * ((it + uint32_t(i - 1)) % S));
    if (i + 1 < n) load_frag(next, i + 1);
  };
  load_frag(f0, 0);
  for (int i = 0; i < n; i += 2) {
    step(f0, f1, i);
    if (i + 1 < n) step(f1, f0, i + 1);
  }
  wgmma_wait<0>(acc);
  // Phase 0's TMA stores have read the staging tile and ring slots (the epilogue, the pair's
  // exchange and later stages write them).
  if (it == 0) mbar_wait(k.sm.ph0_bar, 0);
  k.probe.time_at(lane == 0 && it == 0 && tid < 256, int(Event::WarpLoopDone) + tid / 32);
  k.probe.time(tid == 0 && it == 0, Event::FirstUnitDone);
  k.probe.clock(tid == 0 && it == 0, Event::FirstUnitDoneClock);
  k.probe.time(tid == 0 && it != 0, Event::LaterUnitDone);
  release(k.sm.empty_bar + 8 * ((it + uint32_t(n - 1)) % S));
  it += uint32_t(n);
  wit += uint32_t(n / 4);
}

}  // namespace nvfp4::gpu::fused::v5
