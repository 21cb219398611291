// plain.cu — the "gpu" backend's plain path, the GEMM-only yardstick and the bf16 peak probe.
//
// Plain (docs/design.md §3), Hopper and newer:
//   init      upload A, SFA; decode B1 and B2 ONCE into one concatenated bf16 matrix
//             Bcat = [B1; B2] (L, 2N, K) — they are the weights of the layer, so a real engine
//             would hold them decoded; prepare cuBLASLt (handle, descriptors, workspace, the
//             heuristic's algorithm list) and the fp32 buffer D.
//   per call  (1) decode A (L, M, K/2 packed + scales) -> bf16 (L, M, K): the activation, new
//                 every call, so it is decoded every call;
//             (2) one cuBLASLt GEMM  D = A_bf16 · Bcat^T  (L, M, 2N) fp32, fp32 accumulation,
//                 G = D[:, :, 0:N], U = D[:, :, N:2N];
//             (3) the silu·mul kernel C = fp16(silu(alpha1*G) * (alpha2*U)).
//   The decode is exact (decode.cuh), so the only roundings are the GEMM's fp32 accumulation and
//   the epilogue's (epilogue.cuh). Ragged M and N need no padding: D's leading dimension is 2N
//   rounded up to a multiple of 4 (16-byte rows for the epilogue's vector loads).
//   Autotune candidates are the cuBLASLt heuristic's algorithms (up to kMaxAlgos, in the
//   heuristic's order; candidate 0 is the default).
//
// On compute capability >= 10.0 (Blackwell) and L == 1, plain instead feeds the packed FP4 data
// with its block scales to cuBLASLt's native block-scaled FP4 GEMM (CUDA_R_4F_E2M1 with
// CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3; scales converted at init to the 128x4 blocked layout)
// and keeps the same epilogue; when cuBLASLt offers no algorithm it falls back to the decode path.
// UNTESTED: no Blackwell GPU was available to this project (docs/gpu-target.md).
// New inputs (set_inputs) go into the same buffers: A and SFA as they are (and converted into the
// same blocked-scale buffer on the FP4 path); with InputSet::All, B1 and B2 are decoded again into
// the same Bcat and the alphas replaced; the parts below redo their init-time work as well.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "decode.cuh"
#include "device_problem.hpp"
#include "epilogue.cuh"
#include "errors.hpp"
#include "gpu_plan.hpp"
#include "layout.hpp"
#include "lt_gemm.hpp"
#include "autotune.hpp"
#include "registry.hpp"

namespace nvfp4::gpu {

namespace {

constexpr int kMaxAlgos = 16;  // heuristic results requested (autotune candidates)

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Host-side concatenation of two (L, rows, w) byte arrays into (L, 2*rows, w): [x; y] per batch.
std::vector<uint8_t> concat_rows(const std::vector<uint8_t>& x, const std::vector<uint8_t>& y,
                                 int64_t L, int64_t rows, int64_t w) {
  std::vector<uint8_t> out(size_t(2 * L * rows * w));
  for (int64_t l = 0; l < L; ++l) {
    std::copy_n(x.begin() + l * rows * w, rows * w, out.begin() + l * 2 * rows * w);
    std::copy_n(y.begin() + l * rows * w, rows * w, out.begin() + (l * 2 + 1) * rows * w);
  }
  return out;
}

class PlainPlan final : public GpuPlan {
 public:
  // Full: the plain path. The others issue one part of it (bench's time breakdown):
  // GemmOnly is the yardstick (A decoded at init), DecodeOnly decodes A, EpilogueOnly runs the
  // silu*mul kernel on a D computed once at init.
  enum class Mode { Full, GemmOnly, DecodeOnly, EpilogueOnly };

  PlainPlan(const Problem& p, Mode mode) : GpuPlan(p.shape), mode_(mode), in_(p.shape) {
    p.validate();
    const Shape& s = shape_;
    in_.upload(p, InputSet::All, stream());
    ldd_ = round_up(2 * s.N, 4);
    d_ = DeviceBuffer<float>(size_t(s.L * s.M * ldd_));
    // D starts as NaN (0xFFFFFFFF): an element the GEMM failed to write would turn into a NaN
    // output that the harness's checks catch. (compute-sanitizer initcheck cannot vouch for D:
    // on the H100 it reported every epilogue read of D as uninitialized although the checked
    // outputs show the GEMM wrote it — probably because cuBLASLt's sm_90 kernels store D with
    // TMA, which initcheck does not track. With D filled here, initcheck checks the rest.)
    NVFP4_CUDA_CHECK(cudaMemsetAsync(d_.get(), 0xFF, d_.bytes(), stream()));
    if (mode_ == Mode::Full && device_info().cc_major >= 10 && s.L == 1) {
      try {
        init_native_fp4(p);
        native_fp4_ = true;
      } catch (const CudaError&) {
        native_fp4_ = false;  // no block-scaled FP4 algorithm for this problem: decode instead
      }
    }
    if (!native_fp4_) init_bf16();
    prepare(InputSet::All);
    synchronize();
  }

  void set_inputs(const Problem& p, InputSet which) override {
    in_.upload(p, which, stream());
    if (native_fp4_) convert_native_fp4(p, which);
    prepare(which);
    synchronize();
  }

  std::string describe() const override {
    const std::string algo = "algo " + std::to_string(gemm_->selected()) + "/" +
                             std::to_string(gemm_->algo_count()) + ": " +
                             gemm_->algo_name(gemm_->selected());
    if (mode_ == Mode::GemmOnly)
      return "yardstick: cuBLASLt bf16 GEMM alone on operands decoded at init (" + algo + ")";
    if (mode_ == Mode::DecodeOnly) return "plain's A decode kernel alone (FP4 x E4M3 -> bf16)";
    if (mode_ == Mode::EpilogueOnly) return "plain's silu*mul kernel alone (fp32 G|U -> fp16)";
    if (native_fp4_)
      return "cuBLASLt native block-scaled FP4 GEMM [B1;B2] fp32 out (" + algo +
             ") + silu*mul kernel (sm_100 path, untested)";
    return "decode A per call + cuBLASLt bf16 GEMM over [B1;B2] (decoded at init) fp32 out (" +
           algo + ") + silu*mul kernel";
  }

  void enqueue() override {
    const Shape& s = shape_;
    if (mode_ == Mode::DecodeOnly) {
      decode_fp4_to_bf16(in_.a.get(), in_.sfa.get(), a_bf16_.get(), s.L, s.M, s.K, s.M * s.K,
                         stream());
      return;
    }
    if (mode_ == Mode::EpilogueOnly) {
      silu_mul_to_fp16(d_.get(), ldd_, output(), s.L * s.M, s.N, in_.alpha1, in_.alpha2,
                       stream());
      return;
    }
    if (native_fp4_) {
      gemm_->enqueue(in_.a.get(), b_packed_.get(), d_.get(), stream());
    } else {
      if (mode_ == Mode::Full)
        decode_fp4_to_bf16(in_.a.get(), in_.sfa.get(), a_bf16_.get(), s.L, s.M, s.K, s.M * s.K,
                           stream());
      gemm_->enqueue(a_bf16_.get(), b_bf16_.get(), d_.get(), stream());
    }
    if (mode_ == Mode::Full)
      silu_mul_to_fp16(d_.get(), ldd_, output(), s.L * s.M, s.N, in_.alpha1, in_.alpha2,
                       stream());
  }

  bool read_intermediates(std::vector<float>& g, std::vector<float>& u) override {
    const Shape& s = shape_;
    // Only the 2N written columns of each row: the padding up to ldd is never written (a copy of
    // it would read uninitialized memory, which compute-sanitizer initcheck reports).
    const int64_t rows = s.L * s.M;
    std::vector<float> d(size_t(rows * 2 * s.N));
    NVFP4_CUDA_CHECK(cudaMemcpy2DAsync(d.data(), size_t(2 * s.N) * sizeof(float), d_.get(),
                                       size_t(ldd_) * sizeof(float), size_t(2 * s.N) * sizeof(float),
                                       size_t(rows), cudaMemcpyDeviceToHost, stream()));
    synchronize();
    g.resize(size_t(s.c_elems()));
    u.resize(size_t(s.c_elems()));
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(d.begin() + r * 2 * s.N, s.N, g.begin() + r * s.N);
      std::copy_n(d.begin() + r * 2 * s.N + s.N, s.N, u.begin() + r * s.N);
    }
    return true;
  }

  std::vector<std::string> candidates() const override {
    std::vector<std::string> v;
    for (size_t i = 0; i < gemm_->algo_count(); ++i) v.push_back(gemm_->algo_name(i));
    return v;
  }
  void select(size_t index) override { gemm_->select(index); }
  std::string tune_key() const override {
    return device_info().key() + "|" + shape_.str() + "|gpu-plain-" +
           (native_fp4_ ? "fp4native" : "bf16") + (mode_ == Mode::Full ? "" : "-part" + std::to_string(int(mode_))) +
           "|ws" + std::to_string(LtGemm::kWorkspaceBytes >> 20) + "MiB|algos" +
           std::to_string(gemm_->algo_count());
  }

 private:
  // Decode path: the bf16 buffers and the GEMM; their contents come from prepare().
  void init_bf16() {
    const Shape& s = shape_;
    a_bf16_ = DeviceBuffer<__nv_bfloat16>(size_t(s.L * s.M * s.K));
    b_bf16_ = DeviceBuffer<__nv_bfloat16>(size_t(s.L * 2 * s.N * s.K));
    LtGemmShape g;
    g.rows = s.M;
    g.cols = 2 * s.N;
    g.K = s.K;
    g.batch = s.L;
    g.ldd = ldd_;
    g.x_stride = s.M * s.K;
    g.w_stride = 2 * s.N * s.K;
    g.d_stride = s.M * ldd_;
    gemm_ = std::make_unique<LtGemm>(g, LtGemm::Input::BF16, CUDA_R_32F, kMaxAlgos);
  }

  // The work a mode does ahead of its calls, from the inputs in in_ (at init, and again after
  // set_inputs): the decode path decodes B1, B2 into Bcat (when the weights are new); the
  // yardstick decodes A; the epilogue part computes D. Not timed: it is outside enqueue().
  void prepare(InputSet which) {
    if (native_fp4_) return;
    const Shape& s = shape_;
    if (which == InputSet::All) {
      const int64_t bstride = 2 * s.N * s.K;
      decode_fp4_to_bf16(in_.b1.get(), in_.sfb1.get(), b_bf16_.get(), s.L, s.N, s.K, bstride,
                         stream());
      decode_fp4_to_bf16(in_.b2.get(), in_.sfb2.get(), b_bf16_.get() + s.N * s.K, s.L, s.N, s.K,
                         bstride, stream());
    }
    if (mode_ == Mode::GemmOnly || mode_ == Mode::EpilogueOnly)
      decode_fp4_to_bf16(in_.a.get(), in_.sfa.get(), a_bf16_.get(), s.L, s.M, s.K, s.M * s.K,
                         stream());
    if (mode_ == Mode::EpilogueOnly) gemm_->enqueue(a_bf16_.get(), b_bf16_.get(), d_.get(), stream());
  }

  // Native block-scaled FP4 (sm_100+, L == 1): packed A (in_.a) and [B1; B2] as they are, scales
  // in the 128x4 blocked layout (reference/layout.hpp). Throws CudaError when cuBLASLt has no
  // algorithm.
  void init_native_fp4(const Problem& p) {
    const Shape& s = shape_;
    b_packed_ = DeviceBuffer<uint8_t>(size_t(2 * s.N * (s.K / 2)));
    sfa_ = DeviceBuffer<uint8_t>(scales_plain_to_blocked(p.sfa, s.M, s.K / 16, 1).size());
    sfb_ = DeviceBuffer<uint8_t>(
        scales_plain_to_blocked(concat_rows(p.sfb1, p.sfb2, 1, s.N, s.K / 16), 2 * s.N, s.K / 16, 1)
            .size());
    convert_native_fp4(p, InputSet::All);
    LtGemmShape g;
    g.rows = s.M;
    g.cols = 2 * s.N;
    g.K = s.K;
    g.batch = 1;
    g.ldd = ldd_;
    g.x_stride = s.M * s.K;
    g.w_stride = 2 * s.N * s.K;
    g.d_stride = s.M * ldd_;
    gemm_ = std::make_unique<LtGemm>(g, LtGemm::Input::FP4_VEC16, CUDA_R_32F, kMaxAlgos,
                                     sfa_.get(), sfb_.get());
  }

  // The native path's own layouts of p's inputs, into the same buffers: SFA blocked; with All,
  // [B1; B2] and their scales blocked.
  void convert_native_fp4(const Problem& p, InputSet which) {
    const Shape& s = shape_;
    const std::vector<uint8_t> sfa_blocked = scales_plain_to_blocked(p.sfa, s.M, s.K / 16, 1);
    sfa_.upload(sfa_blocked.data(), sfa_blocked.size(), stream());
    if (which == InputSet::All) {
      const std::vector<uint8_t> bcat = concat_rows(p.b1, p.b2, 1, s.N, s.K / 2);
      const std::vector<uint8_t> sfb_blocked =
          scales_plain_to_blocked(concat_rows(p.sfb1, p.sfb2, 1, s.N, s.K / 16), 2 * s.N, s.K / 16, 1);
      b_packed_.upload(bcat.data(), bcat.size(), stream());
      sfb_.upload(sfb_blocked.data(), sfb_blocked.size(), stream());
    }
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(stream()));  // before the host vectors go
  }

  Mode mode_;
  DeviceProblem in_;  // the inputs in the plain layouts
  bool native_fp4_ = false;
  int64_t ldd_ = 0;
  DeviceBuffer<uint8_t> sfa_, b_packed_, sfb_;  // the native FP4 path's layouts
  DeviceBuffer<__nv_bfloat16> a_bf16_, b_bf16_;
  DeviceBuffer<float> d_;  // (L, M, ldd): G | U | padding
  std::unique_ptr<LtGemm> gemm_;
};

Support gpu_available() {
  std::string why;
  if (!device_available(&why)) return Support::no(why);
  try {
    const DeviceInfo& d = device_info();
    if (d.cc_major < 9)
      return Support::no("needs compute capability >= 9.0 (Hopper); this is " + d.name + " (" +
                         std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ")");
  } catch (const std::exception& e) {
    return Support::no(e.what());
  }
  return Support::yes();
}

// Shape limits of the plain path (no device access: this may run in the parent process).
Support gpu_supports(const Shape& s) {
  const int64_t kMaxDim = int64_t(1) << 31;
  if (s.M >= kMaxDim || s.N >= kMaxDim / 4 || s.K >= kMaxDim)
    return Support::no("M, 4*N and K must be below 2^31 (cuBLASLt dimensions)");
  if (s.L > 65535) return Support::no("L must be at most 65535 (cuBLASLt batch count)");
  // Device memory the plan holds: the packed inputs, bf16 A and [B1;B2], fp32 D, fp16 C.
  const double bytes = double(s.a_bytes() + s.sfa_bytes() + 2 * (s.b_bytes() + s.sfb_bytes())) +
                       2.0 * s.L * s.M * s.K +
                       4.0 * s.L * s.N * s.K + 4.0 * s.L * s.M * double(round_up(2 * s.N, 4)) +
                       2.0 * s.c_elems() + double(LtGemm::kWorkspaceBytes);
  if (bytes > 48e9)
    return Support::no("needs about " + std::to_string(int64_t(bytes / 1e9)) +
                       " GB of device memory (limit 48 GB)");
  return Support::yes();
}

const bool registered = register_backend(Backend{
    "gpu",
    "CUDA paths: FP4 decode + cuBLASLt bf16 GEMM + silu*mul kernel (Hopper and newer)",
    gpu_available,
    gpu_supports,
    [](const Problem& p, const PlanOptions&) -> std::unique_ptr<Plan> {
      return std::make_unique<PlainPlan>(p, PlainPlan::Mode::Full);
    },
    nullptr,
    // The primary context of the device: created once per process, by the first CUDA call that
    // needs it (the plan's first allocation otherwise).
    [] { NVFP4_CUDA_CHECK(cudaFree(nullptr)); }});
const bool registered_autotune = register_optimization(autotune_for("gpu"));

// x[i] = a small non-zero bf16 value from a hash of i (multiples of 1/64 in [-1, 1) \ {0}).
__global__ void fill_bf16_pattern(__nv_bfloat16* x, int64_t n, uint32_t salt) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 0x9E3779B1u ^ salt;
    h ^= h >> 15;
    h *= 0x85EBCA77u;
    h ^= h >> 13;
    const int v = int(h & 127u) - 64;
    x[i] = __float2bfloat16(float(v == 0 ? 1 : v) / 64.0f);
  }
}

}  // namespace

std::unique_ptr<GpuPlan> make_gemm_yardstick(const Problem& problem) {
  return std::make_unique<PlainPlan>(problem, PlainPlan::Mode::GemmOnly);
}

std::unique_ptr<GpuPlan> make_plain_part(const Problem& problem, PlainPart part) {
  return std::make_unique<PlainPlan>(
      problem, part == PlainPart::DecodeA ? PlainPlan::Mode::DecodeOnly : PlainPlan::Mode::EpilogueOnly);
}

double measure_bf16_peak_flops(int64_t rows, int64_t cols, int64_t K, int reps) {
  Stream stream;
  DeviceBuffer<__nv_bfloat16> x(size_t(rows * K)), w(size_t(cols * K)), d(size_t(rows * cols));
  fill_bf16_pattern<<<1024, 256, 0, stream.get()>>>(x.get(), rows * K, 0x1234u);
  NVFP4_CHECK_LAUNCH();
  fill_bf16_pattern<<<1024, 256, 0, stream.get()>>>(w.get(), cols * K, 0xBEEFu);
  NVFP4_CHECK_LAUNCH();
  LtGemmShape g;
  g.rows = rows;
  g.cols = cols;
  g.K = K;
  g.ldd = cols;
  g.x_stride = rows * K;
  g.w_stride = cols * K;
  g.d_stride = rows * cols;
  LtGemm gemm(g, LtGemm::Input::BF16, CUDA_R_16BF, 4);
  if (reps < 3) reps = 3;
  double best = INFINITY;
  Event start, stop;
  for (size_t a = 0; a < gemm.algo_count(); ++a) {
    gemm.select(a);
    for (int i = 0; i < 2; ++i) gemm.enqueue(x.get(), w.get(), d.get(), stream.get());
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      start.record(stream.get());
      gemm.enqueue(x.get(), w.get(), d.get(), stream.get());
      stop.record(stream.get());
      t.push_back(double(stop.ms_since(start)) * 1e-3);
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    best = std::min(best, t[t.size() / 2]);
  }
  stream.synchronize();
  return 2.0 * double(rows) * double(cols) * double(K) / best;
}

}  // namespace nvfp4::gpu
