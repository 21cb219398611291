// fused.cu — the "fused" optimization of the gpu backend (a Variant: it replaces plain's
// decode + cuBLASLt GEMM + epilogue kernels by ONE kernel, fused_kernel.cuh).
//
// Per call: one launch of the fused kernel on the GpuPlan's stream, reading
// the packed FP4 bytes and E4M3 scales (plain layout, docs/design.md §1) uploaded at init and writing the
// fp16 output C once. Nothing is decoded ahead of time: A, B1 and B2 are decoded inside the kernel
// on every call.
//
// Two kernel families (the autotune candidates):
//   * v5, fused_rs.cuh (K % 256 == 0): weights decoded into register-sourced wgmma operands,
//     activations decoded once per call in the kernel's phase 0 into a workspace; tile BM x 64
//     (BM = activation rows = wgmma N; BM x 96 with three consumer warpgroups), persistent grid;
//     candidates: BM = 128 with split-K 1, plus 2..4 where the tiles fill less than half the SMs
//     (split-K measured slower on every benchmark shape, docs/fused-kernel.md v5), BM = 256 (no
//     split-K) where M > 128, BM = 256 split-K pairs (2-CTA clusters) where twice its tiles fit
//     on the SMs (an autotune candidate at first, the default since session 5), BM = 256
//     stream-K over all SMs where its tiles leave SMs idle, and 128 x 96 tiles (three consumer
//     warpgroups) alone and, where twice their tiles fit on the SMs, as split-K pairs.
//   * v3, fused_kernel.cuh (every K; the only one when K % 256 != 0): both operands decoded into
//     shared memory; candidates: CTA tile widths BN in {32, 48, 64, 96, 128} (tile 128 x BN of C),
//     on the TMA path each with both decoders (integer, cvt.e4m3x2). Kernel: K % 256 == 0 -> TMA
//     producer warp; other K % 64 == 0 -> cp.async; other K (multiples of 16) -> the cp.async
//     kernel's generic, bounds-checked K path.
// Without autotune (default_candidate()): v5 on the TMA path; the 128 x 96 tiles or their pairs
// where one wave of them fills 3/4 to all of the SMs; else BM = 128 or 256 by estimated waves
// (BM = 256 measured 20% faster at M = 512, slower at M = 256 where its 64 tiles leave half the
// SMs idle), BM = 256 as stream-K where its tiles would leave a quarter of the SMs idle, the
// 256-row split-K pairs instead of BM = 128 where they are offered; v3 with default_tile()
// otherwise.
// Every M, N, L >= 1 is supported; the kernels need an sm_90 device (built for sm_90a only).
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/gpu_plan.hpp"
#include "v3.cuh"
#include "v5_kernel.cuh"
#include "registry.hpp"

namespace nvfp4::gpu {

namespace {

constexpr int kTileWidths[] = {32, 48, 64, 96, 128};
constexpr int kTileCount = int(sizeof(kTileWidths) / sizeof(kTileWidths[0]));
// The decoder the TMA kernel uses unless autotune picks the other: the cvt decoder measured
// 6-12% faster than the integer one on the four benchmark shapes (docs/fused-kernel.md, v3).
constexpr bool kDefaultIntDecode = false;

using fused::v3::KernelArgs;

template <int BN, bool kFastK>
void set_smem_limit() {
  NVFP4_CUDA_CHECK(cudaFuncSetAttribute(fused::v3::dual_gemm_kernel<BN, kFastK>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused::v3::TileConfig<BN>::kSmemBytes));
}

// Decoded stages of the TMA kernel: 4 (three wgmma stages queued) where shared memory allows,
// 3 for the widest tile.
template <int BN>
constexpr int tma_depth() {
  return fused::v3::tma_smem_bytes(BN, 4) <= 227 * 1024 ? 4 : 3;
}

template <int BN>
void prepare_width() {
  set_smem_limit<BN, true>();
  set_smem_limit<BN, false>();
  constexpr int D = tma_depth<BN>();
  NVFP4_CUDA_CHECK(cudaFuncSetAttribute(fused::v3::dual_gemm_tma_kernel<BN, D, true>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused::v3::TmaTileConfig<BN, D>::kSmemBytes));
  NVFP4_CUDA_CHECK(cudaFuncSetAttribute(fused::v3::dual_gemm_tma_kernel<BN, D, false>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused::v3::TmaTileConfig<BN, D>::kSmemBytes));
}

// Which kernel a shape gets: TMA when the scale rows are 16-byte aligned (K % 256 == 0),
// else cp.async (K % 64 == 0), else the generic bounds-checked K path.
enum class KPath { Tma, CpAsync, Generic };
KPath k_path(int64_t K) {
  if (K % 256 == 0) return KPath::Tma;
  return K % fused::v3::kBK == 0 ? KPath::CpAsync : KPath::Generic;
}
const char* k_path_name(KPath p) {
  switch (p) {
    case KPath::Tma: return "TMA producer warp";
    case KPath::CpAsync: return "cp.async (K % 256 != 0)";
    default: return "generic K path (K % 64 != 0)";
  }
}

// int_decode: the TMA kernel's decoder (decode8_int, else decode8 with cvt); the cp.async
// kernel always uses decode8_int.
template <int BN>
void launch_width(const KernelArgs& a, const fused::v3::TmaMaps* maps, bool int_decode, int L,
                  cudaStream_t s) {
  const dim3 grid(unsigned((a.N + BN - 1) / BN), unsigned((a.M + fused::v3::kBM - 1) / fused::v3::kBM),
                  unsigned(L));
  constexpr int D = tma_depth<BN>();
  constexpr int tma_smem = fused::v3::TmaTileConfig<BN, D>::kSmemBytes;
  switch (k_path(a.K)) {
    case KPath::Tma:
      if (int_decode)
        fused::v3::dual_gemm_tma_kernel<BN, D, true>
            <<<grid, fused::v3::kTmaThreads, tma_smem, s>>>(*maps, a);
      else
        fused::v3::dual_gemm_tma_kernel<BN, D, false>
            <<<grid, fused::v3::kTmaThreads, tma_smem, s>>>(*maps, a);
      break;
    case KPath::CpAsync:
      fused::v3::dual_gemm_kernel<BN, true>
          <<<grid, fused::v3::kThreads, fused::v3::TileConfig<BN>::kSmemBytes, s>>>(a);
      break;
    case KPath::Generic:
      fused::v3::dual_gemm_kernel<BN, false>
          <<<grid, fused::v3::kThreads, fused::v3::TileConfig<BN>::kSmemBytes, s>>>(a);
      break;
  }
  NVFP4_CHECK_LAUNCH();
}

void launch(int bn, const KernelArgs& a, const fused::v3::TmaMaps* maps, bool int_decode, int L,
            cudaStream_t s) {
  switch (bn) {
    case 32: launch_width<32>(a, maps, int_decode, L, s); break;
    case 48: launch_width<48>(a, maps, int_decode, L, s); break;
    case 64: launch_width<64>(a, maps, int_decode, L, s); break;
    case 96: launch_width<96>(a, maps, int_decode, L, s); break;
    case 128: launch_width<128>(a, maps, int_decode, L, s); break;
    default: throw std::logic_error("fused: no kernel for tile width " + std::to_string(bn));
  }
}

// The tile width whose grid fills the SMs best: estimated time = waves * (BN + 32), where a
// wave is one CTA per SM (the kernel's shared memory allows one) and a CTA's time grows with BN
// plus a fixed part for decoding its 128 rows of A. Ties go to the wider tile (less decode
// per multiply-add).
int default_tile(const Shape& s, int sm_count) {
  int best = kTileCount - 1;
  double best_cost = 1e300;
  for (int i = kTileCount - 1; i >= 0; --i) {
    const int bn = kTileWidths[i];
    const double tiles = double((s.N + bn - 1) / bn) * double((s.M + fused::v3::kBM - 1) / fused::v3::kBM) *
                         double(s.L);
    const double waves = std::ceil(tiles / std::max(1, sm_count));
    const double cost = waves * (bn + 32);
    if (cost < best_cost) {
      best_cost = cost;
      best = i;
    }
  }
  return best;
}

// ---- v5 (fused_rs.cuh) configurations -----------------------------------------------------

// The v5 configurations: activation tile height BM (wgmma N) and activation ring depth S (as
// deep as shared memory allows). BM = 256 halves the weight decode and the wgmma instructions per
// multiply-add (128 accumulators per thread); it is offered where M > 128.
// RsCfg128x3: three consumer warpgroups, tile 128 x 96 (the ring is one stage shorter: the
// weight stages are 1.5x as large).
using RsCfg128 = fused::v5::Config<128, 8>;
using RsCfg256 = fused::v5::Config<256, 4>;
using RsCfg128x3 = fused::v5::Config<128, 7, 3>;

template <class Cfg, bool kPair = false, bool kStream = false>
void prepare_rs_cfg() {
  NVFP4_CUDA_CHECK(cudaFuncSetAttribute(
      fused::v5::dual_gemm_kernel<Cfg, kPair ? fused::v5::Split::Pair : kStream ? fused::v5::Split::StreamK : fused::v5::Split::Tiles>,
      cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
}
void prepare_rs() {
  prepare_rs_cfg<RsCfg128>();
  prepare_rs_cfg<RsCfg256>();
  prepare_rs_cfg<RsCfg256, true>();
  prepare_rs_cfg<RsCfg256, false, true>();
  prepare_rs_cfg<RsCfg128x3>();
  prepare_rs_cfg<RsCfg128x3, true>();
}

template <class Cfg, bool kStream = false>
void launch_rs(const fused::v5::Maps& maps, const fused::v5::Args& a, dim3 grid,
               cudaStream_t s) {
  fused::v5::dual_gemm_kernel<Cfg, kStream ? fused::v5::Split::StreamK : fused::v5::Split::Tiles>
      <<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(maps, a);
  NVFP4_CHECK_LAUNCH();
}

// Split-K pairs (256 x 64 or 128 x 96 tiles): grid = units = 2 x tiles, clusters of 2 CTAs (the
// two K halves of a tile exchange accumulator halves through distributed shared memory,
// fused_rs.cuh).
template <class Cfg>
void launch_rs_pair(const fused::v5::Maps& maps, const fused::v5::Args& a, unsigned units,
                    cudaStream_t s) {
  cudaLaunchConfig_t c{};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 2;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  c.gridDim = dim3(units);
  c.blockDim = dim3(Cfg::kThreads);
  c.dynamicSmemBytes = Cfg::kSmemBytes;
  c.stream = s;
  c.attrs = attr;
  c.numAttrs = 1;
  NVFP4_CUDA_CHECK(cudaLaunchKernelEx(
      &c, fused::v5::dual_gemm_kernel<Cfg, fused::v5::Split::Pair>, maps, a));
  NVFP4_CHECK_LAUNCH();
}

// v5 tiles of bm activation rows and nt columns of C.
int64_t rs_tiles(const Shape& s, int bm, int nt) {
  return s.L * ((s.M + bm - 1) / bm) * ((s.N + nt - 1) / nt);
}

// Stream-K with 256 x 64 tiles over `sms` CTAs (fused_rs.cuh, stream_k_shape).
fused::v5::StreamK stream_k(const Shape& s, int sms) {
  return fused::v5::stream_k_shape(rs_tiles(s, 256, RsCfg256::kNT), s.K / 256, sms);
}

// One candidate of either family.
struct Candidate {
  bool rs = false;
  int width = 64;       // v3: tile width BN; v5: activation tile height BM
  bool int_decode = false;  // v3 TMA path only
  int splits = 1;       // v5 only (2 with BM = 256 or three warpgroups: split-K pairs in 2-CTA
                        // clusters; with BM = 128 and two warpgroups, through global memory)
  bool stream = false;  // v5 BM = 256 only: stream-K over the SMs
  int wgs = 2;          // v5 only: consumer warpgroups, 3 for 128 x 96 tiles (RsConfig)
  int nt() const { return 32 * wgs; }  // v5: columns of C per tile
  bool pair() const { return rs && splits == 2 && (width == 256 || wgs == 3); }
  std::string name() const {
    const std::string tile =
        "v5 tile " + std::to_string(width) + "x" + std::to_string(nt());
    if (rs && stream) return tile + " stream-K";
    if (rs)
      return tile + " split-K " + std::to_string(splits) +
             (pair() ? " (2-CTA cluster pairs)" : "");
    return "tile 128x" + std::to_string(width);
  }
};

class FusedPlan final : public GpuPlan {
 public:
  explicit FusedPlan(const Problem& p) : GpuPlan(p.shape) {
    p.validate();
    const DeviceInfo& dev = device_info();
    if (dev.cc_major != 9 || dev.cc_minor != 0)
      throw CudaError("fused: the kernel is built for sm_90a only; this device is " + dev.name +
                      " (cc " + std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) +
                      ")");
    sm_count_ = dev.sm_count;
    auto up = [this](DeviceBuffer<uint8_t>& d, const std::vector<uint8_t>& h) {
      d = DeviceBuffer<uint8_t>(h.size());
      d.upload(h.data(), h.size(), stream());
    };
    up(a_, p.a);
    up(b1_, p.b1);
    up(b2_, p.b2);
    up(sfa_, p.sfa);
    up(sfb1_, p.sfb1);
    up(sfb2_, p.sfb2);
    args_ = KernelArgs{a_.get(),    b1_.get(),   b2_.get(),       sfa_.get(),
                       sfb1_.get(), sfb2_.get(), output(),        int(shape_.M),
                       int(shape_.N), int(shape_.K), p.alpha1, p.alpha2};
    // Shared-memory limits for every candidate now, so select() and capture need no setup.
    prepare_width<32>();
    prepare_width<48>();
    prepare_width<64>();
    prepare_width<96>();
    prepare_width<128>();
    const bool tma = k_path(shape_.K) == KPath::Tma;
    // Candidates: v5 first (TMA path only), then v3.
    int max_splits = 0;
    if (tma) {
      const int64_t nk = shape_.K / fused::v5::kBK;
      const int64_t tiles = rs_tiles(shape_, 128, RsCfg128::kNT);
      for (int sp = 1; sp <= 4; ++sp) {
        // Split-K only where the tiles leave more than half the SMs idle; a split covers whole
        // 256-K weight stages.
        if (sp > 1 && (4 * sp > nk || 2 * tiles > int64_t(sm_count_))) continue;
        cands_.push_back(Candidate{true, 128, false, sp});
        max_splits = std::max(max_splits, sp);
      }
      if (shape_.M > 128) cands_.push_back(Candidate{true, 256, false, 1});
      // Split-K pairs: where twice the 256-row tiles still fit on the SMs (one unit per CTA)
      // and each K half has at least one 256-K weight stage.
      const int64_t tiles256 = rs_tiles(shape_, 256, RsCfg256::kNT);
      if (shape_.M > 128 && nk >= 8 && 2 * tiles256 <= int64_t(sm_count_))
        cands_.push_back(Candidate{true, 256, false, 2});
      // Stream-K: where the 256-row tiles leave SMs idle and a tile has several weight stages.
      if (shape_.M > 128 && nk >= 8 && tiles256 < int64_t(sm_count_))
        cands_.push_back(Candidate{true, 256, false, 1, true});
      // 128 x 96 tiles (three consumer warpgroups), and their split-K pairs as the 256-row ones.
      cands_.push_back(Candidate{true, 128, false, 1, false, 3});
      if (nk >= 8 && 2 * rs_tiles(shape_, 128, RsCfg128x3::kNT) <= int64_t(sm_count_))
        cands_.push_back(Candidate{true, 128, false, 2, false, 3});
    }
    for (int bn : kTileWidths) cands_.push_back(Candidate{false, bn, true, 1});
    if (tma)
      for (int bn : kTileWidths) cands_.push_back(Candidate{false, bn, false, 1});
    if (tma) {
      prepare_rs();
      make_rs_workspace(p, max_splits);
    }
    if (tma) {
      try {
        for (int i = 0; i < kTileCount; ++i)
          maps_.push_back(fused::v3::make_tma_maps(args_, int(shape_.L), kTileWidths[i]));
      } catch (const std::runtime_error& e) {
        throw CudaError(e.what());
      }
    }
    current_ = default_candidate();
    synchronize();
  }

  std::string describe() const override {
    const Candidate& c = cands_[current_];
    if (c.rs && c.stream) {
      const fused::v5::StreamK sk = stream_k(shape_, sm_count_);
      return "fused sm_90a kernel v5: weights decoded into register-sourced wgmma m64n256k16 "
             "operands, activations decoded once per call (phase 0) and streamed by TMA, dual "
             "GEMM + silu*mul epilogue, tile 256x" +
             std::to_string(c.nt()) +
             ", stream-K: " + std::to_string(rs_tiles(shape_, 256, c.nt())) +
             " tiles over " + std::to_string(sk.grid) + " CTAs (up to " + std::to_string(sk.parts) +
             " parts per tile)";
    }
    if (c.rs) {
      const int64_t units = rs_tiles(shape_, c.width, c.nt()) * c.splits;
      return "fused sm_90a kernel v5: weights decoded into register-sourced wgmma m64n" +
             std::to_string(c.width) + "k16 operands (" + std::to_string(c.wgs) +
             " consumer warpgroups), activations decoded once per call " +
             "(phase 0) and streamed by TMA, dual GEMM + silu*mul epilogue, tile " +
             std::to_string(c.width) + "x" + std::to_string(c.nt()) + ", split-K " +
             std::to_string(c.splits) +
             (c.pair() ? " as 2-CTA cluster pairs (" + std::to_string(units) + " CTAs)"
                       : " (" + std::to_string(units) + " units on " +
                             std::to_string(std::min<int64_t>(units, sm_count_)) +
                             " persistent CTAs)");
    }
    const int bn = c.width;
    const int64_t tiles = ((shape_.N + bn - 1) / bn) * ((shape_.M + fused::v3::kBM - 1) / fused::v3::kBM) *
                          shape_.L;
    const bool tma = k_path(shape_.K) == KPath::Tma;
    return "fused sm_90a kernel v3: in-kernel FP4 decode to fp16 (" +
           std::string(!tma || c.int_decode ? "integer" : "cvt.e4m3x2") + " decoder) + wgmma m64n" +
           std::to_string(2 * bn) + "k16 dual GEMM + silu*mul epilogue, tile 128x" +
           std::to_string(bn) + " (" + std::to_string(tiles) + " CTAs), " +
           k_path_name(k_path(shape_.K));
  }

  void enqueue() override {
    const Candidate& c = cands_[current_];
    if (!c.rs) {
      int i = 0;
      while (kTileWidths[i] != c.width) ++i;
      launch(c.width, args_, maps_.empty() ? nullptr : &maps_[size_t(i)], c.int_decode,
             int(shape_.L), stream());
      return;
    }
    fused::v5::Args a = rs_args_;
    a.m_tiles = int((shape_.M + c.width - 1) / c.width);
    a.n_tiles = int((shape_.N + c.nt() - 1) / c.nt());
    a.splits = c.splits;
    if (c.stream) {
      const fused::v5::StreamK sk = stream_k(shape_, sm_count_);
      a.splits = sk.parts;
      launch_rs<RsCfg256, true>(rs_maps256_, a, dim3(unsigned(sk.grid)), stream());
      return;
    }
    const int64_t units = rs_tiles(shape_, c.width, c.nt()) * c.splits;
    const dim3 grid(unsigned(std::min<int64_t>(units, sm_count_)));
    if (c.wgs == 3 && c.pair())
      launch_rs_pair<RsCfg128x3>(rs_maps128x3_, a, unsigned(units), stream());
    else if (c.wgs == 3)
      launch_rs<RsCfg128x3>(rs_maps128x3_, a, grid, stream());
    else if (c.pair())
      launch_rs_pair<RsCfg256>(rs_maps256_, a, unsigned(units), stream());
    else if (c.width == 256)
      launch_rs<RsCfg256>(rs_maps256_, a, grid, stream());
    else
      launch_rs<RsCfg128>(rs_maps_, a, grid, stream());
  }

  std::vector<std::string> candidates() const override {
    std::vector<std::string> v;
    const bool tma = k_path(shape_.K) == KPath::Tma;
    for (const Candidate& c : cands_)
      v.push_back(c.name() + (c.rs || !tma ? "" : c.int_decode ? " int-decode" : " cvt-decode"));
    return v;
  }
  void select(size_t index) override {
    if (index >= cands_.size())
      throw std::out_of_range("fused: candidate " + std::to_string(index) + " of " +
                              std::to_string(cands_.size()));
    current_ = index;
  }
  std::string tune_key() const override {
    std::string k = device_info().key() + "|" + shape_.str() + "|gpu-fused-v5";
    for (const auto& c : candidates()) k += "|" + c;
    return k;
  }

 private:
  // The default: v5 without split-K (TMA path), with the tile height of fewer estimated waves:
  // cost = ceil(tiles / SMs) * (1 for BM = 128, 1.5 for BM = 256: the measured main-loop time of
  // one BM = 256 tile over one BM = 128 tile, docs/fused-kernel.md v5b); ties go to BM = 128. Else v3
  // with default_tile() and the cvt decoder (see the header).
  // When that is BM = 256 and its tiles leave at least a quarter of the SMs idle, stream-K over
  // all SMs (512x3072x7168: 96 tiles on 132 SMs, 91 -> 80 us in the probe, docs/fused-kernel.md v5c).
  // Before all of these: the 128 x 96 tiles (three consumer warpgroups) where they alone, or
  // else their split-K pairs, fill between three quarters of the SMs and all of them in one wave
  // (harness bench alternated with the previous default, docs/fused-kernel.md v5g: 512x3072x7168 75.5 us
  // against 80.4 for stream-K; the pairs at 256x3072x4096 33.6 against 35.8 for the 256-row
  // pairs, before their early box). Their stages run slower than the 256-row ones per
  // multiply-add (the weight decode is shared by half the rows), so they pay only where the
  // 256-row tiles leave SMs idle and one wave of them fills the SMs.
  size_t default_candidate() const {
    const int64_t sms = std::max(1, sm_count_);
    const int64_t tiles3 = rs_tiles(shape_, 128, RsCfg128x3::kNT);
    for (int units_per_tile : {1, 2})
      if (4 * units_per_tile * tiles3 >= 3 * sms && units_per_tile * tiles3 <= sms)
        for (size_t i = 0; i < cands_.size(); ++i)
          if (cands_[i].rs && cands_[i].wgs == 3 && cands_[i].splits == units_per_tile) return i;
    size_t best = cands_.size();
    double best_cost = 1e300;
    for (size_t i = 0; i < cands_.size(); ++i) {
      if (!cands_[i].rs || cands_[i].splits != 1 || cands_[i].stream || cands_[i].wgs != 2)
        continue;
      const double waves = std::ceil(double(rs_tiles(shape_, cands_[i].width, cands_[i].nt())) /
                                     double(sms));
      const double cost = waves * (cands_[i].width == 256 ? 1.5 : 1.0);
      if (cost < best_cost) {
        best_cost = cost;
        best = i;
      }
    }
    if (best < cands_.size() && cands_[best].width == 256 &&
        4 * rs_tiles(shape_, 256, RsCfg256::kNT) <= 3 * sms)
      for (size_t i = 0; i < cands_.size(); ++i)
        if (cands_[i].stream) return i;
    // Where the 256-row split-K pairs are offered instead of 128-row tiles (same CTA count, half
    // the weight decode per multiply-add): with phase 0's loads by TMA the pair measured faster at
    // 256x4096x7168 (bench 55.4 vs 57.3 us) and equal at 256x3072x4096 (37.8 vs 37.7).
    if (best < cands_.size() && cands_[best].width == 128)
      for (size_t i = 0; i < cands_.size(); ++i)
        if (cands_[i].pair() && cands_[i].wgs == 2) return i;
    if (best < cands_.size()) return best;
    const int bn = kTileWidths[default_tile(shape_, sm_count_)];
    for (size_t i = 0; i < cands_.size(); ++i)
      if (!cands_[i].rs && cands_[i].width == bn && cands_[i].int_decode == kDefaultIntDecode)
        return i;
    for (size_t i = 0; i < cands_.size(); ++i)
      if (!cands_[i].rs && cands_[i].width == bn) return i;
    return 0;
  }

  // v5 workspace: decoded activations, phase-0 chunk flags, the queue, split-K partials.
  void make_rs_workspace(const Problem& p, int max_splits) {
    const int64_t nk = shape_.K / fused::v5::kBK;
    const int64_t mt128 = (shape_.M + 127) / 128;  // chunks of the smaller tile height
    act_ = DeviceBuffer<uint16_t>(size_t(shape_.L * shape_.M * shape_.K));
    chunk_state_ = DeviceBuffer<unsigned long long>(size_t(nk * shape_.L * mt128));
    sync_ = DeviceBuffer<fused::v5::SyncState>(1);
    const int64_t tiles = rs_tiles(shape_, 128, RsCfg128::kNT);  // the most of any candidate
    const int64_t units = max_splits > 1 ? tiles * max_splits : 0;
    // Stream-K (BM = 256): a partial slot and a ready flag per tile and part.
    int64_t sk_parts = 0;
    for (const Candidate& c : cands_)
      if (c.stream)
        sk_parts = rs_tiles(shape_, 256, RsCfg256::kNT) * stream_k(shape_, sm_count_).parts;
    tile_count_ = DeviceBuffer<unsigned int>(size_t(std::max<int64_t>(tiles, 1)));
    ready_ = DeviceBuffer<unsigned long long>(size_t(std::max<int64_t>({units, sk_parts, 1})));
    // A unit's partial is 2 * BM * 64 floats (split-K and stream-K: 64-column tiles only).
    partials_ = DeviceBuffer<float>(size_t(std::max<int64_t>(
        {units * 2 * 128 * RsCfg128::kNT, sk_parts * 2 * 256 * RsCfg256::kNT, 1})));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(chunk_state_.get(), 0, chunk_state_.bytes(), stream()));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(sync_.get(), 0, sync_.bytes(), stream()));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(tile_count_.get(), 0, tile_count_.bytes(), stream()));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(ready_.get(), 0, ready_.bytes(), stream()));
    rs_args_ = fused::v5::Args{a_.get(),      sfa_.get(),       act_.get(),
                                 chunk_state_.get(), sync_.get(), partials_.get(),
                                 tile_count_.get(),  ready_.get(), output(),
                                 int(shape_.M), int(shape_.N), int(shape_.K), int(shape_.L),
                                 1, 1, 1, p.alpha1, p.alpha2};  // (tiles and splits: enqueue)
    try {
      rs_maps_ = fused::v5::make_maps(rs_args_, b1_.get(), b2_.get(), sfb1_.get(), sfb2_.get(),
                                         128, RsCfg128::kNT);
      rs_maps256_ = fused::v5::make_maps(rs_args_, b1_.get(), b2_.get(), sfb1_.get(),
                                            sfb2_.get(), 256, RsCfg256::kNT);
      rs_maps128x3_ = fused::v5::make_maps(rs_args_, b1_.get(), b2_.get(), sfb1_.get(),
                                              sfb2_.get(), 128, RsCfg128x3::kNT);
    } catch (const std::runtime_error& e) {
      throw CudaError(e.what());
    }
  }

  DeviceBuffer<uint8_t> a_, b1_, b2_, sfa_, sfb1_, sfb2_;
  KernelArgs args_{};
  std::vector<fused::v3::TmaMaps> maps_;  // v3, per tile width, TMA path only
  std::vector<Candidate> cands_;
  size_t current_ = 0;
  int sm_count_ = 1;
  // v5 (TMA path only)
  DeviceBuffer<uint16_t> act_;
  DeviceBuffer<unsigned long long> chunk_state_, ready_;
  DeviceBuffer<fused::v5::SyncState> sync_;
  DeviceBuffer<unsigned int> tile_count_;
  DeviceBuffer<float> partials_;
  fused::v5::Args rs_args_{};
  fused::v5::Maps rs_maps_{}, rs_maps256_{}, rs_maps128x3_{};  // tiles 128x64, 256x64, 128x96
};

// Shape limits (grid dimensions, 32-bit sizes in the kernel) and the device: the kernel exists
// for sm_90 only. This runs where the device is in use (trial child, bench).
Support fused_supports(const Shape& s) {
  if (s.M > (int64_t(65535) * fused::v3::kBM) || s.N >= (int64_t(1) << 31) || s.K >= (int64_t(1) << 31))
    return Support::no("M must be at most 65535*128 and N, K below 2^31");
  if (s.L > 65535) return Support::no("L must be at most 65535 (grid z)");
  const double bytes = double(s.a_bytes() + 2 * s.b_bytes() + s.sfa_bytes() + 2 * s.sfb_bytes()) +
                       2.0 * double(s.c_elems());
  if (bytes > 48e9) return Support::no("needs more than 48 GB of device memory");
  std::string why;
  if (!device_available(&why)) return Support::yes();  // the backend's availability reports this
  try {
    const DeviceInfo& d = device_info();
    if (d.cc_major != 9 || d.cc_minor != 0)
      return Support::no("the fused kernel is built for sm_90a (Hopper) only; this device is " +
                         d.name + " (cc " + std::to_string(d.cc_major) + "." +
                         std::to_string(d.cc_minor) + ")");
  } catch (const std::exception& e) {
    return Support::no(e.what());
  }
  return Support::yes();
}

const bool registered = register_optimization(Optimization{
    "gpu",
    "fused",
    "one sm_90a kernel: FP4 decode in shared memory, both GEMMs on wgmma, silu*mul epilogue",
    OptKind::Variant,
    0,
    {},
    [](const Problem& p, const PlanOptions&) -> std::unique_ptr<Plan> {
      return std::make_unique<FusedPlan>(p);
    },
    nullptr,
    fused_supports});

}  // namespace

}  // namespace nvfp4::gpu
