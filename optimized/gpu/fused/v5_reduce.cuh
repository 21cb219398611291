// v5_reduce.cuh — the v5 kernel's reductions of a tile computed in K parts, after the main loop
// and before the epilogue. Each adds the parts in a fixed order, so the result does not depend on
// which part finishes last.
//
// * Split::Pair: the two K halves of a tile run in the two CTAs of a 2-CTA cluster (one unit per
//   CTA, grid = 2 x tiles); each sends the half of its fp32 accumulators that the other finishes
//   through distributed shared memory into the other's (then idle) activation ring, adds what it
//   received and writes BM / 2 rows of C.
// * Split::StreamK: a tile shared by np CTAs (parts 0..np-1 in K order). Each part counts itself
//   in; the last to arrive waits for the others' partials (they have arrived, so they are running
//   and will write them without waiting on anything) and adds them in part order, its own at its
//   place; the others write their partial and leave its fence and ready flag to the helper warp
//   (v5_producer.cuh), so they go on with their next unit at once.
// * Split::Tiles with splits > 1 (BM = 128, two consumer warpgroups only, Config): each unit that
//   is not the last of its tile to arrive writes its fp32 partial to the workspace; the last adds
//   all partials in split order 0..splits-1 and runs the epilogue. Arrival counters are reset by
//   the last arriver; ready flags are generation-tagged. (This one is written in the kernel's
//   body, v5_kernel.cuh.)
// A partial is 2 * BM * kNT floats, float4 i of thread tid at i * kConsumers + tid.
#pragma once
#include <cstdint>

#include "ptx.cuh"
#include "v5_config.cuh"
#include "v5_probe.cuh"
#include "v5_schedule.cuh"

namespace nvfp4::gpu::fused::v5 {

// The pair's exchange (rank = split): rank r finishes rows [r BM/2, (r + 1) BM/2) of the tile,
// kAcc / 8 float4 per thread at [i][tid] of the peer's ring; p0 + p1 either way (fp addition
// commutes), so the result does not depend on the rank. Returns the first row of the tile this
// CTA writes.
template <class K>
__device__ __forceinline__ int pair_exchange(const K& k, float (&acc)[K::Cfg::kAcc], int split) {
  using Cfg = typename K::Cfg;
  constexpr int BM = Cfg::BM, kConsumers = Cfg::kConsumers;
  const int tid = k.tid;
  const uint32_t rank = uint32_t(split);
  cluster_sync_all();  // 1: both main loops are done, both rings are free
  k.probe.time(tid == 0, Event::ClusterSync1);
  const uint32_t dst = peer_smem(k.sm.ring, rank ^ 1u);
#pragma unroll
  for (int i = 0; i < Cfg::kAcc / 8; ++i) {
    float v[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) v[c] = rank ? acc[4 * i + c] : acc[Cfg::kAcc / 2 + 4 * i + c];
    st_cluster_f4(dst + uint32_t(i * kConsumers + tid) * 16u, v[0], v[1], v[2], v[3]);
  }
  cluster_sync_all();  // 2: the halves have arrived
  k.probe.time(tid == 0, Event::ClusterSync2);
#pragma unroll
  for (int i = 0; i < Cfg::kAcc / 8; ++i) {
    const uint4 r = lds128(k.sm.ring + uint32_t(i * kConsumers + tid) * 16u);
    const float x[4] = {__uint_as_float(r.x), __uint_as_float(r.y), __uint_as_float(r.z),
                        __uint_as_float(r.w)};
#pragma unroll
    for (int c = 0; c < 4; ++c)
      acc[4 * i + c] = (rank ? acc[Cfg::kAcc / 2 + 4 * i + c] : acc[4 * i + c]) + x[c];
  }
  return (BM / 2) * int(rank);
}

// Stream-K's reduction of unit x (tile `tile`, `it` activation stages consumed so far). Returns
// false where this CTA is not the last part of the tile (its partial is written; the caller goes
// on with its next unit), true where acc now holds the whole tile.
template <class K>
__device__ __forceinline__ bool stream_k_reduce(const K& k, float (&acc)[K::Cfg::kAcc],
                                                const Unit& x, int tile, uint32_t it,
                                                unsigned long long tag) {
  using Cfg = typename K::Cfg;
  constexpr int BM = Cfg::BM, kNT = Cfg::kNT, kConsumers = Cfg::kConsumers;
  const Args& args = k.args;
  const int tid = k.tid, split = x.split;
  const int np = k.units.parts_of(tile);
  if (np > 1) {
    const uint32_t flag = k.sm.scratch + 12;
    float* const slots = args.partials + int64_t(tile) * args.splits * 2 * BM * kNT;
    unsigned long long* const rdy = args.ready + int64_t(tile) * args.splits;
    consumer_sync(kConsumers);
    if (tid == 0) {
      const uint32_t old = atomicAdd(args.tile_count + tile, 1u);
      const bool last = old == uint32_t(np - 1);
      if (last) args.tile_count[tile] = 0;  // the next launch starts from zero
      sts32(flag, last ? 1u : 0u);
    }
    consumer_sync(kConsumers);
    const bool last = lds32(flag) != 0;
    if (!last || split >= 2) {
      float* const mine = slots + int64_t(split) * 2 * BM * kNT;
#pragma unroll
      for (int i = 0; i < Cfg::kAcc / 4; ++i)
        __stcg(reinterpret_cast<float4*>(mine) + i * kConsumers + tid,
               make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
    }
    // The helper warp fences and flags this part (harmless for the last one: nobody waits for it).
    bar_arrive<3>(kConsumers + 32);
    if (!last) {
      k.probe.time(tid == 0 && it == uint32_t(x.kb1 - x.kb0), Event::StreamKCounted);
      return false;
    }
    if (tid == 0) {
      for (int q = 0; q < np; ++q)
        if (q != split) wait_tag(rdy + q, tag);
      __threadfence();
    }
    k.probe.time(tid == 0, Event::StreamKWaited);
    consumer_sync(kConsumers);
    if (split >= 2) {  // own part written above: all parts from memory, in order
#pragma unroll
      for (int i = 0; i < Cfg::kAcc / 4; ++i) {
        const float4 v = __ldcg(reinterpret_cast<const float4*>(slots) + i * kConsumers + tid);
        acc[4 * i] = v.x; acc[4 * i + 1] = v.y; acc[4 * i + 2] = v.z; acc[4 * i + 3] = v.w;
      }
    }
    // Parts 0 + 1 + 2 + ... in this order: from the own registers for split 0 or 1 (a + b is
    // b + a exactly), else (own part written above) part 0 was loaded into acc.
    for (int q = split >= 2 ? 1 : 0; q < np; ++q) {
      if (split < 2 && q == split) continue;
      const float4* part = reinterpret_cast<const float4*>(slots + int64_t(q) * 2 * BM * kNT);
#pragma unroll
      for (int i = 0; i < Cfg::kAcc / 4; ++i) {
        const float4 v = __ldcg(part + i * kConsumers + tid);
        acc[4 * i] += v.x; acc[4 * i + 1] += v.y; acc[4 * i + 2] += v.z; acc[4 * i + 3] += v.w;
      }
    }
    k.probe.time(tid == 0, Event::StreamKSummed);
  }
  return true;
}

}  // namespace nvfp4::gpu::fused::v5
