// candidates.hpp — the fused plan's configurations (the autotune candidates) for a shape, and the
// one it runs without autotune. Host-only C++ (no CUDA), so the table can be read and tested
// without a device.
//
// Two kernel families (fused.cu):
//   v5 (v5_kernel.cuh; K % 256 == 0 only): BM activation rows x 32*wgs columns of C per tile,
//     on a persistent grid, as split-K units, as split-K pairs in 2-CTA clusters, or stream-K;
//   v3 (v3.cuh; every K): tiles 128 x BN, on the TMA path (K % 256 == 0) with either decoder.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "problem.hpp"

namespace nvfp4::gpu::fused {

constexpr int kV3TileWidths[] = {32, 48, 64, 96, 128};  // v3 tile widths BN (tile 128 x BN)
constexpr int kV3TileRows = 128;                         // v3 tile height (v3::kBM)
constexpr int kV5Stage = 256;  // K per v5 weight stage (a split covers whole stages)

// One candidate of either family.
struct Candidate {
  bool v5 = false;
  int width = 64;           // v3: tile width BN; v5: activation tile height BM (128 or 256)
  bool int_decode = false;  // v3 on the TMA path: the integer decoder, else cvt.e4m3x2
  int splits = 1;           // v5: K splits per tile (2 with BM = 256 or three warpgroups: pairs)
  bool stream = false;      // v5 BM = 256 only: stream-K over the SMs
  int wgs = 2;              // v5: consumer warpgroups (3: 128 x 96 tiles)
  int nt() const { return 32 * wgs; }  // v5: columns of C per tile
  bool pair() const { return v5 && splits == 2 && (width == 256 || wgs == 3); }
  // The autotune candidate's name (also what tune keys and reports show).
  std::string name(bool tma) const {
    const std::string tile = "v5 tile " + std::to_string(width) + "x" + std::to_string(nt());
    if (v5 && stream) return tile + " stream-K";
    if (v5)
      return tile + " split-K " + std::to_string(splits) +
             (pair() ? " (2-CTA cluster pairs)" : "");
    return "tile 128x" + std::to_string(width) + (tma ? int_decode ? " int-decode" : " cvt-decode" : "");
  }
};

// v5 tiles of bm activation rows and nt columns of C.
inline int64_t v5_tiles(const Shape& s, int bm, int nt) {
  return s.L * ((s.M + bm - 1) / bm) * ((s.N + nt - 1) / nt);
}

// Whether the v5 kernels and the v3 TMA path apply: 16-byte aligned scale rows.
inline bool tma_path(const Shape& s) { return s.K % 256 == 0; }

// The candidates, v5 first (TMA path only), then v3. `sms`: the device's SM count.
//   v5 128 x 64 with split-K 1, plus 2..4 where the tiles fill less than half the SMs and every
//     split gets whole weight stages; 256 x 64 where M > 128; the 256-row split-K pairs where
//     twice their tiles fit on the SMs and each K half has a weight stage; stream-K where the
//     256-row tiles leave SMs idle and a tile has several weight stages; 128 x 96 (three consumer
//     warpgroups) and their pairs as the 256-row ones.
//   v3 every tile width, with the integer decoder; on the TMA path also with the cvt decoder.
inline std::vector<Candidate> candidates(const Shape& s, int sms) {
  std::vector<Candidate> c;
  if (tma_path(s)) {
    const int64_t nk = s.K / 64;  // 64-K blocks
    const int64_t tiles = v5_tiles(s, 128, 64);
    for (int sp = 1; sp <= 4; ++sp) {
      if (sp > 1 && (4 * sp > nk || 2 * tiles > int64_t(sms))) continue;
      c.push_back(Candidate{true, 128, false, sp});
    }
    if (s.M > 128) c.push_back(Candidate{true, 256, false, 1});
    const int64_t tiles256 = v5_tiles(s, 256, 64);
    if (s.M > 128 && nk >= 8 && 2 * tiles256 <= int64_t(sms))
      c.push_back(Candidate{true, 256, false, 2});
    if (s.M > 128 && nk >= 8 && tiles256 < int64_t(sms))
      c.push_back(Candidate{true, 256, false, 1, true});
    c.push_back(Candidate{true, 128, false, 1, false, 3});
    if (nk >= 8 && 2 * v5_tiles(s, 128, 96) <= int64_t(sms))
      c.push_back(Candidate{true, 128, false, 2, false, 3});
  }
  for (int bn : kV3TileWidths) c.push_back(Candidate{false, bn, true, 1});
  if (tma_path(s))
    for (int bn : kV3TileWidths) c.push_back(Candidate{false, bn, false, 1});
  return c;
}

// The v3 tile width whose grid fills the SMs best: estimated time = waves * (BN + 32), where a
// wave is one CTA per SM and a CTA's time grows with BN plus a fixed part for decoding its 128
// rows of A. Ties go to the wider tile (less decode per multiply-add).
inline int v3_default_width(const Shape& s, int sms) {
  int best = kV3TileWidths[4];
  double best_cost = 1e300;
  for (int i = 4; i >= 0; --i) {
    const int bn = kV3TileWidths[i];
    const double tiles = double((s.N + bn - 1) / bn) * double((s.M + kV3TileRows - 1) / kV3TileRows) *
                         double(s.L);
    const double cost = std::ceil(tiles / (sms < 1 ? 1 : sms)) * (bn + 32);
    if (cost < best_cost) {
      best_cost = cost;
      best = bn;
    }
  }
  return best;
}

// The default without autotune: the first rule of the table below whose condition holds and
// whose pick is among the candidates; else v3 with v3_default_width and the cvt decoder (on the
// TMA path; the cvt decoder measured faster than the integer one, docs/fused-kernel.md v3).
//
// How the table was chosen (docs/fused-kernel.md v5b, v5c, v5g, v5j; the harness's bench on the
// H100, 132 SMs, at the four benchmark shapes): a kernel pays where one wave of its CTAs fills
// the SMs. The 128 x 96 tiles decode the weights for fewer rows per multiply-add than the 256-row
// tiles, so they win only where the 256-row tiles leave SMs idle and one wave of them (or of
// their pairs) fills 3/4 to all of the SMs. Otherwise the tile height with fewer estimated waves,
// a 256-row tile costing 1.5 times a 128-row one per weight stage plus a fixed part (cost_256;
// ties: 128); 256-row tiles that leave a quarter of the SMs idle run as stream-K; where 128-row
// tiles win, the 256-row split-K pairs (same CTA count, half the weight decode per multiply-add)
// replace them where offered, unless one wave of the 128 x 96 pairs has more CTAs (the probe on
// GPU MODE's test shapes and nearby ones, v5n).
struct DefaultRule {
  const char* why;
  bool (*applies)(const Shape& s, int64_t sms);
  Candidate pick;
};
namespace rules {
// One wave of `ctas` CTAs fills 3/4 to all of the SMs.
inline bool fills(int64_t ctas, int64_t sms) { return 4 * ctas >= 3 * sms && ctas <= sms; }
// A 256 x 64 unit's cost relative to a 128 x 64 unit's: 1.5 per weight stage (the main loops
// measured 1.48 over 28 stages, v5b) plus half a unit for its twice longer start and epilogue,
// which weigh where K is short (the probe on GPU MODE's test shapes, v5n: 2.0 at one weight
// stage, 1.8 at two, 1.6 at eight or nine).
inline double cost_256(const Shape& s) {
  const int stages = s.K / kV5Stage;
  return 1.5 + 0.5 / double(stages < 1 ? 1 : stages);
}
// The 256-row tiles take fewer estimated waves than the 128-row ones (and exist: M > 128).
inline bool prefer_256(const Shape& s, int64_t sms) {
  auto waves = [&](int bm) { return std::ceil(double(v5_tiles(s, bm, 64)) / double(sms)); };
  return s.M > 128 && waves(256) * cost_256(s) < waves(128) * 1.0;
}
// Several waves of 128 x 64 tiles, and the 128 x 96 tiles' estimated time is the lowest: waves
// times a unit's cost relative to a 128 x 64 unit's (256 x 64: cost_256; 128 x 96: 1.26, from
// their measured stage times, v5g). Where one wave does not fill the SMs the rules above decide
// (a last partial wave is what the 128 x 96 tiles were made for).
inline bool prefer_96_waves(const Shape& s, int64_t sms) {
  auto waves = [&](int bm, int nt) { return std::ceil(double(v5_tiles(s, bm, nt)) / double(sms)); };
  if (waves(128, 64) < 2) return false;
  const double x96 = waves(128, 96) * 1.26;
  return x96 < waves(128, 64) * 1.0 && (s.M <= 128 || x96 < waves(256, 64) * cost_256(s));
}
// Where the 128-row tiles win (one wave leaves SMs idle): one wave of the 128 x 96 pairs, with
// more CTAs than the 256-row pairs' and a smaller unit (half K of a 1.26 unit against half K of a
// 1.5 one). In the probe (v5n) they were the fastest candidate at 512x768x4096, 512x1024x7168 and
// 256x2048x7168 and within 4% of it (stream-K) at 512x768x7168 and 1024x512x7168, where the
// 256-row pairs took 11-25% longer; where they do not fit in one wave (1536x512x7168) the 256-row
// pairs stay. Not where the 96-wide tiles would leave more than an eighth of their columns empty
// (N = 64: the count of tiles would say 128 x 96 for a third of padding).
inline bool prefer_96_pairs(const Shape& s, int64_t sms) {
  const int64_t t96 = v5_tiles(s, 128, 96), cols96 = 96 * ((s.N + 95) / 96);
  return s.M > 128 && 2 * t96 <= sms && t96 > v5_tiles(s, 256, 64) && 8 * (cols96 - s.N) <= cols96;
}
}  // namespace rules
inline const DefaultRule kDefaultRules[] = {
    {"128 x 96 tiles fill one wave",
     [](const Shape& s, int64_t sms) { return rules::fills(v5_tiles(s, 128, 96), sms); },
     Candidate{true, 128, false, 1, false, 3}},
    {"128 x 96 pairs fill one wave",
     [](const Shape& s, int64_t sms) { return rules::fills(2 * v5_tiles(s, 128, 96), sms); },
     Candidate{true, 128, false, 2, false, 3}},
    {"several waves, and the 128 x 96 tiles' estimate is the lowest",
     [](const Shape& s, int64_t sms) { return rules::prefer_96_waves(s, sms); },
     Candidate{true, 128, false, 1, false, 3}},
    {"256-row tiles win and leave a quarter of the SMs idle: stream-K",
     [](const Shape& s, int64_t sms) {
       return rules::prefer_256(s, sms) && 4 * v5_tiles(s, 256, 64) <= 3 * sms;
     },
     Candidate{true, 256, false, 1, true}},
    {"256-row tiles win",
     [](const Shape& s, int64_t sms) { return rules::prefer_256(s, sms); },
     Candidate{true, 256, false, 1}},
    {"128-row tiles win, one wave of 128 x 96 pairs has more CTAs than the 256-row pairs'",
     [](const Shape& s, int64_t sms) { return rules::prefer_96_pairs(s, sms); },
     Candidate{true, 128, false, 2, false, 3}},
    {"128-row tiles win: the 256-row pairs instead",
     [](const Shape&, int64_t) { return true; },
     Candidate{true, 256, false, 2}},
    {"128-row tiles win", [](const Shape&, int64_t) { return true; },
     Candidate{true, 128, false, 1}},
};

// Index of the default in `cands` (candidates(s, sms)).
inline size_t default_candidate(const std::vector<Candidate>& cands, const Shape& s, int sms) {
  const int64_t n = sms < 1 ? 1 : sms;
  auto find = [&](const Candidate& want) {
    for (size_t i = 0; i < cands.size(); ++i) {
      const Candidate& c = cands[i];
      if (c.v5 == want.v5 && c.width == want.width && c.splits == want.splits &&
          c.stream == want.stream && c.wgs == want.wgs && (c.v5 || c.int_decode == want.int_decode))
        return i;
    }
    return cands.size();
  };
  for (const DefaultRule& r : kDefaultRules) {
    if (!r.applies(s, n)) continue;
    const size_t i = find(r.pick);
    if (i < cands.size()) return i;
  }
  const int bn = v3_default_width(s, sms);
  size_t i = find(Candidate{false, bn, false, 1});
  if (i == cands.size()) i = find(Candidate{false, bn, true, 1});  // (off the TMA path)
  return i < cands.size() ? i : 0;
}

// A configuration's class on a shape: its name, plus what else about the shape changes the code it
// runs — how a split or stream-K divides the K stages (an uneven last part takes another branch;
// ragged K off the TMA path another loop). Stage configs verifies every candidate offered on every
// suite shape; the GPU suite (harness/plan/suite.cpp) holds a shape for every class the selection
// rules can offer on a 132-SM device, and tests/harness/test_config_coverage.cpp checks it.
inline std::string config_class(const Candidate& c, const Shape& s) {
  std::string k = c.name(tma_path(s));
  const int64_t stages = s.K / kV5Stage;
  if (c.v5 && c.stream) k += stages % 2 ? ", odd K stages" : ", even K stages";
  else if (c.v5 && c.splits > 1) k += stages % c.splits ? ", K stages not divisible by the splits" : ", K stages divisible";
  if (!c.v5 && !tma_path(s)) k += s.K % 64 ? ", K % 64 != 0" : ", K % 64 == 0";
  return k;
}

// The parts of a shape that take other branches of a configuration's code beyond its class: a
// partial last tile of rows or of columns (masked loads, stores and TMA boxes past the edge) and
// several batches (per-batch offsets of every operand and of C). Coverage treats each as a class of
// its own ("<class>, ragged rows"), so the GPU suite runs every configuration across each edge and
// batch boundary, not only on shapes its tiles divide (harness/plan/suite.cpp config_classes).
inline std::vector<std::string> config_facets(const Candidate& c, const Shape& s) {
  const int64_t rows = c.v5 ? c.width : kV3TileRows;
  const int64_t cols = c.v5 ? c.nt() : c.width;
  std::vector<std::string> f;
  if (s.M % rows) f.push_back("ragged rows");
  if (s.N % cols) f.push_back("ragged columns");
  if (s.L > 1) f.push_back("batched");
  return f;
}

}  // namespace nvfp4::gpu::fused
