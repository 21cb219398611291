// fused_rs.cuh — the fused kernel v5 for Hopper (sm_90a): weights decoded straight into
// register-sourced wgmma operands, activations decoded once per call inside the same kernel.
//
//   C[l] = fp16_rn( silu(alpha1 * A[l]·B1[l]^T) * (alpha2 * A[l]·B2[l]^T) )
//
// Why this shape of kernel (docs/fused-kernel.md, v3/v4 and v5): in the v3 kernel the warps that issue
// wgmma also decode both operands into shared memory, and every 64-wide K stage ends with a proxy
// fence and a CTA barrier; even with the decode removed it ran at ~49% of the tensor peak. Here
// the tensor-core warps never wait on a shared-memory decode:
//
// * The product is computed transposed, C^T = B·A^T: the weights B1, B2 (N rows, the large
//   operand) are wgmma's A side, decoded by the consumer threads from packed bytes straight into
//   the A-fragment registers (wgmma ...f16.f16 with A in registers); the activations are wgmma's B
//   side, a 128B-swizzled fp16 tile in shared memory loaded by TMA.
// * The activations (M rows, small) are decoded ONCE per call, in phase 0 of the same kernel, into
//   a workspace in global memory (fp16, exact); every tile then streams them by TMA. Phase 0 hands
//   out chunks (BM rows x 64 K) through an atomic work queue; the consumers decode a chunk into a
//   swizzled tile of the (still idle) activation ring and write it with one TMA store (the
//   producer's fallback writes directly); a chunk's done flag is tagged with
//   the launch's generation number, so nothing is reset between calls. A consumer of a chunk only
//   ever waits for a chunk that some running CTA has taken from the queue (the waiting CTA's own
//   consumer threads drain the queue before they leave phase 0), so the kernel cannot deadlock
//   whatever the number of co-resident CTAs.
// * Phase 0's loads by TMA: a CTA's packed activation rows (32 bytes and the scale bytes of each
//   of BM rows per 64-K chunk) arrive by two TMA boxes per chunk instead of per-thread loads,
//   which took 5-10 us at the start (docs/fused-kernel.md v5d).
// * Local start (256-row tiles, 128 x 96 tiles and their pairs; not stream-K, not the 128 x 64
//   tiles): where a CTA's phase-0 batch fits beside them, its consumers decode the first
//   activation stages of their first unit themselves, straight into the ring, and the batch into
//   the remaining slots and the epilogue staging tile; the fourth producer warp writes the batch
//   with TMA stores and publishes it. The first stages
//   then wait for no other CTA's phase 0 (decode_start; docs/fused-kernel.md v5d: with 256-row tiles at
//   M = 512, 92.7 -> 87.0 us together with the TMA loads, the pair at 256x4096x7168 55.1 -> 53.4;
//   slower with 128 x 64 tiles and with stream-K, where it is off; the 128 x 96 tiles gained
//   2.5 us at 512x3072x7168, docs/fused-kernel.md v5g). The 256-row tiles and the 128 x 96 tiles and pairs
//   issue the local stages' load while the queue's atomic is in flight (kEarlyBox, v5f, v5g).
// * Fragment rows: warp w of consumer warpgroup wg holds rows 16w+g (B1 row n0+32wg+8w+g) and
//   16w+g+8 (B2 row of the same n), g = lane/4; so accumulator elements d[4j+e] (G) and d[4j+2+e]
//   (U) of one thread belong to the same output element, and the silu·mul epilogue is register
//   only. An m64nBMk16 wgmma multiplies 32 columns of C (64 weight rows) by BM activations.
// * K order: thread t = lane%4 decodes its rows' physical elements [16t, 16t+16) of each 64-wide
//   K block — exactly one scale block, 8 packed bytes — and uses them over the block's four k16
//   steps. The A-fragment places them at logical columns that are a fixed permutation of the
//   block (see kLogicalWord below); phase 0 writes the activations in the same permuted order, so
//   the dot products are unchanged (fp32 accumulation of exact products, as in v3).
// * Warp roles: consumer warpgroups (2, or 3 at BM = 128: RsConfig) decode weights + issue
//   wgmma + epilogue; in the producer warpgroup, lane 0 of warp 0 issues the activation TMA
//   loads (S-deep ring) and lane 0 of warp 1 the weight loads (packed bytes and scales, WS-deep
//   ring), each with full/empty mbarriers. No proxy fence and no CTA barrier in the main loop.
// * Tile: BM activation rows (128 or 256: m64n128k16 or m64n256k16) x 32 columns of C per
//   consumer warpgroup (64, or 96 with three).
// * Persistent schedule with split-K: grid = min(units, SMs); unit u = (tile, split), splits
//   chosen by the host to balance work over the SMs. With splits > 1, each (tile, split) that is
//   not the last to arrive writes its fp32 partial G and U to a workspace; the last one adds all
//   partials in split order 0..S-1 (deterministic whatever the arrival order) and runs the
//   epilogue. Arrival counters are reset by the last arriver; ready flags are generation-tagged.
// * Split-K pairs (kPair; the product runs them with 256 x 64 and 128 x 96 tiles): for M <= 256
//   the 256-row tiles halve the weight decode per multiply-add but leave half the SMs idle; a
//   pair of CTAs in a 2-CTA cluster runs the two K halves of one tile (one unit per CTA, grid =
//   2 x tiles <= SMs), then each sends the half of its fp32 accumulators that the other finishes
//   through distributed shared memory into the other's (then idle) activation ring, adds what it
//   received and writes BM / 2 rows of C.
// * Stream-K (kStream): where the tiles leave SMs idle (512x3072x7168: 96 tiles of 256 rows on
//   132 SMs), every CTA takes an equal run of the tiles' 256-K weight stages laid end to end, so
//   a tile is shared by up to a few CTAs (parts in K order). A part counts itself in; the last to
//   arrive waits for the other parts' fp32 partials and adds them in part order (its own from
//   registers), so the sum does not depend on who is last; the others write their partial and go
//   on at once (a helper warp fences it and raises its ready flag). Nobody waits for a CTA that
//   has not arrived, so this cannot deadlock either.
// * Requirements: K % 256 == 0 (16-byte aligned scale rows for TMA). Rows past M or N are zero
//   filled by TMA and their results discarded; stores are masked.
#pragma once
#include <algorithm>

#include "fused_kernel.cuh"

namespace nvfp4::gpu::fused::rs {

// Cross-CTA state in the plan's workspace (zeroed once when the plan is made).
struct SyncState {
  unsigned long long gen;  // launches completed: this launch's flags are tagged gen + 1
  unsigned int next_chunk; // phase-0 work queue
  unsigned int done_ctas;  // CTAs done with the queue in this launch (the last resets, bumps gen)
};

struct RsArgs {
  const uint8_t* a;                  // (L, M, K/2) packed E2M1
  const uint8_t* sfa;                // (L, M, K/16) E4M3
  uint16_t* act;                     // (L, M, K) decoded A (fp16 bits), K permuted per 64-block
  unsigned long long* chunk_state;   // per phase-0 chunk: tag of the launch that decoded it
  SyncState* sync;
  float* partials;                   // split-K: per unit, 2 * BM * 64 floats
  unsigned int* tile_count;          // split-K: arrivals per tile
  unsigned long long* ready;         // split-K: per unit, tag when its partial is written
  __half* c;                         // (L, M, N)
  int M, N, K, L;
  int m_tiles, n_tiles, splits;      // tiles = L * m_tiles * n_tiles; units = tiles * splits
  float alpha1, alpha2;
};

struct RsMaps {
  CUtensorMap act;          // uint16 (K, M, L), box (64, BM, 1), 128B swizzle
  CUtensorMap b1, b2;       // uint8 (K/2, N, L), box (128, kNT, 1), 128B swizzle
  CUtensorMap sfb1, sfb2;   // uint8 (K/16, N, L), box (16, kNT, 1)
  CUtensorMap pa, psfa;     // packed A uint8 (K/2, M, L), box (32, BM, 1); its scales (K/16, M, L),
                            // box (16, BM, 1): one 64-K chunk of BM rows for phase 0's loads
  CUtensorMap pa4;          // packed A, box (128, BM, 1), 128B swizzle: the local start's four
                            // 64-K chunks at once
};

constexpr int kBK = 64;

// Shared memory: an activation ring of S stages (64 K each: BM rows x 128 bytes, 128B swizzle)
// and a weight ring of WS stages (256 K each: kNT rows x 128 packed bytes of B1 and of B2, 128B
// swizzle, plus kNT rows x 16 scale bytes of each), so that every TMA row is a whole 128-byte line
// or a scale row read exactly once (narrow boxes cost TMA issue time per row, docs/fused-kernel.md v5).
//
// WG consumer warpgroups (2, or 3 with BM = 128): each owns 32 columns of C (64 weight rows), so
// a tile is BM x 32*WG. Three make 128 x 96 tiles: at 512x3072x7168 those are 128 tiles for 132
// SMs (the 256 x 64 tiles are 96, and stream-K pays for its partials), at 256x3072x4096 their
// split-K pairs are 128 CTAs (the 256-row pairs 96) — docs/fused-kernel.md v5g.
// Register split (setmaxnreg): ptxas compiles the whole kernel within what the launch gives each
// thread, 65536 / threads rounded down to 8 with every SM sub-partition's 16K registers shared
// by its warps: 168 for 384 threads, 128 for 512. The producer warpgroup then gives some back and
// the consumers take them: 64 / 216 for two consumer warpgroups (128 accumulators at BM = 256 +
// two fragment sets, no spill), 56 / 152 for three (64 accumulators, no spill). The split-K
// reduction is compiled for BM = 128 with two consumer warpgroups only (with BM = 256 it spilled
// 2 KB, with three warpgroups ~500 bytes).
template <int BM_, int S_, int WG_ = 2>
struct RsConfig {
  static constexpr int BM = BM_;                  // activation rows per tile (wgmma N)
  static constexpr int S = S_;                    // activation ring depth (64-K stages)
  static constexpr int kWGs = WG_;                // consumer warpgroups
  static constexpr int kNT = 32 * kWGs;           // columns of C per tile
  static constexpr int kConsumers = 128 * kWGs;
  static constexpr int kThreads = kConsumers + 128;  // + a producer warpgroup
  static constexpr int kProducerRegs = kWGs == 2 ? 64 : 56;
  static constexpr int kConsumerRegs = kWGs == 2 ? 216 : 152;
  static constexpr int WS = 3;                    // weight ring depth (256-K stages)
  static constexpr int kAcc = BM / 2;             // fp32 accumulators per thread
  static constexpr int kActBytes = BM * 128;      // one 64-wide K block of BM fp16 rows
  static constexpr int kWBytes = kNT * 128;       // packed bytes of 256 K, per weight matrix
  static constexpr int kSBytes = kNT * 16;        // scale bytes of 256 K, per weight matrix
  static constexpr int kWStageBytes = 2 * kWBytes + 2 * kSBytes;  // = TMA bytes
  static constexpr int kStRow = kNT * 2 + 16;     // epilogue staging row (padded, bytes)
  static constexpr int kStagingBytes = BM * kStRow;
  static constexpr int kBarBytes = 2 * (S + WS) * 8 + 40;
  static constexpr int kSmemBytes =
      1024 + S * kActBytes + WS * kWStageBytes + kStagingBytes + kBarBytes;
  static_assert(BM == 128 || BM == 256, "wgmma N of 128 or 256");
  static_assert(kWGs == 2 || (kWGs == 3 && BM == 128),
                "three consumer warpgroups at BM = 128 only");
  static_assert(128 * kProducerRegs + kConsumers * kConsumerRegs <= 65536 &&
                    kProducerRegs + kWGs * kConsumerRegs <= 512,
                "the register split fits the register file and every sub-partition");
  static_assert(kActBytes % 1024 == 0 && kWStageBytes % 1024 == 0 && kWBytes % 1024 == 0,
                "stages keep the 128B-swizzle atoms 1024-aligned");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90 is at most 227 KiB");
};

// Logical word (fp16 pair) of a 64-wide K block that holds decoded word j (0..7) of the 16
// physical elements [16t, 16t+16): decode8 of the low packed word yields the pairs (e0,e2),
// (e4,e6), (e1,e3), (e5,e7), of the high word (e8,e10), (e12,e14), (e9,e11), (e13,e15); pair j is
// fragment register a[2*(j%2)...] of k16 step j/2 (see the consumer), i.e. logical elements
// 16*(j/2) + 8*(j%2) + 2t + {0,1}.
__host__ __device__ constexpr int kLogicalWord(int j, int t) { return 4 * j + t; }

namespace detail2 {
using namespace nvfp4::gpu::fused::detail;

__device__ __forceinline__ uint2 lds64(uint32_t a) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(a));
  return v;
}
__device__ __forceinline__ uint32_t lds8(uint32_t a) {
  uint16_t v;
  asm volatile("ld.shared.u8 %0, [%1];\n" : "=h"(v) : "r"(a));
  return v;
}
__device__ __forceinline__ void sts16(uint32_t a, uint16_t v) {
  asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(a), "h"(v) : "memory");
}
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
__device__ __forceinline__ unsigned long long ld_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void wait_tag(const unsigned long long* p, unsigned long long tag) {
  while (ld_acquire(p) != tag) __nanosleep(64);
}
// Adds `bytes` to the transaction count the barrier's current phase waits for, without arriving.
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// One E4M3 scale byte -> (scale * 64) in both fp16 halves (decode8 yields value * 2^-6).
__device__ __forceinline__ uint32_t scale64(uint32_t b) {
  return hmul2(e4m3x2_lo_to_f16x2(b * 0x0101u), 0x54005400u);
}

// silu(alpha1 g) * (alpha2 u) as silu_mul does, without its branch: the IEEE division's
// slow-path check splits every element into its own basic block, and the epilogue then ran
// latency-bound (~4 us for BM = 256; the same math with __expf / __fdividef took ~1.3 us).
// Here q = x / d, d = 1 + expf(-x) in [1, inf], is rcp.approx plus one FMA correction step.
// For -88.7 < x < -87.3, 1/d is subnormal: rcp.approx.ftz returned 0 there (test_fused's
// comparison with the IEEE division caught it), and the non-ftz rcp costs a slow-path check
// (+1.2-1.6 us at BM = 256, docs/fused-kernel.md v5b); so the ftz reciprocal is taken of d * 2^-32
// (normal for every finite d >= 1) and scaled back by an exact-or-subnormal multiply:
// with r = (1 + e1) / d, |e1| <= 2^-23 (a few ulp more where r is subnormal, x < -87.3: the
// correction step multiplies the error by e1 again), the residual x - d*q0 is formed by one FMA and
// q0 + r*residual is within 0.5 ulp + 2^-42 relative of x / d — the error the harness's
// epilogue bound allows for the division (Tolerance::kEpilogueRel: exp, 1 + e, divide,
// multiply), whose other operations are unchanged. Selects cover the ends: d = inf (x < -88.7)
// gives x / d = -0, d = 1 (x > ~17, x = +inf included, where the FMA step would make inf - inf)
// gives x; NaN propagates.
__device__ __forceinline__ float silu_mul_nb(float g, float u, float alpha1, float alpha2) {
  const float x = alpha1 * g;
  const float d = 1.0f + expf(-x);
  float rs;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(rs) : "f"(d * 0x1p-32f));
  const float r = rs * 0x1p-32f;
  const float q0 = x * r;
  float q = fmaf(fmaf(-d, q0, x), r, q0);
  q = d == __int_as_float(0x7F800000) ? copysignf(0.0f, x) : q;
  q = d == 1.0f ? x : q;
  return q * (alpha2 * u);
}

// 2-CTA clusters (split-K pairs): a shared address in the peer CTA, a store there, and a
// barrier of every thread of the cluster (release / acquire).
__device__ __forceinline__ uint32_t peer_smem(uint32_t a, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ void st_cluster_f4(uint32_t a, float x, float y, float z, float w) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "f"(x), "f"(y),
               "f"(z), "f"(w)
               : "memory");
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// Timing probe (kProbe bit 9): global nanosecond clock, stamped into the partials workspace.
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Phase-0 chunk c: rows [mt*BM, mt*BM + BM) of A[l], K block kb, with (kb, l, mt) =
// (c / (L*m_tiles), (c / m_tiles) % L, c % m_tiles) — K-major, so the first chunks are the first
// ones every tile needs.
struct Chunk {
  int l, mt, kb;
};
__device__ __forceinline__ Chunk chunk_of(const RsArgs& a, int c) {
  return Chunk{(c / a.m_tiles) % a.L, c % a.m_tiles, c / (a.L * a.m_tiles)};
}

// Loads U row blocks (items it = base, base + n, ...; it < items): 64 elements of one activation
// row, read as 32 packed bytes (two 16-byte loads) and 4 scale bytes (one 4-byte load). off_of(it)
// gives the item's element offset in A (and in the workspace), or -1 for no item (past M).
template <int U, class OffOf>
__device__ __forceinline__ void load_items(const RsArgs& a, int items, int base, int n,
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
__device__ __forceinline__ int64_t chunk_row_offset(const RsArgs& a, int c, int r) {
  const Chunk ch = chunk_of(a, c);
  const int m = ch.mt * BM + r;
  return m < a.M ? (int64_t(ch.l) * a.M + m) * a.K + int64_t(ch.kb) * kBK : int64_t(-1);
}

// Phase 0 work items: item `it` of a batch that starts at chunk q is row block (chunk
// q + it / BM, row it % BM).
template <int BM, int U>
__device__ __forceinline__ void load_row_blocks(const RsArgs& a, int q, int items, int base, int n,
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
__device__ void decode_batch(const RsArgs& a, int q, int nb, int tid, int n) {
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

// TMA store of a box from shared memory (bulk-group completion) and its waits.
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, uint32_t src, int c0, int c1,
                                             int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void bulk_wait_read() {  // the stores have read shared memory
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void bulk_wait() {  // the stores are complete
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// Phase 0's loads by TMA: nc chunks (chunk ci is src(ci)), each the 32 packed bytes
// and 16 scale bytes (from K block kb & ~3: a box starts 16-byte aligned in its row) of BM rows,
// into `pk` (48 * BM bytes per chunk: packed rows, then scale rows); thread 0 issues them on
// `bar`, everyone waits. Rows past M are zero-filled. (Per-thread 16-byte loads of the same rows,
// each row block its own 128-byte line, took 5-10 us to arrive at the start; docs/fused-kernel.md v5d.)
// The local start's box pair (144 * BM bytes at `ring`, counted on `bar` by the caller): the
// packed bytes of K blocks kb0 .. kb0 + 3 (kb0 % 4 == 0) of BM rows as one 128-byte-wide,
// 128B-swizzled box (map pa4), and their scale bytes.
template <int BM>
__device__ __forceinline__ void load_local_box(const RsMaps& maps, int l, int mt, int kb0,
                                               uint32_t ring, uint32_t bar) {
  tma_load_3d(ring, &maps.pa4, kb0 * 32, mt * BM, l, bar);
  tma_load_3d(ring + 128u * BM, &maps.psfa, kb0 * 4, mt * BM, l, bar);
}
// One chunk's two boxes (48 * BM bytes at dst), counted on `bar` by the caller.
template <int BM>
__device__ __forceinline__ void load_chunk(const RsMaps& maps, const Chunk& ch, uint32_t dst,
                                           uint32_t bar) {
  tma_load_3d(dst, &maps.pa, ch.kb * 32, ch.mt * BM, ch.l, bar);
  // (a TMA box must start 16-byte aligned in its row: the scales of K blocks kb & ~3 ..)
  tma_load_3d(dst + 32u * BM, &maps.psfa, (ch.kb & ~3) * 4, ch.mt * BM, ch.l, bar);
}
template <int BM, class Src>
__device__ __forceinline__ void fetch_chunks(const RsMaps& maps, int nc, Src src, uint32_t pk,
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
// (A thread per 16-element block writing eight scattered 4-byte words took 2x to 3x longer:
// partial-sector stores.) The stores of the last group are complete (and made visible to the
// async proxy of every SM, see the caller) when this returns; `sync` is the group's barrier,
// `leader` the thread that issues the stores. With kFetch and a batch that fits in one group
// (nb <= slots), the packed rows arrive by TMA (fetch_chunks on `bar`); else each thread loads
// its row blocks (several groups when the batch is larger than the ring: few tiles, many chunks).
template <int BM, int U, bool kFetch, class Sync>
__device__ void decode_batch_tma(const RsArgs& a, const RsMaps& maps, int q, int nb, int tid,
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
__device__ void decode_start(const RsArgs& a, const RsMaps& maps, int l0, int mt0, int kb0, int nl,
                             int q, int nb, uint32_t ring, uint32_t staging, uint32_t bar, int tid,
                             int n, Sync sync) {
  // (the local stages come from one 4-chunk box: nl <= 4, start_plan)
  const int nc = nl + nb, items = nc * BM;
  // The local stages (K blocks kb0 .. kb0 + 3 of the first unit, kb0 % 4 == 0) as one
  // 128-byte-wide box and one scale box at `ring`: a TMA box costs per row, and 4 narrow chunks
  // took 4x the rows (docs/fused-kernel.md v5e); kBoxIssued: the kernel has issued them on `bar` (their
  // bytes counted, not arrived) while thread 0 took the batch from the queue. The batch's chunks
  // after them (fetch_chunks' layout), with the arrival.
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
// scratch + 8; kTake false: none taken): two independent L2 round trips, issued back to back.
template <bool kTake>
__device__ __forceinline__ void take_batch(const RsArgs& a, uint32_t scratch, int batch) {
  const unsigned long long g = *reinterpret_cast<volatile unsigned long long*>(&a.sync->gen);
  if constexpr (kTake) sts32(scratch + 8, atomicAdd(&a.sync->next_chunk, uint32_t(batch)));
  asm volatile("st.shared.u64 [%0], %1;\n" ::"r"(scratch), "l"(g) : "memory");
}

// Tags chunks [q, q + nb) with this launch (after the fences of the two callers below).
__device__ __forceinline__ void tag_chunks(const RsArgs& a, int q, int nb, unsigned long long tag) {
  for (int c = q; c < q + nb; ++c)
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;\n" ::"l"(a.chunk_state + c), "l"(tag)
                 : "memory");
}

// Once the TMA stores of chunks [q, q + nb) are complete (bulk_wait): orders them (async proxy)
// before their flags, for every SM, and tags them with this launch.
__device__ __forceinline__ void publish_chunks(const RsArgs& a, int q, int nb,
                                               unsigned long long tag) {
  fence_proxy_async_global();
  __threadfence();
  tag_chunks(a, q, nb, tag);
}

// After decode_batch by a group of threads: makes the chunks [q, q + nb) visible to every
// CTA's TMA (async proxy) and tags them with this launch. `sync` is the group's barrier; `leader`
// is one thread of the group.
template <class Sync>
__device__ __forceinline__ void publish_batch(const RsArgs& a, int q, int nb,
                                              unsigned long long tag, Sync sync, bool leader) {
  fence_proxy_async_global();
  sync();
  if (leader) {
    __threadfence();
    tag_chunks(a, q, nb, tag);
  }
}

}  // namespace detail2

// grid = min(units, SMs), block = RsConfig<BM, S, WG>::kThreads, dynamic shared memory
// RsConfig<BM, S, WG>::kSmemBytes.
// kProbe is for timing experiments only (0 in the product): bit 0 skips the activation TMA (the
// tensor cores read stale tiles), bit 1 skips the wgmma, bit 2 skips phase 0 and its waits,
// bit 3 skips the weight TMA, bit 4 skips the weight decode, bit 5 runs phase 0 only,
// bit 6 omits wgmma.fence after a unit's first stage (wrong: timing only).
// kPair: split-K pairs (see the top of the file); launch with a cluster of 2 CTAs, splits = 2
// and one CTA per unit. kStream: stream-K (see the top); grid <= the tiles' weight stages,
// splits = the most parts a tile can have (ceil((nw - 1) / floor(stages / grid)) + 1, nw = K / 256),
// partials and ready flags for tiles x splits parts. WG: consumer warpgroups (RsConfig); with 3,
// splits is 1 or the pair's 2.
template <int BM, int S, int kProbe = 0, bool kPair = false, bool kStream = false, int WG = 2>
__global__ void __launch_bounds__(RsConfig<BM, S, WG>::kThreads, 1)
    fused_rs_kernel(const __grid_constant__ RsMaps maps, const RsArgs args) {
#if defined(NVFP4_FUSED_SM90A)
  using Cfg = RsConfig<BM, S, WG>;
  constexpr int kNT = Cfg::kNT, kConsumers = Cfg::kConsumers;
  using namespace detail2;
  static_assert(!kStream || (BM == 256 && WG == 2), "stream-K is for 256-row tiles");
  // (Without the main loop the pair's consumers never reach the cluster barriers its producers
  // wait at: a probe build with both hung on the H100, docs/fused-kernel.md v5j.)
  static_assert(!kPair || (kProbe & 32) == 0, "kProbe bit 5 (no main loop) is not for the pair");
  // The 256-row tiles and pairs and the 128 x 96 tiles and pairs issue their local start's first
  // load without waiting for the queue's atomic (see after the setup); the others take the queue
  // in the setup. (The 128 x 96 tiles: -0.7 us in the probe at 512x3072x7168; their pairs: -0.5
  // to -0.9 us in the harness's bench at 256x3072x4096, v5g. The 256-row pair: -1.2 us in the
  // probe at 256x4096x7168 and the harness's bench below, v5j; it had measured slower in the bench
  // before the end-of-launch count moved off the exit path, v5f.)
  constexpr bool kEarlyBox = (BM == 256 || WG == 3) && !kStream && (kProbe & 4) == 0;
  // The local start (decode_start): the 256-row tiles and pairs and the 128 x 96 ones, not
  // stream-K or the 128 x 64 tiles (docs/fused-kernel.md v5d, v5g).
  constexpr bool kLocalStart = (BM == 256 || WG == 3) && !kStream;
  extern __shared__ __align__(1024) uint8_t smem[];
  if constexpr (kPair) {  // one unit per CTA, or the cluster barriers below would not match
    if (gridDim.x != unsigned(args.L * args.m_tiles * args.n_tiles * 2) || args.splits != 2)
      __trap();
  }
  if constexpr (WG != 2 && !kPair) {  // (no split-K reduction compiled, see RsConfig)
    if (args.splits != 1) __trap();
  }
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t ring = base;                                  // S activation stages
  const uint32_t wring = ring + S * Cfg::kActBytes;             // WS weight stages
  const uint32_t staging = wring + Cfg::WS * Cfg::kWStageBytes;
  const uint32_t full_bar = staging + Cfg::kStagingBytes;       // S x 8
  const uint32_t empty_bar = full_bar + S * 8;                  // S x 8
  const uint32_t wfull_bar = empty_bar + S * 8;                 // WS x 8
  const uint32_t wempty_bar = wfull_bar + Cfg::WS * 8;          // WS x 8
  const uint32_t scratch = wempty_bar + Cfg::WS * 8;  // 16 bytes: gen (8), chunk / flag (4)
  const uint32_t ph0_bar = scratch + 16;  // phase 0 is done with the activation ring
  const uint32_t ld_bar = scratch + 24;   // the start's packed activation chunks have arrived
  const uint32_t q_bar = scratch + 32;    // the generation and the phase-0 batch are in scratch

  const int tid = threadIdx.x;
  const unsigned long long t_entry = (kProbe & 512) != 0 && tid == 0 ? gtimer() : 0;
  const int nk = args.K / kBK;
  const int tiles_per_l = args.m_tiles * args.n_tiles;
  const int units = args.L * tiles_per_l * args.splits;
  const int chunks = nk * args.L * args.m_tiles;
  const int batch = (chunks + int(gridDim.x) - 1) / int(gridDim.x);  // phase-0 chunks per CTA

  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full_bar + 8 * s, 1);
      mbar_init(empty_bar + 8 * s, kConsumers / 32);
    }
    for (int s = 0; s < Cfg::WS; ++s) {
      mbar_init(wfull_bar + 8 * s, 1);
      mbar_init(wempty_bar + 8 * s, kConsumers / 32);
    }
    mbar_init(ph0_bar, 1);
    mbar_init(ld_bar, 1);
    if constexpr (kEarlyBox) mbar_init(q_bar, 2);
    mbar_init_fence();
    if constexpr (!kEarlyBox) take_batch<(kProbe & 4) == 0>(args, scratch, batch);
  }
  // (kEarlyBox: the generation and the phase-0 batch come after this barrier, see there.)
  __syncthreads();
  unsigned long long gen = 0;
  if constexpr (!kEarlyBox)
    asm volatile("ld.shared.u64 %0, [%1];\n" : "=l"(gen) : "r"(scratch) : "memory");
  if constexpr ((kProbe & 512) != 0) {
    if (tid == 0)
      reinterpret_cast<unsigned long long*>(args.partials)[32 * blockIdx.x + 8] = gtimer();
  }
  // kProbe bit 9: per-CTA event times (ns) into the partials workspace, 32 slots per CTA:
  // 0 start, 1 consumers' phase-0 batch published, 2 producer sees its first chunk ready,
  // 3 first wgmma issued, 4 first unit's main loop done, 5 end, 6 producer steals, 7 first
  // unit's silu·mul staged, 8 setup done, 9 phase-0 batch decoded and its TMA stores complete,
  // 10 the start's packed activation chunks arrived, 11 the first weight stage arrived, 12
  // stream-K: the first unit's partial written and counted, 13 a later unit's main loop done,
  // 14 / 15 the local start's TMA stores issued / complete, 16 + w consumer warp w's (w < 8)
  // first main loop done, 24 kernel entry, 25 kEarlyBox: thread 0 has the generation and the
  // phase-0 batch (its two L2 round trips), 26 / 27 the SM clock (clock64) at 3 and 4, 29 / 30
  // the pair's first / second cluster barrier passed, 31 the epilogue's first consumer barrier
  // passed
  // (with split-K the stamps and the partials share the workspace: probe splits == 1; stream-K
  // puts them after its partials).
  unsigned long long* const stamp =
      reinterpret_cast<unsigned long long*>(
          args.partials + (kStream ? int64_t(args.L) * tiles_per_l * args.splits * 2 * BM * kNT : 0)) +
      32 * blockIdx.x;
  if constexpr ((kProbe & 512) != 0) {
    if (tid == 0) {
      stamp[0] = gtimer();
      stamp[24] = t_entry;
    }
  }

  // Stream-K (kStream): CTA i owns weight stages [start(i), start(i + 1)) of the tiles' stages
  // laid end to end (nw per tile); a unit is then the run of them inside one tile, u = its first
  // weight stage, and split = the CTA's index among those sharing the tile.
  const int nw = nk / 4;
  const int64_t total_w = int64_t(args.L) * tiles_per_l * nw;
  auto start_w = [&](int c) { return int(int64_t(c) * total_w / gridDim.x); };
  auto cta_of_w = [&](int w) {  // the CTA whose run holds weight stage w
    int c = int(int64_t(w) * gridDim.x / total_w);
    while (c + 1 < int(gridDim.x) && start_w(c + 1) <= w) ++c;
    while (start_w(c) > w) --c;
    return c;
  };
  const int first_u = kStream ? start_w(blockIdx.x) : int(blockIdx.x);
  const int end_u = kStream ? start_w(blockIdx.x + 1) : units;
  auto next_u = [&](int u) { return kStream ? min(end_u, (u / nw + 1) * nw) : u + int(gridDim.x); };
  auto tile_of = [&](int u) { return kStream ? u / nw : u / args.splits; };
  // Unit u -> tile (l, mt, nt) and its K blocks [kb0, kb1).
  auto unit_of = [&](int u, int& l, int& mt, int& nt, int& split, int& kb0, int& kb1) {
    const int tile = tile_of(u);
    l = tile / tiles_per_l;
    const int r = tile % tiles_per_l;
    mt = r / args.n_tiles;
    nt = r % args.n_tiles;
    if constexpr (kStream) {
      split = int(blockIdx.x) - cta_of_w(tile * nw);
      kb0 = 4 * (u - tile * nw);
      kb1 = 4 * (next_u(u) - tile * nw);
    } else {
      split = u % args.splits;
      kb0 = 4 * int(int64_t(split) * (nk / 4) / args.splits);  // weight stages are 4 K blocks
      kb1 = 4 * int(int64_t(split + 1) * (nk / 4) / args.splits);
    }
  };

  // This CTA's phase-0 batch (nb chunks from q, taken from the queue in the setup, or by thread 0
  // below with kEarlyBox) and nl, the activation stages of its first unit that its consumers
  // decode locally (decode_start); nl = 0 where the batch does not fit beside them (with
  // kEarlyBox: where a full batch would not, since the box is issued before nb is known; then
  // phase 0 runs first, through the whole ring, as before). The box is consumed iff nl > 0: here
  // nb <= batch <= S and the first unit has kb1 - kb0 >= 4 K blocks (a whole tile, K % 256 == 0,
  // or a pair's K half, which the host offers only with K >= 512), so nl >= 1.
  const bool early_box = kEarlyBox && batch <= S;
  auto start_plan = [&](int& q, int& nb, int& nl) {
    q = chunks;
    nb = 0;
    nl = 0;
    if constexpr ((kProbe & 4) == 0) {
      q = int(lds32(scratch + 8));
      nb = q < chunks ? min(batch, chunks - q) : 0;
      if (kLocalStart && (kEarlyBox ? early_box : nb <= S)) {
        int l, mt, nt, split, kb0, kb1;
        unit_of(first_u, l, mt, nt, split, kb0, kb1);
        nl = min(S + 1 - max(nb, 1), kb1 - kb0);
        if constexpr (S > 4) nl = min(nl, 4);  // one 4-chunk box
      }
    }
  };

  if constexpr (kEarlyBox) {
    // The local start's four packed chunks are issued by thread 32 (decode_start: they depend on
    // the unit only; their bytes are added to ld_bar's transaction count here, the arrival comes
    // with the batch's) while thread 0 takes the generation and the phase-0 batch (independent L2
    // round trips, back to back; the queue's atomic is contended by every CTA at the start);
    // everyone reads them after q_bar. (The first unit's coordinates are computed by every
    // thread, outside the branches. With them computed inside, ptxas compiled the consumers' main
    // loop with its counters in vector registers, every wgmma descriptor and barrier address
    // moved through R2UR behind a WARPSYNC (cuobjdump): +4.7 us at 512x4096x7168 with unchanged
    // main-loop source, docs/fused-kernel.md v5f.)
    int l_0, mt_0, nt_0, split_0, kb0_0, kb1_0;
    unit_of(first_u, l_0, mt_0, nt_0, split_0, kb0_0, kb1_0);
    if (tid == 32) {
      // (The bytes are counted before q_bar completes, so the arrival that comes after it cannot
      // complete ld_bar's phase without them; the loads are issued after the arrival, so that
      // nobody waits on q_bar for their issue: thread 0's round trips alone gate the others, the
      // weight producer among them, as in the other kernels.)
      if (early_box) mbar_expect_tx(ld_bar, 144u * BM);
      mbar_arrive(q_bar);
      if (early_box) load_local_box<BM>(maps, l_0, mt_0, kb0_0, ring, ld_bar);
    }
    if (tid == 0) {
      take_batch<true>(args, scratch, batch);
      if constexpr ((kProbe & 512) != 0) stamp[25] = gtimer();
      mbar_arrive(q_bar);
    }
    mbar_wait(q_bar, 0);
    asm volatile("ld.shared.u64 %0, [%1];\n" : "=l"(gen) : "r"(scratch) : "memory");
  }
  const unsigned long long tag = gen + 1;

  if (tid >= kConsumers) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Cfg::kProducerRegs));
    // Producer warp: lane 0 issues each stage's TMA boxes, S stages
    // ahead. The warp polls the activation chunks' done flags 32 stages at a time (one load per
    // lane), so a ready chunk costs no round trip to L2 per stage.
    if (tid == kConsumers + 32) {
      // Weight producer (lane 0 of the second warp): each weight stage (256 K of B1, B2 and
      // their scales) as soon as its ring slot is free — WS stages ahead of the consumers,
      // whatever the activation stream is waiting for (phase 0 included). In the activation
      // producer's loop the weights could get at most S activation stages ahead and waited
      // behind every activation slot; the consumers then stalled on weights (ncu).
      prefetch_tensormap(&maps.b1);
      prefetch_tensormap(&maps.b2);
      prefetch_tensormap(&maps.sfb1);
      prefetch_tensormap(&maps.sfb2);
      uint32_t wit = 0;  // weight stages issued
      for (int u = first_u; u < end_u && (kProbe & 32) == 0; u = next_u(u)) {
        int l, mt, nt, split, kb0, kb1;
        unit_of(u, l, mt, nt, split, kb0, kb1);
        for (int kb = kb0; kb < kb1; kb += 4, ++wit) {
          const int ws = int(wit % Cfg::WS);
          if (wit >= uint32_t(Cfg::WS)) mbar_wait(wempty_bar + 8 * ws, ((wit / Cfg::WS) - 1) & 1);
          // The second stage only once the first has arrived: at the start every CTA asks DRAM
          // for its first WS weight stages at once (7 MB at 128 CTAs, behind a dirty L2), and
          // the first wgmma waits for the first stage only. The pair measured -0.9 us at
          // 256x4096x7168 and 256x3072x4096, the others unchanged; waiting for every
          // predecessor was no better (docs/fused-kernel.md v5f).
          if (wit == 1) mbar_wait(wfull_bar, 0);
          const uint32_t wfull = wfull_bar + 8 * ws;
          const uint32_t wst = wring + ws * Cfg::kWStageBytes;
          mbar_arrive_expect_tx(wfull, (kProbe & 8) ? 0 : Cfg::kWStageBytes);
          if constexpr ((kProbe & 8) == 0) {
            tma_load_3d(wst, &maps.b1, kb * 32, nt * kNT, l, wfull);
            tma_load_3d(wst + Cfg::kWBytes, &maps.b2, kb * 32, nt * kNT, l, wfull);
            tma_load_3d(wst + 2 * Cfg::kWBytes, &maps.sfb1, kb * 4, nt * kNT, l, wfull);
            tma_load_3d(wst + 2 * Cfg::kWBytes + Cfg::kSBytes, &maps.sfb2, kb * 4, nt * kNT, l,
                        wfull);
          }
        }
      }
    }
    if (tid / 32 == kConsumers / 32) {
      // Activation producer (the first warp): polls phase 0's chunk flags, issues the
      // activation stages S ahead and decodes unclaimed phase-0 batches itself.
      const int lane = tid % 32;
      if (lane == 0) prefetch_tensormap(&maps.act);
      int q0, nb0, nl;
      start_plan(q0, nb0, nl);
      uint32_t it = 0;  // activation stages issued (or decoded by the consumers)
      for (int u = first_u; u < end_u && (kProbe & 32) == 0; u = next_u(u)) {
        int l, mt, nt, split, kb0, kb1;
        unit_of(u, l, mt, nt, split, kb0, kb1);
        const unsigned long long* state = args.chunk_state + int64_t(l) * args.m_tiles + mt;
        const int64_t kb_stride = int64_t(args.L) * args.m_tiles;
        uint32_t ready = 0;
        for (int kb = kb0; kb < kb1; ++kb, ++it) {
          if (it < uint32_t(nl)) continue;  // decoded into the ring by the consumers
          if constexpr ((kProbe & 4) == 0) {
            // (Re)poll the window [kb, kb + 32) whenever stage kb is not known to be ready; the
            // proxy fence after a poll orders the chunks' generic-proxy writes (acquired above)
            // before the TMA reads that follow (one fence per poll, not per stage: it is slow).
            const int j = (kb - kb0) % 32;
            if (j == 0) ready = 0;
            bool polled = false;
            while (!((ready >> j) & 1u)) {
              const int kq = kb - j + lane;
              const bool ok = kq >= kb1 || ld_acquire(state + kq * kb_stride) == tag;
              ready = __ballot_sync(0xFFFFFFFFu, ok);
              polled = true;
              if ((ready >> j) & 1u) break;
              // Not ready: if batches are still unclaimed, their CTAs may not be running —
              // decode one here (this is what makes the kernel deadlock-free); else sleep.
              int q = chunks;
              if (lane == 0 &&
                  *reinterpret_cast<volatile unsigned int*>(&args.sync->next_chunk) < uint32_t(chunks))
                q = int(atomicAdd(&args.sync->next_chunk, uint32_t(batch)));
              q = __shfl_sync(0xFFFFFFFFu, q, 0);
              if (q < chunks) {
                const int nb = min(batch, chunks - q);
                decode_batch<BM, 1>(args, q, nb, lane, 32);  // (the producer has few registers)
                if constexpr ((kProbe & 512) != 0) {
                  if (lane == 0) stamp[6] += 1;
                }
                publish_batch(args, q, nb, tag, [] { __syncwarp(); }, lane == 0);
              } else {
                __nanosleep(128);
              }
            }
            if (polled && lane == 0) fence_proxy_async_global();
            if constexpr ((kProbe & 512) != 0) {
              if (lane == 0 && it == 0) stamp[2] = gtimer();
            }
          }
          if (lane == 0) {
            // Phase 0 stages its chunks in the activation ring (and the staging tile).
            if constexpr ((kProbe & 4) == 0) {
              if (it == uint32_t(nl)) mbar_wait(ph0_bar, 0);
            }
            const int s = int(it % S);
            if (it >= uint32_t(S)) mbar_wait(empty_bar + 8 * s, ((it / S) - 1) & 1);
            const uint32_t full = full_bar + 8 * s;
            mbar_arrive_expect_tx(full, (kProbe & 1) ? 0 : Cfg::kActBytes);
            if constexpr ((kProbe & 1) == 0)
              tma_load_3d(ring + s * Cfg::kActBytes, &maps.act, kb * kBK, mt * BM, l, full);
          }
        }
      }
      // This CTA is done with the queue and the flags (thread 0's atomic at the start and this
      // warp's polls and steals were its only uses): count it; the last CTA to count resets the
      // queue and starts the next generation. By then every CTA's producer has finished, so
      // every chunk that anyone waits for has been published and nobody takes from the queue
      // any more; the next launch (same stream) starts after this one ends. Done here, by a warp
      // that is idle from now on, instead of after the epilogue: there the fence and the
      // contended atomic were on every CTA's path to its exit, -0.9 to -1.4 us on every default
      // kernel (docs/fused-kernel.md v5j).
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
    if constexpr ((kProbe & 4) == 0) {
      // Phase-0 warp (the fourth): once the consumers have decoded the start (decode_start),
      // writes their phase-0 batch to the workspace with TMA stores, frees the ring slots and the
      // staging tile (ph0_bar) once the stores have read them, and publishes the chunks when the
      // stores are complete — all off the consumers' path to their first wgmma.
      if (tid / 32 == kConsumers / 32 + 3) {
        int q, nb, nl;
        start_plan(q, nb, nl);
        if (nl > 0) {
          // (barrier 4 with the consumers; the non-.aligned form, as in the consumers: synccheck
          // reported the .aligned bar.sync here as divergent)
          asm volatile("barrier.sync 4, %0;\n" ::"r"(kConsumers + 32) : "memory");
          if (tid % 32 == 0) {
            for (int i = 0; i < nb; ++i) {
              const Chunk ch = chunk_of(args, q + i);
              const uint32_t src = i == 0 ? staging : ring + uint32_t(S - i) * Cfg::kActBytes;
              tma_store_3d(&maps.act, src, ch.kb * kBK, ch.mt * BM, ch.l);
            }
            if constexpr ((kProbe & 512) != 0) stamp[14] = gtimer();
            bulk_commit();
            bulk_wait_read();
            mbar_arrive(ph0_bar);
            if (nb > 0) {
              bulk_wait();
              if constexpr ((kProbe & 512) != 0) stamp[15] = gtimer();
              publish_chunks(args, q, nb, tag);
            }
            if constexpr ((kProbe & 512) != 0) stamp[1] = gtimer();
          }
        }
      }
    }
    if constexpr ((kProbe & 512) != 0) {  // warp 2 watches the start: stamps 10 and 11
      int q, nb, nl;
      start_plan(q, nb, nl);
      const bool fetched = nl > 0 || (q < chunks && !kLocalStart && nb <= S &&
                                      nb * BM <= 4 * kConsumers);
      if (tid == kConsumers + 64 && fetched) {
        mbar_wait(ld_bar, 0);
        stamp[10] = gtimer();
        mbar_wait(wfull_bar, 0);
        stamp[11] = gtimer();
      }
    }
    if constexpr (kStream) {
      // Helper warp for stream-K partials: per unit of a shared tile, wait until the consumers
      // have issued their partial's stores (or decided they are last), then make it visible
      // and flag it ready.
      if (tid / 32 == kConsumers / 32 + 2) {
        for (int u = first_u; u < end_u; u = next_u(u)) {
          int l, mt, nt, split, kb0, kb1;
          unit_of(u, l, mt, nt, split, kb0, kb1);
          const int tile = tile_of(u);
          const int np = cta_of_w(tile * nw + nw - 1) - cta_of_w(tile * nw) + 1;
          if (np <= 1) continue;
          asm volatile("bar.sync 3, %0;\n" ::"r"(kConsumers + 32) : "memory");
          if (tid % 32 == 0) {
            __threadfence();
            st_release(args.ready + int64_t(tile) * args.splits + split, tag);
          }
        }
      }
    }
    if constexpr (kPair) {  // the consumers' two cluster barriers (see there)
      cluster_sync_all();
      cluster_sync_all();
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Cfg::kConsumerRegs));
    // Consumers. Phase 0: take one batch of activation chunks (an even share per CTA) from the
    // queue and decode it. Whatever is left in the queue (CTAs that never ran concurrently) is
    // taken by the producer warp of a CTA that waits for it (see the producer).
    if constexpr ((kProbe & 4) == 0) {
      int q, nb, nl;  // the batch taken from the queue above, and the local stages
      start_plan(q, nb, nl);
      if (nl > 0) {
        // The first nl stages of the first unit straight into the ring, the batch beside them;
        // the phase-0 warp writes and publishes the batch (see there).
        int l0, mt0, nt0, split0, kb00, kb10;
        unit_of(first_u, l0, mt0, nt0, split0, kb00, kb10);
        if constexpr (kLocalStart) {  // (start_plan: nl == 0 in the others)
          static_assert((S + 1) * BM <= 5 * kConsumers, "decode_start reads all items at once");
          decode_start<BM, S, 5, kEarlyBox>(args, maps, l0, mt0, kb00, nl, q, nb, ring, staging,
                                            ld_bar, tid, kConsumers,
                                            [] { consumer_sync(kConsumers); });
        }
        fence_proxy_async();  // this thread's ring writes -> wgmma and the TMA stores
        if constexpr ((kProbe & 512) != 0) {
          if (tid == 0) stamp[9] = gtimer();
        }
        __syncwarp();
        asm volatile("barrier.sync 4, %0;\n" ::"r"(kConsumers + 32) : "memory");  // + phase-0 warp
        if (tid == 0)
          for (int s = 0; s < nl; ++s) mbar_arrive(full_bar + 8 * s);
      } else if (q < chunks) {
        // Decoded into the (still unused) activation ring, written by TMA stores.
        // (This TMA path is compiled only into the kernels that never take the local start: with
        // its code present there, unused, the local-start kernel ran 7-8 us slower (in the local
        // start's decode and in the epilogue; not explained), docs/fused-kernel.md v5d.)
        constexpr bool kFetch = !kLocalStart;
        decode_batch_tma<BM, 4, kFetch>(args, maps, q, nb, tid, kConsumers, ring, S, ld_bar,
                                [] { consumer_sync(kConsumers); }, tid == 0);
        if constexpr ((kProbe & 512) != 0) {
          if (tid == 0) stamp[9] = gtimer();
        }
        if (tid == 0) publish_chunks(args, q, nb, tag);
        if constexpr ((kProbe & 512) != 0) {
          if (tid == 0) stamp[1] = gtimer();
        }
      }
      if (nl == 0 && tid == 0) mbar_arrive(ph0_bar);  // the ring is free for the producer
    }

    const int wg = tid / 128, w = (tid % 128) / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const int wrow = wg * 32 + 8 * w + g;  // this thread's B1 / B2 row within the tile
    uint32_t it = 0, wit = 0;  // activation and weight stages consumed
    for (int u = first_u; u < end_u && (kProbe & 32) == 0; u = next_u(u)) {
      int l, mt, nt, split, kb0, kb1;
      unit_of(u, l, mt, nt, split, kb0, kb1);
      const int n = kb1 - kb0;  // a multiple of 4

      float acc[Cfg::kAcc];
#pragma unroll
      for (int i = 0; i < Cfg::kAcc; ++i) acc[i] = 0.0f;
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
        if (q == 0) mbar_wait(wfull_bar + 8 * ws, (w / Cfg::WS) & 1);
        const uint32_t wst = wring + ws * Cfg::kWStageBytes;
        // 16-byte unit 2q + t/2 of row wrow, stored at unit ^ (wrow % 8) (128B swizzle).
        const uint32_t off = wrow * 128 + ((((2 * q + (t >> 1)) ^ (wrow & 7))) << 4) + 8 * (t & 1);
        const uint2 p1 = lds64(wst + off), p2 = lds64(wst + Cfg::kWBytes + off);
        const uint32_t sb = wst + 2 * Cfg::kWBytes + wrow * 16 + q * 4 + t;
        const uint32_t s1 = scale64(lds8(sb)), s2 = scale64(lds8(sb + Cfg::kSBytes));
        if (q == 3) release(wempty_bar + 8 * ws);
        uint4 b1lo, b1hi, b2lo, b2hi;
        if constexpr ((kProbe & 16) == 0) {
          b1lo = decode8(p1.x, s1);
          b1hi = decode8(p1.y, s1);
          b2lo = decode8(p2.x, s2);
          b2hi = decode8(p2.y, s2);
        } else {
          b1lo = make_uint4(p1.x, p1.y, s1, s2);
          b1hi = make_uint4(p1.y, p1.x, s2, s1);
          b2lo = make_uint4(p2.x, p2.y, s1, s2);
          b2hi = make_uint4(p2.y, p2.x, s2, s1);
        }
        // Step j/2 uses decoded pairs j (cols 2t..) and j+1 (cols 2t+8..) of B1 (row g) and B2
        // (row g+8).
        f[0][0] = b1lo.x; f[0][1] = b2lo.x; f[0][2] = b1lo.y; f[0][3] = b2lo.y;
        f[1][0] = b1lo.z; f[1][1] = b2lo.z; f[1][2] = b1lo.w; f[1][3] = b2lo.w;
        f[2][0] = b1hi.x; f[2][1] = b2hi.x; f[2][2] = b1hi.y; f[2][3] = b2hi.y;
        f[3][0] = b1hi.z; f[3][1] = b2hi.z; f[3][2] = b1hi.w; f[3][3] = b2hi.w;
      };
      auto issue = [&](const uint32_t(&f)[4][4], int i) {
        const uint32_t q = it + uint32_t(i);
        mbar_wait(full_bar + 8 * (q % S), (q / S) & 1);
        if constexpr ((kProbe & 512) != 0) {
          if (tid == 0 && q == 0) {
            stamp[3] = gtimer();
            stamp[26] = clock64();
          }
        }
        if constexpr ((kProbe & 2) == 0) {
          const uint64_t desc = sw128_desc(ring + (q % S) * Cfg::kActBytes);
          if ((kProbe & 64) == 0 || i == 0) wgmma_fence();
#pragma unroll
          for (int k = 0; k < 4; ++k) WgmmaRs<BM>::mma(acc, f[k], desc + 2 * k);
          wgmma_commit();
        } else {
#pragma unroll
          for (int k = 0; k < 4; ++k)  // keep the decode alive
            acc[k] += __uint_as_float(f[k][0] ^ f[k][1] ^ f[k][2] ^ f[k][3]);
        }
      };
      // One step: issue stage i from `cur`; once wgmma(i-1) is done, release its activation
      // stage and decode stage i+1 into `next` (the set wgmma(i-1) read). One wgmma group stays
      // queued while a thread decodes: with two, the decode ran slower (docs/fused-kernel.md v5).
      auto step = [&](const uint32_t(&cur)[4][4], uint32_t(&next)[4][4], int i) {
        issue(cur, i);
        wgmma_wait<1>(acc);
        if (i >= 1) release(empty_bar + 8 * ((it + uint32_t(i - 1)) % S));
        if (i + 1 < n) load_frag(next, i + 1);
      };
      load_frag(f0, 0);
      for (int i = 0; i < n; i += 2) {
        step(f0, f1, i);
        if (i + 1 < n) step(f1, f0, i + 1);
      }
      wgmma_wait<0>(acc);
      if constexpr ((kProbe & 4) == 0) {
        // Phase 0's TMA stores have read the staging tile and ring slots (the epilogue, the
        // pair's exchange and later stages write them).
        if (it == 0) mbar_wait(ph0_bar, 0);
      }
      if constexpr ((kProbe & 512) != 0) {
        // each consumer warp (the first 8: slots 16..23; slot 24 is the kernel entry)
        if (lane == 0 && it == 0 && tid < 256) stamp[16 + tid / 32] = gtimer();
        if (tid == 0 && it == 0) {
          stamp[4] = gtimer();
          stamp[27] = clock64();
        }
        if (tid == 0 && it != 0) stamp[13] = gtimer();
      }
      release(empty_bar + 8 * ((it + uint32_t(n - 1)) % S));
      it += uint32_t(n);
      wit += uint32_t(n / 4);

      const int tile = tile_of(u);
      int m_out = 0;  // first row of C this CTA writes, within the tile
      if constexpr (kPair) {
        // Split-K pair (one unit per CTA, the two splits of a tile in one cluster, rank =
        // split): rank r finishes rows [r BM/2, (r + 1) BM/2) of the tile. Each CTA sends the
        // other half of its accumulators into the peer's (now idle) activation ring, kAcc / 8
        // float4 per thread at [i][tid], and adds what it received: p0 + p1 either way (fp addition
        // commutes), so the result does not depend on the rank.
        const uint32_t rank = uint32_t(split);
        cluster_sync_all();  // 1: both main loops are done, both rings are free
        if constexpr ((kProbe & 512) != 0) {
          if (tid == 0) stamp[29] = gtimer();
        }
        const uint32_t dst = peer_smem(ring, rank ^ 1u);
#pragma unroll
        for (int i = 0; i < Cfg::kAcc / 8; ++i) {
          float v[4];
#pragma unroll
          for (int c = 0; c < 4; ++c) v[c] = rank ? acc[4 * i + c] : acc[Cfg::kAcc / 2 + 4 * i + c];
          st_cluster_f4(dst + uint32_t(i * kConsumers + tid) * 16u, v[0], v[1], v[2], v[3]);
        }
        cluster_sync_all();  // 2: the halves have arrived
        if constexpr ((kProbe & 512) != 0) {
          if (tid == 0) stamp[30] = gtimer();
        }
#pragma unroll
        for (int i = 0; i < Cfg::kAcc / 8; ++i) {
          const uint4 r = lds128(ring + uint32_t(i * kConsumers + tid) * 16u);
          const float x[4] = {__uint_as_float(r.x), __uint_as_float(r.y), __uint_as_float(r.z),
                              __uint_as_float(r.w)};
#pragma unroll
          for (int c = 0; c < 4; ++c)
            acc[4 * i + c] = (rank ? acc[Cfg::kAcc / 2 + 4 * i + c] : acc[4 * i + c]) + x[c];
        }
        m_out = (BM / 2) * int(rank);
      }
      if constexpr (kStream) {
        // Stream-K: a tile shared by np CTAs (parts 0..np-1 in K order). Each part counts itself
        // in first; the last to arrive waits for the others' partials (they have arrived, so
        // they are running and will write them without waiting on anything) and adds them in
        // part order, its own accumulators at their place; the others write their partial and
        // leave the fence and the ready flag to the helper warp (warp 2 of the producer
        // warpgroup), so they go on with their next unit at once.
        const int np = cta_of_w(tile * nw + nw - 1) - cta_of_w(tile * nw) + 1;
        if (np > 1) {
          const uint32_t flag = scratch + 12;
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
          // The helper warp fences and flags this part (harmless for the last one: nobody waits
          // for it).
          asm volatile("bar.arrive 3, %0;\n" ::"r"(kConsumers + 32) : "memory");
          if (!last) {
            if constexpr ((kProbe & 512) != 0) {
              if (tid == 0 && it == uint32_t(kb1 - kb0)) stamp[12] = gtimer();
            }
            continue;
          }
          if (tid == 0) {
            for (int q = 0; q < np; ++q)
              if (q != split) wait_tag(rdy + q, tag);
            __threadfence();
          }
          consumer_sync(kConsumers);
          if (split >= 2) {  // own part written above: all parts from memory, in order
#pragma unroll
            for (int i = 0; i < Cfg::kAcc / 4; ++i) {
              const float4 x = __ldcg(reinterpret_cast<const float4*>(slots) + i * kConsumers + tid);
              acc[4 * i] = x.x; acc[4 * i + 1] = x.y; acc[4 * i + 2] = x.z; acc[4 * i + 3] = x.w;
            }
          }
          // Parts 0 + 1 + 2 + ... in this order: from the own registers for split 0 or 1 (a + b
          // is b + a exactly), else (own part written above) part 0 was loaded into acc.
          for (int q = split >= 2 ? 1 : 0; q < np; ++q) {
            if (split < 2 && q == split) continue;
            const float4* part = reinterpret_cast<const float4*>(slots + int64_t(q) * 2 * BM * kNT);
#pragma unroll
            for (int i = 0; i < Cfg::kAcc / 4; ++i) {
              const float4 x = __ldcg(part + i * kConsumers + tid);
              acc[4 * i] += x.x; acc[4 * i + 1] += x.y; acc[4 * i + 2] += x.z; acc[4 * i + 3] += x.w;
            }
          }
        }
      }
      if (!kStream && !kPair && BM == 128 && WG == 2 && args.splits > 1) {
        // (BM = 256 and three warpgroups run with splits == 1 only, or as pairs)
        // Split-K: the last of the tile's units to arrive adds the partials in split order.
        const uint32_t flag = scratch + 12;
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
          args.tile_count[tile] = 0;  // next launch starts from zero (this launch is done with it)
          for (int s = 0; s < args.splits; ++s)
            if (s != split) wait_tag(args.ready + int64_t(tile) * args.splits + s, tag);
          __threadfence();
        }
        consumer_sync(kConsumers);
        // acc <- sum of the tile's partials in split order (this unit's own one from registers).
#pragma unroll
        for (int i = 0; i < Cfg::kAcc / 4; ++i) {
          float4 v = make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]);
          float4 sum = v;
          for (int s = 0; s < args.splits; ++s) {
            const float4 x =
                s == split ? v
                           : __ldcg(reinterpret_cast<const float4*>(
                                        args.partials +
                                        (int64_t(tile) * args.splits + s) * 2 * BM * kNT) +
                                    i * kConsumers + tid);
            if (s == 0) {
              sum = x;
            } else {
              sum.x += x.x; sum.y += x.y; sum.z += x.z; sum.w += x.w;
            }
          }
          acc[4 * i] = sum.x; acc[4 * i + 1] = sum.y; acc[4 * i + 2] = sum.z; acc[4 * i + 3] = sum.w;
        }
      }

      // Epilogue: silu·mul in registers -> fp16 staging tile [BM rows of C][kNT columns] ->
      // 16-byte coalesced (masked) stores. (All accumulators are read in one block: reading part
      // of them after a barrier or a store loop made ptxas serialize every wgmma of the main loop,
      // +20-30 us; ctest ptxas_fused_codegen watches for it, docs/fused-kernel.md v5e.)
      consumer_sync(kConsumers);  // the previous tile's staging reads are done
      if constexpr ((kProbe & 512) != 0) {
        if (tid == 0 && it == uint32_t(kb1 - kb0)) stamp[31] = gtimer();
      }
      constexpr int kRowsOut = kPair ? BM / 2 : BM;  // rows of C this CTA writes
#pragma unroll
      for (int j = 0; j < kRowsOut / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float y =
              silu_mul_nb(acc[4 * j + e], acc[4 * j + 2 + e], args.alpha1, args.alpha2);
          sts16(staging + (8 * j + 2 * t + e) * Cfg::kStRow + wrow * 2,
                __half_as_ushort(__float2half_rn(y)));
        }
      }
      consumer_sync(kConsumers);
      if constexpr ((kProbe & 512) != 0) {
        if (tid == 0 && it == uint32_t(kb1 - kb0)) stamp[7] = gtimer();
      }
      const int m0 = mt * BM + m_out, n0 = nt * kNT;
      const bool vec_ok = (args.N % 8) == 0;
      for (int q = tid; q < kRowsOut * (kNT / 8); q += kConsumers) {
        const int r = q / (kNT / 8), cu = q % (kNT / 8);
        const int m = m0 + r, nn = n0 + 8 * cu;
        if (m >= args.M || nn >= args.N) continue;
        const uint4 v = lds128(staging + r * Cfg::kStRow + cu * 16);
        __half* out = args.c + (int64_t(l) * args.M + m) * args.N + nn;
        if (vec_ok && nn + 8 <= args.N) {
          *reinterpret_cast<uint4*>(out) = v;
        } else {
          const uint16_t* h = reinterpret_cast<const uint16_t*>(&v);
          for (int x = 0; x < 8 && nn + x < args.N; ++x)
            reinterpret_cast<uint16_t*>(out)[x] = h[x];
        }
      }
    }
  }

  if constexpr ((kProbe & 512) != 0) {
    if (tid == 0) stamp[5] = gtimer();
  }
#else
  __trap();
#endif
}

// Host side: stream-K's launch shape for `tiles` 256-row tiles of `nw` 256-K weight stages each
// over `sms` SMs — the grid (at most one CTA per weight stage) and the most parts one tile can be
// split into (CTA runs are at least floor(stages / grid) long), i.e. the partial slots and ready
// flags per tile and the kernel's `splits`.
struct StreamK {
  int grid, parts;
};
inline StreamK stream_k_shape(int64_t tiles, int64_t nw, int sms) {
  const int64_t total = tiles * nw;
  const int64_t g = std::min<int64_t>(std::max(1, sms), total), wmin = total / g;
  return StreamK{int(g), int((nw - 1 + wmin - 1) / wmin + 1)};
}

// Host side: the tensor maps for activation tile height bm and nt columns of C per tile
// (RsConfig::kNT: the weight boxes' height).
inline RsMaps make_rs_maps(const RsArgs& a, const uint8_t* b1, const uint8_t* b2,
                           const uint8_t* sfb1, const uint8_t* sfb2, int bm, int nt) {
  RsMaps m;
  m.act = make_tensor_map(a.act, 2, a.K, a.M, a.L, kBK, uint32_t(bm), CU_TENSOR_MAP_SWIZZLE_128B);
  m.b1 = make_tensor_map(b1, 1, a.K / 2, a.N, a.L, 128, uint32_t(nt), CU_TENSOR_MAP_SWIZZLE_128B);
  m.b2 = make_tensor_map(b2, 1, a.K / 2, a.N, a.L, 128, uint32_t(nt), CU_TENSOR_MAP_SWIZZLE_128B);
  m.sfb1 =
      make_tensor_map(sfb1, 1, a.K / 16, a.N, a.L, 16, uint32_t(nt), CU_TENSOR_MAP_SWIZZLE_NONE);
  m.sfb2 =
      make_tensor_map(sfb2, 1, a.K / 16, a.N, a.L, 16, uint32_t(nt), CU_TENSOR_MAP_SWIZZLE_NONE);
  m.pa = make_tensor_map(a.a, 1, a.K / 2, a.M, a.L, 32, uint32_t(bm), CU_TENSOR_MAP_SWIZZLE_NONE);
  m.psfa = make_tensor_map(a.sfa, 1, a.K / 16, a.M, a.L, 16, uint32_t(bm), CU_TENSOR_MAP_SWIZZLE_NONE);
  m.pa4 = make_tensor_map(a.a, 1, a.K / 2, a.M, a.L, 128, uint32_t(bm), CU_TENSOR_MAP_SWIZZLE_128B);
  return m;
}

}  // namespace nvfp4::gpu::fused::rs
