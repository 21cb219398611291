// v5_producer.cuh — the v5 kernel's producer warpgroup (128 threads, few registers): lane 0 of
// warp 0 streams the activation stages, lane 0 of warp 1 the weight stages, warp 2 is stream-K's
// helper, warp 3 the phase-0 warp (v5_phase0.cuh). Each ring has full / empty mbarriers; the
// consumers release a stage per warp (Config::kConsumers / 32 arrivals).
#pragma once
#include <cstdint>

#include "ptx.cuh"
#include "v5_config.cuh"
#include "v5_phase0.cuh"
#include "v5_probe.cuh"
#include "v5_schedule.cuh"

namespace nvfp4::gpu::fused::v5 {

// The weight producer (lane 0 of warp 1): each weight stage (256 K of B1, B2 and their scales) as
// soon as its ring slot is free — WS stages ahead of the consumers, whatever the activation
// stream is waiting for (phase 0 included), so the consumers never wait for weights behind an
// activation slot. The second stage is issued only once the first has arrived: at the start
// every CTA asks DRAM for its first stages at once, and the first wgmma waits for the first stage
// only (docs/fused-kernel.md v5f).
template <class K>
__device__ __forceinline__ void weight_producer(const K& k, const Maps& maps) {
  using Cfg = typename K::Cfg;
  constexpr int kNT = Cfg::kNT;
  prefetch_tensormap(&maps.b1);
  prefetch_tensormap(&maps.b2);
  prefetch_tensormap(&maps.sfb1);
  prefetch_tensormap(&maps.sfb2);
  int u = k.units.first_u;
  uint32_t wit = 0;  // weight stages issued
  for (; u < k.units.end_u; u = k.units.next_u(u)) {
    Unit x;
    k.units.unit_of(u, x.l, x.mt, x.nt, x.split, x.kb0, x.kb1);
    for (int kb = x.kb0; kb < x.kb1; kb += 4, ++wit) {
      const int ws = int(wit % Cfg::WS);
      if (wit >= uint32_t(Cfg::WS)) mbar_wait(k.sm.wempty_bar + 8 * ws, ((wit / Cfg::WS) - 1) & 1);
      if (wit == 1) mbar_wait(k.sm.wfull_bar, 0);
      const uint32_t wfull = k.sm.wfull_bar + 8 * ws;
      const uint32_t wst = k.sm.wring + ws * Cfg::kWStageBytes;
      mbar_arrive_expect_tx(wfull, Cfg::kWStageBytes);
      tma_load_3d(wst, &maps.b1, kb * 32, x.nt * kNT, x.l, wfull);
      tma_load_3d(wst + Cfg::kWBytes, &maps.b2, kb * 32, x.nt * kNT, x.l, wfull);
      tma_load_3d(wst + 2 * Cfg::kWBytes, &maps.sfb1, kb * 4, x.nt * kNT, x.l, wfull);
      tma_load_3d(wst + 2 * Cfg::kWBytes + Cfg::kSBytes, &maps.sfb2, kb * 4, x.nt * kNT, x.l,
                  wfull);
    }
  }
}

// The activation producer (warp 0; lane 0 issues): each activation stage of the CTA's units into
// the S-deep ring once phase 0 has published its chunk (the stages the consumers decoded
// themselves, it < nl, are skipped). The warp polls the chunks' done flags 32 stages at a time (one
// load per lane), so a ready chunk costs no round trip to L2 per stage; while a flag is not set
// and batches are still unclaimed, it decodes one itself (their CTAs may not be running: this is
// what makes the kernel deadlock-free), else it sleeps.
// At the end it counts this CTA out of the launch: the last CTA to count resets the queue and
// starts the next generation. By then every CTA's producer has finished, so every chunk anyone
// waits for is published and nobody takes from the queue any more; the next launch (same stream)
// starts after this one ends. (Counted here, by a warp that is idle from then on, the fence and
// the contended atomic stay off the consumers' path to the CTA's exit, docs/fused-kernel.md v5j.)
template <class K, class Plan>
__device__ __forceinline__ void activation_producer(const K& k, const Maps& maps,
                                                    unsigned long long gen, unsigned long long tag,
                                                    const Plan& plan) {
  using Cfg = typename K::Cfg;
  constexpr int BM = Cfg::BM, S = Cfg::S;
  const Args& args = k.args;
  const int chunks = k.sched.chunks, batch = k.sched.batch;
  const int lane = k.tid % 32;
  if (lane == 0) prefetch_tensormap(&maps.act);
  int q0, nb0, nl;
  plan(q0, nb0, nl);
  uint32_t it = 0;  // activation stages issued (or decoded by the consumers)
  for (int u = k.units.first_u; u < k.units.end_u; u = k.units.next_u(u)) {
    const Unit x = k.units.unit(u);
    const unsigned long long* state = args.chunk_state + int64_t(x.l) * args.m_tiles + x.mt;
    const int64_t kb_stride = int64_t(args.L) * args.m_tiles;
    uint32_t ready = 0;
    for (int kb = x.kb0; kb < x.kb1; ++kb, ++it) {
      if (it < uint32_t(nl)) continue;  // decoded into the ring by the consumers
      {
        // (Re)poll the window [kb, kb + 32) whenever stage kb is not known to be ready; the
        // proxy fence after a poll orders the chunks' generic-proxy writes (acquired above)
        // before the TMA reads that follow (one fence per poll, not per stage: it is slow).
        const int j = (kb - x.kb0) % 32;
        if (j == 0) ready = 0;
        bool polled = false;
        while (!((ready >> j) & 1u)) {
          const int kq = kb - j + lane;
          const bool ok = kq >= x.kb1 || ld_acquire(state + kq * kb_stride) == tag;
          ready = __ballot_sync(0xFFFFFFFFu, ok);
          polled = true;
          if ((ready >> j) & 1u) break;
          int q = chunks;
          if (lane == 0 &&
              *reinterpret_cast<volatile unsigned int*>(&args.sync->next_chunk) < uint32_t(chunks))
            q = int(atomicAdd(&args.sync->next_chunk, uint32_t(batch)));
          q = __shfl_sync(0xFFFFFFFFu, q, 0);
          if (q < chunks) {
            const int nb = min(batch, chunks - q);
            decode_batch<BM, 1>(args, q, nb, lane, 32);  // (the producer has few registers)
            k.probe.count(lane == 0, Event::Steal);
            publish_batch(args, q, nb, tag, [] { __syncwarp(); }, lane == 0);
          } else {
            __nanosleep(128);
          }
        }
        if (polled && lane == 0) fence_proxy_async_global();
        k.probe.time(lane == 0 && it == 0, Event::ProducerFirstReady);
      }
      if (lane == 0) {
        // Phase 0 stages its chunks in the activation ring (and the staging tile).
        if (it == uint32_t(nl)) mbar_wait(k.sm.ph0_bar, 0);
        const int s = int(it % S);
        if (it >= uint32_t(S)) mbar_wait(k.sm.empty_bar + 8 * s, ((it / S) - 1) & 1);
        const uint32_t full = k.sm.full_bar + 8 * s;
        mbar_arrive_expect_tx(full, Cfg::kActBytes);
        tma_load_3d(k.sm.ring + s * Cfg::kActBytes, &maps.act, kb * kBK, x.mt * BM, x.l, full);
      }
    }
  }
  if (lane == 0) {
    __threadfence();
    const uint32_t old = atomicAdd(&args.sync->done_ctas, 1u);
    if (old == gridDim.x - 1) {
      args.sync->next_chunk = 0;
      args.sync->done_ctas = 0;
      __threadfence();
      args.sync->gen = gen + 1;
    }
  }
}

// Stream-K's helper warp (warp 2): per unit of a shared tile, waits until the consumers have
// issued their partial's stores (or decided they are last), then makes the partial visible and
// flags it ready, so that the consumers go on with their next unit at once.
template <class K>
__device__ __forceinline__ void stream_k_helper(const K& k, unsigned long long tag) {
  constexpr int kConsumers = K::Cfg::kConsumers;
  for (int u = k.units.first_u; u < k.units.end_u; u = k.units.next_u(u)) {
    const Unit x = k.units.unit(u);
    const int tile = k.units.tile_of(u);
    const int np = k.units.parts_of(tile);
    if (np <= 1) continue;
    bar_sync<3>(kConsumers + 32);
    if (k.tid % 32 == 0) {
      __threadfence();
      st_release(k.args.ready + int64_t(tile) * k.args.splits + x.split, tag);
    }
  }
}

}  // namespace nvfp4::gpu::fused::v5
