// check_report.cpp — checking an output made elsewhere, and its report (see check_report.hpp), and
// json_text, the one way the project turns JSON into text (check_json.hpp).
//
// write_comparison_text and comparison_json render a Comparison: the one rendering used by
// report.cpp for trials and by the outside-output check (harness check, and the Python module's
// nvfp4_dual.check, which calls the same functions).
#include "check_report.hpp"

#include "misreading.hpp"

#include <cmath>
#include <cstdio>

#include "check_json.hpp"

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
  if (!r.cmp.pass())
    if (const auto found = find_misreading(p, output)) r.cmp.misreading = found->text();
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
  if (const std::string w = c.flagged.text(); !w.empty())
    os << in << "flagged elements: " << c.flagged.count << ", all in " << w << "\n";
  if (!c.misreading.empty()) os << in << "misreading: " << c.misreading << "\n";
  os << in << "attribution: " << c.attribution_detail << "\n";
  os << in << "GPU MODE check (|x-ref| <= 1e-3 + 1e-3*|ref|): " << (c.gpumode_pass() ? "pass" : "FAIL")
     << " (" << c.gpumode_mismatch << " mismatches)\n";
}

Json comparison_json(const Comparison& c) {
  auto element = [](const ElementReport& e) {
    return Json{{"l", e.l},
                {"m", e.m},
                {"n", e.n},
                {"got", hex16(e.got)},
                {"reference", hex16(e.ref)},
                {"got_value", e.got == kPoisonBits ? std::string("poison") : fmt("%.9g", fp16_to_double(e.got))},
                {"exact", e.exact},
                {"error", e.err},
                {"bound", e.bound},
                {"call", e.call}};
  };
  auto elements = [&](const std::vector<ElementReport>& v) {
    Json a = Json::array();
    for (const auto& e : v) a.push_back(element(e));
    return a;
  };
  Json j;
  j["elements"] = c.elements;
  j["over_tolerance"] = c.over_tolerance;
  j["nan_mismatch"] = c.nan_mismatch;
  j["inf_mismatch"] = c.inf_mismatch;
  j["unwritten"] = c.poisoned;
  j["max_abs"] = c.max_abs;
  j["max_rel"] = c.max_rel;
  j["max_ulp"] = int64_t(c.max_ulp);
  Json hist = Json::object();
  for (int b = 0; b < kUlpBuckets; ++b)
    if (c.ulp_hist[b]) hist[ulp_bucket_label(b)] = c.ulp_hist[b];
  j["ulp_histogram"] = std::move(hist);
  j["worst"] = elements(c.worst);
  j["unwritten_at"] = elements(c.first_poisoned);
  j["flagged"] = c.flagged.count;
  j["flagged_where"] = c.flagged.text();
  j["misreading"] = c.misreading;
  j["attribution"] = c.attribution;
  j["attribution_detail"] = c.attribution_detail;
  if (c.g_out_of_bound >= 0) {
    j["g_out_of_bound"] = c.g_out_of_bound;
    j["u_out_of_bound"] = c.u_out_of_bound;
  }
  j["criterion"] = c.criterion();
  j["statistic"] = {{"pass", c.stat_pass()},
                    {"elements", c.stat_elements},
                    {"unexplained", c.unexplained},
                    {"limit", c.unexplained_limit},
                    {"unexplained_one_ulp", c.unexplained_one_ulp},
                    {"margin", c.stat_margin},  // null when at most `limit` elements are off at all
                    {"element_margin", c.element_margin},  // lambda / largest z; null: all correctly rounded
                    {"excess_factor", c.excess_factor},
                    {"lambda", Statistic::kLambda},
                    {"false_alarm", Statistic::kFalseAlarm},
                    {"message", c.stat_message()},
                    {"unexplained_at", elements(c.unexplained_at)}};
  j["certificate"] = {{"pass", c.cert_pass()},
                      {"elements", c.certified},
                      {"violations", c.cert_violations},
                      {"one_ulp", c.cert_one_ulp},
                      {"margin", c.cert_margin},  // null: every certified element rounds correctly
                      {"message", c.cert_message()},
                      {"violations_at", elements(c.cert_at)}};
  j["mean_square"] = {{"pass", c.ms_pass()},
                      {"elements", c.ms_elements},
                      {"mean", c.ms_mean},
                      {"limit", c.ms_limit},    // null: no elements
                      {"margin", c.ms_margin},  // null: no element beyond one correct rounding
                      {"false_alarm", Statistic::kFalseAlarm},
                      {"message", c.ms_message()}};
  j["direction"] = {{"pass", c.dir_pass()},
                    {"elements", c.dir_elements},
                    {"toward_zero", c.dir_toward},
                    {"expected_max", c.dir_expected},
                    {"limit", c.dir_limit},
                    {"margin", c.dir_margin},  // null: none rounded toward zero
                    {"message", c.dir_message()}};
  j["gpumode_check"] = {{"pass", c.gpumode_pass()},
                        {"mismatches", c.gpumode_mismatch},
                        {"rule", "|x-ref| <= 1e-3 + 1e-3*|ref|, NaN/+inf/-inf must match"}};
  return j;
}

void write_comparison_json(std::ostream& os, const Comparison& c) { os << json_text(comparison_json(c)); }

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
  const Degeneracy& d = info.degeneracy;
  Json j;
  j["ok"] = c.pass();
  j["case"] = case_name;
  j["shape"] = info.ref.shape.str();
  j["output"] = output_name;
  j["alpha1"] = double(info.alpha1);
  j["alpha2"] = double(info.alpha2);
  j["reference_s"] = info.reference_seconds;
  j["degenerate"] = d.degenerate();
  j["degeneracy"] = {{"inf", d.inf}, {"nan", d.nan}, {"zero", d.zero}, {"total", d.total}, {"describe", d.describe()}};
  j["warnings"] = info.warnings;
  j["metrics"] = comparison_json(c);
  os << json_text(j);
}

std::string json_text(const Json& j) {
  // indent -1: compact; ensure_ascii false: UTF-8 as is; replace: bytes that are not UTF-8 become U+FFFD.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace nvfp4
