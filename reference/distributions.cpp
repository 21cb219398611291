// distributions.cpp — the named, seeded input generators of distributions.hpp.
//
// Reproducibility: every random number comes from splitmix64 (specified below, integer-only),
// one independent stream per tensor, seeded from (seed, tensor tag). Normal variates use the
// Irwin-Hall sum of twelve 16-bit uniforms (exact integer arithmetic, mean 0, variance 1 up to
// 2^-32), not Box-Muller: libm's log/cos are not correctly rounded, so their last bit may differ
// between machines; sums of integers cannot. The only floating-point operations left are IEEE
// multiplications by powers of two, double->float conversion and the quantizer's exact
// comparisons. So the same (shape, name, seed) gives the same bytes everywhere (pinned by a
// hash in tests/reference/test_distributions.cpp).
//
// Magnitudes: alpha1 = alpha2 = 1 and E4M3 scales cannot grow with K, so each generator picks
// its value range from lg = floor(log2 K) to keep G = A*B1^T and U = A*B2^T of order 1..10 for
// every K up to 2^20 (edge: ~20-30 where 448 meets a subnormal; gpumode follows GPU MODE and
// grows like sqrt(K)); otherwise silu(G)*U would be mostly inf (G > 0) and zero (G < 0), and a
// check against such a reference would say nothing. Scales are non-negative and finite everywhere
// except in `suspicious`, which exists to carry negative, -0 and NaN scale bytes.
//
// Generation order, per tensor: batch l outermost, then rows, then K (C order of the arrays).
// Each tensor draws from its own stream, so regenerating A and SFA alone (regenerate_activations)
// gives the bytes make_problem would give them.
#include "distributions.hpp"

#include <algorithm>
#include <cmath>

#include "errors.hpp"
#include "formats.hpp"
#include "quantize.hpp"

namespace nvfp4 {

namespace {

// splitmix64 (Steele, Lea, Flood 2014; constants as published). One call = one 64-bit output.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform integer in [0, n), n <= 2^32 (multiply-shift on the top 32 bits; bias < 2^-32 * n).
  uint32_t below(uint64_t n) { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }
  // Approximately N(0, 1): (sum of 12 uniform 16-bit integers - 12 * 65535/2) / 65536.
  // The sum is exact and so is the scaling; range (-6, 6), variance 1 - 2^-32.
  double normal() {
    int64_t sum = 0;
    for (int i = 0; i < 3; ++i) {
      const uint64_t r = next();
      sum += int64_t(r & 0xFFFF) + int64_t((r >> 16) & 0xFFFF) + int64_t((r >> 32) & 0xFFFF) + int64_t(r >> 48);
    }
    return double(2 * sum - 12 * 65535) * (1.0 / 131072.0);  // exact: a power of two
  }
  // Uniform float in [0, 1) on the 2^-24 grid (what torch.rand produces for float32).
  float unit_float() { return std::ldexp(float(next() >> 40), -24); }
};

enum Tensor : uint64_t { kA = 1, kB1 = 2, kB2 = 3, kSFA = 4, kSFB1 = 5, kSFB2 = 6, kMisc = 7 };

SplitMix64 stream(uint64_t seed, uint64_t tag) {
  SplitMix64 g{seed};
  const uint64_t base = g.next();
  SplitMix64 s{base ^ (tag * 0xD1B54A32D192ED03ull)};
  s.next();  // decorrelate the first output from the xor
  return s;
}

int floor_log2(int64_t k) {
  int lg = 0;
  while ((k >> (lg + 1)) != 0) ++lg;
  return lg;
}

// E4M3FN byte of 2^e for e in [-9, 8] (subnormal below 2^-6); e < -9 clamps to 2^-9.
uint8_t pow2_byte(int e) {
  if (e < -9) e = -9;
  if (e > 8) e = 8;
  return e >= -6 ? static_cast<uint8_t>((e + 7) << 3) : static_cast<uint8_t>(1 << (e + 9));
}

// Random nibbles, all 16 codes equally likely: fills `n` packed bytes.
void random_codes(SplitMix64& g, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = g.next();
    for (size_t j = i; j < n && j < i + 8; ++j, r >>= 8) out[j] = static_cast<uint8_t>(r & 0xFF);
  }
}

// "Ordinary" scale bytes for uniform/edge: uniform over the bytes from E4M3(2^(hi-4)) to
// E4M3(2^hi), hi = -floor((lg + 1) / 4). With all 16 codes (rms 2.95) this keeps the standard
// deviation of G within about 1..4 (lg = 4: scales in [2^-5, 2^-1]; lg = 12: [2^-7, 2^-3]).
struct ScaleWindow {
  uint8_t lo, hi;
  explicit ScaleWindow(int lg) {
    const int top = -((lg + 1) / 4);
    lo = pow2_byte(top - 4);
    hi = pow2_byte(top);
  }
  uint8_t draw(SplitMix64& g) const { return static_cast<uint8_t>(lo + g.below(uint64_t(hi - lo) + 1)); }
};

// normal: N(0, sigma^2) data, sigma = 1.5 * 2^-floor((lg + 2) / 4), quantized per 16 with scale
// E4M3(amax/6). Then sd(G) = sqrt(K) * sigma^2 stays within about 1..3.2 for every K, the scale
// of a block (about 0.3 sigma) stays a normal E4M3 number up to K = 2^20, and both A and B look
// like real NVFP4 activations/weights after a per-tensor normalisation.
void gen_normal(Problem& p, uint64_t seed, bool weights) {
  const Shape& s = p.shape;
  const int lg = floor_log2(s.K);
  const double sigma = std::ldexp(1.5, -((lg + 2) / 4));
  std::vector<float> row(size_t(s.K));
  auto fill = [&](std::vector<uint8_t>& codes, std::vector<uint8_t>& scales, int64_t rows, uint64_t tag) {
    SplitMix64 g = stream(seed, tag);
    for (int64_t r = 0; r < s.L * rows; ++r) {
      for (auto& x : row) x = static_cast<float>(g.normal() * sigma);
      quantize_nvfp4_into(row.data(), 1, s.K, codes.data() + r * (s.K / 2), scales.data() + r * (s.K / 16));
    }
  };
  fill(p.a, p.sfa, s.M, kA);
  if (!weights) return;
  fill(p.b1, p.sfb1, s.N, kB1);
  fill(p.b2, p.sfb2, s.N, kB2);
}

// uniform: every E2M1 code equally likely; scale bytes uniform over the ScaleWindow.
// Random codes (all 16 equally likely) for A and, with weights, B1 and B2; each scale byte from
// draw(g), g the scale tensor's own stream.
template <class Draw>
void random_codes_and_scales(Problem& p, uint64_t seed, bool weights, Draw draw) {
  const std::pair<std::vector<uint8_t>*, uint64_t> codes[] = {{&p.a, kA}, {&p.b1, kB1}, {&p.b2, kB2}};
  for (const auto& c : codes) {
    if (!weights && c.second != kA) continue;
    SplitMix64 g = stream(seed, c.second);
    random_codes(g, c.first->data(), c.first->size());
  }
  const std::pair<std::vector<uint8_t>*, uint64_t> scales[] = {{&p.sfa, kSFA}, {&p.sfb1, kSFB1}, {&p.sfb2, kSFB2}};
  for (const auto& c : scales) {
    if (!weights && c.second != kSFA) continue;
    SplitMix64 g = stream(seed, c.second);
    for (auto& b : *c.first) b = draw(g);
  }
}

void gen_uniform(Problem& p, uint64_t seed, bool weights) {
  const ScaleWindow w(floor_log2(p.shape.K));
  random_codes_and_scales(p, seed, weights, [&](SplitMix64& g) { return w.draw(g); });
}

// pow2: every E2M1 code equally likely (as uniform); each scale byte independently 2^(h-2) or
// 2^(h-1), h = -floor((lg + 1) / 4) (uniform's window top, lg = floor(log2 K)). With one binade of
// power-of-two scales, every product a*sa*b*sb of a row pair is a multiple of the pair's smallest
// nonzero one times 2^-2 (codes 0.5 and 1.5 have the fewest trailing zeros) and at most 576 such
// quanta (6*6 against 0.5*0.5, times 2*2 for the binade), so a sum of K of them spans at most
// 576*K quanta: exact in fp32, in any order, for K up to 2^24 / 576 ~ 29000. The certificate
// then holds a path's G and U to exactly the reference's at the suites' long K (4096, 7168), where
// the other distributions certify few or no elements (normal: none at K = 7168).
void gen_pow2(Problem& p, uint64_t seed, bool weights) {
  const int top = -((floor_log2(p.shape.K) + 1) / 4);
  const uint8_t lo = pow2_byte(top - 2), hi = pow2_byte(top - 1);
  random_codes_and_scales(p, seed, weights, [&](SplitMix64& g) { return g.below(2) ? hi : lo; });
}

// edge: all 16 codes (including -0), and scales chosen per K-block kb (nkb = K/16 blocks):
//   kb = 0:   A scale 448 in about 1/8 of the rows, ordinary otherwise; B1/B2 scales are the
//             subnormals 2^-9 or 2^-8 (so 448 * subnormal products stay moderate: |G| ~ 30).
//   kb = 1:   the mirror: B1/B2 scale 448 in about 1/8 of their rows; A scale subnormal 2^-9 or 2^-8.
//   kb = nkb-1 (when nkb >= 3), per batch: A row 0 and B1 row 0 have scale 448 and every other
//             A and B1 row has scale 0, B2 rows have subnormal scales: exactly one output per batch,
//             C[l, 0, 0], gets a 448*448 block product, so it overflows to +-inf or underflows to
//             -0 (silu of a huge negative G) — the IEEE overflow rule is exercised on one element.
//   other kb: each scale independently: 1/8 zero, 1/8 subnormal (0x01..0x07), 3/4 ordinary.
void gen_edge(Problem& p, uint64_t seed, bool weights) {
  const Shape& s = p.shape;
  const ScaleWindow w(floor_log2(s.K));
  const int64_t nkb = s.K / 16;
  const std::pair<std::vector<uint8_t>*, uint64_t> codes[] = {{&p.a, kA}, {&p.b1, kB1}, {&p.b2, kB2}};
  for (const auto& c : codes) {
    if (!weights && c.second != kA) continue;
    SplitMix64 g = stream(seed, c.second);
    random_codes(g, c.first->data(), c.first->size());
  }
  // is_a / is_b1 say which operand's scales are being filled (B2 is neither).
  auto fill = [&](std::vector<uint8_t>& sf, int64_t rows, uint64_t tag, bool is_a, bool is_b1) {
    SplitMix64 g = stream(seed, tag);
    for (int64_t l = 0; l < s.L; ++l) {
      for (int64_t r = 0; r < rows; ++r) {
        uint8_t* row = sf.data() + (l * rows + r) * nkb;
        for (int64_t kb = 0; kb < nkb; ++kb) {
          const uint32_t dice = g.below(8);  // drawn for every scale so the stream layout is fixed
          const uint8_t sub2 = static_cast<uint8_t>(1 + g.below(2));
          const uint8_t sub7 = static_cast<uint8_t>(1 + g.below(7));
          const uint8_t ordinary = w.draw(g);
          uint8_t v;
          if (kb == 0) {
            v = is_a ? (dice == 7 ? 0x7E : ordinary) : sub2;
          } else if (kb == 1) {
            v = is_a ? sub2 : (dice == 7 ? 0x7E : ordinary);
          } else if (nkb >= 3 && kb == nkb - 1) {
            if (is_a || is_b1)
              v = r == 0 ? 0x7E : 0x00;
            else
              v = sub2;
          } else {
            v = dice == 0 ? 0x00 : dice == 1 ? sub7 : ordinary;
          }
          row[kb] = v;
        }
      }
    }
  };
  fill(p.sfa, s.M, kSFA, true, false);
  if (!weights) return;
  fill(p.sfb1, s.N, kSFB1, false, true);
  fill(p.sfb2, s.N, kSFB2, false, false);
}

// gpumode: as the GPU MODE nvfp4_dual_gemm generator (reference-kernels problems/nvidia/
// reference.py, summarized in docs/gpu-mode.md): each data byte is
// randint(0, 255) & 0xBB (nibble values {0, +-0.5, +-1, +-1.5}); each scale is a uniform float32
// in [0, 1) rounded to E4M3FN (so 1.0 occurs: u >= 0.96875 rounds up). Same distribution, not the
// same bytes (different PRNG).
void gen_gpumode(Problem& p, uint64_t seed, bool weights) {
  const std::pair<std::vector<uint8_t>*, uint64_t> codes[] = {{&p.a, kA}, {&p.b1, kB1}, {&p.b2, kB2}};
  for (const auto& c : codes) {
    if (!weights && c.second != kA) continue;
    SplitMix64 g = stream(seed, c.second);
    for (auto& b : *c.first) b = static_cast<uint8_t>(g.below(255) & 0xBB);
  }
  const std::pair<std::vector<uint8_t>*, uint64_t> scales[] = {{&p.sfa, kSFA}, {&p.sfb1, kSFB1}, {&p.sfb2, kSFB2}};
  for (const auto& c : scales) {
    if (!weights && c.second != kSFA) continue;
    SplitMix64 g = stream(seed, c.second);
    for (auto& b : *c.first) b = e4m3_encode(g.unit_float());
  }
}

// ones: every value 1.0 (code 2); SFA = 2^-(t/2), SFB1 = SFB2 = 2^-(t - t/2), t = lg - 2, so
// G = U = K * 2^-t lies in [4, 8) exactly and C = silu(G) * G. (Exponents clamp at 2^-9, i.e.
// for K >= 2^20 G grows again.) The seed is not used: there is one such problem per shape.
void gen_ones(Problem& p, uint64_t, bool weights) {
  const int t = floor_log2(p.shape.K) - 2;
  std::fill(p.a.begin(), p.a.end(), 0x22);
  std::fill(p.sfa.begin(), p.sfa.end(), pow2_byte(-(t / 2)));
  if (!weights) return;
  std::fill(p.b1.begin(), p.b1.end(), 0x22);
  std::fill(p.b2.begin(), p.b2.end(), 0x22);
  std::fill(p.sfb1.begin(), p.sfb1.end(), pow2_byte(-(t - t / 2)));
  std::fill(p.sfb2.begin(), p.sfb2.end(), pow2_byte(-(t - t / 2)));
}

// identity: A[l] is a shifted identity, A[l][m][k] = 1 iff k == (m + off + l) mod K (off from the
// seed), with SFA = 1. Hence G[l][m][n] = B1[l][n][k(m)] exactly and U likewise: the output at
// (l, m, n) reads one known element of B1 and of B2, so a swapped index, a wrong batch or a
// dropped K block gives a visibly wrong pattern. B values are never zero:
//   B1[n][k] = +E2M1 code 1 + (n + 3k) % 7,  SFB1[n][kb] = 2^((n + kb) % 3 - 1)
//   B2[n][k] = E2M1 code 1 + (2n + k + 3) % 7, negative when n + k is odd, SFB2 = 2^-((n + 2kb) % 2)
// plus l in both patterns' n, so batches differ too.
void gen_identity(Problem& p, uint64_t seed, bool weights) {
  const Shape& s = p.shape;
  SplitMix64 g = stream(seed, kMisc);
  const int64_t off = int64_t(g.next() % uint64_t(s.K));
  const int64_t nkb = s.K / 16, hk = s.K / 2;
  std::fill(p.a.begin(), p.a.end(), 0);
  std::fill(p.sfa.begin(), p.sfa.end(), 0x38);  // 1.0
  for (int64_t l = 0; l < s.L; ++l) {
    for (int64_t m = 0; m < s.M; ++m) {
      const int64_t k = (m + off + l) % s.K;
      p.a[size_t((l * s.M + m) * hk + k / 2)] = static_cast<uint8_t>(k % 2 ? 0x20 : 0x02);
    }
    if (!weights) continue;
    for (int64_t n = 0; n < s.N; ++n) {
      const int64_t nn = n + l;
      for (int64_t k = 0; k < s.K; ++k) {
        const uint8_t c1 = static_cast<uint8_t>(1 + (nn + 3 * k) % 7);
        const uint8_t c2 = static_cast<uint8_t>((1 + (2 * nn + k + 3) % 7) | ((nn + k) % 2 ? 0x8 : 0));
        const size_t at = size_t((l * s.N + n) * hk + k / 2);
        const int shift = k % 2 ? 4 : 0;
        p.b1[at] = static_cast<uint8_t>(p.b1[at] | (c1 << shift));
        p.b2[at] = static_cast<uint8_t>(p.b2[at] | (c2 << shift));
      }
      for (int64_t kb = 0; kb < nkb; ++kb) {
        p.sfb1[size_t((l * s.N + n) * nkb + kb)] = pow2_byte(int((nn + kb) % 3) - 1);
        p.sfb2[size_t((l * s.N + n) * nkb + kb)] = pow2_byte(-int((nn + 2 * kb) % 2));
      }
    }
  }
}

// suspicious: the normal data, then legal but suspicious scale bytes (docs/design.md §1), drawn from
// the scale streams (which normal does not use), per tensor:
//   every scale byte: sign bit set with probability 1/4 (a negative scale: the block is negated);
//     in blocks kb >= 1 the byte becomes 0x80 (-0: the block is zero) with probability 1/32
//     (block 0 never, so no row is all zero);
//   NaN, per batch, one scale byte of one row: SFA 0xFF when M >= 8, SFB1 0x7F when N >= 8, SFB2
//     0xFF when N >= 16 (so one row of C and up to two columns are NaN; at most 23% of C).
// A path that drops the sign (UE4M3), decodes e4m3fnuz (0x80 is its NaN) or turns a NaN scale into
// a number gives wrong values where these bytes are.
void gen_suspicious(Problem& p, uint64_t seed, bool weights) {
  gen_normal(p, seed, weights);
  const Shape& s = p.shape;
  const int64_t nkb = s.K / 16;
  auto mark = [&](std::vector<uint8_t>& sf, int64_t rows, uint64_t tag, int64_t nan_rows, uint8_t nan) {
    SplitMix64 g = stream(seed, tag);
    for (size_t i = 0; i < sf.size(); ++i) {
      const uint32_t dice = g.below(32);
      if (dice < 8) sf[i] = static_cast<uint8_t>(sf[i] | 0x80);
      else if (dice == 8 && int64_t(i) % nkb != 0) sf[i] = 0x80;
    }
    for (int64_t l = 0; l < s.L; ++l) {
      const int64_t r = g.below(uint64_t(rows)), kb = g.below(uint64_t(nkb));
      if (rows >= nan_rows) sf[size_t((l * rows + r) * nkb + kb)] = nan;
    }
  };
  mark(p.sfa, s.M, kSFA, 8, 0xFF);
  if (!weights) return;
  mark(p.sfb1, s.N, kSFB1, 8, 0x7F);
  mark(p.sfb2, s.N, kSFB2, 16, 0xFF);
}

// scales: every finite E4M3 scale code, of either sign, on every operand, each where a wrong decode
// shows (distributions.hpp says why). The pieces:
//
// Slots. A cycle of kScaleSlots = 258 slots, each a triple (a, b1, b2) of scale bytes for A, B1 and
// B2 whose magnitudes are near-reciprocal: |a * b1| in [0.875, 4.125] and |a * b2| in [0.8125, 4.5]
// (zero slots aside). Magnitude bytes j = 1..126 (2^-9 .. 448, ascending in value) pair with
// rho1(j) = 127 - j for B1 and rho2(j) = 127 - j' for B2, j' = j + 1 for odd j and j - 1 for even j
// (1<->2, 3<->4, ...): both bijections, so over the cycle each of
// A, B1 and B2 takes every non-zero finite magnitude, once with each sign. Order (a triangle wave, so
// that neighbouring slots have neighbouring magnitudes and every run of slots spans few binades):
//   0          A zero  (+0; b1 = 448, b2 = 416: a wrong decode of A's 0 makes G, U ~ 0.9 d)
//   1..126     up:   a = +j,        b1 = +rho1(j), b2 = rho2(j), negative when j is odd
//   127, 130   B1 zero (+0, -0): a = +-448, b2 = +-2^-8 (a wrong decode of b1's zero makes G ~ 0.9 d)
//   128, 129   B2 zero (+0, -0): a = +-448, b1 = +-2^-9
//   131..256   down: a = -j (j = 126..1), b1 = -rho1(j), b2 = rho2(j), negative when j is even
//   257        A zero  (-0; b1 = -448, b2 = -416)
// a and b1 always have the same sign, so G = a*b1*d > 0 in a slot (d > 0 below).
//
// Windows. The cycle's two halves, slots 0..128 (every a and b1 non-negative) and 129..257 (every
// a and b1 non-positive), are cut into 6 windows each of 21 or 22 consecutive slots (under 3
// binades): 12 windows. Batch l uses window (w0 + l) mod 12, w0 a hash of the shape (not of the
// seed: fresh activations redraw A alone with another seed and must keep meeting B's partners), and
// in it the middle T = min(window size, max(M, N)) slots (the zero slots, at the ends of windows,
// go to shapes with enough rows: a 1x1 batch never gets one). A row m takes slot floor(m*T/M), B row n
// slot floor(n*T/N) (B1 and B2 row n take the same slot), with that slot's byte in every K block.
// So a row of the operand with more rows always meets its partner in the same slot, and one of the
// other within T / rows slots. Within a batch sa*sb1 >= 0 everywhere (no window mixes the halves: G
// >= 0, so silu never underflows to 0) and, over all pairs of rows of a window, |sa*sb1| >= 0.156
// and |sa*sb1| * |sa*sb2| <= 680.6.
//
// Data. The products that reach G and U are confined to 8 "support" positions per row, the same in
// every row and independent of the seed: k_i = 16*floor(i*nkb/8) + (5i mod 14), i < 8 (nkb = K/16).
// There A and B1 hold 0.5 or 1 and B2 the same times a per-row sign, so d = sum a*b1 over the
// support lies in [2, 8] for every pair of rows and every K: G in [1.75, 33] and |U| in [1.6, 36]
// where partners meet, and |C| <= 8 * 8 * 680.6 = 43558 anywhere else: C never overflows (a path's
// overflow or clamp is then always wrong) and is 0 only in a zero slot's or the pattern's row or
// column.
// Elsewhere the operands take turns: at even k A holds a random code (all 16, signs
// included) and B1, B2 a zero (+0 or -0), at odd k the reverse; at k = K-1 all are zero (for the
// pattern below). Each of A, B1 and B2 draws its codes from its own stream.
//
// Pattern (only when L >= 2, in batch L-1: A row M-1, B row N-1, block nkb-1): sa = sb1 = 448,
// sb2 = 2^-9, every other block's scale 0; the rows' data is zero but at k = K-1: a = 0.5, b1 = 0.5,
// b2 = 2. So G = 0.25 * 448 * 448 = 50176, U = 0.875 and C = 43904, finite; a path that holds
// sa*sb1 = 200704 in saturating fp16 (65504) gives 14328, one that overflows it inf. Its row and
// column of C are zero elsewhere.
constexpr int kScaleSlots = 258;
constexpr int kScaleHalf = 129;
constexpr int kScaleWindowsPerHalf = 6;

struct ScaleSlot {
  uint8_t a, b1, b2;
};

ScaleSlot scale_slot(int p) {
  auto rho1 = [](int j) { return static_cast<uint8_t>(127 - j); };
  auto rho2 = [](int j) { return static_cast<uint8_t>(127 - (j % 2 ? j + 1 : j - 1)); };
  if (p == 0) return {0x00, 0x7E, 0x7D};
  if (p == 257) return {0x80, 0xFE, 0xFD};
  if (p == 127) return {0x7E, 0x00, 0x02};
  if (p == 128) return {0x7E, 0x01, 0x00};
  if (p == 129) return {0xFE, 0x81, 0x80};
  if (p == 130) return {0xFE, 0x80, 0x82};
  if (p <= 126) {
    const int j = p;
    return {static_cast<uint8_t>(j), rho1(j), static_cast<uint8_t>(rho2(j) | (j % 2 ? 0x80 : 0))};
  }
  const int j = 257 - p;  // 126 .. 1
  return {static_cast<uint8_t>(0x80 | j), static_cast<uint8_t>(0x80 | rho1(j)),
          static_cast<uint8_t>(rho2(j) | (j % 2 ? 0 : 0x80))};
}

void gen_scales(Problem& p, uint64_t seed, bool weights) {
  const Shape& s = p.shape;
  const int64_t nkb = s.K / 16, hk = s.K / 2;
  SplitMix64 h{uint64_t(s.M) * 0x100000001B3ull ^ uint64_t(s.N) * 0xC2B2AE3D27D4EB4Full ^
               uint64_t(s.K) * 0x165667B19E3779F9ull ^ uint64_t(s.L) * 0x27D4EB2F165667C5ull};
  const int64_t w0 = int64_t(h.next() % (2 * kScaleWindowsPerHalf));
  // First slot and number of slots T of batch l's window.
  auto window = [&](int64_t l, int64_t& first, int64_t& T) {
    const int64_t w = (w0 + l) % (2 * kScaleWindowsPerHalf), i = w % kScaleWindowsPerHalf;
    first = (w / kScaleWindowsPerHalf) * kScaleHalf + i * kScaleHalf / kScaleWindowsPerHalf;
    const int64_t size = (i + 1) * kScaleHalf / kScaleWindowsPerHalf - i * kScaleHalf / kScaleWindowsPerHalf;
    T = std::min(size, std::max(s.M, s.N));
    first += (size - T) / 2;  // the middle ones: the zero slots are at windows' ends
  };
  const bool pattern = s.L >= 2;
  const int64_t k0 = s.K - 1;
  std::vector<char> support(size_t(s.K), 0);
  for (int64_t i = 0; i < 8; ++i) support[size_t(16 * (i * nkb / 8) + (5 * i) % 14)] = 1;

  // which: 0 = A, 1 = B1, 2 = B2.
  auto fill = [&](std::vector<uint8_t>& codes, std::vector<uint8_t>& sf, int64_t rows, uint64_t tag, int which) {
    SplitMix64 g = stream(seed, tag);
    std::vector<uint8_t> row(size_t(s.K));
    for (int64_t l = 0; l < s.L; ++l) {
      for (int64_t r = 0; r < rows; ++r) {
        const size_t at = size_t(l * rows + r);
        uint8_t* sfr = sf.data() + at * size_t(nkb);
        const bool special = pattern && l == s.L - 1 && r == rows - 1;
        const uint64_t sign = g.next() & 1;  // B2's row sign; drawn for every row (fixed stream layout)
        for (int64_t k = 0; k < s.K; ++k) {
          const uint64_t x = g.next();
          const uint8_t zero = static_cast<uint8_t>(x & 8);  // +0 or -0
          uint8_t c;
          if (k == k0) {
            c = zero;
          } else if (support[size_t(k)]) {
            c = static_cast<uint8_t>(1 + ((x >> 8) & 1));
            if (which == 2 && sign) c |= 8;
          } else {
            const bool mine = (k % 2 == 0) == (which == 0);
            c = mine ? static_cast<uint8_t>((x >> 4) & 0xF) : zero;
          }
          row[size_t(k)] = c;
        }
        if (special) {
          std::fill(row.begin(), row.end(), 0);
          row[size_t(k0)] = which == 2 ? 0x4 : 0x1;  // 2.0 for B2, 0.5 for A and B1
          std::fill(sfr, sfr + nkb, 0x00);
          sfr[nkb - 1] = which == 2 ? 0x01 : 0x7E;
        } else {
          int64_t first = 0, T = 0;
          window(l, first, T);
          const int64_t cycle_rows = pattern && l == s.L - 1 ? rows - 1 : rows;  // the pattern row aside
          const ScaleSlot sl = scale_slot(int(first + r * T / cycle_rows));
          std::fill(sfr, sfr + nkb, which == 0 ? sl.a : which == 1 ? sl.b1 : sl.b2);
        }
        uint8_t* out = codes.data() + at * size_t(hk);
        for (int64_t j = 0; j < hk; ++j) out[j] = static_cast<uint8_t>(row[size_t(2 * j)] | (row[size_t(2 * j + 1)] << 4));
      }
    }
  };
  fill(p.a, p.sfa, s.M, kA, 0);
  if (!weights) return;
  fill(p.b1, p.sfb1, s.N, kB1, 1);
  fill(p.b2, p.sfb2, s.N, kB2, 2);
}

// Fills `p` (zeroed or not, of the right sizes) by name; with weights == false only A and SFA.
void generate(Problem& p, const std::string& distribution, uint64_t seed, bool weights) {
  if (distribution == "normal") {
    gen_normal(p, seed, weights);
  } else if (distribution == "uniform") {
    gen_uniform(p, seed, weights);
  } else if (distribution == "pow2") {
    gen_pow2(p, seed, weights);
  } else if (distribution == "edge") {
    gen_edge(p, seed, weights);
  } else if (distribution == "gpumode") {
    gen_gpumode(p, seed, weights);
  } else if (distribution == "ones") {
    gen_ones(p, seed, weights);
  } else if (distribution == "identity") {
    gen_identity(p, seed, weights);
  } else if (distribution == "suspicious") {
    gen_suspicious(p, seed, weights);
  } else if (distribution == "scales") {
    gen_scales(p, seed, weights);
  } else {
    std::string known;
    for (const auto& n : distribution_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown distribution '" + distribution + "' (known: " + known + ")");
  }
}

}  // namespace

const std::vector<std::string>& distribution_names() {
  static const std::vector<std::string> names = {"normal", "uniform",  "edge",       "gpumode", "ones",
                                                 "identity", "suspicious", "scales", "pow2"};
  return names;
}

Problem make_problem(const Shape& shape, const std::string& distribution, uint64_t seed) {
  Problem p = Problem::zeros(shape);  // validates the shape
  generate(p, distribution, seed, true);
  return p;
}

void regenerate_activations(Problem& p, const std::string& distribution, uint64_t seed) {
  p.validate();
  generate(p, distribution, seed, false);
}

void negate_elements(std::vector<uint8_t>& packed, uint64_t seed) {
  SplitMix64 g = stream(seed, kMisc);
  for (size_t i = 0; i < packed.size(); i += 8) {
    uint64_t r = g.next();
    r &= g.next();  // each bit set with probability 1/4
    for (size_t j = i; j < packed.size() && j < i + 8; ++j, r >>= 8)
      packed[j] = static_cast<uint8_t>(packed[j] ^ (r & 0x88));
  }
}

}  // namespace nvfp4
