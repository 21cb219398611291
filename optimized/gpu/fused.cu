// fused.cu — the "fused" optimization of the gpu backend (a Variant: it replaces plain's
// decode + cuBLASLt GEMM + epilogue kernels by ONE kernel, fused_kernel.cuh).
//
// Per call: one launch of the fused kernel on the GpuPlan's stream, reading
// the packed FP4 bytes and E4M3 scales (plain layout, DESIGN §1) uploaded at init and writing the
// fp16 output C once. Nothing is decoded ahead of time: A, B1 and B2 are decoded inside the kernel
// on every call.
//
// Tile configurations (the autotune candidates) are the CTA tile widths BN in {32, 48, 64, 96,
// 128} (tile 128 x BN of C, wgmma N = 2*BN), on the TMA path each with both decoders (integer,
// cvt.e4m3x2; the cvt one is the default). Without autotune the plan picks the width whose grid
// fills the GPU's SMs best (default_tile()). The kernel: K % 256 == 0 -> the TMA kernel (a
// producer warp loads packed bytes and scales by TMA; tensor maps made at init, one set per tile
// width); other K % 64 == 0 -> the cp.async kernel; other K (multiples of 16) -> the cp.async
// kernel's generic, bounds-checked K path. Every M, N, L >= 1 is supported; the kernel needs an
// sm_90 device (it is built for sm_90a only).
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fused_kernel.cuh"
#include "gpu_plan.hpp"
#include "registry.hpp"

namespace nvfp4::gpu {

namespace {

constexpr int kTileWidths[] = {32, 48, 64, 96, 128};
constexpr int kTileCount = int(sizeof(kTileWidths) / sizeof(kTileWidths[0]));
// The decoder the TMA kernel uses unless autotune picks the other: the cvt decoder measured
// 6-12% faster than the integer one on the four benchmark shapes (FUSED_NOTES.md, v3).
constexpr bool kDefaultIntDecode = false;

using fused::KernelArgs;

template <int BN, bool kFastK>
void set_smem_limit() {
  NVFP4_CUDA_CHECK(cudaFuncSetAttribute(fused::fused_dual_gemm_kernel<BN, kFastK>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused::TileConfig<BN>::kSmemBytes));
}

// Decoded stages of the TMA kernel: 4 (three wgmma stages queued) where shared memory allows,
// 3 for the widest tile.
template <int BN>
constexpr int tma_depth() {
  return fused::tma_smem_bytes(BN, 4) <= 227 * 1024 ? 4 : 3;
}

template <int BN>
void prepare_width() {
  set_smem_limit<BN, true>();
  set_smem_limit<BN, false>();
  constexpr int D = tma_depth<BN>();
  NVFP4_CUDA_CHECK(cudaFuncSetAttribute(fused::fused_dual_gemm_tma_kernel<BN, D, true>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused::TmaTileConfig<BN, D>::kSmemBytes));
  NVFP4_CUDA_CHECK(cudaFuncSetAttribute(fused::fused_dual_gemm_tma_kernel<BN, D, false>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        fused::TmaTileConfig<BN, D>::kSmemBytes));
}

// Which kernel a shape gets: TMA when the scale rows are 16-byte aligned (K % 256 == 0),
// else cp.async (K % 64 == 0), else the generic bounds-checked K path.
enum class KPath { Tma, CpAsync, Generic };
KPath k_path(int64_t K) {
  if (K % 256 == 0) return KPath::Tma;
  return K % fused::kBK == 0 ? KPath::CpAsync : KPath::Generic;
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
void launch_width(const KernelArgs& a, const fused::TmaMaps* maps, bool int_decode, int L,
                  cudaStream_t s) {
  const dim3 grid(unsigned((a.N + BN - 1) / BN), unsigned((a.M + fused::kBM - 1) / fused::kBM),
                  unsigned(L));
  constexpr int D = tma_depth<BN>();
  constexpr int tma_smem = fused::TmaTileConfig<BN, D>::kSmemBytes;
  switch (k_path(a.K)) {
    case KPath::Tma:
      if (int_decode)
        fused::fused_dual_gemm_tma_kernel<BN, D, true>
            <<<grid, fused::kTmaThreads, tma_smem, s>>>(*maps, a);
      else
        fused::fused_dual_gemm_tma_kernel<BN, D, false>
            <<<grid, fused::kTmaThreads, tma_smem, s>>>(*maps, a);
      break;
    case KPath::CpAsync:
      fused::fused_dual_gemm_kernel<BN, true>
          <<<grid, fused::kThreads, fused::TileConfig<BN>::kSmemBytes, s>>>(a);
      break;
    case KPath::Generic:
      fused::fused_dual_gemm_kernel<BN, false>
          <<<grid, fused::kThreads, fused::TileConfig<BN>::kSmemBytes, s>>>(a);
      break;
  }
  NVFP4_CHECK_LAUNCH();
}

void launch(int bn, const KernelArgs& a, const fused::TmaMaps* maps, bool int_decode, int L,
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
    const double tiles = double((s.N + bn - 1) / bn) * double((s.M + fused::kBM - 1) / fused::kBM) *
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

class FusedPlan final : public GpuPlan {
 public:
  explicit FusedPlan(const Problem& p) : GpuPlan(p.shape) {
    p.validate();
    const DeviceInfo& dev = device_info();
    if (dev.cc_major != 9 || dev.cc_minor != 0)
      throw CudaError("fused: the kernel is built for sm_90a only; this device is " + dev.name +
                      " (cc " + std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) +
                      ")");
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
    if (k_path(shape_.K) == KPath::Tma) {
      try {
        for (int i = 0; i < kTileCount; ++i)
          maps_.push_back(fused::make_tma_maps(args_, int(shape_.L), kTileWidths[i]));
      } catch (const std::runtime_error& e) {
        throw CudaError(e.what());
      }
    }
    tile_ = default_tile(shape_, dev.sm_count);
    int_decode_ = kDefaultIntDecode;
    synchronize();
  }

  std::string describe() const override {
    const int bn = kTileWidths[tile_];
    const int64_t tiles = ((shape_.N + bn - 1) / bn) * ((shape_.M + fused::kBM - 1) / fused::kBM) *
                          shape_.L;
    const bool tma = k_path(shape_.K) == KPath::Tma;
    return "fused sm_90a kernel: in-kernel FP4 decode to fp16 (" +
           std::string(!tma || int_decode_ ? "integer" : "cvt.e4m3x2") + " decoder) + wgmma m64n" +
           std::to_string(2 * bn) + "k16 dual GEMM + silu*mul epilogue, tile 128x" +
           std::to_string(bn) + " (" + std::to_string(tiles) + " CTAs), " +
           k_path_name(k_path(shape_.K));
  }

  void enqueue() override {
    launch(kTileWidths[tile_], args_, maps_.empty() ? nullptr : &maps_[size_t(tile_)], int_decode_,
           int(shape_.L), stream());
  }

  // Candidates: every tile width; on the TMA path each with both decoders (integer first).
  std::vector<std::string> candidates() const override {
    std::vector<std::string> v;
    for (int bn : kTileWidths) v.push_back("tile 128x" + std::to_string(bn));
    if (k_path(shape_.K) == KPath::Tma) {
      for (auto& c : v) c += " int-decode";
      for (int bn : kTileWidths) v.push_back("tile 128x" + std::to_string(bn) + " cvt-decode");
    }
    return v;
  }
  void select(size_t index) override {
    const size_t n = candidates().size();
    if (index >= n)
      throw std::out_of_range("fused: candidate " + std::to_string(index) + " of " +
                              std::to_string(n));
    tile_ = int(index % kTileCount);
    int_decode_ = index < size_t(kTileCount);
  }
  std::string tune_key() const override {
    return device_info().key() + "|" + shape_.str() + "|gpu-fused-v3|tiles32,48,64,96,128" +
           (k_path(shape_.K) == KPath::Tma ? "|int,cvt" : "");
  }

 private:
  DeviceBuffer<uint8_t> a_, b1_, b2_, sfa_, sfb1_, sfb2_;
  KernelArgs args_{};
  std::vector<fused::TmaMaps> maps_;  // per tile width, TMA path only
  int tile_ = 0;                      // index into kTileWidths
  bool int_decode_ = true;            // TMA path: decode8_int (else decode8)
};

// Shape limits (grid dimensions, 32-bit sizes in the kernel) and the device: the kernel exists
// for sm_90 only. This runs where the device is in use (trial child, bench).
Support fused_supports(const Shape& s) {
  if (s.M > (int64_t(65535) * fused::kBM) || s.N >= (int64_t(1) << 31) || s.K >= (int64_t(1) << 31))
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
