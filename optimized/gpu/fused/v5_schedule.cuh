// v5_schedule.cuh — which work each CTA of the v5 kernel does, and the context its phases share.
//
// Units: with Split::Tiles and Split::Pair, unit u = (tile u / splits, split u % splits), CTA b
// takes units b, b + grid, ... (persistent; a pair's grid is exactly the units); a split covers
// whole 256-K weight stages. With Split::StreamK, the tiles' weight stages are laid end to end
// (nw per tile) and CTA b owns the run [start_w(b), start_w(b + 1)); a unit is then the part of
// that run inside one tile (u = its first weight stage) and its split is the CTA's index among the
// CTAs sharing the tile (parts in K order).
// Phase-0 chunks: chunk c is rows [mt*BM, mt*BM + BM) of A[l], K block kb, with (kb, l, mt) =
// (c / (L*m_tiles), (c / m_tiles) % L, c % m_tiles) — K-major, so the first chunks are the first
// ones every tile needs. Each CTA takes one batch of `batch` chunks from the queue.
#pragma once
#include <cstdint>

#include "ptx.cuh"
#include "v5_config.cuh"

namespace nvfp4::gpu::fused::v5 {
using namespace ptx;  // the v5 files use the PTX primitives unqualified

// A unit: tile (l, mt, nt), its split, and its K blocks [kb0, kb1) (a multiple of 4).
struct Unit {
  int l, mt, nt, split, kb0, kb1;
};

template <bool kStream>
struct Schedule {
  const Args& args;
  int nk;           // 64-K blocks
  int tiles_per_l;  // tiles per batch
  int units;        // tiles * splits (Tiles, Pair)
  int chunks;       // phase-0 chunks
  int batch;        // phase-0 chunks per CTA
  __device__ __forceinline__ explicit Schedule(const Args& a)
      : args(a),
        nk(a.K / kBK),
        tiles_per_l(a.m_tiles * a.n_tiles),
        units(a.L * tiles_per_l * a.splits),
        chunks(nk * a.L * a.m_tiles),
        batch((chunks + int(gridDim.x) - 1) / int(gridDim.x)) {}
};

// The units of one CTA (see the header).
template <bool kStream>
struct Units {
  const Args& args;
  int nk, tiles_per_l, units;
  int nw;          // weight stages per tile
  int64_t total_w; // weight stages of all tiles
  int first_u, end_u;
  __device__ __forceinline__ Units(const Schedule<kStream>& s)
      : args(s.args),
        nk(s.nk),
        tiles_per_l(s.tiles_per_l),
        units(s.units),
        nw(s.nk / 4),
        total_w(int64_t(s.args.L) * s.tiles_per_l * nw),
        first_u(kStream ? start_w(blockIdx.x) : int(blockIdx.x)),
        end_u(kStream ? start_w(blockIdx.x + 1) : s.units) {}
  __device__ __forceinline__ int start_w(int c) const {
    return int(int64_t(c) * total_w / gridDim.x);
  }
  // The CTA whose run holds weight stage w.
  __device__ __forceinline__ int cta_of_w(int w) const {
    int c = int(int64_t(w) * gridDim.x / total_w);
    while (c + 1 < int(gridDim.x) && start_w(c + 1) <= w) ++c;
    while (start_w(c) > w) --c;
    return c;
  }
  __device__ __forceinline__ int next_u(int u) const {
    return kStream ? min(end_u, (u / nw + 1) * nw) : u + int(gridDim.x);
  }
  __device__ __forceinline__ int tile_of(int u) const { return kStream ? u / nw : u / args.splits; }
  // Stream-K: the CTAs sharing tile `tile` (1: the tile is this CTA's alone).
  __device__ __forceinline__ int parts_of(int tile) const {
    return cta_of_w(tile * nw + nw - 1) - cta_of_w(tile * nw) + 1;
  }
  // Unit u (its tile, split and K blocks); unit() returns the same as a Unit.
  __device__ __forceinline__ void unit_of(int u, int& l, int& mt, int& nt, int& split, int& kb0,
                                          int& kb1) const {
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
  }
  __device__ __forceinline__ Unit unit(int u) const {
    Unit x;
    unit_of(u, x.l, x.mt, x.nt, x.split, x.kb0, x.kb1);
    return x;
  }
};

// Phase-0 chunk c (see the header).
struct Chunk {
  int l, mt, kb;
};
__device__ __forceinline__ Chunk chunk_of(const Args& a, int c) {
  return Chunk{(c / a.m_tiles) % a.L, c % a.m_tiles, c / (a.L * a.m_tiles)};
}

}  // namespace nvfp4::gpu::fused::v5
