// html_charts.hpp — the pieces of the HTML report (html_report.hpp) that draw: inline SVG charts
// written as text (no library, no network at view time), and the escaping that every string taken
// from a report passes through before it reaches the page.
//
// Colours come from CSS classes that html_report.cpp defines: a stage's rectangle has class
// "st-NAME" (NAME = the stage as the report names it, or "other" for a name that is not a plain
// identifier), an outcome's "o-NAME" (lower case).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace nvfp4 {

// Text for HTML content or a quoted attribute: & < > " ' as entities, control characters other
// than tab and line breaks as U+FFFD. Input is valid UTF-8 (json_read.hpp).
std::string html_escape(const std::string& s);
// A CSS class suffix for a report token ("run", "FAIL" -> "fail"): lower case letters, digits, '_'
// and '-' kept; anything else gives "other".
std::string css_token(const std::string& s);
// The CSS class suffix of an outcome: "pass", "fail", ... for the harness's outcomes, "other" for
// any outcome this page does not know.
std::string outcome_class(const std::string& outcome);
// Seconds for people: "850 us", "12.3 ms", "1.25 s".
std::string human_seconds(double s);

struct StageSpan {
  std::string stage;
  double seconds = 0;
  bool completed = true;
};

// One trial's stages as a labelled horizontal bar (own scale: the trial's total fills the width).
std::string trial_timeline_svg(const std::vector<StageSpan>& stages);

struct TimelineRow {
  std::string label, href, outcome;  // href: the trial's details ("#r0t12")
  std::vector<StageSpan> stages;
  double total = 0;  // sum of the stages' seconds
};
// Many trials on one time scale, in the order given (the caller sorts slowest first).
std::string timeline_svg(const std::vector<TimelineRow>& rows);

// A ULP histogram, buckets in the order given (label, count); bar heights on a log scale, since
// counts run from 1 to millions; the count above each bar.
std::string ulp_histogram_svg(const std::vector<std::pair<std::string, double>>& buckets);

struct BenchBar {
  std::string label, outcome, note;  // note: printed after the bar ("1.31x yardstick")
  double us = 0;                     // median; not drawn unless finite and > 0
  bool part = false;                 // a part of a path (plain's kernels alone), drawn lighter
};
struct BenchLine {
  std::string label, css;  // css: "floor", "yard", "torch"
  double us = 0;
};
// Horizontal bars (microseconds) with vertical reference lines (tensor-core floor, yardstick, ...).
std::string bench_chart_svg(const std::vector<BenchBar>& bars, const std::vector<BenchLine>& lines);

}  // namespace nvfp4
