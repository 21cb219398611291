// criteria.hpp — compare_output's parts: one accumulator per criterion or metric of a Comparison
// (compare.hpp has the formulas; docs/design.md §4.9-4.12 the derivations).
//
// An accumulator is a struct with
//   void observe(const Element&)            one element, in index order within a range
//   void merge(const Self& later)           the accumulator of the range that follows
//   void finish(Comparison&, const Scan&)   its fields of the Comparison (verdicts are
//                                           Comparison's *_pass(), renderings check_report.hpp)
// and `Criteria` holds them all in one tuple, so scanning, merging and finishing reach every one
// by construction: a new criterion is one struct here plus one entry in `AllCriteria`. Merging
// ranges in index order gives exactly the serial result: counts add, maxima keep the earlier
// index on ties, bounded lists merge in order, and values whose sum depends on the order are
// kept and summed in index order at finish.
#pragma once
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "compare.hpp"

namespace nvfp4 {
namespace criteria {

// What the whole scan knows (the same for every element).
struct Scan {
  const ReferenceResult& ref;
  const Tolerance& tol;
  bool have_mid = false;   // the path exposes intermediates
  bool mid_sized = false;  // ... of the right size
  size_t g_hat_size = 0, u_hat_size = 0;
  // The certificate applies only with power-of-two alphas: a path may then fold them into the
  // scales or the terms without any rounding (compare.hpp, third criterion).
  bool cert_alphas = false;
};

// One element as every criterion sees it; the shared per-element quantities are computed once.
struct Element {
  int64_t i = 0;
  uint16_t got = 0, ref = 0;
  double g = 0, u = 0, s_g = 0, s_u = 0;
  ElementReport er;           // indices, bits, call; exact/err/bound from the verdict
  const Shape* shape = nullptr;  // the output's
  bool poisoned = false;      // still holds kPoisonBits (nothing below is set then)
  bool got_nan = false, ref_nan = false;
  bool gemm_error = false;    // intermediates given and G or U outside gemm_bound
  bool g_off = false, u_off = false;
  Tolerance::Verdict v{};     // the bound's verdict
  double x = 0;               // the output's value
  bool stat = false;          // in the statistics: finite on both sides, reference finite
  Statistic::Scale sc;        // (stat) tau, e_ep, h
  double beyond = 0;          // (stat) |c^ - c| - h - e_ep
  bool certified = false;     // G and U certified exact in fp32 and the allowance applies
  double e_ep_wide = 0;       // (stat) e_c for these G, U (+inf where it does not apply)
  double e_cert = 0;          // (certified) = e_ep_wide
};

// Keeps the `cap` elements with the largest err/bound (NaN/inf errors first), earlier first on ties.
void keep_worst(std::vector<ElementReport>& v, const ElementReport& r, size_t cap);
// min over i < n of a[i] + b[i], saturated at 255: the finer exponent of an element from its row's
// and column's per-block exponents (ReferenceResult::qb_a and qb_b1/qb_b2, each at most
// kZeroBlockQ, so below 255 the result is the exact minimum; the certificate uses it only below
// kZeroBlockQ). 255 for n = 0.
unsigned block_quantum(const uint8_t* a, const uint8_t* b, int64_t n);

struct Poison {  // unwritten elements, and elements computed from the poison (quieted)
  int64_t count = 0, read = 0;
  std::vector<ElementReport> first;
  void observe(const Element& e);
  void merge(const Poison& o);
  void finish(Comparison& out, const Scan&) const;
};

struct GpuMode {  // GPU MODE's rule, reported beside ours
  int64_t mismatches = 0;
  void observe(const Element& e);
  void merge(const GpuMode& o) { mismatches += o.mismatches; }
  void finish(Comparison& out, const Scan&) const { out.gpumode_mismatch = mismatches; }
};

struct UlpHistogram {  // distance to the reference's fp16 value
  uint32_t max_ulp = 0;
  std::vector<int64_t> hist = std::vector<int64_t>(kUlpBuckets, 0);
  void observe(const Element& e);
  void merge(const UlpHistogram& o);
  void finish(Comparison& out, const Scan&) const;
};

struct MaxError {  // max abs and rel error to the exact value
  double max_abs = 0, max_rel = 0;
  ElementReport max_abs_at, max_rel_at;
  void observe(const Element& e);
  void merge(const MaxError& o);
  void finish(Comparison& out, const Scan&) const;
};

struct Bound {  // the worst-case bound (unwritten elements count as rejected)
  int64_t over = 0, nan_mismatch = 0, inf_mismatch = 0;
  std::vector<ElementReport> worst;
  void observe(const Element& e);
  void merge(const Bound& o);
  void finish(Comparison& out, const Scan&) const;
};

struct OutlierCount {  // the statistical criterion: unexplained elements against n_crit
  int64_t elements = 0, unexplained = 0, one_ulp = 0;
  std::vector<double> excess;  // z of every element beyond one correct rounding + e_ep
  std::vector<ElementReport> at;
  void observe(const Element& e);
  void merge(const OutlierCount& o);
  void finish(Comparison& out, const Scan&) const;
};

struct Certified {  // the exactness certificate
  int64_t elements = 0, violations = 0, one_ulp = 0;
  double margin = INFINITY;
  std::vector<ElementReport> at;
  void observe(const Element& e);
  void merge(const Certified& o);
  void finish(Comparison& out, const Scan&) const;
};

struct MeanSquareExcess {  // the mean-square criterion
  std::vector<double> z2;  // z^2 of every selected element, in index order
  void observe(const Element& e);
  void merge(const MeanSquareExcess& o) { z2.insert(z2.end(), o.z2.begin(), o.z2.end()); }
  void finish(Comparison& out, const Scan&) const;
};

struct RoundingDirection {  // elements rounded toward zero where the exact value rounds away
  int64_t elements = 0, toward = 0;
  std::vector<double> p;  // p_i of every such element, in index order
  void observe(const Element& e);
  void merge(const RoundingDirection& o);
  void finish(Comparison& out, const Scan&) const;
};

struct Where {  // Comparison::flagged: the elements another accumulator flags, by position
  Locations at;
  void observe(const Element& e);
  void merge(const Where& o) { at.merge(o.at); }
  void finish(Comparison& out, const Scan& scan) const;
};

struct Attribution {  // where the rejected elements went wrong (reads the finished bound counts)
  int64_t g_off = 0, u_off = 0, rejected_real = 0, rejected_with_gemm_error = 0;
  void observe(const Element& e);
  void merge(const Attribution& o);
  void finish(Comparison& out, const Scan& scan) const;
};

// Every accumulator, folded generically. Finishing runs in this order.
template <class... C>
struct Criteria {
  std::tuple<C...> parts;
  void observe(const Element& e) {
    std::apply([&](auto&... c) { (c.observe(e), ...); }, parts);
  }
  void merge(const Criteria& later) { merge_each(later, std::index_sequence_for<C...>{}); }
  void finish(Comparison& out, const Scan& scan) const {
    std::apply([&](const auto&... c) { (c.finish(out, scan), ...); }, parts);
  }

 private:
  template <size_t... I>
  void merge_each(const Criteria& later, std::index_sequence<I...>) {
    (std::get<I>(parts).merge(std::get<I>(later.parts)), ...);
  }
};

using AllCriteria = Criteria<Poison, GpuMode, UlpHistogram, MaxError, Bound, OutlierCount, Certified,
                             MeanSquareExcess, RoundingDirection, Where, Attribution>;

// Fills the shared quantities of element i (everything but the accumulators' own work).
Element make_element(const Scan& scan, const uint16_t* got, const std::vector<float>* g_hat,
                     const std::vector<float>* u_hat, int64_t i, int call);

}  // namespace criteria
}  // namespace nvfp4
