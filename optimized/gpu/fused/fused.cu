// fused.cu — the "fused" optimization of the gpu backend: a Variant that replaces plain's decode +
// cuBLASLt GEMM + epilogue kernels by ONE kernel per call.
//
// Per call: one launch on the GpuPlan's stream, reading the packed FP4 bytes and E4M3 scales
// (plain layout, docs/design.md §1) uploaded at init (DeviceProblem) and writing the fp16 output
// C once; A, B1 and B2 are decoded inside the kernel on every call. The configurations are the
// autotune candidates; candidates.hpp lists them and holds the default-selection table:
//   v5 (v5_kernel.cuh; K % 256 == 0): weights decoded into register-sourced wgmma operands,
//     activations decoded once per call in the kernel's phase 0 into a workspace (act_), tile
//     BM x 64 or 128 x 96, persistent grid, split-K, split-K pairs in 2-CTA clusters, stream-K;
//   v3 (v3.cuh; every K, the only family when K % 256 != 0): both operands decoded into shared
//     memory; K % 256 == 0 -> TMA producer warp (either decoder), other K % 64 == 0 -> cp.async,
//     other K (multiples of 16) -> the cp.async kernel's bounds-checked K path.
// Every M, N, L >= 1 is supported; the kernels need an sm_90 device (built for sm_90a only).
// New inputs (set_inputs) go into the same buffers; only the alphas travel by value in the
// kernels' arguments (the graph wrapper updates a captured graph for them).
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "candidates.hpp"
#include "gpu/device_problem.hpp"
#include "gpu/gpu_plan.hpp"
#include "registry.hpp"
#include "v3.cuh"
#include "v5_kernel.cuh"

namespace nvfp4::gpu {

namespace {

using fused::Candidate;

// ---- v3 ---------------------------------------------------------------------------------------

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

// Which v3 kernel a shape gets: TMA when the scale rows are 16-byte aligned (K % 256 == 0),
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
void launch_width(const fused::v3::KernelArgs& a, const fused::v3::TmaMaps* maps, bool int_decode,
                  int L, cudaStream_t s) {
  const dim3 grid(unsigned((a.N + BN - 1) / BN),
                  unsigned((a.M + fused::v3::kBM - 1) / fused::v3::kBM), unsigned(L));
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

void launch_v3(int bn, const fused::v3::KernelArgs& a, const fused::v3::TmaMaps* maps,
               bool int_decode, int L, cudaStream_t s) {
  switch (bn) {
    case 32: launch_width<32>(a, maps, int_decode, L, s); break;
    case 48: launch_width<48>(a, maps, int_decode, L, s); break;
    case 64: launch_width<64>(a, maps, int_decode, L, s); break;
    case 96: launch_width<96>(a, maps, int_decode, L, s); break;
    case 128: launch_width<128>(a, maps, int_decode, L, s); break;
    default: throw std::logic_error("fused: no kernel for tile width " + std::to_string(bn));
  }
}

// ---- v5 ---------------------------------------------------------------------------------------

// The v5 configurations: activation tile height BM (wgmma N) and activation ring depth S (as
// deep as shared memory allows). BM = 256 halves the weight decode and the wgmma instructions per
// multiply-add (128 accumulators per thread). Cfg128x3: three consumer warpgroups, tile 128 x 96
// (the ring is one stage shorter: the weight stages are 1.5x as large).
using Cfg128 = fused::v5::Config<128, 8>;
using Cfg256 = fused::v5::Config<256, 4>;
using Cfg128x3 = fused::v5::Config<128, 7, 3>;
static_assert(Cfg128::kNT == 64 && Cfg256::kNT == 64 && Cfg128x3::kNT == 96,
              "candidates.hpp counts tiles of 64 and 96 columns");
using fused::v5::Split;

template <class Cfg, Split kSplit>
void prepare_v5() {
  NVFP4_CUDA_CHECK(cudaFuncSetAttribute(fused::v5::dual_gemm_kernel<Cfg, kSplit>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        Cfg::kSmemBytes));
}
void prepare_v5_all() {
  prepare_v5<Cfg128, Split::Tiles>();
  prepare_v5<Cfg256, Split::Tiles>();
  prepare_v5<Cfg256, Split::Pair>();
  prepare_v5<Cfg256, Split::StreamK>();
  prepare_v5<Cfg128x3, Split::Tiles>();
  prepare_v5<Cfg128x3, Split::Pair>();
}

template <class Cfg, Split kSplit = Split::Tiles>
void launch_v5(const fused::v5::Maps& maps, const fused::v5::Args& a, dim3 grid, cudaStream_t s) {
  fused::v5::dual_gemm_kernel<Cfg, kSplit><<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(maps, a);
  NVFP4_CHECK_LAUNCH();
}

// Split-K pairs (256 x 64 or 128 x 96 tiles): grid = units = 2 x tiles, clusters of 2 CTAs (the
// two K halves of a tile exchange accumulator halves through distributed shared memory).
template <class Cfg>
void launch_v5_pair(const fused::v5::Maps& maps, const fused::v5::Args& a, unsigned units,
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
  NVFP4_CUDA_CHECK(
      cudaLaunchKernelEx(&c, fused::v5::dual_gemm_kernel<Cfg, Split::Pair>, maps, a));
  NVFP4_CHECK_LAUNCH();
}

// Stream-K with 256 x 64 tiles over `sms` CTAs (v5_config.cuh, stream_k_shape).
fused::v5::StreamK stream_k(const Shape& s, int sms) {
  return fused::v5::stream_k_shape(fused::v5_tiles(s, 256, Cfg256::kNT), s.K / 256, sms);
}

// ---- the plan ---------------------------------------------------------------------------------

class FusedPlan final : public GpuPlan {
 public:
  explicit FusedPlan(const Problem& p) : GpuPlan(p.shape), in_(p.shape) {
    p.validate();
    const DeviceInfo& dev = device_info();
    if (dev.cc_major != 9 || dev.cc_minor != 0)
      throw CudaError("fused: the kernel is built for sm_90a only; this device is " + dev.name +
                      " (cc " + std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) +
                      ")");
    sm_count_ = dev.sm_count;
    in_.upload(p, InputSet::All, stream());
    args_ = fused::v3::KernelArgs{in_.a.get(),    in_.b1.get(),   in_.b2.get(),  in_.sfa.get(),
                                  in_.sfb1.get(), in_.sfb2.get(), output(),      int(shape_.M),
                                  int(shape_.N),  int(shape_.K),  in_.alpha1,    in_.alpha2};
    // Shared-memory limits for every candidate now, so select() and capture need no setup.
    prepare_width<32>();
    prepare_width<48>();
    prepare_width<64>();
    prepare_width<96>();
    prepare_width<128>();
    cands_ = fused::candidates(shape_, sm_count_);
    if (fused::tma_path(shape_)) {
      prepare_v5_all();
      make_v5_workspace();
      try {
        for (int bn : fused::kV3TileWidths)
          maps_.push_back(fused::v3::make_tma_maps(args_, int(shape_.L), bn));
      } catch (const std::runtime_error& e) {
        throw CudaError(e.what());
      }
    }
    current_ = fused::default_candidate(cands_, shape_, sm_count_);
    synchronize();
  }

  // Same buffers; the alphas, which the kernels take by value, follow with InputSet::All.
  void set_inputs(const Problem& p, InputSet which) override {
    in_.upload(p, which, stream());
    args_.alpha1 = v5_args_.alpha1 = in_.alpha1;
    args_.alpha2 = v5_args_.alpha2 = in_.alpha2;
  }

  std::string describe() const override {
    const Candidate& c = cands_[current_];
    if (c.v5 && c.stream) {
      const fused::v5::StreamK sk = stream_k(shape_, sm_count_);
      return "fused sm_90a kernel v5: weights decoded into register-sourced wgmma m64n256k16 "
             "operands, activations decoded once per call (phase 0) and streamed by TMA, dual "
             "GEMM + silu*mul epilogue, tile 256x" +
             std::to_string(c.nt()) +
             ", stream-K: " + std::to_string(fused::v5_tiles(shape_, 256, c.nt())) +
             " tiles over " + std::to_string(sk.grid) + " CTAs (up to " + std::to_string(sk.parts) +
             " parts per tile)";
    }
    if (c.v5) {
      const int64_t units = fused::v5_tiles(shape_, c.width, c.nt()) * c.splits;
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
    const int64_t tiles = ((shape_.N + bn - 1) / bn) *
                          ((shape_.M + fused::v3::kBM - 1) / fused::v3::kBM) * shape_.L;
    const bool tma = k_path(shape_.K) == KPath::Tma;
    return "fused sm_90a kernel v3: in-kernel FP4 decode to fp16 (" +
           std::string(!tma || c.int_decode ? "integer" : "cvt.e4m3x2") + " decoder) + wgmma m64n" +
           std::to_string(2 * bn) + "k16 dual GEMM + silu*mul epilogue, tile 128x" +
           std::to_string(bn) + " (" + std::to_string(tiles) + " CTAs), " +
           k_path_name(k_path(shape_.K));
  }

  void enqueue() override {
    const Candidate& c = cands_[current_];
    if (!c.v5) {
      size_t i = 0;
      while (fused::kV3TileWidths[i] != c.width) ++i;
      launch_v3(c.width, args_, maps_.empty() ? nullptr : &maps_[i], c.int_decode,
                int(shape_.L), stream());
      return;
    }
    fused::v5::Args a = v5_args_;
    a.m_tiles = int((shape_.M + c.width - 1) / c.width);
    a.n_tiles = int((shape_.N + c.nt() - 1) / c.nt());
    a.splits = c.splits;
    if (c.stream) {
      const fused::v5::StreamK sk = stream_k(shape_, sm_count_);
      a.splits = sk.parts;
      launch_v5<Cfg256, Split::StreamK>(maps256_, a, dim3(unsigned(sk.grid)), stream());
      return;
    }
    const int64_t units = fused::v5_tiles(shape_, c.width, c.nt()) * c.splits;
    const dim3 grid(unsigned(std::min<int64_t>(units, sm_count_)));
    if (c.wgs == 3 && c.pair())
      launch_v5_pair<Cfg128x3>(maps128x3_, a, unsigned(units), stream());
    else if (c.wgs == 3)
      launch_v5<Cfg128x3>(maps128x3_, a, grid, stream());
    else if (c.pair())
      launch_v5_pair<Cfg256>(maps256_, a, unsigned(units), stream());
    else if (c.width == 256)
      launch_v5<Cfg256>(maps256_, a, grid, stream());
    else
      launch_v5<Cfg128>(maps128_, a, grid, stream());
  }

  std::vector<std::string> candidates() const override {
    std::vector<std::string> v;
    for (const Candidate& c : cands_) v.push_back(c.name(fused::tma_path(shape_)));
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
  // The v5 workspace: decoded activations, phase-0 chunk flags, the queue, split-K partials,
  // arrival counters and ready flags, sized for the largest candidate.
  void make_v5_workspace() {
    int max_splits = 0;
    int64_t sk_parts = 0;  // stream-K: a partial slot and a ready flag per tile and part
    for (const Candidate& c : cands_) {
      if (c.v5 && c.width == 128 && c.wgs == 2) max_splits = std::max(max_splits, c.splits);
      if (c.stream)
        sk_parts = fused::v5_tiles(shape_, 256, Cfg256::kNT) * stream_k(shape_, sm_count_).parts;
    }
    const int64_t nk = shape_.K / fused::v5::kBK;
    const int64_t mt128 = (shape_.M + 127) / 128;  // chunks of the smaller tile height
    act_ = DeviceBuffer<uint16_t>(size_t(shape_.L * shape_.M * shape_.K));
    chunk_state_ = DeviceBuffer<unsigned long long>(size_t(nk * shape_.L * mt128));
    sync_ = DeviceBuffer<fused::v5::SyncState>(1);
    const int64_t tiles = fused::v5_tiles(shape_, 128, Cfg128::kNT);  // the most of any candidate
    const int64_t units = max_splits > 1 ? tiles * max_splits : 0;
    tile_count_ = DeviceBuffer<unsigned int>(size_t(std::max<int64_t>(tiles, 1)));
    ready_ = DeviceBuffer<unsigned long long>(size_t(std::max<int64_t>({units, sk_parts, 1})));
    // A unit's partial is 2 * BM * 64 floats (split-K and stream-K: 64-column tiles only).
    partials_ = DeviceBuffer<float>(size_t(std::max<int64_t>(
        {units * 2 * 128 * Cfg128::kNT, sk_parts * 2 * 256 * Cfg256::kNT, 1})));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(chunk_state_.get(), 0, chunk_state_.bytes(), stream()));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(sync_.get(), 0, sync_.bytes(), stream()));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(tile_count_.get(), 0, tile_count_.bytes(), stream()));
    NVFP4_CUDA_CHECK(cudaMemsetAsync(ready_.get(), 0, ready_.bytes(), stream()));
    v5_args_ = fused::v5::Args{in_.a.get(),        in_.sfa.get(),     act_.get(),
                               chunk_state_.get(), sync_.get(),       partials_.get(),
                               tile_count_.get(),  ready_.get(),      output(),
                               int(shape_.M),      int(shape_.N),     int(shape_.K),
                               int(shape_.L),      1,                 1,
                               1,                  in_.alpha1,        in_.alpha2};
    // (tiles and splits: enqueue)
    try {
      auto maps = [&](int bm, int nt) {
        return fused::v5::make_maps(v5_args_, in_.b1.get(), in_.b2.get(), in_.sfb1.get(),
                                    in_.sfb2.get(), bm, nt);
      };
      maps128_ = maps(128, Cfg128::kNT);
      maps256_ = maps(256, Cfg256::kNT);
      maps128x3_ = maps(128, Cfg128x3::kNT);
    } catch (const std::runtime_error& e) {
      throw CudaError(e.what());
    }
  }

  DeviceProblem in_;
  fused::v3::KernelArgs args_{};
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
  fused::v5::Args v5_args_{};
  fused::v5::Maps maps128_{}, maps256_{}, maps128x3_{};  // tiles 128x64, 256x64, 128x96
};

// Shape limits (grid dimensions, 32-bit sizes in the kernel) and the device: the kernel exists
// for sm_90 only. This runs where the device is in use (trial child, bench).
Support fused_supports(const Shape& s) {
  if (s.M > (int64_t(65535) * fused::v3::kBM) || s.N >= (int64_t(1) << 31) ||
      s.K >= (int64_t(1) << 31))
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

const bool registered = register_listed(
    "gpu", "fused",
    [](const Problem& p, const PlanOptions&) -> std::unique_ptr<Plan> {
      return std::make_unique<FusedPlan>(p);
    },
    nullptr, fused_supports);

}  // namespace

}  // namespace nvfp4::gpu
