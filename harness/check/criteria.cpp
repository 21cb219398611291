// criteria.cpp — the accumulators of criteria.hpp and compare_output, which scans an output with
// them (on several threads for a large one) and finishes the Comparison.
#include "criteria.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "formats.hpp"

namespace nvfp4 {
namespace criteria {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

bool gpumode_mismatch(uint16_t got, uint16_t ref) {
  const double x = fp16_to_double(got), r = fp16_to_double(ref);
  if (std::isnan(x) != std::isnan(r)) return true;
  if ((x == INFINITY) != (r == INFINITY)) return true;
  if ((x == -INFINITY) != (r == -INFINITY)) return true;
  const double diff = std::fabs(x - r);
  return diff > 1e-3 + 1e-3 * std::fabs(r);  // NaN diff (inf - inf, NaN - NaN) is not "greater"
}
}  // namespace

unsigned block_quantum(const uint8_t* a, const uint8_t* b, int64_t n) {
  // The sums saturate at 255 (exact below it): the minimum is exact whenever it is below 255.
  unsigned q = 255;
  int64_t i = 0;
#if defined(__SSE2__)
  // 16 blocks per step in bytes (the comparison's hottest loop: K/16 blocks per output element).
  __m128i m = _mm_set1_epi8(char(0xFF));
  for (; i + 16 <= n; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    m = _mm_min_epu8(m, _mm_adds_epu8(x, y));
  }
  alignas(16) uint8_t lanes[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), m);
  for (uint8_t l : lanes) q = std::min(q, unsigned(l));
#endif
  for (; i < n; ++i) q = std::min(q, std::min(255u, unsigned(a[i]) + unsigned(b[i])));
  return q;
}

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

Element make_element(const Scan& scan, const uint16_t* got, const std::vector<float>* g_hat,
                     const std::vector<float>* u_hat, int64_t i, int call) {
  const ReferenceResult& ref = scan.ref;
  const Shape& s = ref.shape;
  const Tolerance& tol = scan.tol;
  Element e;
  e.i = i;
  e.got = got[i];
  e.ref = ref.c[size_t(i)];
  e.g = ref.g[size_t(i)];
  e.u = ref.u[size_t(i)];
  e.s_g = ref.g_abs[size_t(i)];
  e.s_u = ref.u_abs[size_t(i)];
  e.er.l = i / (s.M * s.N);
  e.er.m = (i / s.N) % s.M;
  e.er.n = i % s.N;
  e.shape = &s;
  e.er.got = e.got;
  e.er.ref = e.ref;
  e.er.call = call;
  if (scan.mid_sized) {
    auto off = [&](double exact, float hat, double s_abs) {
      if (std::isnan(exact)) return !std::isnan(hat);
      return !(std::fabs(double(hat) - exact) <= tol.gemm_bound(s_abs));
    };
    e.g_off = off(e.g, (*g_hat)[size_t(i)], e.s_g);
    e.u_off = off(e.u, (*u_hat)[size_t(i)], e.s_u);
    e.gemm_error = e.g_off || e.u_off;
  }
  const Tolerance::SiluAt at = tol.silu_at(e.g);  // shared by every criterion below
  if (e.got == kPoisonBits) {
    e.poisoned = true;
    e.er.exact = tol.exact_output(at, e.u);
    e.er.err = kInf;
    return e;
  }
  e.got_nan = fp16_is_nan(e.got);
  e.ref_nan = fp16_is_nan(e.ref);
  e.v = tol.judge(e.got, at, e.g, e.u, e.s_g, e.s_u);
  e.er.exact = e.v.exact;
  e.er.err = e.v.err;
  e.er.bound = e.v.bound;
  e.x = fp16_to_double(e.got);
  e.stat = std::isfinite(e.x) && std::isfinite(e.v.exact) && !fp16_is_inf(e.ref) && !e.ref_nan;
  if (e.stat) {
    e.sc = Statistic::scale(tol, at, e.u, e.s_g, e.s_u);
    e.beyond = std::fabs(e.x - e.v.exact) - e.sc.half_ulp - e.sc.e_ep;
    e.e_ep_wide = Certificate::epilogue_allowance(tol, at, e.u);
  }
  if (scan.cert_alphas && !ref.q_a.empty()) {
    const int64_t row = e.er.l * s.M + e.er.m, col = e.er.l * s.N + e.er.n;
    const int64_t qa = ref.q_a[size_t(row)];
    // The rows' quantum first; where it does not certify, the finer one of the blocks.
    auto exact = [&](double s_abs, double v, int64_t q_row, const std::vector<uint8_t>& qb) {
      if (Certificate::exact_in_fp32(s_abs, v, q_row)) return true;
      if (qb.empty()) return false;
      const int64_t kb = s.K / kBlock;
      const unsigned q = block_quantum(ref.qb_a.data() + row * kb, qb.data() + col * kb, kb);
      return q < unsigned(kZeroBlockQ) && Certificate::exact_in_fp32(s_abs, v, int64_t(q));
    };
    if (exact(e.s_g, e.g, qa + ref.q_b1[size_t(col)], ref.qb_b1) &&
        exact(e.s_u, e.u, qa + ref.q_b2[size_t(col)], ref.qb_b2)) {
      e.e_cert = e.stat ? e.e_ep_wide : Certificate::epilogue_allowance(tol, at, e.u);
      e.certified = std::isfinite(e.e_cert) && !e.got_nan;
    }
  }
  return e;
}

// Arithmetic on the poison (a signalling NaN) gives it back quieted: the quiet bit 0x0200 set, the
// payload kept, the sign perhaps flipped. An output holding that read c before writing it.
void Poison::observe(const Element& e) {
  if (!e.poisoned) {
    read += (e.got & 0x7FFFu) == (kPoisonBits | 0x0200u);
    return;
  }
  ++count;
  if (first.size() < 5) first.push_back(e.er);
}
void Poison::merge(const Poison& o) {
  count += o.count;
  read += o.read;
  for (const auto& r : o.first)
    if (first.size() < 5) first.push_back(r);
}
void Poison::finish(Comparison& out, const Scan&) const {
  out.poisoned = count;
  out.poison_read = read;
  out.first_poisoned = first;
}

void GpuMode::observe(const Element& e) { mismatches += gpumode_mismatch(e.got, e.ref); }

void UlpHistogram::observe(const Element& e) {
  if (e.poisoned || e.got_nan || e.ref_nan) return;
  const uint32_t d = fp16_ulp_distance(e.got, e.ref);
  ++hist[size_t(ulp_bucket(d))];
  max_ulp = std::max(max_ulp, d);
}
void UlpHistogram::merge(const UlpHistogram& o) {
  max_ulp = std::max(max_ulp, o.max_ulp);
  for (size_t b = 0; b < hist.size(); ++b) hist[b] += o.hist[b];
}
void UlpHistogram::finish(Comparison& out, const Scan&) const {
  out.max_ulp = max_ulp;
  out.ulp_hist = hist;
}

void MaxError::observe(const Element& e) {
  if (e.poisoned || !std::isfinite(e.x) || !std::isfinite(e.v.exact)) return;
  const double abs_err = std::fabs(e.x - e.v.exact);
  if (abs_err > max_abs) {
    max_abs = abs_err;
    max_abs_at = e.er;
  }
  if (std::fabs(e.v.exact) >= 0x1p-14) {  // below fp16's normal range relative error means little
    const double rel = abs_err / std::fabs(e.v.exact);
    if (rel > max_rel) {
      max_rel = rel;
      max_rel_at = e.er;
    }
  }
}
void MaxError::merge(const MaxError& o) {
  if (o.max_abs > max_abs) max_abs = o.max_abs, max_abs_at = o.max_abs_at;
  if (o.max_rel > max_rel) max_rel = o.max_rel, max_rel_at = o.max_rel_at;
}
void MaxError::finish(Comparison& out, const Scan&) const {
  out.max_abs = max_abs;
  out.max_abs_at = max_abs_at;
  out.max_rel = max_rel;
  out.max_rel_at = max_rel_at;
}

void Bound::observe(const Element& e) {
  if (e.poisoned) {
    ++over;
    return;
  }
  if (e.v.ok) return;
  ++over;
  if (e.got_nan != e.ref_nan) ++nan_mismatch;
  if (fp16_is_inf(e.got) || fp16_is_inf(e.ref) || std::isinf(e.v.exact)) ++inf_mismatch;
  keep_worst(worst, e.er, 5);
}
void Bound::merge(const Bound& o) {
  over += o.over;
  nan_mismatch += o.nan_mismatch;
  inf_mismatch += o.inf_mismatch;
  for (const auto& r : o.worst) keep_worst(worst, r, 5);
}
void Bound::finish(Comparison& out, const Scan&) const {
  out.over_tolerance = over;
  out.nan_mismatch = nan_mismatch;
  out.inf_mismatch = inf_mismatch;
  out.worst = worst;
}

namespace {
// The certificate at one certified element: its error, the half spacing allowed on top of e_cert,
// and the margin e_cert / (err - h) (+inf within h; < 1 is a violation).
struct CertCheck {
  double err, h, margin;
};
CertCheck cert_check(const Element& e) {
  const double err = std::fabs(e.x - e.v.exact);
  const double h = fp16_ulp_at(std::fabs(e.v.exact) + e.e_cert) / 2;
  return {err, h, err > h ? e.e_cert / (err - h) : kInf};
}
// The statistic's excess z of one element (0 when within one correct rounding and e_ep).
double stat_excess(const Element& e) {
  if (!e.stat || !(e.beyond > 0)) return 0;
  return e.sc.tau > 0 ? e.beyond / e.sc.tau : kInf;
}
}  // namespace

void OutlierCount::observe(const Element& e) {
  if (!e.stat) return;
  ++elements;
  if (!(e.beyond > 0)) return;
  const double z = stat_excess(e);
  excess.push_back(z);
  if (z > Statistic::kLambda) {
    ++unexplained;
    if (std::fabs(e.x - e.v.exact) <= fp16_ulp_at(e.v.exact)) ++one_ulp;
    ElementReport r = e.er;
    r.bound = e.sc.half_ulp + Statistic::kLambda * e.sc.tau + e.sc.e_ep;
    keep_worst(at, r, 5);
  }
}
void OutlierCount::merge(const OutlierCount& o) {
  elements += o.elements;
  unexplained += o.unexplained;
  one_ulp += o.one_ulp;
  for (const auto& r : o.at) keep_worst(at, r, 5);
  excess.insert(excess.end(), o.excess.begin(), o.excess.end());
}
void OutlierCount::finish(Comparison& out, const Scan& scan) const {
  out.stat_elements = elements;
  out.unexplained = unexplained;
  out.unexplained_one_ulp = one_ulp;
  out.unexplained_at = at;
  out.unexplained_limit = Statistic::limit(elements, Statistic::element_probability(scan.tol.K));
  if (excess.empty()) return;
  out.element_margin = Statistic::kLambda / *std::max_element(excess.begin(), excess.end());
  std::vector<double> z = excess;
  if (int64_t(z.size()) > out.unexplained_limit) {
    // z*: the (n_crit+1)-th largest excess; the criterion fails exactly when z* > lambda.
    auto nth = z.begin() + out.unexplained_limit;
    std::nth_element(z.begin(), nth, z.end(), std::greater<double>());
    out.stat_margin = Statistic::kLambda / *nth;
  }
  if (unexplained > 0) {
    std::vector<double> over;
    for (double v : z)
      if (v > Statistic::kLambda) over.push_back(v);
    auto mid = over.begin() + over.size() / 2;
    std::nth_element(over.begin(), mid, over.end());
    out.excess_factor = *mid / Statistic::kLambda;
  }
}


void Certified::observe(const Element& e) {
  if (!e.certified) return;
  ++elements;
  const auto [err, h, m] = cert_check(e);
  if (!(err > h)) return;
  margin = std::min(margin, m);
  if (m >= 1) return;
  ++violations;
  if (err <= fp16_ulp_at(e.v.exact)) ++one_ulp;
  ElementReport r = e.er;
  r.err = err;
  r.bound = e.e_cert + h;
  keep_worst(at, r, 5);
}
void Certified::merge(const Certified& o) {
  elements += o.elements;
  violations += o.violations;
  one_ulp += o.one_ulp;
  margin = std::min(margin, o.margin);
  for (const auto& r : o.at) keep_worst(at, r, 5);
}
void Certified::finish(Comparison& out, const Scan&) const {
  out.certified = elements;
  out.cert_violations = violations;
  out.cert_one_ulp = one_ulp;
  out.cert_margin = margin;
  out.cert_at = at;
}

void MeanSquareExcess::observe(const Element& e) {
  if (!e.stat || e.certified || !(e.sc.tau >= e.sc.half_ulp)) return;
  const double z = e.beyond > 0 ? e.beyond / e.sc.tau : 0.0;
  z2.push_back(z * z);
}
void MeanSquareExcess::finish(Comparison& out, const Scan&) const {
  out.ms_elements = int64_t(z2.size());
  out.ms_limit = MeanSquare::limit(out.ms_elements);
  if (z2.empty()) return;
  double sum = 0;
  for (double v : z2) sum += v;  // in index order: the same sum for any split
  out.ms_mean = sum / double(z2.size());
  out.ms_margin = out.ms_mean > 0 ? out.ms_limit / out.ms_mean : kInf;
}

void RoundingDirection::observe(const Element& e) {
  if (!e.stat || !std::isfinite(e.e_ep_wide)) return;
  const double c = std::fabs(e.v.exact), r = std::fabs(fp16_to_double(e.ref));
  if (!(r > c)) return;  // the correct rounding is not away from zero
  const double d = r - c > 0 ? fp16_ulp_at(c) / 2 - (r - c) : 0;  // beyond the midpoint
  const double slack = d - std::max(e.e_ep_wide, e.sc.e_ep);
  double pi = 1;
  if (slack > 0) pi = e.sc.tau > 0 ? std::exp(-slack * slack / (2 * e.sc.tau * e.sc.tau)) : 0.0;
  ++elements;
  p.push_back(pi);
  const bool same_sign = std::signbit(e.x) == std::signbit(e.v.exact) || e.x == 0;
  if (std::fabs(e.x) < r && same_sign) ++toward;
}
void RoundingDirection::merge(const RoundingDirection& o) {
  elements += o.elements;
  toward += o.toward;
  p.insert(p.end(), o.p.begin(), o.p.end());
}
void RoundingDirection::finish(Comparison& out, const Scan&) const {
  double mu = 0;
  for (double v : p) mu += v;  // in index order: the same sum for any split
  out.dir_elements = elements;
  out.dir_toward = toward;
  out.dir_expected = mu;
  out.dir_limit = std::min<int64_t>(elements, Direction::limit(mu));
  if (toward > 0) out.dir_margin = double(out.dir_limit) / double(toward);
}

void Where::observe(const Element& e) {
  const bool flagged = e.poisoned || !e.v.ok || (e.certified && cert_check(e).margin < 1) ||
                       stat_excess(e) > Statistic::kLambda;
  if (!flagged) return;
  at.shape = *e.shape;
  at.add(e.er.l, e.er.m, e.er.n);
}
void Where::finish(Comparison& out, const Scan& scan) const {
  out.flagged = at;
  out.flagged.shape = scan.ref.shape;
}

void Attribution::observe(const Element& e) {
  g_off += e.g_off;
  u_off += e.u_off;
  if (e.poisoned || e.v.ok) return;
  ++rejected_real;
  rejected_with_gemm_error += e.gemm_error;
}
void Attribution::merge(const Attribution& o) {
  g_off += o.g_off;
  u_off += o.u_off;
  rejected_real += o.rejected_real;
  rejected_with_gemm_error += o.rejected_with_gemm_error;
}
void Attribution::finish(Comparison& out, const Scan& scan) const {
  if (scan.mid_sized) {
    out.g_out_of_bound = g_off;
    out.u_out_of_bound = u_off;
  }
  if (!scan.have_mid) {
    out.attribution = out.over_tolerance ? "unknown" : "none";
    out.attribution_detail = out.over_tolerance ? "unknown (path exposes no intermediates)"
                                                : "within tolerance (path exposes no intermediates)";
  } else if (!scan.mid_sized) {
    out.attribution = "unknown";
    out.attribution_detail = "unknown (intermediates have " + std::to_string(scan.g_hat_size) + " and " +
                             std::to_string(scan.u_hat_size) + " elements, expected " +
                             std::to_string(out.elements) + ")";
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
}

}  // namespace criteria

Comparison compare_output(const ReferenceResult& ref, float alpha1, float alpha2,
                          const uint16_t* got, const std::vector<float>* g_hat,
                          const std::vector<float>* u_hat, int call, int threads) {
  using criteria::AllCriteria;
  const Shape& s = ref.shape;
  const int64_t total = s.c_elems();
  if (int64_t(ref.c.size()) != total || int64_t(ref.g.size()) != total ||
      int64_t(ref.u.size()) != total || int64_t(ref.g_abs.size()) != total ||
      int64_t(ref.u_abs.size()) != total)
    throw std::logic_error("compare_output: the reference must carry C, G, U and abs sums");
  if (!ref.q_a.empty() && (int64_t(ref.q_a.size()) != s.L * s.M || int64_t(ref.q_b1.size()) != s.L * s.N ||
                           int64_t(ref.q_b2.size()) != s.L * s.N))
    throw std::logic_error("compare_output: the reference's row exponents q have the wrong size");
  const int64_t kb = s.K / kBlock;
  if (!ref.qb_a.empty() && (int64_t(ref.qb_a.size()) != s.L * s.M * kb ||
                            int64_t(ref.qb_b1.size()) != s.L * s.N * kb || int64_t(ref.qb_b2.size()) != s.L * s.N * kb))
    throw std::logic_error("compare_output: the reference's block exponents have the wrong size");
  const Tolerance tol(s.K, alpha1, alpha2);
  criteria::Scan scan{ref, tol};
  scan.have_mid = g_hat && u_hat;
  scan.mid_sized = scan.have_mid && int64_t(g_hat->size()) == total && int64_t(u_hat->size()) == total;
  if (scan.have_mid) scan.g_hat_size = g_hat->size(), scan.u_hat_size = u_hat->size();
  auto power_of_two = [](float a) {
    int e;
    return std::isfinite(a) && a != 0 && std::fabs(std::frexp(a, &e)) == 0.5f;
  };
  scan.cert_alphas = power_of_two(alpha1) && power_of_two(alpha2);

  auto scan_range = [&](int64_t lo, int64_t hi, AllCriteria& acc) {
    for (int64_t i = lo; i < hi; ++i) acc.observe(criteria::make_element(scan, got, g_hat, u_hat, i, call));
  };
  // Large outputs are split into ranges scanned on several threads and merged in index order.
  const int64_t min_part = int64_t(1) << 16;
  const int64_t cores = threads > 0 ? threads : int64_t(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(cores, total / min_part));
  std::vector<AllCriteria> part(static_cast<size_t>(parts));
  {
    // A range whose thread cannot be started (the process's thread limit) is scanned here.
    std::vector<std::thread> pool;
    std::vector<int64_t> here;
    for (int64_t t = 0; t < parts; ++t) {
      const int64_t lo = total * t / parts, hi = total * (t + 1) / parts;
      if (t + 1 == parts) {
        here.push_back(t);
        continue;
      }
      try {
        pool.emplace_back(scan_range, lo, hi, std::ref(part[size_t(t)]));
      } catch (const std::system_error&) {
        here.push_back(t);
      }
    }
    for (int64_t t : here) scan_range(total * t / parts, total * (t + 1) / parts, part[size_t(t)]);
    for (auto& th : pool) th.join();
  }
  for (size_t t = 1; t < part.size(); ++t) part[0].merge(part[t]);
  Comparison out;
  out.elements = total;
  part[0].finish(out, scan);
  return out;
}

}  // namespace nvfp4
