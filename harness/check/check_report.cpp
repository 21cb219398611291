// check_report.cpp — checking an output made elsewhere, and its report (see check_report.hpp).
//
// write_comparison_text and write_comparison_json render a Comparison: the one rendering used by
// report.cpp for trials and by the outside-output check (harness check, and the Python module's
// nvfp4_dual.check, which calls the same functions).
#include "check_report.hpp"

#include <cstdio>

#include <cmath>

#include "formats.hpp"

#include "text.hpp"

namespace nvfp4 {

namespace {


std::string hex16(uint16_t b) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04X", b);
  return buf;
}

std::string value16(uint16_t b) {
  if (b == kPoisonBits) return "poison(" + hex16(b) + ")";
  return fmt("%.6g", fp16_to_double(b)) + " (" + hex16(b) + ")";
}

std::string where(const ElementReport& e) {
  return "(" + std::to_string(e.l) + "," + std::to_string(e.m) + "," + std::to_string(e.n) + ")";
}

// The statistical gate's margin: > 1 passes, "inf" when (almost) every element rounds correctly.
std::string stat_margin_text(double m) {
  return std::isfinite(m) ? fmt("%.3g", m) : std::string("inf");
}

}  // namespace

CheckResult check_output(const Problem& p, const uint16_t* output, bool keep_reference) {
  CaseSpec spec;
  spec.shape = p.shape;
  auto info = analyse_case(spec, p);
  CheckResult r;
  r.cmp = compare_output(info->ref, info->alpha1, info->alpha2, output, nullptr, nullptr, 1);
  if (!keep_reference) {  // the flags and names, without copying the arrays
    info = info->light();
  }
  r.info = info;
  return r;
}

void write_comparison_text(std::ostream& os, const Comparison& c, const std::string& in) {
  os << in << "elements " << c.elements << ", over tolerance " << c.over_tolerance
     << " (NaN mismatch " << c.nan_mismatch << ", inf mismatch " << c.inf_mismatch << ", unwritten "
     << c.poisoned << ")\n";
  os << in << "max abs error " << fmt("%.4g", c.max_abs);
  if (c.max_abs > 0) os << " at " << where(c.max_abs_at);
  os << ", max rel error " << fmt("%.4g", c.max_rel);
  if (c.max_rel > 0) os << " at " << where(c.max_rel_at);
  os << ", max " << c.max_ulp << " ulp\n";
  os << in << "ulp histogram:";
  for (int b = 0; b < kUlpBuckets; ++b)
    if (c.ulp_hist[b]) os << " [" << ulp_bucket_label(b) << "] " << c.ulp_hist[b];
  os << "\n";
  for (const auto& e : c.worst)
    os << in << "  worst " << where(e) << " call " << e.call << ": got " << value16(e.got) << ", exact "
       << fmt("%.6g", e.exact) << ", reference " << value16(e.ref) << ", error " << fmt("%.4g", e.err)
       << " > bound " << fmt("%.4g", e.bound) << "\n";
  for (const auto& e : c.first_poisoned)
    os << in << "  unwritten " << where(e) << " call " << e.call << " (still holds the poison " << hex16(kPoisonBits)
       << "; exact " << fmt("%.6g", e.exact) << ")\n";
  os << in << "statistical gate: " << (c.stat_pass() ? "pass" : "FAIL") << ", " << c.unexplained
     << " of " << c.stat_elements << " elements unexplained by fp32 accumulation (limit "
     << c.unexplained_limit << "), margin " << stat_margin_text(c.stat_margin) << " (worst element "
     << stat_margin_text(c.element_margin) << ")\n";
  if (!c.stat_pass()) os << in << "  " << c.stat_message() << "\n";
  for (const auto& e : c.unexplained_at)
    os << in << "  unexplained " << where(e) << " call " << e.call << ": got " << value16(e.got) << ", exact "
       << fmt("%.6g", e.exact) << ", error " << fmt("%.4g", e.err) << " > " << fmt("%.4g", e.bound)
       << " (half an fp16 ulp + lambda*tau + epilogue)\n";
  os << in << "certificate: " << (c.cert_pass() ? "pass" : "FAIL") << ", " << c.cert_violations << " of "
     << c.certified << " elements with G and U exact in fp32 beyond the epilogue's allowance, margin "
     << stat_margin_text(c.cert_margin) << "\n";
  if (!c.cert_pass()) os << in << "  " << c.cert_message() << "\n";
  for (const auto& e : c.cert_at)
    os << in << "  not exact " << where(e) << " call " << e.call << ": got " << value16(e.got) << ", exact "
       << fmt("%.6g", e.exact) << ", error " << fmt("%.4g", e.err) << " > " << fmt("%.4g", e.bound)
       << " (half an fp16 ulp + the fp32 epilogue's roundings)\n";
  os << in << "mean-square gate: " << (c.ms_pass() ? "pass" : "FAIL") << ", mean z^2 " << fmt("%.3g", c.ms_mean)
     << " over " << c.ms_elements << " accumulation-dominated elements (limit " << stat_margin_text(c.ms_limit)
     << "), margin " << stat_margin_text(c.ms_margin) << "\n";
  if (!c.ms_pass()) os << in << "  " << c.ms_message() << "\n";
  os << in << "rounding direction: " << (c.dir_pass() ? "pass" : "FAIL") << ", " << c.dir_toward << " of "
     << c.dir_elements << " elements that round away from zero rounded toward it (limit " << c.dir_limit
     << "), margin " << stat_margin_text(c.dir_margin) << "\n";
  if (!c.dir_pass()) os << in << "  " << c.dir_message() << "\n";
  os << in << "attribution: " << c.attribution_detail << "\n";
  os << in << "GPU MODE check (|x-ref| <= 1e-3 + 1e-3*|ref|): " << (c.gpumode_pass() ? "pass" : "FAIL")
     << " (" << c.gpumode_mismatch << " mismatches)\n";
}

void write_comparison_json(JsonWriter& j, const Comparison& c) {
  auto element = [&](const ElementReport& e) {
    j.begin_object();
    j.key("l").value(e.l).key("m").value(e.m).key("n").value(e.n);
    j.key("got").value(hex16(e.got)).key("reference").value(hex16(e.ref));
    j.key("got_value").value(e.got == kPoisonBits ? std::string("poison") : fmt("%.9g", fp16_to_double(e.got)));
    j.key("exact").value(e.exact).key("error").value(e.err).key("bound").value(e.bound);
    j.key("call").value(e.call);
    j.end_object();
  };
  j.begin_object();
  j.key("elements").value(c.elements);
  j.key("over_tolerance").value(c.over_tolerance);
  j.key("nan_mismatch").value(c.nan_mismatch);
  j.key("inf_mismatch").value(c.inf_mismatch);
  j.key("unwritten").value(c.poisoned);
  j.key("max_abs").value(c.max_abs);
  j.key("max_rel").value(c.max_rel);
  j.key("max_ulp").value(int64_t(c.max_ulp));
  j.key("ulp_histogram").begin_object();
  for (int b = 0; b < kUlpBuckets; ++b)
    if (c.ulp_hist[b]) j.key(ulp_bucket_label(b)).value(c.ulp_hist[b]);
  j.end_object();
  j.key("worst").begin_array();
  for (const auto& e : c.worst) element(e);
  j.end_array();
  j.key("unwritten_at").begin_array();
  for (const auto& e : c.first_poisoned) element(e);
  j.end_array();
  j.key("attribution").value(c.attribution);
  j.key("attribution_detail").value(c.attribution_detail);
  if (c.g_out_of_bound >= 0) {
    j.key("g_out_of_bound").value(c.g_out_of_bound);
    j.key("u_out_of_bound").value(c.u_out_of_bound);
  }
  j.key("criterion").value(c.criterion());
  j.key("statistic").begin_object();
  j.key("pass").value(c.stat_pass()).key("elements").value(c.stat_elements);
  j.key("unexplained").value(c.unexplained).key("limit").value(c.unexplained_limit);
  j.key("unexplained_one_ulp").value(c.unexplained_one_ulp);
  // null when at most `limit` elements are off at all (an infinite margin)
  j.key("margin").value(c.stat_margin);
  j.key("element_margin").value(c.element_margin);  // lambda / largest z; null: all correctly rounded
  j.key("excess_factor").value(c.excess_factor);
  j.key("lambda").value(Statistic::kLambda).key("false_alarm").value(Statistic::kFalseAlarm);
  j.key("message").value(c.stat_message());
  j.key("unexplained_at").begin_array();
  for (const auto& e : c.unexplained_at) element(e);
  j.end_array();
  j.end_object();
  j.key("certificate").begin_object();
  j.key("pass").value(c.cert_pass()).key("elements").value(c.certified);
  j.key("violations").value(c.cert_violations).key("one_ulp").value(c.cert_one_ulp);
  j.key("margin").value(c.cert_margin);  // null: every certified element rounds correctly
  j.key("message").value(c.cert_message());
  j.key("violations_at").begin_array();
  for (const auto& e : c.cert_at) element(e);
  j.end_array();
  j.end_object();
  j.key("mean_square").begin_object();
  j.key("pass").value(c.ms_pass()).key("elements").value(c.ms_elements);
  j.key("mean").value(c.ms_mean).key("limit").value(c.ms_limit);  // limit null: no elements
  j.key("margin").value(c.ms_margin);  // null: no element beyond one correct rounding
  j.key("false_alarm").value(Statistic::kFalseAlarm);
  j.key("message").value(c.ms_message());
  j.end_object();
  j.key("direction").begin_object();
  j.key("pass").value(c.dir_pass()).key("elements").value(c.dir_elements);
  j.key("toward_zero").value(c.dir_toward).key("expected_max").value(c.dir_expected);
  j.key("limit").value(c.dir_limit);
  j.key("margin").value(c.dir_margin);  // null: none rounded toward zero
  j.key("message").value(c.dir_message());
  j.end_object();
  j.key("gpumode_check").begin_object();
  j.key("pass").value(c.gpumode_pass()).key("mismatches").value(c.gpumode_mismatch);
  j.key("rule").value("|x-ref| <= 1e-3 + 1e-3*|ref|, NaN/+inf/-inf must match");
  j.end_object();
  j.end_object();
}

void write_check_text(std::ostream& os, const CaseInfo& info, const Comparison& c, const std::string& case_name,
                      const std::string& output_name) {
  os << "case: " << case_name << ", shape " << info.ref.shape.str() << " (exact reference in "
     << fmt("%.3f", info.reference_seconds) << " s)\n";
  for (const auto& w : info.warnings) os << "warning: suspicious data: " << w << "\n";
  if (info.degeneracy.degenerate())
    os << "DEGENERATE reference: " << info.degeneracy.describe()
       << " (this check cannot tell a right kernel from a wrong one)\n";
  os << "check of " << output_name << " against the exact reference: " << (c.pass() ? "PASS" : "FAIL") << "\n";
  write_comparison_text(os, c, "  ");
}

void write_check_json(std::ostream& os, const CaseInfo& info, const Comparison& c, const std::string& case_name,
                      const std::string& output_name) {
  JsonWriter j(os);
  j.begin_object();
  j.key("ok").value(c.pass());
  j.key("case").value(case_name);
  j.key("shape").value(info.ref.shape.str());
  j.key("output").value(output_name);
  j.key("alpha1").value(double(info.alpha1)).key("alpha2").value(double(info.alpha2));
  j.key("reference_s").value(info.reference_seconds);
  j.key("degenerate").value(info.degeneracy.degenerate());
  j.key("degeneracy").begin_object();
  j.key("inf").value(info.degeneracy.inf).key("nan").value(info.degeneracy.nan);
  j.key("zero").value(info.degeneracy.zero).key("total").value(info.degeneracy.total);
  j.key("describe").value(info.degeneracy.describe());
  j.end_object();
  j.key("warnings").array(info.warnings);
  j.key("metrics");
  write_comparison_json(j, c);
  j.end_object();
}

}  // namespace nvfp4
