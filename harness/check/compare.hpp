// compare.hpp — how an output is judged against the exact reference (docs/design.md §2, §4).
//
// Owns: the fp16 ordered-integer line and ULP distance, the derived per-element tolerance, the
// per-trial metrics (max abs/rel error, ULP histogram, elements over tolerance with the worst
// indices, NaN/inf mismatches, still-poisoned elements, GEMM-vs-epilogue attribution), the GPU
// MODE check reported beside ours, the "degenerate reference" flag and the scan of suspicious
// scale bytes. Everything here is pure computation: no I/O, no printing.
//
// Layouts: outputs, references and intermediates are (L, M, N) C-contiguous, the batch outermost;
// outputs are fp16 bit patterns; intermediates are fp32 with alpha NOT applied (plan.hpp).
//
// The tolerance (README "The harness" has the full derivation). Per element, with exact G, U and
// S_G = sum_k |terms of G|, S_U likewise (compute_reference with abs_sums = true):
//   gamma = K*u / (1 - K*u),  u = 2^-23 (twice fp32's unit roundoff: margin for accumulators that
//                                         truncate instead of rounding)
//   dG    = |a1|*gamma*S_G + 2^-24*|a1|*(|G| + gamma*S_G)       (accumulation, then the alpha multiply)
//   dU    likewise with a2, S_U
//   prop  = s'*dG*(|a2 U| + dU) + |silu(a1 G)|*dU               (s' = max|silu'| = 1.0998)
//   e     = prop + c_ep*(|silu(a1 G)*a2 U| + prop)              (c_ep = 8*2^-24: exp, add, divide, multiply)
// and a computed fp16 value c^ is accepted when |c^ - c| <= e + ulp16(|c| + e), c the exact real
// value computed in double. c^ = +-inf is accepted only when [c - e, c + e] reaches beyond +-65520
// on that side; NaN only where the reference is NaN.
//
// The second criterion, statistical (docs/design.md §4; README "The harness" has the long form).
// The bound above is a worst case: at K = 7168 it allows an output to move by several fp16 ulps,
// room in which a systematic precision loss hides (G held in bf16 moves outputs by ~2^-9
// relative; one dropped block of 16 terms by ~sqrt(16/K) relative). Correct fp32 arithmetic does
// far better than its worst case, and this criterion asks for that.
//   1. Accumulation, probabilistically (N. J. Higham and T. Mary, "A New Approach to Probabilistic
//      Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019, Theorem 3.1: modelling the
//      rounding errors as independent, mean-zero and bounded by u, an inner product of K terms
//      satisfies |G^ - G| <= lambda*sqrt(K)*u*S_G + O(u^2), in any order, with probability at least
//      1 - 2K*exp(-lambda^2 (1-u)^2 / 2)). Per element sigma_G = |a1|*sqrt(K)*u*S_G with the same
//      u = 2^-23 as the bound (twice fp32's unit roundoff: an accumulator that truncates has errors
//      up to 2^-23 relative that are not mean-zero; doubling u doubles the allowance for them).
//   2. Through the epilogue to first order, with the largest |silu'| on [x - lambda*sigma_G,
//      x + lambda*sigma_G] instead of the global 1.0998:
//        tau = |silu'|max * sigma_G * (|y| + lambda*sigma_U) + |silu(x)| * sigma_U
//      plus a deterministic part for the few fp32 roundings around it (the two alpha multiplies,
//      exp, 1 + e, divide, multiply; a library exp a few ulps off included):
//        e_ep = c_ep*|c| + 2^-24*(|silu'|max*|x*y| + |silu(x)*y|)
//   3. The final rounding: a correct path rounds some fp32 v with |v - c| <= lambda*tau + e_ep
//      to fp16, so |c^ - c| <= h + lambda*tau + e_ep, h = half the fp16 spacing at |c| + lambda*tau +
//      e_ep. An element beyond that is UNEXPLAINED: its error is not fp32 accumulation noise plus one
//      correct rounding. Where G and U are exact in fp32 (short K, few terms) tau is tiny and this
//      says "C is correctly rounded", which correct paths deliver almost everywhere.
//   4. With lambda = kLambda = 6, an element of a correct path is unexplained with probability at
//      most p0 = 2 * 2K*exp(-lambda^2/2) (step 1 for G and for U). Over n elements the number of
//      unexplained ones is then stochastically below Binomial(n, p0); the limit n_crit is the
//      smallest count whose upper tail P(X > n_crit) is below kFalseAlarm = 1e-9. More unexplained
//      elements than n_crit FAILS ("statistic"), even when every element is within the bound.
//   The margin: with z_i = (|c^ - c| - h - e_ep) / tau_i (how many tau an element lies beyond one
//   correct rounding), the criterion fails exactly when the (n_crit+1)-th largest z exceeds
//   lambda; margin = lambda / that z (> 1 passes; +inf when at most n_crit elements are off at all).
//   Poisoned, NaN and infinite elements (either side) are left to the bound.
//
// The third criterion, the exactness certificate (docs/design.md §4.11). Every term of G is an
// integer multiple of 2^(q_a + q_b - 20) (ReferenceResult::q_a, q_b1, q_b2; where that does not
// certify, the finer min over blocks b of qb_a + qb_b, ReferenceResult::qb_a, ...). A partial sum, in
// any order, adds a subset of the terms, so its magnitude is at most max(P, N) = (S_G + |G|)/2
// (P, N: the sums of the positive and of the negative terms). Where (S_G + |G|)/2 <=
// 2^(24 + q_a + q_b - 20), every partial sum is such a multiple of magnitude at most 2^24 units:
// exact in fp32, so a correct fp32 path holds G exactly (and U likewise). For
// an element with both certified, only the epilogue's own fp32 roundings remain:
//   rel  = 2^-24 * (|1 + x(1 - s(x))| + (1 - s(x))*(8 + 3|x|) + 12),  s = the logistic function
//   e_c  = 2 * rel * |c|                      (the factor 2: second-order terms and reorderings)
// (the alpha1 rounding amplified by silu's log-derivative 1 + x(1 - s); exp off by up to
// 4 + 1.5|x| fp32 ulps, an __expf-style exp included; 1 + e, an approximate division of up to
// 2 ulps, the alpha2 rounding, the product, and room for a reordered epilogue). The output must
// satisfy |c^ - c| <= e_c + ulp16(|c| + e_c)/2: the correct rounding of some value within e_c of c.
// ANY certified element beyond it fails ("certificate"): a conversion that truncates, an
// intermediate held in bf16 or fp16, a lost term. The certificate applies only when alpha1 and
// alpha2 are powers of two (1 included), so that a path may apply them anywhere (to the scales,
// to each term, to the sums) without a rounding. Certified are elements with finite G and U,
// x = alpha1*G in [-64, 2^100], |x|, |alpha2*U| in {0} u [2^-100, 2^100] and |c| + e_c < 65504;
// the others are left to the first two criteria. Margin: e_c / (|c^ - c| - ulp16/2), the
// smallest over certified elements (+inf when every one is correctly rounded).
//
// The fourth criterion, mean square (docs/design.md §4.12). The outlier count above sees errors
// beyond lambda*tau only; errors systematically a few tau large hide below it. Over the n
// elements that are not certified and where tau >= h (the accumulation noise is at least half an
// fp16 spacing), with z_i as in the statistic (0 when within one correct rounding):
//   - in the model of step 1 (independent mean-zero roundings bounded by u), the normalized error
//     X = (G^ - G)/(sqrt(K)*u*S_G) is sub-Gaussian with variance proxy <= 1, so E exp(t X^2) <=
//     (1 - 2t)^-1/2; z_i <= a|X_G| + b|X_U| with a + b = 1 (step 2), hence z_i^2 has the same
//     bound on its moment generating function (convexity and Hoelder);
//   - Chernoff over n independent elements: P(sum z_i^2 >= n*t) <= exp(-n*(t - 1 - ln t)/2);
//     the limit t* solves n*(t - 1 - ln t)/2 = ln(1/kFalseAlarm).
// mean(z^2) > t* FAILS ("mean_square"); margin t* / mean(z^2).
//
// The fifth criterion, rounding direction (docs/design.md §4.13). A conversion that truncates
// moves every element whose exact value rounds away from zero one fp16 step toward zero; where
// the accumulation noise tau is comparable to half an fp16 spacing the criteria above cannot see
// it. Over the elements whose correct rounding is away from zero (|ref| > |c|), at distance d
// beyond the rounding midpoint: a correct path rounds toward zero only if its fp32 value moved by
// more than d - e_c toward zero (e_c: the epilogue's allowance above, computed for these inputs),
// which under the model of step 1 has probability at most p_i = exp(-(d - e_c)^2 / (2 tau^2))
// (one-sided Hoeffding: the error is a mean-zero sub-Gaussian of proxy tau). The count T of
// elements rounded toward zero is then below a sum of independent Bernoullis of mean mu = sum p_i,
// and P(T >= t) <= e^-mu (e mu / t)^t (Chernoff) for t > mu; the limit is the smallest t with that
// bound <= kFalseAlarm. T above it FAILS ("direction"); margin = limit / T.
#pragma once
#include <array>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "problem.hpp"
#include "reference.hpp"

namespace nvfp4 {

// The harness poisons outputs with this signalling-NaN pattern before every checked call. Arithmetic
// only produces quiet NaNs (0x7E00 / 0x7FFF families have the quiet bit 0x0200 set), so an element
// that still holds it after a call was never written.
constexpr uint16_t kPoisonBits = 0x7D5A;

// Position of an fp16 pattern on the ordered-integer line: consecutive representable values are
// consecutive integers, +0 and -0 are both 0, +inf is 0x7C00. Not meaningful for NaN.
int32_t fp16_ordered(uint16_t bits);
// |ordered(a) - ordered(b)|: the number of fp16 values between a and b, plus one. Not for NaN.
uint32_t fp16_ulp_distance(uint16_t a, uint16_t b);
// Spacing of fp16 values at magnitude |x|: 2^-24 below 2^-14 (subnormals), 32 from 32768 on
// (also used beyond the finite range).
double fp16_ulp_at(double x);

// The derived tolerance for one problem (K and the global scales fix it).
struct Tolerance {
  static constexpr double kUnit = 0x1p-23;           // u: twice fp32's unit roundoff
  static constexpr double kSiluSlope = 1.0998;       // max |silu'(x)|, attained near x = 2.40
  static constexpr double kEpilogueRel = 8 * 0x1p-24; // c_ep: fp32 exp, 1 + e, divide, multiply

  Tolerance(int64_t K, float alpha1, float alpha2);

  int64_t K;
  double alpha1, alpha2;
  double gamma;  // K*u / (1 - K*u)
  double root;   // sqrt(K)*u: the statistic's sigma per unit of abs sum (Statistic::scale)

  // Bound on |G^ - G| for an fp32-accumulated GEMM of K terms with sum of |terms| `s_abs`.
  double gemm_bound(double s_abs) const { return gamma * s_abs; }

  // silu at x = alpha1*g, in double as reference/silu.hpp computes it: every criterion of one
  // element reads the same x, exp(-x) and silu(x), so a scan computes them once per element
  // (silu_at) and passes them on; the overloads without it compute their own.
  struct SiluAt {
    double x;  // alpha1*g
    double e;  // exp(-x)
    double s;  // silu(x) = x / (1 + e)
  };
  SiluAt silu_at(double g) const;

  // The exact output before rounding: silu(a1*g) * (a2*g), in double (NaN if g or u is NaN).
  double exact_output(double g, double u) const { return exact_output(silu_at(g), u); }
  double exact_output(const SiluAt& p, double u) const { return p.s * (alpha2 * u); }
  // e: the bound on |c_computed - c_exact| before the final fp16 rounding.
  double epilogue_bound(double g, double u, double s_g, double s_u) const {
    return epilogue_bound(silu_at(g), g, u, s_g, s_u);
  }
  double epilogue_bound(const SiluAt& p, double g, double u, double s_g, double s_u) const;

  struct Verdict {
    bool ok;
    double exact;  // c, exact (double)
    double err;    // |c^ - c| (inf for an inf/NaN mismatch)
    double bound;  // e + ulp16(|c| + e), the accepted error
  };
  // Judges one computed element against exact G, U and their abs sums.
  Verdict judge(uint16_t got, double g, double u, double s_g, double s_u) const {
    return judge(got, silu_at(g), g, u, s_g, s_u);
  }
  Verdict judge(uint16_t got, const SiluAt& p, double g, double u, double s_g, double s_u) const;
};

// The statistical criterion's parameters and its limit on unexplained elements.
struct Statistic {
  static constexpr double kLambda = 6.0;        // lambda: tau multiples explained by fp32 noise
  static constexpr double kFalseAlarm = 1e-9;   // accepted false-alarm probability per output
  // p0: bound on the probability that one element of a correct path is unexplained.
  static double element_probability(int64_t K);
  // n_crit: the smallest c with P(Binomial(n, p) > c) <= kFalseAlarm.
  static int64_t limit(int64_t n, double p);
  // tau and e_ep of one element (compare.hpp header, steps 1-2), given the tolerance's K and alphas.
  struct Scale {
    double tau = 0;   // probabilistic scale of the fp32 error before the final rounding
    double e_ep = 0;  // deterministic part (the epilogue's fp32 roundings)
    double half_ulp = 0;
  };
  static Scale scale(const Tolerance& t, double g, double u, double s_g, double s_u) {
    return scale(t, t.silu_at(g), u, s_g, s_u);
  }
  static Scale scale(const Tolerance& t, const Tolerance::SiluAt& p, double u, double s_g, double s_u);
};

// The mean-square criterion's limit (header, fourth criterion).
struct MeanSquare {
  // t*(n): the mean of z^2 over n elements that a correct path exceeds with probability at most
  // Statistic::kFalseAlarm; +inf for n = 0.
  static double limit(int64_t n);
};

// The rounding-direction criterion's limit (header, fifth criterion).
struct Direction {
  // The smallest count t with e^-mu (e mu / t)^t <= Statistic::kFalseAlarm (and t > mu).
  static int64_t limit(double mu);
};

// The exactness certificate (header, third criterion).
struct Certificate {
  // Whether every partial sum, in any order, of a dot product whose terms are integer multiples
  // of 2^(q - 20) (q = q_a + q_b of ReferenceResult), with exact value `exact` and sum of |terms|
  // at most s_abs, is exact in fp32.
  static bool exact_in_fp32(double s_abs, double exact, int64_t q);
  // e_c for exact G, U (+inf where the certificate does not apply: see the header).
  static double epilogue_allowance(const Tolerance& t, double g, double u) {
    return epilogue_allowance(t, t.silu_at(g), u);
  }
  static double epilogue_allowance(const Tolerance& t, const Tolerance::SiluAt& p, double u);
};

// One element named by its indices.
struct ElementReport {
  int64_t l = 0, m = 0, n = 0;
  uint16_t got = 0;    // computed fp16 bits
  uint16_t ref = 0;    // the reference's fp16 bits (exact, rounded once)
  double exact = 0;    // exact real value
  double err = 0;      // |got - exact|
  double bound = 0;    // accepted error here
  int call = 0;        // which checked call (1-based) produced it
};

// Histogram buckets of fp16 ULP distance: 0, 1, 2, 3-4, 5-8, ..., 32769-65536.
constexpr int kUlpBuckets = 18;
int ulp_bucket(uint32_t distance);
std::string ulp_bucket_label(int bucket);

// Metrics of one output against the reference.
// Where the flagged elements of one output lie: those unwritten, rejected by the bound,
// unexplained by the statistic or violating the certificate (criteria.hpp, Where). A bug confined
// to a lane, a tile, a batch or the tails of M and N shows as a pattern here while the criteria
// count it like any other error.
struct Locations {
  static constexpr int kTails = 6;  // tiles of 8, 16, ..., 256
  Shape shape;
  int64_t count = 0;
  int64_t l0 = 0, l1 = -1, m0 = 0, m1 = -1, n0 = 0, n1 = -1;  // the bounding box (empty: l1 < 0)
  std::bitset<128> m_mod, n_mod;  // m % 128 and n % 128 seen
  // in_tails[t]: flagged elements in row m >= M / T * T or column n >= N / T * T, T = 8 << t.
  std::array<int64_t, kTails> in_tails{};

  void add(int64_t l, int64_t m, int64_t n);
  void merge(const Locations& later);
  // "columns n % 4 == 3", "batch 1, rows 128..255", "the M and N tails past the last whole tile of
  // 64 (rows >= 64 or columns >= 64)"; "" when there are fewer than two or they show no pattern.
  // Residue classes need at least 8 flagged elements, and a pattern is named only when that many
  // elements placed at random would fall into it with probability at most 1e-4.
  std::string text() const;
};

struct Comparison {
  int64_t elements = 0;
  int64_t over_tolerance = 0;   // rejected elements (includes the three kinds below)
  int64_t nan_mismatch = 0;     // NaN on exactly one side (not counting poisoned)
  int64_t inf_mismatch = 0;     // rejected elements where either side is +-inf
  int64_t poisoned = 0;         // still holding kPoisonBits: never written
  int64_t poison_read = 0;      // kPoisonBits quieted (either sign): computed from c's prior contents
  int64_t gpumode_mismatch = 0; // |x - ref| > 1e-3 + 1e-3*|ref|, or NaN / +inf / -inf on one side only
  // Against the exact value, over elements finite on both sides; max_rel only where |exact| is in
  // fp16's normal range (>= 2^-14): below it fp16 itself keeps no relative precision.
  double max_abs = 0, max_rel = 0;
  ElementReport max_abs_at, max_rel_at;
  uint32_t max_ulp = 0;             // to the reference's fp16 value, NaN pairs excluded
  std::vector<int64_t> ulp_hist = std::vector<int64_t>(kUlpBuckets, 0);
  std::vector<ElementReport> worst;          // up to 5 rejected, largest err/bound first
  std::vector<ElementReport> first_poisoned; // up to 5
  Locations flagged;                         // where the flagged elements lie
  // What a failing output computes instead (misreading.hpp), set by the callers that hold the
  // inputs (check_output, check_output_file, evaluate_trial); "" when nothing fits or not asked.
  std::string misreading;

  // Attribution of the error: "none", "gemm", "epilogue" or "unknown", with a sentence.
  std::string attribution = "unknown";
  std::string attribution_detail = "unknown (path exposes no intermediates)";
  int64_t g_out_of_bound = -1, u_out_of_bound = -1;  // -1: no intermediates

  // The statistical criterion (header, second criterion), over `stat_elements` elements.
  int64_t stat_elements = 0;
  int64_t unexplained = 0;        // elements beyond one correct rounding + lambda*tau + e_ep
  int64_t unexplained_limit = 0;  // n_crit
  int64_t unexplained_one_ulp = 0;  // of them, those within one fp16 ulp of c (a rounding issue)
  double stat_margin = INFINITY;    // lambda / z*; < 1 fails; +inf: at most n_crit elements are off
  double element_margin = INFINITY; // lambda / the largest z: the single worst element (< 1: unexplained)
  double excess_factor = 0;       // median z of the unexplained elements over lambda
  std::vector<ElementReport> unexplained_at;  // up to 5, largest z first (bound = threshold)

  // The exactness certificate (header, third criterion).
  int64_t certified = 0;          // elements whose G and U are certified exact in fp32
  int64_t cert_violations = 0;    // of them, outputs beyond one correct rounding + e_c
  int64_t cert_one_ulp = 0;       // of the violations, those within one fp16 ulp of c
  double cert_margin = INFINITY;  // e_c / (|c^ - c| - ulp16/2), smallest; < 1 fails
  std::vector<ElementReport> cert_at;  // up to 5 violations, worst first (bound = the allowance)

  // The mean-square criterion (header, fourth criterion).
  int64_t ms_elements = 0;        // n: not certified, tau >= half an fp16 spacing
  double ms_mean = 0;             // mean of z^2 over them
  double ms_limit = INFINITY;     // t*(n)
  double ms_margin = INFINITY;    // t* / mean; < 1 fails

  // The rounding-direction criterion (header, fifth criterion).
  int64_t dir_elements = 0;       // elements whose correct rounding is away from zero
  int64_t dir_toward = 0;         // T: of them, rounded toward zero instead
  double dir_expected = 0;        // mu: the most a correct path rounds toward zero on average
  int64_t dir_limit = 0;          // the largest T a correct path reaches (false alarm kFalseAlarm)
  double dir_margin = INFINITY;   // limit / T; < 1 fails

  bool bound_pass() const { return over_tolerance == 0; }
  bool stat_pass() const { return unexplained <= unexplained_limit; }
  bool cert_pass() const { return cert_violations == 0; }
  bool ms_pass() const { return !(ms_mean > ms_limit); }
  bool dir_pass() const { return dir_toward <= dir_limit; }
  bool pass() const { return bound_pass() && cert_pass() && stat_pass() && ms_pass() && dir_pass(); }
  // The first failing criterion in the order "bound" (the worst-case bound rejects elements),
  // "certificate", "statistic", "mean_square", "direction"; "" when all pass.
  std::string criterion() const;
  // One sentence on a statistical failure, saying what it means; "" when the criterion passes.
  std::string stat_message() const;
  // Likewise for the certificate and the mean-square criterion.
  std::string cert_message() const;
  std::string ms_message() const;
  std::string dir_message() const;
  bool gpumode_pass() const { return gpumode_mismatch == 0; }
};

// Compares one output (L*M*N fp16 bits) with the reference, which must carry abs sums.
// g_hat/u_hat: the path's intermediates (fp32, alpha not applied) or nullptr when unavailable.
// `call` is recorded in the element reports. `threads`: how many threads scan a large output (0:
// every core); the result is the same for any count.
Comparison compare_output(const ReferenceResult& ref, float alpha1, float alpha2,
                          const uint16_t* got, const std::vector<float>* g_hat,
                          const std::vector<float>* u_hat, int call = 1, int threads = 0);

// How much of a reference output is +-inf, NaN or zero: a check against a mostly degenerate
// output cannot tell a right kernel from a wrong one.
struct Degeneracy {
  int64_t total = 0, inf = 0, nan = 0, zero = 0;
  double fraction() const { return total ? double(inf + nan + zero) / double(total) : 0.0; }
  bool degenerate() const { return total > 0 && fraction() > 0.5; }
  std::string describe() const;  // "62% of outputs are zero" etc.
};
Degeneracy assess_reference(const std::vector<uint16_t>& c);

// Legal but suspicious scale bytes (NaN 0x7F/0xFF, negative: sign bit set), one line per tensor
// that has any, e.g. "SFA: 3 NaN scale bytes (first at l=0 row=2 block=1)".
std::vector<std::string> scan_scales(const Problem& p);

}  // namespace nvfp4
