// v5_config.cuh — the v5 fused kernel's configuration (v5_kernel.cuh has its design): launch
// arguments, tensor maps, the per-configuration constants with a static_assert per constraint,
// the shared-memory layout, and the host-side launch shapes (stream-K) and tensor maps.
#pragma once
#include <cuda.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "tensor_map.cuh"

namespace nvfp4::gpu::fused::v5 {

// Cross-CTA state in the plan's workspace (zeroed once when the plan is made).
struct SyncState {
  unsigned long long gen;  // launches completed: this launch's flags are tagged gen + 1
  unsigned int next_chunk; // phase-0 work queue
  unsigned int done_ctas;  // CTAs done with the queue in this launch (the last resets, bumps gen)
};

struct Args {
  const uint8_t* a;                  // (L, M, K/2) packed E2M1
  const uint8_t* sfa;                // (L, M, K/16) E4M3
  uint16_t* act;                     // (L, M, K) decoded A (fp16 bits), K permuted per 64-block
  unsigned long long* chunk_state;   // per phase-0 chunk: tag of the launch that decoded it
  SyncState* sync;
  float* partials;                   // split-K / stream-K: per unit or part, 2 * BM * 64 floats
  unsigned int* tile_count;          // split-K / stream-K: arrivals per tile
  unsigned long long* ready;         // split-K / stream-K: per unit or part, tag when written
  __half* c;                         // (L, M, N)
  int M, N, K, L;
  int m_tiles, n_tiles, splits;      // tiles = L * m_tiles * n_tiles; units = tiles * splits
  float alpha1, alpha2;
};

struct Maps {
  CUtensorMap act;          // uint16 (K, M, L), box (64, BM, 1), 128B swizzle
  CUtensorMap b1, b2;       // uint8 (K/2, N, L), box (128, kNT, 1), 128B swizzle
  CUtensorMap sfb1, sfb2;   // uint8 (K/16, N, L), box (16, kNT, 1)
  CUtensorMap pa, psfa;     // packed A uint8 (K/2, M, L), box (32, BM, 1); its scales (K/16, M, L),
                            // box (16, BM, 1): one 64-K chunk of BM rows for phase 0's loads
  CUtensorMap pa4;          // packed A, box (128, BM, 1), 128B swizzle: the local start's four
                            // 64-K chunks at once
};

constexpr int kBK = 64;  // K elements per activation stage and per phase-0 chunk

// How the units of work map to tiles (v5_kernel.cuh): Tiles, a persistent grid over tiles (with
// splits > 1 at BM = 128 and two consumer warpgroups: split-K through global memory); Pair, the
// two K halves of each tile in a 2-CTA cluster; StreamK, equal runs of weight stages per CTA.
enum class Split { Tiles, Pair, StreamK };

// Shared memory: an activation ring of S stages (64 K each: BM rows x 128 bytes, 128B swizzle)
// and a weight ring of WS stages (256 K each: kNT rows x 128 packed bytes of B1 and of B2, 128B
// swizzle, plus kNT rows x 16 scale bytes of each), so that every TMA row is a whole 128-byte line
// or a scale row read exactly once (a TMA box costs issue time per row, docs/fused-kernel.md v5).
//
// WG consumer warpgroups (2, or 3 with BM = 128): each owns 32 columns of C (64 weight rows), so
// a tile is BM x 32*WG. Three make 128 x 96 tiles, which fill the SMs where the 256 x 64 tiles
// leave some idle (docs/fused-kernel.md v5g).
// Register split (setmaxnreg): ptxas compiles the whole kernel within what the launch gives each
// thread, 65536 / threads rounded down to 8 with every SM sub-partition's 16K registers shared
// by its warps: 168 for 384 threads, 128 for 512. The producer warpgroup then gives some back and
// the consumers take them: 64 / 216 for two consumer warpgroups (128 accumulators at BM = 256 +
// two fragment sets, no spill), 56 / 152 for three (64 accumulators, no spill). The split-K
// reduction through global memory is compiled for BM = 128 with two consumer warpgroups only
// (with BM = 256 or three warpgroups it spills).
template <int BM_, int S_, int WG_ = 2>
struct Config {
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

// The shared-memory map of one CTA (32-bit shared addresses from the 1024-aligned base):
// activation ring, weight ring, epilogue staging tile, then the mbarriers and 16 scratch bytes.
template <class Cfg>
struct Smem {
  uint32_t ring;        // S activation stages
  uint32_t wring;       // WS weight stages
  uint32_t staging;     // the epilogue's fp16 tile (and a phase-0 chunk at the start)
  uint32_t full_bar;    // S x 8: activation stage arrived
  uint32_t empty_bar;   // S x 8: activation stage consumed
  uint32_t wfull_bar;   // WS x 8: weight stage arrived
  uint32_t wempty_bar;  // WS x 8: weight stage consumed
  uint32_t scratch;     // 16 bytes: gen (8), phase-0 batch / last-arrival flag (4 + 4)
  uint32_t ph0_bar;     // phase 0 is done with the activation ring
  uint32_t ld_bar;      // the start's packed activation chunks have arrived
  uint32_t q_bar;       // the generation and the phase-0 batch are in scratch
  __device__ __forceinline__ explicit Smem(uint32_t base)
      : ring(base),
        wring(ring + Cfg::S * Cfg::kActBytes),
        staging(wring + Cfg::WS * Cfg::kWStageBytes),
        full_bar(staging + Cfg::kStagingBytes),
        empty_bar(full_bar + Cfg::S * 8),
        wfull_bar(empty_bar + Cfg::S * 8),
        wempty_bar(wfull_bar + Cfg::WS * 8),
        scratch(wempty_bar + Cfg::WS * 8),
        ph0_bar(scratch + 16),
        ld_bar(scratch + 24),
        q_bar(scratch + 32) {}
};

// Logical word (fp16 pair) of a 64-wide K block that holds decoded word j (0..7) of the 16
// physical elements [16t, 16t+16): decode8 of the low packed word yields the pairs (e0,e2),
// (e4,e6), (e1,e3), (e5,e7), of the high word (e8,e10), (e12,e14), (e9,e11), (e13,e15); pair j is
// fragment register a[2*(j%2)...] of k16 step j/2 (v5_mainloop.cuh), i.e. logical elements
// 16*(j/2) + 8*(j%2) + 2t + {0,1}.
__host__ __device__ constexpr int kLogicalWord(int j, int t) { return 4 * j + t; }

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
// (Config::kNT: the weight boxes' height).
inline Maps make_maps(const Args& a, const uint8_t* b1, const uint8_t* b2, const uint8_t* sfb1,
                      const uint8_t* sfb2, int bm, int nt) {
  Maps m;
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

}  // namespace nvfp4::gpu::fused::v5
