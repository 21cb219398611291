// v5_kernel.cuh — the fused kernel v5 for Hopper (sm_90a), K % 256 == 0: weights decoded
// straight into register-sourced wgmma operands, activations decoded once per call inside the
// same kernel.
//
//   C[l] = fp16_rn( silu(alpha1 * A[l]·B1[l]^T) * (alpha2 * A[l]·B2[l]^T) )
//
// Why this shape (docs/fused-kernel.md v3, v4, v5): in the v3 kernel the warps that issue wgmma
// also decode both operands into shared memory, and every 64-wide K stage ends with a proxy fence
// and a CTA barrier. Here the tensor-core warps never wait on a shared-memory decode:
//
// * The product is computed transposed, C^T = B·A^T: the weights B1, B2 (N rows, the large
//   operand) are wgmma's A side, decoded by the consumer threads from packed bytes straight into
//   the A-fragment registers (v5_mainloop.cuh); the activations are wgmma's B side, a
//   128B-swizzled fp16 tile in shared memory loaded by TMA. An m64nBMk16 wgmma multiplies 32
//   columns of C (64 weight rows) by BM activations.
// * The activations (M rows, small) are decoded ONCE per call, in phase 0 of the same kernel,
//   into a workspace in global memory (fp16, exact); every tile then streams them by TMA
//   (v5_phase0.cuh). With the local start (256-row tiles, 128 x 96 tiles and their pairs) a CTA's
//   consumers decode the first activation stages of their first unit themselves, so that its
//   first wgmma waits for no other CTA's phase 0 (docs/fused-kernel.md v5d, v5g).
// * Warp roles (one CTA per SM, Config::kThreads threads): consumer warpgroups (2, or 3 at
//   BM = 128) decode the weights, issue the wgmma and run the reduction and the epilogue; in the
//   producer warpgroup, warp 0 streams the activation stages (S-deep ring), warp 1 the weight
//   stages (WS-deep ring), warp 2 is stream-K's helper, warp 3 writes the local start's phase-0
//   batch (v5_producer.cuh, v5_phase0.cuh). The warpgroups split the register file with
//   setmaxnreg (Config).
// * Tile: BM activation rows (128 or 256) x 32 columns of C per consumer warpgroup (64, or 96
//   with three). Schedules (Split, v5_schedule.cuh): a persistent grid over tiles, with split-K
//   through global memory at BM = 128; split-K pairs in 2-CTA clusters; stream-K over all SMs.
//   Parts of a tile are added in a fixed order (v5_reduce.cuh), so the output does not depend on
//   timing.
// * Cross-CTA state (the phase-0 queue, chunk flags, arrival counters, ready flags) lives in the
//   plan's workspace, zeroed once; flags are tagged with the launch's generation, counters are
//   reset by the last user, so consecutive launches on one stream need no reset.
// * Requirements: K % 256 == 0 (16-byte aligned scale rows for TMA). Rows past M or N are zero
//   filled by TMA and their results discarded; stores are masked.
//
// Launch: grid = min(units, SMs) (a pair: exactly 2 x tiles, clusters of 2; stream-K: the grid of
// stream_k_shape), block = Cfg::kThreads, dynamic shared memory Cfg::kSmemBytes. Args::splits is
// 1 or 2..4 (Tiles at BM = 128 with two consumer warpgroups), 2 (Pair), or stream_k_shape's parts
// (StreamK). `Probe` is the timing policy (v5_probe.cuh): NoProbe in the product.
#pragma once
#include <cstdint>

#include "ptx.cuh"
#include "v5_config.cuh"
#include "v5_epilogue.cuh"
#include "v5_mainloop.cuh"
#include "v5_phase0.cuh"
#include "v5_probe.cuh"
#include "v5_producer.cuh"
#include "v5_reduce.cuh"
#include "v5_schedule.cuh"

namespace nvfp4::gpu::fused::v5 {

// What every phase of one CTA reads: the launch's arguments, the shared-memory map, the
// schedule, this thread, and the probe.
template <class Cfg_, Split kSplit, class Probe_>
struct Kernel {
  using Cfg = Cfg_;
  using Probe = Probe_;
  static constexpr bool kPair = kSplit == Split::Pair;
  static constexpr bool kStream = kSplit == Split::StreamK;
  // The local start (v5_phase0.cuh): the 256-row tiles and pairs and the 128 x 96 ones, not
  // stream-K or the 128 x 64 tiles (docs/fused-kernel.md v5d, v5g). Its kernels issue the start's
  // first load while the queue's atomic is in flight (early_box_setup); the others take the
  // queue in the setup.
  static constexpr bool kLocalStart = (Cfg::BM == 256 || Cfg::kWGs == 3) && !kStream;
  const Args& args;
  Smem<Cfg> sm;
  int tid;
  Schedule<kStream> sched;
  Units<kStream> units;
  bool early_box;  // the local start's box is issued (a full phase-0 batch fits beside it)
  Probe& probe;
};

template <class Cfg, Split kSplit, class Probe = NoProbe>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    dual_gemm_kernel(const __grid_constant__ Maps maps, const Args args) {
#if defined(NVFP4_FUSED_SM90A)
  using namespace ptx;
  using K = Kernel<Cfg, kSplit, Probe>;
  constexpr int BM = Cfg::BM, S = Cfg::S, kConsumers = Cfg::kConsumers;
  static_assert(!K::kStream || (BM == 256 && Cfg::kWGs == 2), "stream-K is for 256-row tiles");
  extern __shared__ __align__(1024) uint8_t smem[];
  if constexpr (K::kPair) {  // one unit per CTA, or the cluster barriers below would not match
    if (gridDim.x != unsigned(args.L * args.m_tiles * args.n_tiles * 2) || args.splits != 2)
      __trap();
  }
  if constexpr (Cfg::kWGs != 2 && !K::kPair) {  // (no split-K reduction compiled, see Config)
    if (args.splits != 1) __trap();
  }
  const Smem<Cfg> sm((smem_addr(smem) + 1023u) & ~1023u);
  const int tid = threadIdx.x;
  Probe probe;
  probe.enter(tid == 0);
  const Schedule<K::kStream> sched(args);

  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(sm.full_bar + 8 * s, 1);
      mbar_init(sm.empty_bar + 8 * s, kConsumers / 32);
    }
    for (int s = 0; s < Cfg::WS; ++s) {
      mbar_init(sm.wfull_bar + 8 * s, 1);
      mbar_init(sm.wempty_bar + 8 * s, kConsumers / 32);
    }
    mbar_init(sm.ph0_bar, 1);
    mbar_init(sm.ld_bar, 1);
    if constexpr (K::kLocalStart) mbar_init(sm.q_bar, 2);
    mbar_init_fence();
    if constexpr (!K::kLocalStart) take_batch(args, sm.scratch, sched.batch);
  }
  // (The local start's kernels take the generation and the phase-0 batch after this barrier.)
  __syncthreads();
  unsigned long long gen = 0;
  if constexpr (!K::kLocalStart) gen = lds_u64(sm.scratch);
  K k{args, sm, tid, sched, Units<K::kStream>(sched),
      K::kLocalStart && sched.batch <= S, probe};
  probe.setup_done(k);
  if constexpr (K::kLocalStart) gen = early_box_setup(k, maps);
  // This CTA's phase-0 batch (nb chunks from q, as thread 0 took it from the queue into scratch)
  // and nl, the activation stages of its first unit that its consumers decode locally
  // (decode_start); nl = 0 where a full batch would not fit beside them (the box is issued before
  // nb is known: early_box) and in the kernels without the local start; then phase 0 runs first,
  // through the whole ring. The box is consumed iff nl > 0: then nb <= batch <= S and the first
  // unit has kb1 - kb0 >= 4 K blocks (a whole tile, K % 256 == 0, or a pair's K half, which the
  // host offers only with K >= 512), so nl >= 1. Each role reads it where it needs it. (A lambda
  // over these locals, not a function of the context: so written, the compiler keeps nb's
  // branch and the machine code stays as tools/cubin_text_compare.py checks it.)
  const int chunks = sched.chunks, batch = sched.batch;
  const uint32_t scratch = sm.scratch;
  auto plan = [&](int& q, int& nb, int& nl) {
    q = int(lds32(scratch + 8));
    nb = q < chunks ? min(batch, chunks - q) : 0;
    nl = 0;
    if (K::kLocalStart && k.early_box) {
      int l, mt, nt, split, kb0, kb1;
      k.units.unit_of(k.units.first_u, l, mt, nt, split, kb0, kb1);
      nl = min(S + 1 - max(nb, 1), kb1 - kb0);
      if constexpr (S > 4) nl = min(nl, 4);  // one 4-chunk box
    }
  };
  const unsigned long long tag = gen + 1;

  if (tid >= kConsumers) {
    setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid == kConsumers + 32) weight_producer(k, maps);
    if (tid / 32 == kConsumers / 32) activation_producer(k, maps, gen, tag, plan);
    if (tid / 32 == kConsumers / 32 + 3) phase0_warp(k, maps, tag, plan);
    if (tid / 32 == kConsumers / 32 + 2) probe.watch_start(k, plan);
    if constexpr (K::kStream) {
      if (tid / 32 == kConsumers / 32 + 2) stream_k_helper(k, tag);
    }
    if constexpr (K::kPair) {  // the consumers' two cluster barriers (pair_exchange)
      cluster_sync_all();
      cluster_sync_all();
    }
  } else {
    setmaxnreg_inc<Cfg::kConsumerRegs>();
    // Phase 0: this CTA's batch of activation chunks (taken from the queue in the setup), with
    // the local start or alone; whatever is left in the queue is taken by the activation
    // producer of a CTA that waits for it (v5_producer.cuh). Then the ring is the producer's.
    int q, nb, nl;
    plan(q, nb, nl);
    if (nl > 0)
      consumer_local_start(k, maps, q, nb, nl);
    else if (q < chunks) {
      constexpr bool kFetch = !K::kLocalStart;
      decode_batch_tma<BM, 4, kFetch>(args, maps, q, nb, tid, kConsumers, sm.ring, S,
                                      sm.ld_bar, [] { consumer_sync(kConsumers); }, tid == 0);
      probe.time(tid == 0, Event::Decoded);
      if (tid == 0) publish_chunks(args, q, nb, tag);
      probe.time(tid == 0, Event::Published);
    }
    if (nl == 0 && tid == 0) mbar_arrive(sm.ph0_bar);  // the ring is free for the producer
    const ConsumerThread th(tid);
    uint32_t it = 0, wit = 0;  // activation and weight stages consumed
    for (int u = k.units.first_u; u < k.units.end_u; u = k.units.next_u(u)) {
      int l, mt, nt, split, kb0, kb1;
      k.units.unit_of(u, l, mt, nt, split, kb0, kb1);
      const Unit x{l, mt, nt, split, kb0, kb1};
      float acc[Cfg::kAcc];
#pragma unroll
      for (int i = 0; i < Cfg::kAcc; ++i) acc[i] = 0.0f;
      consumer_mainloop(k, th, x, acc, it, wit);
      const int tile = k.units.tile_of(u);
      int m_out = 0;  // first row of C this CTA writes, within the tile
      if constexpr (K::kPair) m_out = pair_exchange(k, acc, x.split);
      if constexpr (K::kStream) {
        if (!stream_k_reduce(k, acc, x, tile, it, tag)) continue;
      }
      if constexpr (!K::kStream && !K::kPair && BM == 128 && Cfg::kWGs == 2) {
        // Split-K through global memory (BM = 128, two consumer warpgroups; v5_reduce.cuh has
        // the protocol): the last of the tile's units to arrive adds the partials in split
        // order, the others write theirs and go on. (Written here rather than as a function of
        // v5_reduce.cuh: as a separate function the compiler orders the sum's registers
        // differently, and tools/cubin_text_compare.py holds the machine code fixed.)
        if (args.splits > 1) {
          const uint32_t flag = sm.scratch + 12;
          constexpr int kNT = Cfg::kNT;
          consumer_sync(kConsumers);
          if (tid == 0) {
            const uint32_t old = atomicAdd(args.tile_count + tile, 1u);
            sts32(flag, old == uint32_t(args.splits - 1) ? 1u : 0u);
          }
          consumer_sync(kConsumers);
          const bool last = lds32(flag) != 0;
          float* const mine = args.partials + int64_t(u) * 2 * BM * kNT;
          if (!last) {
#pragma unroll
            for (int i = 0; i < Cfg::kAcc / 4; ++i)
              __stcg(reinterpret_cast<float4*>(mine) + i * kConsumers + tid,
                     make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
            consumer_sync(kConsumers);
            if (tid == 0) {
              __threadfence();
              st_release(args.ready + u, tag);
            }
            continue;
          }
          if (tid == 0) {
            args.tile_count[tile] = 0;  // next launch starts from zero (this one is done with it)
            for (int s = 0; s < args.splits; ++s)
              if (s != x.split) wait_tag(args.ready + int64_t(tile) * args.splits + s, tag);
            __threadfence();
          }
          consumer_sync(kConsumers);
          // acc <- the tile's partials in split order (this unit's own one from registers).
#pragma unroll
          for (int i = 0; i < Cfg::kAcc / 4; ++i) {
            float4 v = make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]);
            float4 sum = v;
            for (int s = 0; s < args.splits; ++s) {
              const float4 p =
                  s == x.split ? v
                               : __ldcg(reinterpret_cast<const float4*>(
                                            args.partials +
                                            (int64_t(tile) * args.splits + s) * 2 * BM * kNT) +
                                        i * kConsumers + tid);
              if (s == 0) {
                sum = p;
              } else {
                sum.x += p.x; sum.y += p.y; sum.z += p.z; sum.w += p.w;
              }
            }
            acc[4 * i] = sum.x; acc[4 * i + 1] = sum.y; acc[4 * i + 2] = sum.z; acc[4 * i + 3] = sum.w;
          }
        }
      }
      epilogue(k, th, acc, x, m_out, it);
    }
  }
  probe.time(tid == 0, Event::End);
#else
  __trap();
#endif
}

}  // namespace nvfp4::gpu::fused::v5
