// compare.cpp — the derived tolerance and the per-trial metrics (see compare.hpp for the formulas).
#include "compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "formats.hpp"
#include "silu.hpp"

namespace nvfp4 {

int32_t fp16_ordered(uint16_t bits) {
  const int32_t mag = bits & 0x7FFF;
  return (bits & 0x8000) ? -mag : mag;
}

uint32_t fp16_ulp_distance(uint16_t a, uint16_t b) {
  const int32_t d = fp16_ordered(a) - fp16_ordered(b);
  return static_cast<uint32_t>(d < 0 ? -d : d);
}

namespace {
uint64_t double_bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
// 2^e, exactly std::ldexp(1.0, e): built from the bits in the normal range, the library beyond it.
double pow2(int e) {
  if (e < -1022 || e > 1023) return std::ldexp(1.0, e);
  const uint64_t b = uint64_t(e + 1023) << 52;
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
}  // namespace

double fp16_ulp_at(double x) {
  x = std::fabs(x);
  if (!(x >= 0x1p-14)) return 0x1p-24;  // subnormal spacing (also for NaN: caller's business)
  if (x >= 32768.0) return 32.0;
  // x = 1.f * 2^E in the binade [2^E, 2^(E+1)): the spacing is 2^(E-10). From the bits (a normal
  // double here), as frexp/ldexp would give it, without the library calls (every element needs it).
  return pow2(int((double_bits(x) >> 52) & 0x7FF) - 1023 - 10);
}

Tolerance::Tolerance(int64_t k, float a1, float a2) : K(k), alpha1(a1), alpha2(a2) {
  const double ku = double(K) * kUnit;
  gamma = ku < 1 ? ku / (1 - ku) : std::numeric_limits<double>::infinity();
  root = std::sqrt(double(K)) * kUnit;
}

// The exact value the output is judged against is the one SiLU·mul (reference/silu.hpp) in double:
// silu_mul(g, u, alpha1, alpha2) = silu(alpha1*g) * (alpha2*u), silu(x) = x / (1 + exp(-x)), the
// same operations in the same order as here (test_compare checks the two agree bit for bit).
Tolerance::SiluAt Tolerance::silu_at(double g) const {
  SiluAt p;
  p.x = alpha1 * g;
  p.e = silu_exp(-p.x);
  p.s = IeeeDivide::quotient(p.x, 1.0 + p.e);
  return p;
}

double Tolerance::epilogue_bound(const SiluAt& p, double g, double u, double s_g, double s_u) const {
  const double a1 = std::fabs(alpha1), a2 = std::fabs(alpha2);
  const double dg = a1 * gamma * s_g + 0x1p-24 * a1 * (std::fabs(g) + gamma * s_g);
  const double du = a2 * gamma * s_u + 0x1p-24 * a2 * (std::fabs(u) + gamma * s_u);
  const double y = std::fabs(alpha2 * u);
  const double sx = std::fabs(p.s);
  const double prop = kSiluSlope * dg * (y + du) + sx * du;
  return prop + kEpilogueRel * (sx * y + prop);
}

Tolerance::Verdict Tolerance::judge(uint16_t got, const SiluAt& p, double g, double u, double s_g,
                                    double s_u) const {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double c = exact_output(p, u);
  if (std::isnan(c)) return {fp16_is_nan(got), c, fp16_is_nan(got) ? 0.0 : kInf, 0.0};
  const double e = epilogue_bound(p, g, u, s_g, s_u);
  if (fp16_is_nan(got)) return {false, c, kInf, e};
  if (fp16_is_inf(got)) {
    // fp16 rounding turns a value into +-inf from |v| >= 65520 on.
    const bool ok = (got & 0x8000) ? (c - e <= -65520.0) : (c + e >= 65520.0);
    return {ok, c, ok ? 0.0 : kInf, e};
  }
  // Every value within e of c rounds to +-inf when |c| - e >= 65520: a finite result (for example
  // a conversion that saturates at 65504) is then wrong, whatever the one-ulp allowance says.
  if (std::fabs(c) - e >= 65520.0) return {false, c, kInf, e};
  const double v = fp16_to_double(got);
  const double err = std::fabs(v - c);
  const double bound = e + fp16_ulp_at(std::fabs(c) + e);
  return {err <= bound, c, err, bound};
}

namespace {
double silu_slope(double x) {
  const double sg = 1.0 / (1.0 + std::exp(-x));
  return sg * (1.0 + x * (1.0 - sg));
}
// The largest |silu'| on [lo, hi]: silu' has its maximum 1.0998 at x = 2.40 and its minimum
// -0.0998 at x = -2.40, and is monotone between and beyond them.
double max_silu_slope(double lo, double hi) {
  double m = std::max(std::fabs(silu_slope(lo)), std::fabs(silu_slope(hi)));
  if (lo <= 2.3994 && hi >= 2.3994) m = std::max(m, Tolerance::kSiluSlope);
  if (lo <= -2.3994 && hi >= -2.3994) m = std::max(m, 0.0998);
  return m;
}
}  // namespace

double Statistic::element_probability(int64_t K) {
  const double u = Tolerance::kUnit;
  const double per_gemm = 2.0 * double(K) * std::exp(-kLambda * kLambda * (1 - u) * (1 - u) / 2);
  return std::min(1.0, 2.0 * per_gemm);
}

int64_t Statistic::limit(int64_t n, double p) {
  if (n <= 0) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return n;
  // pmf(j) for j = 0..jmax in log space (lgamma); beyond jmax the tail is far below kFalseAlarm.
  const double mean = double(n) * p;
  const int64_t jmax = std::min<int64_t>(n, int64_t(mean + 40 * std::sqrt(mean) + 80));
  const double lp = std::log(p), lq = std::log1p(-p), ln = std::lgamma(double(n) + 1);
  std::vector<double> pmf(size_t(jmax + 1));
  for (int64_t j = 0; j <= jmax; ++j)
    pmf[size_t(j)] = std::exp(ln - std::lgamma(double(j) + 1) - std::lgamma(double(n - j) + 1) +
                              double(j) * lp + double(n - j) * lq);
  // tail = P(X >= k), summed from the top; the answer is the smallest k - 1 with tail <= alpha.
  double tail = 0;
  int64_t crit = jmax;
  for (int64_t k = jmax; k >= 1; --k) {
    tail += pmf[size_t(k)];
    if (tail > kFalseAlarm) break;
    crit = k - 1;
  }
  return crit;
}

Statistic::Scale Statistic::scale(const Tolerance& t, const Tolerance::SiluAt& p, double u, double s_g,
                                  double s_u) {
  const double a1 = std::fabs(t.alpha1), a2 = std::fabs(t.alpha2);
  const double sig_g = a1 * t.root * s_g, sig_u = a2 * t.root * s_u;
  const double x = p.x, y = std::fabs(t.alpha2 * u);
  const double reach = kLambda * sig_g + 0x1p-23 * std::fabs(x);
  const double slope = max_silu_slope(x - reach, x + reach);
  const double sx = std::fabs(p.s);
  Scale sc;
  sc.tau = slope * sig_g * (y + kLambda * sig_u) + sx * sig_u;
  sc.e_ep = Tolerance::kEpilogueRel * sx * y + 0x1p-24 * (slope * std::fabs(x) * y + sx * y);
  sc.half_ulp = fp16_ulp_at(sx * y + kLambda * sc.tau + sc.e_ep) / 2;
  return sc;
}

std::string Comparison::criterion() const {
  if (!bound_pass()) return "bound";
  if (!cert_pass()) return "certificate";
  if (!stat_pass()) return "statistic";
  if (!ms_pass()) return "mean_square";
  if (!dir_pass()) return "direction";
  return "";
}

int64_t Direction::limit(double mu) {
  // log of the Chernoff bound e^-mu (e mu / t)^t, decreasing in t for t > mu.
  const double log_alpha = std::log(Statistic::kFalseAlarm);
  auto log_bound = [&](double t) { return mu <= 0 ? -INFINITY : -mu + t * (1 + std::log(mu / t)); };
  int64_t t = std::max<int64_t>(1, int64_t(std::floor(mu)) + 1);
  if (log_bound(double(t)) <= log_alpha) return t - 1;
  int64_t hi = t;
  while (log_bound(double(hi)) > log_alpha) hi *= 2;
  while (hi - t > 1) {  // log_bound(t) > log_alpha >= log_bound(hi)
    const int64_t mid = t + (hi - t) / 2;
    (log_bound(double(mid)) > log_alpha ? t : hi) = mid;
  }
  return hi - 1;  // P(T >= hi) <= alpha: T <= hi - 1 passes
}

double MeanSquare::limit(int64_t n) {
  if (n <= 0) return std::numeric_limits<double>::infinity();
  // f(t) = t - 1 - ln t increases from 0 on t >= 1; bisect f(t) = 2 ln(1/alpha) / n.
  const double target = 2.0 * std::log(1.0 / Statistic::kFalseAlarm) / double(n);
  auto f = [](double t) { return t - 1 - std::log(t); };
  double lo = 1, hi = 2;
  while (f(hi) < target) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (f(mid) < target ? lo : hi) = mid;
  }
  return hi;
}

bool Certificate::exact_in_fp32(double s_abs, double exact, int64_t q) {
  if (!(s_abs >= 0) || !std::isfinite(exact)) return false;  // NaN: a NaN scale
  if (s_abs == 0) return true;                               // every term is zero
  // A partial sum adds a subset of the terms: at most P (the positive ones) or N (the negative
  // ones) in magnitude, and max(P, N) = (S + |G|) / 2.
  const double reach = (s_abs + std::fabs(exact)) / 2;
  return reach <= pow2(int(std::min<int64_t>(q - 20 + 24, 4000)));
}

double Certificate::epilogue_allowance(const Tolerance& t, const Tolerance::SiluAt& p, double u) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double x = p.x, y = t.alpha2 * u;  // exact: 24 by at most 24 significant bits
  auto in_range = [](double v) {
    v = std::fabs(v);
    return v == 0 || (v >= 0x1p-100 && v <= 0x1p100);
  };
  if (!(x >= -64) || !in_range(x) || !in_range(y)) return kInf;  // NaN fails the first test
  const double s = 1.0 / (1.0 + p.e);
  const double rel = 0x1p-24 * (std::fabs(1 + x * (1 - s)) + (1 - s) * (8 + 3 * std::fabs(x)) + 12);
  const double c = std::fabs(t.exact_output(p, u));
  const double e = 2 * rel * c;
  return c + e < 65504.0 ? e : kInf;
}

std::string Comparison::cert_message() const {
  if (cert_pass()) return "";
  char buf[512];
  int n = std::snprintf(buf, sizeof buf,
                        "%lld of %lld elements whose G and U fp32 accumulation computes exactly (every "
                        "term a multiple of one power of two, the sum of |terms| below 2^24 of it) are "
                        "further from the exact value than the fp32 epilogue and one correct rounding allow",
                        (long long)cert_violations, (long long)certified);
  std::string s(buf, size_t(std::max(0, n)));
  if (2 * cert_one_ulp >= cert_violations)
    s += "; most are one fp16 ulp off: a final fp16 conversion that truncates (or rounds other than "
         "to nearest even)?";
  else
    s += "; G or U was not kept exact: an intermediate held in bf16 or fp16, lost or repeated terms, "
         "or an approximate epilogue?";
  return s;
}

std::string Comparison::dir_message() const {
  if (dir_pass()) return "";
  char buf[512];
  const int n = std::snprintf(
      buf, sizeof buf,
      "%lld of %lld elements whose exact value rounds away from zero are rounded toward zero (a correct "
      "path, whose fp32 error is at most fp32 accumulation noise plus the epilogue's roundings: at most "
      "%lld): a final fp16 conversion that truncates (rounds toward zero)?",
      (long long)dir_toward, (long long)dir_elements, (long long)dir_limit);
  return std::string(buf, size_t(std::max(0, n)));
}

std::string Comparison::ms_message() const {
  if (ms_pass()) return "";
  char buf[640];
  const int n = std::snprintf(
      buf, sizeof buf,
      "the mean square of the errors beyond one correct rounding, in units of the fp32 accumulation "
      "scale tau, is %.3g over %lld elements where fp32 accumulation dominates the allowance (a correct "
      "path: at most %.3g); the errors are systematically about %.2gx the fp32 accumulation scale: an "
      "intermediate held in bf16 or tf32, a reduced-precision accumulator, or dropped terms?",
      ms_mean, (long long)ms_elements, ms_limit, std::sqrt(ms_mean));
  return std::string(buf, size_t(std::max(0, n)));
}

std::string Comparison::stat_message() const {
  if (stat_pass()) return "";
  char buf[512];
  const double pct = stat_elements ? 100.0 * double(unexplained) / double(stat_elements) : 0.0;
  int n = std::snprintf(buf, sizeof buf,
                        "%lld of %lld elements (%.2g%%) are further from the exact value than fp32 "
                        "accumulation and one correct rounding explain (a correct path: at most %lld)",
                        (long long)unexplained, (long long)stat_elements, pct,
                        (long long)unexplained_limit);
  std::string s(buf, size_t(std::max(0, n)));
  if (2 * unexplained_one_ulp >= unexplained) {
    s += "; most are one fp16 ulp off where fp32 arithmetic rounds correctly: a final conversion "
         "that truncates, or an intermediate held in fp16?";
  } else if (std::isfinite(excess_factor)) {
    std::snprintf(buf, sizeof buf, "; their errors are %.3gx larger than fp32 accumulation allows", excess_factor);
    s += buf;
    s += ": an intermediate held in bf16 or fp16, a low-precision accumulator, dropped terms or an "
         "approximate epilogue?";
  } else {
    s += "; they are wrong where fp32 arithmetic is exact: dropped terms or an approximate epilogue?";
  }
  return s;
}

int ulp_bucket(uint32_t d) {
  if (d <= 2) return int(d);
  int b = 3;
  uint32_t hi = 4;
  while (d > hi && b < kUlpBuckets - 1) {
    hi *= 2;
    ++b;
  }
  return b;
}

std::string ulp_bucket_label(int b) {
  if (b <= 2) return std::to_string(b);
  const uint32_t hi = uint32_t(1) << (b - 1), lo = hi / 2 + 1;
  return std::to_string(lo) + "-" + std::to_string(hi);
}

std::string Degeneracy::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.0f%% of outputs are inf/NaN/zero (inf %lld, NaN %lld, zero %lld of %lld)",
                100.0 * fraction(), (long long)inf, (long long)nan, (long long)zero, (long long)total);
  return buf;
}

Degeneracy assess_reference(const std::vector<uint16_t>& c) {
  Degeneracy d;
  d.total = int64_t(c.size());
  for (uint16_t b : c) {
    if (fp16_is_nan(b)) ++d.nan;
    else if (fp16_is_inf(b)) ++d.inf;
    else if ((b & 0x7FFF) == 0) ++d.zero;
  }
  return d;
}

std::vector<std::string> scan_scales(const Problem& p) {
  std::vector<std::string> lines;
  const int64_t blocks = p.shape.K / 16;
  auto scan = [&](const std::vector<uint8_t>& v, int64_t rows, const char* name) {
    int64_t nan = 0, neg = 0, first_nan = -1, first_neg = -1;
    for (size_t i = 0; i < v.size(); ++i) {
      if (e4m3_is_nan(v[i])) {
        if (first_nan < 0) first_nan = int64_t(i);
        ++nan;
      } else if (v[i] & 0x80) {
        if (first_neg < 0) first_neg = int64_t(i);
        ++neg;
      }
    }
    auto where = [&](int64_t i) {
      const int64_t l = i / (rows * blocks), r = (i / blocks) % rows, b = i % blocks;
      return "l=" + std::to_string(l) + " row=" + std::to_string(r) + " block=" + std::to_string(b);
    };
    if (nan)
      lines.push_back(std::string(name) + ": " + std::to_string(nan) +
                      " NaN scale byte(s) (0x7F/0xFF), first at " + where(first_nan) +
                      ": legal bits but suspicious data; every output they touch is NaN");
    if (neg)
      lines.push_back(std::string(name) + ": " + std::to_string(neg) +
                      " negative scale byte(s) (sign bit set), first at " + where(first_neg) +
                      ": NVFP4 scales are meant to be non-negative (UE4M3)");
  };
  scan(p.sfa, p.shape.M, "SFA");
  scan(p.sfb1, p.shape.N, "SFB1");
  scan(p.sfb2, p.shape.N, "SFB2");
  return lines;
}

void Locations::add(int64_t l, int64_t m, int64_t n) {
  if (count++ == 0) {
    l0 = l1 = l;
    m0 = m1 = m;
    n0 = n1 = n;
  } else {
    l0 = std::min(l0, l), l1 = std::max(l1, l);
    m0 = std::min(m0, m), m1 = std::max(m1, m);
    n0 = std::min(n0, n), n1 = std::max(n1, n);
  }
  m_mod.set(size_t(m % 128));
  n_mod.set(size_t(n % 128));
  for (int t = 0; t < kTails; ++t) {
    const int64_t T = int64_t(8) << t;
    in_tails[size_t(t)] += m >= shape.M / T * T || n >= shape.N / T * T;
  }
}

void Locations::merge(const Locations& later) {
  if (later.count == 0) return;
  if (count == 0) {
    *this = later;
    return;
  }
  count += later.count;
  l0 = std::min(l0, later.l0), l1 = std::max(l1, later.l1);
  m0 = std::min(m0, later.m0), m1 = std::max(m1, later.m1);
  n0 = std::min(n0, later.n0), n1 = std::max(n1, later.n1);
  m_mod |= later.m_mod;
  n_mod |= later.n_mod;
  for (int t = 0; t < kTails; ++t) in_tails[size_t(t)] += later.in_tails[size_t(t)];
}

namespace {
// The range [lo, hi] of an index of extent `size` as words: "" when it is over half of it.
std::string span_text(const char* one, const char* many, int64_t lo, int64_t hi, int64_t size) {
  if (2 * (hi - lo + 1) > size) return "";  // over half of it: no pattern worth naming
  if (lo == hi) return std::string(one) + " " + std::to_string(lo) + (lo == size - 1 && size > 1 ? " (the last)" : "");
  return std::string(many) + " " + std::to_string(lo) + ".." + std::to_string(hi);
}
// The largest modulus q in 2..128 (q < size) under which every index seen leaves one residue r:
// {q, r}, or {0, 0} when there is none.
std::pair<int, int> residue_class(const std::bitset<128>& seen, int64_t size) {
  for (int q = 128; q >= 2; q /= 2) {
    if (q >= size) continue;
    int r = -1;
    bool one = true;
    for (int i = 0; i < 128 && one; ++i)
      if (seen[size_t(i)]) {
        if (r < 0) r = i % q;
        one = r == i % q;
      }
    if (one && r >= 0) return {q, r};
  }
  return {0, 0};
}
}  // namespace

std::string Locations::text() const {
  if (count < 2 || l1 < 0) return "";
  std::vector<std::string> parts;
  double f = 1;  // the fraction of all elements the named pattern covers
  if (shape.L > 1) {
    const std::string b = span_text("batch", "batches", l0, l1, shape.L);
    if (!b.empty()) {
      parts.push_back(b);
      f *= double(l1 - l0 + 1) / double(shape.L);
    }
  }
  // A dimension's span and the residue class all its flagged indices share, if any (the span left
  // out where it only runs from the class's first member to its last).
  auto dim = [&](const char* one, const char* many, const char* var, int64_t lo, int64_t hi, int64_t size,
                 const std::bitset<128>& seen) {
    std::string span = span_text(one, many, lo, hi, size);
    const double span_f = span.empty() ? 1.0 : double(hi - lo + 1) / double(size);
    // Within a span of at most 128 the residues mod 128 are the distinct indices themselves.
    const int64_t distinct = int64_t(seen.count());
    if (!span.empty() && hi - lo + 1 <= 128 && distinct < hi - lo + 1 && lo != hi)
      span += " (" + std::to_string(distinct) + " of them)";
    const auto [q, r] =
        count < 8 || lo == hi || distinct < 3 ? std::pair<int, int>{0, 0} : residue_class(seen, size);
    if (q == 0) {
      f *= span_f;
      return span;
    }
    const std::string cls = std::string(var) + " % " + std::to_string(q) + " == " + std::to_string(r);
    if (span.empty() || (lo < q && hi >= size - q)) {
      f /= q;
      return std::string(many) + " " + cls;
    }
    f *= span_f / q;
    return span + " with " + cls;
  };
  const std::string rows = dim("row", "rows", "m", m0, m1, shape.M, m_mod);
  const std::string cols = dim("column", "columns", "n", n0, n1, shape.N, n_mod);
  if (!rows.empty()) parts.push_back(rows);
  if (!cols.empty()) parts.push_back(cols);
  if (rows.empty() && cols.empty() && count >= 8)
    for (int t = 0; t < kTails; ++t) {
      const int64_t T = int64_t(8) << t, rm = shape.M / T * T, rn = shape.N / T * T;
      // rm == 0 (or rn == 0): every row (column) is in the tail, and so is every element.
      if (in_tails[size_t(t)] != count || (rm == shape.M && rn == shape.N) || rm == 0 || rn == 0) continue;
      std::string tail = "the M and N tails past the last whole tile of " + std::to_string(T) + " (";
      if (rm < shape.M) tail += "rows >= " + std::to_string(rm);
      if (rm < shape.M && rn < shape.N) tail += " or ";
      if (rn < shape.N) tail += "columns >= " + std::to_string(rn);
      parts.push_back(tail + ")");
      f = 1 - double(rm) / double(shape.M) * double(rn) / double(shape.N);
      break;
    }
  // A pattern is named only where scattered elements would rarely fall into it: `count` elements
  // placed at random all land in a region covering a fraction f of the output with probability
  // f^count; above 1e-4 the region says nothing (a few precision errors in a small output).
  if (parts.empty() || double(count) * std::log(f) > std::log(1e-4)) return "";
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s;
}

}  // namespace nvfp4
