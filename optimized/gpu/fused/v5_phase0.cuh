// v5_phase0.cuh — phase 0 of the v5 kernel: the activations decoded once per call into the
// workspace (fp16, exact, K permuted per 64-block as kLogicalWord says), and what the rest of the
// kernel needs to know about it.
//
// Phase 0 hands out chunks (BM rows x 64 K, v5_schedule.cuh) through an atomic work queue: each
// CTA's thread 0 takes one batch at the start. Its consumers decode the batch into swizzled tiles
// of the (still idle) activation ring and write them with TMA stores; or, with the local start
// (256-row tiles, 128 x 96 tiles and their pairs), decode the first activation stages of their
// first unit straight into the ring and the batch beside them, which the phase-0 warp then stores.
// A chunk's done flag is tagged with the launch's generation (gen + 1), so nothing is reset
// between calls. Whatever is left in the queue (CTAs that never ran concurrently) is decoded by the
// activation producer of a CTA that waits for it (v5_producer.cuh). A CTA only ever waits for a
// chunk that some running CTA has taken from the queue, and a CTA's own consumers finish their
// batch before their main loop, so the kernel cannot deadlock whatever the number of co-resident
// CTAs.
#pragma once
#include <cstdint>

#include "fp4_decode.cuh"
#include "ptx.cuh"
#include "v5_config.cuh"
#include "v5_schedule.cuh"

namespace nvfp4::gpu::fused::v5 {

// Loads U row blocks (items it = base, base + n, ...; it < items): 64 elements of one activation
// row, read as 32 packed bytes (two 16-byte loads) and 4 scale bytes (one 4-byte load). off_of(it)
// gives the item's element offset in A (and in the workspace), or -1 for no item (past M).
template <int U, class OffOf>
__device__ __forceinline__ void load_items(const Args& a, int items, int base, int n,
                                           OffOf off_of, uint4 (&p)[U][2], uint32_t (&sc)[U],
                                           int64_t (&off)[U]) {
#pragma unroll
  for (int x = 0; x < U; ++x) {
    const int it = base + x * n;
    off[x] = it < items ? off_of(it) : int64_t(-1);
    if (off[x] >= 0) {
      const uint4* src = reinterpret_cast<const uint4*>(a.a + off[x] / 2);
      p[x][0] = __ldg(src);
      p[x][1] = __ldg(src + 1);
      sc[x] = __ldg(reinterpret_cast<const uint32_t*>(a.sfa + off[x] / 16));
    }
  }
}

// Element offset in A of row r of phase-0 chunk c (chunk_of), or -1 past M.
template <int BM>
__device__ __forceinline__ int64_t chunk_row_offset(const Args& a, int c, int r) {
  const Chunk ch = chunk_of(a, c);
  const int m = ch.mt * BM + r;
  return m < a.M ? (int64_t(ch.l) * a.M + m) * a.K + int64_t(ch.kb) * kBK : int64_t(-1);
}

// Phase 0 work items: item `it` of a batch that starts at chunk q is row block (chunk
// q + it / BM, row it % BM).
template <int BM, int U>
__device__ __forceinline__ void load_row_blocks(const Args& a, int q, int items, int base, int n,
                                                uint4 (&p)[U][2], uint32_t (&sc)[U],
                                                int64_t (&off)[U]) {
  load_items<U>(a, items, base, n,
                [&](int it) { return chunk_row_offset<BM>(a, q + it / BM, it % BM); }, p, sc, off);
}

// Decodes one row block into its 8 16-byte units in the workspace's (permuted) order: unit j
// holds logical words 4j..4j+3 = decoded word j of the 16-element blocks 0..3 (kLogicalWord).
__device__ __forceinline__ void decode_row_block(const uint4 (&p)[2], uint32_t sc, uint4 (&out)[8]) {
  uint4 d[4][2];  // decoded words 0..7 of blocks t = 0..3
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const uint32_t s = scale64((sc >> (8 * t)) & 0xFFu);
    const uint4& v = p[t / 2];  // block t: packed bytes 8t..8t+7
    d[t][0] = decode8((t & 1) ? v.z : v.x, s);
    d[t][1] = decode8((t & 1) ? v.w : v.y, s);
  }
  auto word = [&](int t, int j) {
    const uint4& v = d[t][j / 4];
    return (j % 4 == 0) ? v.x : (j % 4 == 1) ? v.y : (j % 4 == 2) ? v.z : v.w;
  };
#pragma unroll
  for (int j = 0; j < 8; ++j) out[j] = make_uint4(word(0, j), word(1, j), word(2, j), word(3, j));
}

// Phase 0 (the producer's fallback): decodes chunks [q, q + nb) into the workspace, thread `tid`
// of `n` taking items tid, tid + n, ... and writing each row block as eight 16-byte stores; the
// loads of U items are issued before any is decoded.
template <int BM, int U>
__device__ void decode_batch(const Args& a, int q, int nb, int tid, int n) {
  const int items = nb * BM;
  for (int base = tid; base < items; base += U * n) {
    uint4 p[U][2];
    uint32_t sc[U];
    int64_t off[U];
    load_row_blocks<BM, U>(a, q, items, base, n, p, sc, off);
#pragma unroll
    for (int x = 0; x < U; ++x) {
      if (off[x] < 0) continue;  // past the batch or past M (TMA zero-fills those rows)
      uint4 out[8];
      decode_row_block(p[x], sc[x], out);
      uint4* dst = reinterpret_cast<uint4*>(a.act + off[x]);
#pragma unroll
      for (int j = 0; j < 8; ++j) dst[j] = out[j];
    }
  }
}

// Phase 0's loads by TMA: nc chunks (chunk ci is src(ci)), each the 32 packed bytes
// and 16 scale bytes (from K block kb & ~3: a box starts 16-byte aligned in its row) of BM rows,
// into `pk` (48 * BM bytes per chunk: packed rows, then scale rows); thread 0 issues them on
// `bar`, everyone waits. Rows past M are zero-filled. (Per-thread 16-byte loads of the same rows,
// each row block its own 128-byte line, arrived late at the start: docs/fused-kernel.md v5d.)
// The local start's box pair (144 * BM bytes at `ring`, counted on `bar` by the caller): the
// packed bytes of K blocks kb0 .. kb0 + 3 (kb0 % 4 == 0) of BM rows as one 128-byte-wide,
// 128B-swizzled box (map pa4), and their scale bytes.
template <int BM>
__device__ __forceinline__ void load_local_box(const Maps& maps, int l, int mt, int kb0,
                                               uint32_t ring, uint32_t bar) {
  tma_load_3d(ring, &maps.pa4, kb0 * 32, mt * BM, l, bar);
  tma_load_3d(ring + 128u * BM, &maps.psfa, kb0 * 4, mt * BM, l, bar);
}
// One chunk's two boxes (48 * BM bytes at dst), counted on `bar` by the caller.
template <int BM>
__device__ __forceinline__ void load_chunk(const Maps& maps, const Chunk& ch, uint32_t dst,
                                           uint32_t bar) {
  tma_load_3d(dst, &maps.pa, ch.kb * 32, ch.mt * BM, ch.l, bar);
  // (a TMA box must start 16-byte aligned in its row: the scales of K blocks kb & ~3 ..)
  tma_load_3d(dst + 32u * BM, &maps.psfa, (ch.kb & ~3) * 4, ch.mt * BM, ch.l, bar);
}
template <int BM, class Src>
__device__ __forceinline__ void fetch_chunks(const Maps& maps, int nc, Src src, uint32_t pk,
                                             uint32_t bar, int tid) {
  if (tid == 0) {
    mbar_arrive_expect_tx(bar, uint32_t(nc) * 48u * BM);
    for (int ci = 0; ci < nc; ++ci) load_chunk<BM>(maps, src(ci), pk + uint32_t(ci) * 48u * BM, bar);
  }
  mbar_wait(bar, 0);
}
// Row r of chunk ci (K block kb) fetched by fetch_chunks: its 32 packed bytes and 4 scale bytes.
template <int BM>
__device__ __forceinline__ void read_row_block(uint32_t pk, int ci, int kb, int r, uint4 (&p)[2],
                                               uint32_t& sc) {
  const uint32_t c = pk + uint32_t(ci) * 48u * BM;
  p[0] = lds128(c + uint32_t(r) * 32u);
  p[1] = lds128(c + uint32_t(r) * 32u + 16u);
  sc = lds32(c + 32u * BM + uint32_t(r) * 16u + uint32_t(kb & 3) * 4u);
}
// Writes a decoded row block (8 16-byte units) as row r of a 128B-swizzled tile.
__device__ __forceinline__ void put_row_block(uint32_t tile, int r, const uint4 (&out)[8]) {
  const uint32_t row = tile + uint32_t(r) * 128u;
#pragma unroll
  for (int k = 0; k < 8; ++k)  // 16-byte unit k of the row, at k ^ (r % 8) (128B swizzle)
    sts128(row + uint32_t(((k ^ (r & 7))) << 4), out[k]);
}

// Phase 0 of the consumers: as decode_batch, but each chunk is decoded into a BM x 64 fp16 tile
// of shared memory (`tiles`, room for `slots` chunks, 128B-swizzled like the activation ring)
// and written to the workspace by one TMA store per chunk: whole lines through the async proxy.
// (A thread per 16-element block writing eight scattered 4-byte words is slower: partial-sector
// stores.) The stores of the last group are complete (and made visible to the
// async proxy of every SM, see the caller) when this returns; `sync` is the group's barrier,
// `leader` the thread that issues the stores. With kFetch and a batch that fits in one group
// (nb <= slots), the packed rows arrive by TMA (fetch_chunks on `bar`); else each thread loads
// its row blocks (several groups when the batch is larger than the ring: few tiles, many chunks).
template <int BM, int U, bool kFetch, class Sync>
__device__ void decode_batch_tma(const Args& a, const Maps& maps, int q, int nb, int tid,
                                 int n, uint32_t tiles, int slots, uint32_t bar, Sync sync,
                                 bool leader) {
  const CUtensorMap* map = &maps.act;
  if (kFetch && nb <= slots && nb * BM <= U * n) {
    // One group: the packed chunks by TMA (fetch_chunks, into the tiles; every row block is
    // read into registers before any decoded one is written).
    fetch_chunks<BM>(maps, nb, [&](int ci) { return chunk_of(a, q + ci); }, tiles, bar, tid);
    uint4 p[U][2];
    uint32_t sc[U];
#pragma unroll
    for (int x = 0; x < U; ++x) {
      const int it = tid + x * n, ci = it / BM;
      if (it < nb * BM)
        read_row_block<BM>(tiles, ci, chunk_of(a, q + ci).kb, it % BM, p[x], sc[x]);
    }
    sync();
#pragma unroll
    for (int x = 0; x < U; ++x) {
      const int it = tid + x * n;
      if (it >= nb * BM) continue;
      uint4 out[8];
      decode_row_block(p[x], sc[x], out);
      put_row_block(tiles + uint32_t(it / BM) * uint32_t(BM * 128), it % BM, out);
    }
    fence_proxy_async();  // this thread's tile writes -> the TMA store (async proxy)
    sync();
    if (leader) {
      for (int i = 0; i < nb; ++i) {
        const Chunk ch = chunk_of(a, q + i);
        tma_store_3d(map, tiles + uint32_t(i) * uint32_t(BM * 128), ch.kb * kBK, ch.mt * BM, ch.l);
      }
      bulk_commit();
      bulk_wait();
    }
    return;
  }
  for (int g0 = 0; g0 < nb; g0 += slots) {
    const int gn = min(slots, nb - g0), items = gn * BM;
    if (g0 > 0) {  // the previous group's stores have read the tiles
      if (leader) bulk_wait_read();
      sync();
    }
    for (int base = tid; base < items; base += U * n) {
      uint4 p[U][2];
      uint32_t sc[U];
      int64_t off[U];
      load_row_blocks<BM, U>(a, q + g0, items, base, n, p, sc, off);
#pragma unroll
      for (int x = 0; x < U; ++x) {
        if (off[x] < 0) continue;  // rows past M: the TMA store clips them
        const int it = base + x * n, r = it % BM;
        uint4 out[8];
        decode_row_block(p[x], sc[x], out);
        const uint32_t row = tiles + uint32_t(it / BM) * uint32_t(BM * 128) + uint32_t(r) * 128u;
#pragma unroll
        for (int j = 0; j < 8; ++j)  // 16-byte unit j of the row, at j ^ (r % 8) (128B swizzle)
          sts128(row + uint32_t(((j ^ (r & 7))) << 4), out[j]);
      }
    }
    fence_proxy_async();  // this thread's tile writes -> the TMA store (async proxy)
    sync();
    if (leader) {
      for (int i = 0; i < gn; ++i) {
        const Chunk ch = chunk_of(a, q + g0 + i);
        tma_store_3d(map, tiles + uint32_t(i) * uint32_t(BM * 128), ch.kb * kBK, ch.mt * BM, ch.l);
      }
      bulk_commit();
    }
  }
  if (leader) bulk_wait();
}

// The consumers' start when this CTA's phase-0 batch (nb chunks from chunk q) fits beside the
// first stages (nb <= S): decodes the first `nl` activation stages of the CTA's first unit (rows
// of A[l0] from tile mt0, K blocks kb0 .. kb0 + nl - 1) straight into ring slots 0 .. nl-1, so that
// its first wgmma waits for no other CTA, and the batch into the epilogue staging tile (its first
// chunk) and ring slots S-1, S-2, ... (the others), from where the phase-0 warp writes them to the
// workspace by TMA stores (nl = S + 1 - nb keeps the two apart). The packed rows arrive by TMA
// into the ring (the local stages as one wide box, the batch as fetch_chunks lays it out); every
// thread reads its row blocks (at most U) before any thread writes a decoded one (`sync`). Rows
// past M decode to zeros (TMA zero-fills them).
template <int BM, int S, int U, bool kBoxIssued, class Sync>
__device__ void decode_start(const Args& a, const Maps& maps, int l0, int mt0, int kb0, int nl,
                             int q, int nb, uint32_t ring, uint32_t staging, uint32_t bar, int tid,
                             int n, Sync sync) {
  // (the local stages come from one 4-chunk box: nl <= 4, the kernel's phase-0 plan)
  const int nc = nl + nb, items = nc * BM;
  // The local stages (K blocks kb0 .. kb0 + 3 of the first unit, kb0 % 4 == 0) as one
  // 128-byte-wide box and one scale box at `ring`: a TMA box costs per row, and 4 narrow chunks
  // take 4x the rows (docs/fused-kernel.md v5e); kBoxIssued: the kernel has issued them on `bar`
  // (their bytes counted, not arrived) while thread 0 took the batch from the queue. The batch's
  // chunks after them (fetch_chunks' layout), with the arrival.
  const uint32_t batch_pk = ring + 144u * BM;
  if (tid == 0) {
    mbar_arrive_expect_tx(bar, (kBoxIssued ? 0u : 144u * BM) + uint32_t(nb) * 48u * BM);
    if constexpr (!kBoxIssued) load_local_box<BM>(maps, l0, mt0, kb0, ring, bar);
    for (int ci = 0; ci < nb; ++ci)
      load_chunk<BM>(maps, chunk_of(a, q + ci), batch_pk + uint32_t(ci) * 48u * BM, bar);
  }
  mbar_wait(bar, 0);
  uint4 p[U][2];
  uint32_t sc[U];
#pragma unroll
  for (int x = 0; x < U; ++x) {
    const int it = tid + x * n, ci = it / BM, r = it % BM;
    if (it >= items) continue;
    if (ci < nl) {
      // (the box is 128B-swizzled: unit u of row r at u ^ (r % 8), so that the 8 rows of a
      // quarter warp read 8 different bank groups; unswizzled, the 128-byte row stride made
      // every 16-byte read an 8-way bank conflict)
      const uint32_t row = ring + uint32_t(r) * 128u;
      p[x][0] = lds128(row + (uint32_t((2 * ci) ^ (r & 7)) << 4));
      p[x][1] = lds128(row + (uint32_t((2 * ci + 1) ^ (r & 7)) << 4));
      sc[x] = lds32(ring + 128u * BM + uint32_t(r) * 16u + uint32_t(ci) * 4u);
    } else {
      read_row_block<BM>(batch_pk, ci - nl, chunk_of(a, q + ci - nl).kb, r, p[x], sc[x]);
    }
  }
  sync();  // every packed row block is in registers: the ring may be overwritten
#pragma unroll
  for (int x = 0; x < U; ++x) {
    const int it = tid + x * n, ci = it / BM, r = it % BM;
    if (it >= items) continue;
    uint4 out[8];
    decode_row_block(p[x], sc[x], out);
    const int slot = ci < nl ? ci : S - (ci - nl);  // (unused for the staging tile)
    put_row_block(ci == nl ? staging : ring + uint32_t(slot) * uint32_t(BM * 128), r, out);
  }
}

// Thread 0: the generation (into scratch) and this CTA's phase-0 batch from the queue (into
// scratch + 8): two independent L2 round trips, issued back to back.
__device__ __forceinline__ void take_batch(const Args& a, uint32_t scratch, int batch) {
  const unsigned long long g = *reinterpret_cast<volatile unsigned long long*>(&a.sync->gen);
  sts32(scratch + 8, atomicAdd(&a.sync->next_chunk, uint32_t(batch)));
  sts64(scratch, g);
}

// Tags chunks [q, q + nb) with this launch (after the fences of the two callers below).
__device__ __forceinline__ void tag_chunks(const Args& a, int q, int nb, unsigned long long tag) {
  for (int c = q; c < q + nb; ++c) st_relaxed(a.chunk_state + c, tag);
}

// Once the TMA stores of chunks [q, q + nb) are complete (bulk_wait): orders them (async proxy)
// before their flags, for every SM, and tags them with this launch.
__device__ __forceinline__ void publish_chunks(const Args& a, int q, int nb,
                                               unsigned long long tag) {
  fence_proxy_async_global();
  __threadfence();
  tag_chunks(a, q, nb, tag);
}

// After decode_batch by a group of threads: makes the chunks [q, q + nb) visible to every
// CTA's TMA (async proxy) and tags them with this launch. `sync` is the group's barrier; `leader`
// is one thread of the group.
template <class Sync>
__device__ __forceinline__ void publish_batch(const Args& a, int q, int nb,
                                              unsigned long long tag, Sync sync, bool leader) {
  fence_proxy_async_global();
  sync();
  if (leader) {
    __threadfence();
    tag_chunks(a, q, nb, tag);
  }
}


// This CTA's phase-0 batch (nb chunks from q, taken from the queue by thread 0) and nl, the
// activation stages of its first unit that its consumers decode locally (decode_start); nl = 0
// where the batch would not fit beside them (the box is issued before nb is known, so the test is
// on a full batch: early_box) and in the kernels without the local start; then phase 0 runs first,
// through the whole ring. The box is consumed iff nl > 0: then nb <= batch <= S and the first unit
// has kb1 - kb0 >= 4 K blocks (a whole tile, K % 256 == 0, or a pair's K half, which the host
// offers only with K >= 512), so nl >= 1.
// The consumers' local start (the kernel's phase-0 plan gave nl > 0): the first nl stages of the first unit
// straight into the ring, the batch beside them (decode_start); then the ring stages are marked
// full and the phase-0 warp stores and publishes the batch (phase0_warp).
template <class K>
__device__ __forceinline__ void consumer_local_start(const K& k, const Maps& maps, int q, int nb,
                                                     int nl) {
  using Cfg = typename K::Cfg;
  constexpr int BM = Cfg::BM, S = Cfg::S, kConsumers = Cfg::kConsumers;
  const int tid = k.tid;
  const Unit u0 = k.units.unit(k.units.first_u);
  if constexpr (K::kLocalStart) {  // (nl == 0 in the others)
    static_assert((S + 1) * BM <= 5 * kConsumers, "decode_start reads all items at once");
    decode_start<BM, S, 5, K::kLocalStart>(k.args, maps, u0.l, u0.mt, u0.kb0, nl, q, nb,
                                          k.sm.ring, k.sm.staging, k.sm.ld_bar, tid, kConsumers,
                                          [] { consumer_sync(kConsumers); });
  }
  fence_proxy_async();  // this thread's ring writes -> wgmma and the TMA stores
  k.probe.time(tid == 0, Event::Decoded);
  __syncwarp();
  barrier_sync<4>(kConsumers + 32);  // + the phase-0 warp
  if (tid == 0)
    for (int s = 0; s < nl; ++s) mbar_arrive(k.sm.full_bar + 8 * s);
}

// The phase-0 warp (the producer warpgroup's fourth): once the consumers have decoded the start
// (decode_start), writes their phase-0 batch to the workspace with TMA stores, frees the ring
// slots and the staging tile (ph0_bar) once the stores have read them, and publishes the chunks
// when the stores are complete — all off the consumers' path to their first wgmma.
template <class K, class Plan>
__device__ __forceinline__ void phase0_warp(const K& k, const Maps& maps, unsigned long long tag,
                                            const Plan& plan) {
  using Cfg = typename K::Cfg;
  constexpr int BM = Cfg::BM, S = Cfg::S, kConsumers = Cfg::kConsumers;
  int q, nb, nl;
  plan(q, nb, nl);
  if (nl > 0) {
    barrier_sync<4>(kConsumers + 32);  // with the consumers
    if (k.tid % 32 == 0) {
      for (int i = 0; i < nb; ++i) {
        const Chunk ch = chunk_of(k.args, q + i);
        const uint32_t src = i == 0 ? k.sm.staging : k.sm.ring + uint32_t(S - i) * Cfg::kActBytes;
        tma_store_3d(&maps.act, src, ch.kb * kBK, ch.mt * BM, ch.l);
      }
      k.probe.time(true, Event::LocalStoresIssued);
      bulk_commit();
      bulk_wait_read();
      mbar_arrive(k.sm.ph0_bar);
      if (nb > 0) {
        bulk_wait();
        k.probe.time(true, Event::LocalStoresDone);
        publish_chunks(k.args, q, nb, tag);
      }
      k.probe.time(true, Event::Published);
    }
  }
}

// The setup of the kernels with the local start: the local start's packed chunks depend on the
// first unit only, so thread 32 counts their bytes on ld_bar and issues them while thread 0 takes
// the generation and the phase-0 batch (two independent L2 round trips, back to back; the queue's
// atomic is contended by every CTA at the start); everyone reads both after q_bar. Returns the
// generation. (The bytes are counted before q_bar completes, so the arrival that comes after it
// cannot complete ld_bar's phase without them; the loads are issued after thread 32's arrival, so
// that only thread 0's round trips gate the others, the weight producer among them.)
// The first unit's coordinates are computed by every thread, outside the branches: computed
// inside them, ptxas compiled the consumers' main loop with its counters in vector registers and
// every wgmma descriptor through R2UR behind a WARPSYNC, a slower loop with the same results
// (docs/fused-kernel.md v5f; tools/sass_check.py checks the loop).
template <class K>
__device__ __forceinline__ unsigned long long early_box_setup(K& k, const Maps& maps) {
  constexpr int BM = K::Cfg::BM;
  const Unit u0 = k.units.unit(k.units.first_u);
  if (k.tid == 32) {
    if (k.early_box) mbar_expect_tx(k.sm.ld_bar, 144u * BM);
    mbar_arrive(k.sm.q_bar);
    if (k.early_box) load_local_box<BM>(maps, u0.l, u0.mt, u0.kb0, k.sm.ring, k.sm.ld_bar);
  }
  if (k.tid == 0) {
    take_batch(k.args, k.sm.scratch, k.sched.batch);
    k.probe.time(true, Event::QueueKnown);
    mbar_arrive(k.sm.q_bar);
  }
  mbar_wait(k.sm.q_bar, 0);
  return lds_u64(k.sm.scratch);
}

}  // namespace nvfp4::gpu::fused::v5
