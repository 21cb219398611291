// planted.cpp — deliberately broken CPU paths, one per real bug class, built ONLY into the test
// cpu module of tests/planted/paths (tests/planted/CMakeLists.txt), never into the product's modules.
//
// Each bug registers as a Variant optimization of the cpu backend named after it (the name is
// the CLI token: `NVFP4_PATHS_DIR=build/tests/planted/paths harness --backend cpu --verify bf16-intermediates`). All of them share
// one plan that computes like the cpu plain path (exact fp32 decode, fp32 GEMMs, the fp32
// epilogue, one fp16 rounding; optimized/cpu/plain.cpp) with exactly one thing broken.
// test_planted.cpp asserts that the harness fails each with the right criterion, and
// tools/kill_matrix.py tabulates which criterion caught which bug and whether GPU MODE's rule did.
// Layouts as in problem.hpp: A (L, M, K/2), B (L, N, K/2), scales (L, rows, K/16), C (L, M, N).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compare.hpp"
#include "cpu/cpu_common.hpp"
#include "registry.hpp"

namespace nvfp4 {
namespace planted {
namespace {

enum class Bug {
  Bf16Intermediates,   // G and U rounded to bf16 before the epilogue
  Fp16Intermediates,   // G and U rounded to fp16 before the epilogue
  Fp16Accumulation,    // per-block fp32 dot products summed into an fp16 accumulator
  DroppedBlock,        // the middle K block of 16 never enters either GEMM
  TruncatingLane,      // the final fp16 conversion truncates in one lane of four (n % 4 == 3)
  SiluPolynomial,      // exp inside silu from a quadratic 2^f polynomial (~1e-3 relative error)
  SiluWrongGemm,       // silu(alpha2*U) * (alpha1*G)
  NibbleSwap,          // B1's FP4 nibbles read high-first
  Scale32,             // one scale per 32 elements (the MXFP4 block size): block b uses scale b & ~1
  E4m3fnuz,            // scales decoded as e4m3fnuz (bias 8, NaN 0x80)
  SubnormalFlush,      // subnormal scales flushed to zero
  NanScaleNumber,      // NaN scale bytes 0x7F/0xFF decoded as +-480
  AlphaIgnored,        // alpha1 and alpha2 never applied
  RaggedUnwritten,     // the last row (M % 8 != 0) and last column (N % 8 != 0) never written
  Nondeterministic,    // every odd call perturbs one element
  PoisonOnly,          // computes only when the output holds the poison pattern
  CachedResult,        // returns its first result again on later calls
  IgnoresInputs,       // set_inputs() keeps the old inputs
  SplitKConfig,        // correct as chosen; its second configuration (split K) skips the middle block
  TruncatingTail,      // the last element of each batch (a scalar tail store) converted toward zero
  Acc13Bits,           // the accumulator keeps 13 significant bits between blocks of 16 products
  Fp16PartialsLongK,   // for K > 4096: split K in chunks of 1024, each partial sum stored as fp16
  SharedWeights,       // the weights kept in one process-wide buffer: the plan built or fed last wins
};

struct BugInfo {
  Bug bug;
  const char* name;
  const char* summary;
};

const BugInfo kBugs[] = {
    {Bug::SplitKConfig, "split-k-config",
     "planted: right in the configuration it picks; its split-K configuration skips the middle K block"},
    {Bug::Bf16Intermediates, "bf16-intermediates", "planted: G and U rounded to bf16 before the epilogue"},
    {Bug::Fp16Intermediates, "fp16-intermediates", "planted: G and U rounded to fp16 before the epilogue"},
    {Bug::Fp16Accumulation, "fp16-accumulation", "planted: block dot products summed in an fp16 accumulator"},
    {Bug::DroppedBlock, "dropped-block", "planted: the middle K block of 16 is skipped"},
    {Bug::TruncatingLane, "truncating-lane", "planted: the fp16 conversion truncates in lane 3 of 4"},
    {Bug::SiluPolynomial, "silu-polynomial", "planted: silu's exp from a quadratic polynomial (~1e-3)"},
    {Bug::SiluWrongGemm, "silu-wrong-gemm", "planted: silu applied to U instead of G"},
    {Bug::NibbleSwap, "nibble-swap", "planted: B1's nibbles read high-first"},
    {Bug::Scale32, "scale-per-32", "planted: one scale per 32 elements (MXFP4 block size)"},
    {Bug::E4m3fnuz, "e4m3fnuz-scales", "planted: scales decoded as e4m3fnuz"},
    {Bug::SubnormalFlush, "subnormal-scales-flushed", "planted: subnormal scales flushed to zero"},
    {Bug::NanScaleNumber, "nan-scale-as-number", "planted: NaN scale bytes decoded as +-480"},
    {Bug::AlphaIgnored, "alpha-ignored", "planted: alpha1 and alpha2 ignored"},
    {Bug::RaggedUnwritten, "ragged-unwritten", "planted: last row/column left unwritten when not a multiple of 8"},
    {Bug::Nondeterministic, "nondeterministic", "planted: odd calls perturb one element"},
    {Bug::PoisonOnly, "poison-only", "planted: computes only when the output holds the poison pattern"},
    {Bug::CachedResult, "cached-result", "planted: returns its first result on every later call"},
    {Bug::IgnoresInputs, "ignores-inputs", "planted: set_inputs keeps the old inputs"},
    {Bug::TruncatingTail, "truncating-tail", "planted: the last element of each batch converted toward zero"},
    {Bug::Acc13Bits, "acc-13-bits", "planted: an accumulator of 13 significant bits (no promotion to fp32)"},
    {Bug::Fp16PartialsLongK, "fp16-partials-long-k",
     "planted: for K > 4096, split K with partial sums of 1024 terms kept in fp16 (an fp16 split-K workspace)"},
    {Bug::SharedWeights, "shared-weights",
     "planted: the weights in one process-wide buffer shared by every plan (the last built or fed wins)"},
};

float round_bf16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7F800000u) == 0x7F800000u) return x;  // inf, NaN
  b += 0x7FFFu + ((b >> 16) & 1u);                  // round to nearest, ties to even
  b &= 0xFFFF0000u;
  std::memcpy(&x, &b, 4);
  return x;
}

float round_fp16(float x) { return fp16_to_float(fp16_from_float(x)); }

// x rounded to nearest (ties to even) with `bits` significant bits (fp32 range).
float round_bits(float x, int bits) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);
  const float q = std::ldexp(1.0f, e - bits);
  return std::nearbyint(x / q) * q;
}

// fp16 conversion rounding toward zero: the nearest-even result, stepped back when it rounded up.
uint16_t fp16_truncate(float v) {
  uint16_t h = fp16_from_float(v);
  if (!std::isfinite(v) || fp16_is_nan(h)) return h;
  if ((h & 0x7FFF) != 0 && std::fabs(fp16_to_double(h)) > std::fabs(double(v))) h = uint16_t(h - 1);
  return h;
}

// exp(t) = 2^(t*log2 e), the fraction's 2^f from a quadratic (max relative error ~2e-3).
float exp_polynomial(float t) {
  const float y = t * 1.44269504f;
  if (y > 127) return INFINITY;
  if (y < -126) return 0.0f;
  const float n = std::floor(y), f = y - n;
  return std::ldexp(1.0f + f * (0.6565f + 0.3435f * f), int(n));
}

// E4M3 scale decoding with the bug's mistake (or the right decoding).
float decode_scale(uint8_t b, Bug bug) {
  const int e = (b >> 3) & 15, m = b & 7;
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  switch (bug) {
    case Bug::E4m3fnuz:
      if (b == 0x80) return NAN;
      return sign * (e == 0 ? std::ldexp(float(m) / 8, -7) : std::ldexp(1.0f + float(m) / 8, e - 8));
    case Bug::SubnormalFlush:
      if (e == 0) return 0.0f * sign;
      break;
    case Bug::NanScaleNumber:
      if (e4m3_is_nan(b)) return sign * 480.0f;
      break;
    default:
      break;
  }
  return float(e4m3_value(b));
}

class PlantedPlan : public cpu::HostPlan {
 public:
  PlantedPlan(const Problem& p, Bug bug, std::string name)
      : HostPlan(p), bug_(bug), name_(std::move(name)) {
    if (bug_ == Bug::SharedWeights) shared_weights() = p;
  }

  std::string describe() const override { return "PLANTED BUG " + name_ + " (cpu plain arithmetic otherwise)"; }

  // Only split-k-config offers configurations: the default (whole K, index 0) and split K.
  std::vector<std::string> candidates() const override {
    if (bug_ != Bug::SplitKConfig) return {};
    return {"whole K", "split K, 2 parts"};
  }
  void select(size_t index) override { split_ = bug_ == Bug::SplitKConfig && index == 1; }

  void set_inputs(const Problem& p, InputSet which) override {
    if (bug_ == Bug::IgnoresInputs) return;
    HostPlan::set_inputs(p, which);
    if (bug_ == Bug::SharedWeights && which == InputSet::All) shared_weights() = problem_;
  }

  void enqueue() override {
    ++calls_;
    if (bug_ == Bug::PoisonOnly && c_[0] != kPoisonBits) return;
    if (bug_ == Bug::CachedResult && !cache_.empty()) {
      c_ = cache_;
      return;
    }
    compute();
    if (bug_ == Bug::CachedResult) cache_ = c_;
    if (bug_ == Bug::Nondeterministic && calls_ % 2 == 1) c_[c_.size() / 2] ^= 0x0100;
  }

 private:
  // shared-weights: the one buffer every plan of the process reads its weights from.
  static Problem& shared_weights() {
    static Problem weights;
    return weights;
  }

  // (rows, K) fp32 from packed FP4 and E4M3 scales, with the bug's decoding mistakes.
  void decode(const uint8_t* packed, const uint8_t* sf, int64_t rows, int64_t K, bool is_b1,
              float* out) const {
    const int64_t kb = K / kBlock;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < kb; ++b) {
        const int64_t sb = bug_ == Bug::Scale32 ? (b & ~int64_t(1)) : b;
        const float scale = decode_scale(sf[r * kb + sb], bug_);
        for (int j = 0; j < kBlock / 2; ++j) {
          uint8_t byte = packed[r * (K / 2) + b * (kBlock / 2) + j];
          if (bug_ == Bug::NibbleSwap && is_b1) byte = uint8_t((byte >> 4) | (byte << 4));
          out[r * K + b * kBlock + 2 * j] = float(e2m1_value(byte & 0x0F)) * scale;
          out[r * K + b * kBlock + 2 * j + 1] = float(e2m1_value(byte >> 4)) * scale;
        }
      }
  }

  // out (M, N) = a (M, K) * b (N, K)^T in fp32, or with the fp16 or 13-bit accumulator of those bugs.
  void gemm(const float* a, const float* b, float* out, int64_t M, int64_t N, int64_t K) const {
    if (bug_ == Bug::Fp16PartialsLongK && K > 4096) {
      cpu::parallel_for(M, cpu::hardware_threads(), [&](int64_t m) {
        for (int64_t n = 0; n < N; ++n) {
          float acc = 0;
          for (int64_t k0 = 0; k0 < K; k0 += 1024) {
            float part = 0;
            for (int64_t k = k0; k < std::min(K, k0 + 1024); ++k) part += a[m * K + k] * b[n * K + k];
            acc += round_fp16(part);
          }
          out[m * N + n] = acc;
        }
      });
      return;
    }
    if (bug_ == Bug::Acc13Bits) {
      cpu::parallel_for(M, cpu::hardware_threads(), [&](int64_t m) {
        for (int64_t n = 0; n < N; ++n) {
          float acc = 0;
          for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
            float block = 0;
            for (int64_t k = k0; k < k0 + kBlock; ++k) block += a[m * K + k] * b[n * K + k];
            acc = round_bits(acc + block, 13);
          }
          out[m * N + n] = acc;
        }
      });
      return;
    }
    if (bug_ != Bug::Fp16Accumulation) {
      kernels_->f32(a, b, out, M, N, K, N);
      return;
    }
    cpu::parallel_for(M, cpu::hardware_threads(), [&](int64_t m) {
      for (int64_t n = 0; n < N; ++n) {
        float acc = 0;
        for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
          float block = 0;
          for (int64_t k = k0; k < k0 + kBlock; ++k) block += a[m * K + k] * b[n * K + k];
          acc = round_fp16(acc + block);
        }
        out[m * N + n] = acc;
      }
    });
  }

  void compute() {
    const Shape& s = problem_.shape;
    const Problem& w = bug_ == Bug::SharedWeights ? shared_weights() : problem_;  // the weights read
    const int64_t M = s.M, N = s.N, K = s.K, KB = K / kBlock;
    std::vector<float> a(size_t(M * K)), b1(size_t(N * K)), b2(size_t(N * K)), g(size_t(M * N)),
        u(size_t(M * N));
    for (int64_t l = 0; l < s.L; ++l) {
      decode(problem_.a.data() + l * M * (K / 2), problem_.sfa.data() + l * M * KB, M, K, false, a.data());
      decode(w.b1.data() + l * N * (K / 2), w.sfb1.data() + l * N * KB, N, K, true, b1.data());
      decode(w.b2.data() + l * N * (K / 2), w.sfb2.data() + l * N * KB, N, K, false, b2.data());
      if (bug_ == Bug::DroppedBlock || split_)
        for (int64_t m = 0; m < M; ++m)
          std::fill_n(a.data() + m * K + (KB / 2) * kBlock, kBlock, 0.0f);
      gemm(a.data(), b1.data(), g.data(), M, N, K);
      gemm(a.data(), b2.data(), u.data(), M, N, K);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          if (bug_ == Bug::RaggedUnwritten && ((M % 8 && m == M - 1) || (N % 8 && n == N - 1))) continue;
          float gv = g[size_t(m * N + n)], uv = u[size_t(m * N + n)];
          if (bug_ == Bug::Bf16Intermediates) gv = round_bf16(gv), uv = round_bf16(uv);
          if (bug_ == Bug::Fp16Intermediates) gv = round_fp16(gv), uv = round_fp16(uv);
          const bool tail = bug_ == Bug::TruncatingTail && m == M - 1 && n == N - 1;
          c_[size_t((l * M + m) * N + n)] = epilogue(gv, uv, n, tail);
        }
    }
  }

  uint16_t epilogue(float g, float u, int64_t n, bool truncate = false) const {
    const bool alpha = bug_ != Bug::AlphaIgnored;
    const Problem& w = bug_ == Bug::SharedWeights ? shared_weights() : problem_;
    float x = alpha ? w.alpha1 * g : g;
    float y = alpha ? w.alpha2 * u : u;
    if (bug_ == Bug::SiluWrongGemm) std::swap(x, y);
    const float e = bug_ == Bug::SiluPolynomial ? exp_polynomial(-x) : std::exp(-x);
    const float v = x / (1.0f + e) * y;
    if ((bug_ == Bug::TruncatingLane && n % 4 == 3) || truncate) return fp16_truncate(v);
    return fp16_from_float(v);
  }

  Bug bug_;
  std::string name_;
  bool split_ = false;  // split-k-config: the configuration the harness selected
  int64_t calls_ = 0;
  std::vector<uint16_t> cache_;
};

bool register_all() {
  for (const BugInfo& info : kBugs) {
    const Bug bug = info.bug;
    const std::string name = info.name;
    register_optimization(Optimization{
        OptimizationManifest{name, info.summary, OptKind::Variant, 0, {}}, "cpu",
        [bug, name](const Problem& p, const PlanOptions&) -> std::unique_ptr<Plan> {
          return std::make_unique<PlantedPlan>(p, bug, name);
        },
        nullptr, nullptr});
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace planted
}  // namespace nvfp4
