// compare.cpp — the derived tolerance and the per-trial metrics (see compare.hpp for the formulas).
#include "compare.hpp"

#include <system_error>
#include <thread>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>
#include <thread>

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

double fp16_ulp_at(double x) {
  x = std::fabs(x);
  if (!(x >= 0x1p-14)) return 0x1p-24;  // subnormal spacing (also for NaN: caller's business)
  if (x >= 32768.0) return 32.0;
  int e;
  std::frexp(x, &e);  // x = f * 2^e, f in [0.5, 1): the binade is [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 1 - 10);
}

Tolerance::Tolerance(int64_t k, float a1, float a2) : K(k), alpha1(a1), alpha2(a2) {
  const double ku = double(K) * kUnit;
  gamma = ku < 1 ? ku / (1 - ku) : std::numeric_limits<double>::infinity();
}

// The exact value the output is judged against: the one SiLU·mul (reference/silu.hpp) in double.
double Tolerance::exact_output(double g, double u) const { return silu_mul(g, u, alpha1, alpha2); }

double Tolerance::epilogue_bound(double g, double u, double s_g, double s_u) const {
  const double a1 = std::fabs(alpha1), a2 = std::fabs(alpha2);
  const double dg = a1 * gamma * s_g + 0x1p-24 * a1 * (std::fabs(g) + gamma * s_g);
  const double du = a2 * gamma * s_u + 0x1p-24 * a2 * (std::fabs(u) + gamma * s_u);
  const double y = std::fabs(alpha2 * u);
  const double sx = std::fabs(silu(alpha1 * g));
  const double prop = kSiluSlope * dg * (y + du) + sx * du;
  return prop + kEpilogueRel * (sx * y + prop);
}

Tolerance::Verdict Tolerance::judge(uint16_t got, double g, double u, double s_g,
                                    double s_u) const {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double c = exact_output(g, u);
  if (std::isnan(c)) return {fp16_is_nan(got), c, fp16_is_nan(got) ? 0.0 : kInf, 0.0};
  const double e = epilogue_bound(g, u, s_g, s_u);
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

Statistic::Scale Statistic::scale(const Tolerance& t, double g, double u, double s_g, double s_u) {
  const double a1 = std::fabs(t.alpha1), a2 = std::fabs(t.alpha2);
  const double root = std::sqrt(double(t.K)) * Tolerance::kUnit;
  const double sig_g = a1 * root * s_g, sig_u = a2 * root * s_u;
  const double x = t.alpha1 * g, y = std::fabs(t.alpha2 * u);
  const double reach = kLambda * sig_g + 0x1p-23 * std::fabs(x);
  const double slope = max_silu_slope(x - reach, x + reach);
  const double sx = std::fabs(silu(x));
  Scale sc;
  sc.tau = slope * sig_g * (y + kLambda * sig_u) + sx * sig_u;
  sc.e_ep = Tolerance::kEpilogueRel * sx * y + 0x1p-24 * (slope * std::fabs(x) * y + sx * y);
  sc.half_ulp = fp16_ulp_at(sx * y + kLambda * sc.tau + sc.e_ep) / 2;
  return sc;
}

std::string Comparison::criterion() const {
  if (!bound_pass()) return "bound";
  if (!stat_pass()) return "statistic";
  return "";
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

namespace {

// Keeps the `cap` elements with the largest err/bound (NaN/inf errors first).
void keep_worst(std::vector<ElementReport>& v, const ElementReport& r, size_t cap) {
  auto score = [](const ElementReport& x) {
    return x.bound > 0 ? x.err / x.bound : std::numeric_limits<double>::infinity();
  };
  if (v.size() == cap && !(score(r) > score(v.back()))) return;
  auto it = std::upper_bound(v.begin(), v.end(), r, [&](const ElementReport& a, const ElementReport& b) {
    return score(a) > score(b);
  });
  v.insert(it, r);
  if (v.size() > cap) v.pop_back();
}

bool gpumode_mismatch(uint16_t got, uint16_t ref) {
  const double x = fp16_to_double(got), r = fp16_to_double(ref);
  if (std::isnan(x) != std::isnan(r)) return true;
  if ((x == INFINITY) != (r == INFINITY)) return true;
  if ((x == -INFINITY) != (r == -INFINITY)) return true;
  const double diff = std::fabs(x - r);
  return diff > 1e-3 + 1e-3 * std::fabs(r);  // NaN diff (inf - inf, NaN - NaN) is not "greater"
}

}  // namespace

Comparison compare_output(const ReferenceResult& ref, float alpha1, float alpha2,
                          const uint16_t* got, const std::vector<float>* g_hat,
                          const std::vector<float>* u_hat, int call, int threads) {
  const Shape& s = ref.shape;
  const int64_t total = s.c_elems();
  if (int64_t(ref.c.size()) != total || int64_t(ref.g.size()) != total ||
      int64_t(ref.u.size()) != total || int64_t(ref.g_abs.size()) != total ||
      int64_t(ref.u_abs.size()) != total)
    throw std::logic_error("compare_output: the reference must carry C, G, U and abs sums");
  const Tolerance tol(s.K, alpha1, alpha2);

  Comparison out;
  out.elements = total;
  const bool have_mid = g_hat && u_hat;
  const bool mid_sized = have_mid && int64_t(g_hat->size()) == total && int64_t(u_hat->size()) == total;

  // One pass over a range of elements. Large outputs are split into ranges scanned on several
  // threads and merged in index order, which gives exactly the serial result (counts add, maxima
  // keep the first index on ties, the worst-element lists merge in order).
  struct Part {
    Comparison out;
    std::vector<double> excess;  // z of every element not correctly rounded beyond e_ep
    std::vector<ElementReport> unexplained_at;
    int64_t rejected_real = 0, rejected_with_gemm_error = 0;
  };
  auto scan = [&](int64_t lo, int64_t hi, Part& p) {
    if (mid_sized) p.out.g_out_of_bound = p.out.u_out_of_bound = 0;
    for (int64_t i = lo; i < hi; ++i) {
      const uint16_t c = got[i];
      ElementReport er;
      er.l = i / (s.M * s.N);
      er.m = (i / s.N) % s.M;
      er.n = i % s.N;
      er.got = c;
      er.ref = ref.c[i];
      er.call = call;

      if (gpumode_mismatch(c, ref.c[i])) ++p.out.gpumode_mismatch;

      // Whether the GEMMs were already wrong here (only with intermediates).
      bool gemm_error = false;
      if (mid_sized) {
        auto off = [&](double exact, float hat, double s_abs) {
          if (std::isnan(exact)) return !std::isnan(hat);
          return !(std::fabs(double(hat) - exact) <= tol.gemm_bound(s_abs));
        };
        const bool g_off = off(ref.g[i], (*g_hat)[i], ref.g_abs[i]);
        const bool u_off = off(ref.u[i], (*u_hat)[i], ref.u_abs[i]);
        p.out.g_out_of_bound += g_off;
        p.out.u_out_of_bound += u_off;
        gemm_error = g_off || u_off;
      }

      if (c == kPoisonBits) {
        ++p.out.poisoned;
        ++p.out.over_tolerance;
        er.exact = tol.exact_output(ref.g[i], ref.u[i]);
        er.err = std::numeric_limits<double>::infinity();
        if (p.out.first_poisoned.size() < 5) p.out.first_poisoned.push_back(er);
        continue;
      }
      const bool got_nan = fp16_is_nan(c), ref_nan = fp16_is_nan(ref.c[i]);
      if (!got_nan && !ref_nan) {
        const uint32_t d = fp16_ulp_distance(c, ref.c[i]);
        ++p.out.ulp_hist[ulp_bucket(d)];
        p.out.max_ulp = std::max(p.out.max_ulp, d);
      }

      const Tolerance::Verdict v = tol.judge(c, ref.g[i], ref.u[i], ref.g_abs[i], ref.u_abs[i]);
      er.exact = v.exact;
      er.err = v.err;
      er.bound = v.bound;
      const double x = fp16_to_double(c);
      if (std::isfinite(x) && std::isfinite(v.exact)) {
        const double abs_err = std::fabs(x - v.exact);
        if (abs_err > p.out.max_abs) {
          p.out.max_abs = abs_err;
          p.out.max_abs_at = er;
        }
        if (std::fabs(v.exact) >= 0x1p-14) {  // below fp16's normal range relative error means little
          const double rel = abs_err / std::fabs(v.exact);
          if (rel > p.out.max_rel) {
            p.out.max_rel = rel;
            p.out.max_rel_at = er;
          }
        }
      }
      if (std::isfinite(x) && std::isfinite(v.exact) && !fp16_is_inf(ref.c[i]) && !fp16_is_nan(ref.c[i])) {
        ++p.out.stat_elements;
        const Statistic::Scale sc = Statistic::scale(tol, ref.g[i], ref.u[i], ref.g_abs[i], ref.u_abs[i]);
        const double beyond = std::fabs(x - v.exact) - sc.half_ulp - sc.e_ep;
        if (beyond > 0) {
          const double z = sc.tau > 0 ? beyond / sc.tau : std::numeric_limits<double>::infinity();
          p.excess.push_back(z);
          if (z > Statistic::kLambda) {
            ++p.out.unexplained;
            if (std::fabs(x - v.exact) <= fp16_ulp_at(v.exact)) ++p.out.unexplained_one_ulp;
            ElementReport ue = er;
            ue.bound = sc.half_ulp + Statistic::kLambda * sc.tau + sc.e_ep;
            keep_worst(p.unexplained_at, ue, 5);
          }
        }
      }
      if (v.ok) continue;
      ++p.out.over_tolerance;
      ++p.rejected_real;
      p.rejected_with_gemm_error += gemm_error;
      if (got_nan != ref_nan) ++p.out.nan_mismatch;
      if (fp16_is_inf(c) || fp16_is_inf(ref.c[i]) || std::isinf(v.exact)) ++p.out.inf_mismatch;
      keep_worst(p.out.worst, er, 5);
    }
  };
  const int64_t min_part = int64_t(1) << 16;
  const int64_t cores = threads > 0 ? threads : int64_t(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(cores, total / min_part));
  std::vector<Part> part(static_cast<size_t>(parts));
  {
    // A range whose thread cannot be started (the process's thread limit) is scanned here.
    std::vector<std::thread> threads;
    std::vector<int64_t> here;
    for (int64_t t = 0; t < parts; ++t) {
      const int64_t lo = total * t / parts, hi = total * (t + 1) / parts;
      if (t + 1 == parts) {
        here.push_back(t);
        continue;
      }
      try {
        threads.emplace_back(scan, lo, hi, std::ref(part[size_t(t)]));
      } catch (const std::system_error&) {
        here.push_back(t);
      }
    }
    for (int64_t t : here) scan(total * t / parts, total * (t + 1) / parts, part[size_t(t)]);
    for (auto& th : threads) th.join();
  }
  std::vector<double> excess;
  std::vector<ElementReport> unexplained_at;
  int64_t rejected_real = 0, rejected_with_gemm_error = 0;
  if (mid_sized) out.g_out_of_bound = out.u_out_of_bound = 0;
  for (Part& p : part) {
    const Comparison& c = p.out;
    out.over_tolerance += c.over_tolerance;
    out.nan_mismatch += c.nan_mismatch;
    out.inf_mismatch += c.inf_mismatch;
    out.poisoned += c.poisoned;
    out.gpumode_mismatch += c.gpumode_mismatch;
    if (c.max_abs > out.max_abs) out.max_abs = c.max_abs, out.max_abs_at = c.max_abs_at;
    if (c.max_rel > out.max_rel) out.max_rel = c.max_rel, out.max_rel_at = c.max_rel_at;
    out.max_ulp = std::max(out.max_ulp, c.max_ulp);
    for (size_t b = 0; b < out.ulp_hist.size(); ++b) out.ulp_hist[b] += c.ulp_hist[b];
    for (const auto& e : c.worst) keep_worst(out.worst, e, 5);
    for (const auto& e : c.first_poisoned)
      if (out.first_poisoned.size() < 5) out.first_poisoned.push_back(e);
    if (mid_sized) {
      out.g_out_of_bound += c.g_out_of_bound;
      out.u_out_of_bound += c.u_out_of_bound;
    }
    out.stat_elements += c.stat_elements;
    out.unexplained += c.unexplained;
    out.unexplained_one_ulp += c.unexplained_one_ulp;
    for (const auto& e : p.unexplained_at) keep_worst(unexplained_at, e, 5);
    excess.insert(excess.end(), p.excess.begin(), p.excess.end());
    rejected_real += p.rejected_real;
    rejected_with_gemm_error += p.rejected_with_gemm_error;
  }

  out.unexplained_limit = Statistic::limit(out.stat_elements, Statistic::element_probability(s.K));
  out.unexplained_at = std::move(unexplained_at);
  if (!excess.empty())
    out.element_margin = Statistic::kLambda / *std::max_element(excess.begin(), excess.end());
  if (int64_t(excess.size()) > out.unexplained_limit) {
    // z*: the (n_crit+1)-th largest excess; the criterion fails exactly when z* > lambda.
    auto nth = excess.begin() + out.unexplained_limit;
    std::nth_element(excess.begin(), nth, excess.end(), std::greater<double>());
    out.stat_margin = Statistic::kLambda / *nth;
  }
  if (out.unexplained > 0) {
    std::vector<double> over;
    for (double z : excess)
      if (z > Statistic::kLambda) over.push_back(z);
    auto mid = over.begin() + over.size() / 2;
    std::nth_element(over.begin(), mid, over.end());
    out.excess_factor = *mid / Statistic::kLambda;
  }

  // Attribution: where the rejected (written) elements went wrong.
  if (!have_mid) {
    out.attribution = out.over_tolerance ? "unknown" : "none";
    out.attribution_detail = out.over_tolerance ? "unknown (path exposes no intermediates)"
                                                : "within tolerance (path exposes no intermediates)";
  } else if (!mid_sized) {
    out.attribution = "unknown";
    out.attribution_detail = "unknown (intermediates have " + std::to_string(g_hat->size()) + " and " +
                             std::to_string(u_hat->size()) + " elements, expected " +
                             std::to_string(total) + ")";
  } else if (rejected_real == 0 && out.poisoned > 0) {
    out.attribution = "unwritten";
    out.attribution_detail = "only unwritten elements: the output store skipped them";
  } else if (rejected_real == 0) {
    out.attribution = "none";
    out.attribution_detail = "within tolerance; G/U out of the fp32 accumulation bound at " +
                             std::to_string(out.g_out_of_bound) + "/" +
                             std::to_string(out.u_out_of_bound) + " elements";
  } else if (rejected_with_gemm_error > 0) {
    out.attribution = "gemm";
    out.attribution_detail = "error already in G/U: " + std::to_string(rejected_with_gemm_error) +
                             " of " + std::to_string(rejected_real) +
                             " failing elements have G or U outside the fp32 accumulation bound (G at " +
                             std::to_string(out.g_out_of_bound) + ", U at " +
                             std::to_string(out.u_out_of_bound) + " elements overall)";
  } else {
    out.attribution = "epilogue";
    out.attribution_detail = "G and U are within the fp32 accumulation bound at all " +
                             std::to_string(rejected_real) +
                             " failing elements: the error arises in the epilogue";
  }
  return out;
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

}  // namespace nvfp4
