// html_charts.cpp — inline SVG charts and escaping for the HTML report (see html_charts.hpp).
// Text widths are estimated at 6.8 px per character of the 11 px sans-serif font the page sets;
// labels longer than their column are cut with an ellipsis (the full text is in a <title>).
#include "html_charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nvfp4 {

namespace {

constexpr double kCharPx = 6.8;

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string fixed(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// At most `chars` characters (UTF-8 aware), with an ellipsis when cut.
std::string clip(const std::string& s, size_t chars) {
  size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (n == chars) return s.substr(0, i) + "\xE2\x80\xA6";
    ++n;
  }
  return s;
}

std::string text(double x, double y, const std::string& s, const std::string& attrs = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" +
         html_escape(s) + "</text>";
}

std::string rect(double x, double y, double w, double h, const std::string& cls, const std::string& title = "") {
  std::string r = "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" +
                  px(h) + "\" class=\"" + cls + "\"";
  if (title.empty()) return r + "/>";
  return r + "><title>" + html_escape(title) + "</title></rect>";
}

std::string span_title(const StageSpan& s) {
  return s.stage + " " + human_seconds(s.seconds) + (s.completed ? "" : " (did not finish)");
}

// The stacked bar of one trial's stages from x, `scale` px per second.
std::string stage_bar(const std::vector<StageSpan>& stages, double x, double y, double h, double scale) {
  std::string out;
  for (const auto& s : stages) {
    const double w = std::max(s.seconds * scale, 0.0);
    out += rect(x, y, std::max(w, 0.5), h, "st-" + css_token(s.stage) + (s.completed ? "" : " unfinished"),
                span_title(s));
    x += w;
  }
  return out;
}

std::string svg_open(double w, double h, const std::string& cls) {
  return "<svg class=\"" + cls + "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(w) + "\" height=\"" + px(h) +
         "\" viewBox=\"0 0 " + px(w) + " " + px(h) + "\">";
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') out += "\xEF\xBF\xBD";
        else out += char(c);
    }
  }
  return out;
}

std::string css_token(const std::string& s) {
  if (s.empty()) return "other";
  std::string out;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') out += char(c - 'A' + 'a');
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-') out += c;
    else return "other";
  }
  return out;
}

std::string outcome_class(const std::string& outcome) {
  for (const char* o : {"PASS", "FAIL", "ERROR", "CRASH", "TIMEOUT", "SKIP", "BLOCKED"})
    if (outcome == o) return css_token(outcome);
  return "other";
}

std::string human_seconds(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 1e-3) return fixed("%.0f us", s * 1e6);
  if (s < 1) return fixed("%.3g ms", s * 1e3);
  return fixed("%.3g s", s);
}

std::string trial_timeline_svg(const std::vector<StageSpan>& stages) {
  double total = 0;
  for (const auto& s : stages) total += s.seconds;
  const double w = 560, bar = 18;
  std::string out = svg_open(w, 52, "timeline one");
  const double scale = total > 0 ? w / total : 0;
  out += stage_bar(stages, 0, 2, bar, scale);
  // Labels under the bar for every stage wide enough to carry one.
  double x = 0;
  for (const auto& s : stages) {
    const double sw = s.seconds * scale;
    const std::string label = s.stage + " " + human_seconds(s.seconds);
    if (sw >= label.size() * kCharPx) out += text(x + 2, bar + 16, label);
    x += sw;
  }
  out += text(0, 48, "total " + human_seconds(total) + " (each stage's time is in its tooltip)", "class=\"axis\"");
  return out + "</svg>";
}

std::string timeline_svg(const std::vector<TimelineRow>& rows) {
  size_t longest = 0;
  double slowest = 0;
  for (const auto& r : rows) {
    longest = std::max(longest, r.label.size());
    slowest = std::max(slowest, r.total);
  }
  const size_t label_chars = std::min<size_t>(longest, 64);
  const double label_w = label_chars * kCharPx + 16, bar_w = 520, row_h = 18, num_w = 70;
  const double w = label_w + bar_w + num_w, h = rows.size() * row_h + 24;
  const double scale = slowest > 0 ? bar_w / slowest : 0;
  std::string out = svg_open(w, h, "timeline");
  double y = 4;
  for (const auto& r : rows) {
    out += "<a href=\"" + html_escape(r.href) + "\">";
    out += rect(0, y, 8, row_h - 4, "o-" + outcome_class(r.outcome), r.outcome);
    out += text(12, y + 11, clip(r.label, label_chars), "class=\"label\"");
    out += stage_bar(r.stages, label_w, y, row_h - 4, scale);
    out += text(label_w + r.total * scale + 4, y + 11, human_seconds(r.total));
    out += "<title>" + html_escape(r.label + ": " + human_seconds(r.total)) + "</title></a>";
    y += row_h;
  }
  // A time axis with ticks at quarters of the slowest trial.
  for (int q = 0; q <= 4; ++q) {
    const double x = label_w + q * bar_w / 4;
    out += "<line x1=\"" + px(x) + "\" y1=\"" + px(y) + "\" x2=\"" + px(x) + "\" y2=\"" + px(y + 4) + "\" class=\"tick\"/>";
    out += text(x, y + 15, human_seconds(slowest * q / 4), "class=\"axis\" text-anchor=\"middle\"");
  }
  return out + "</svg>";
}

std::string ulp_histogram_svg(const std::vector<std::pair<std::string, double>>& buckets) {
  double top = 0;
  size_t widest = 1;
  for (const auto& b : buckets) {
    top = std::max(top, b.second);
    widest = std::max(widest, b.first.size());
  }
  const double col = std::max(34.0, widest * kCharPx + 8), plot_h = 90, base = plot_h + 16;
  const double w = std::max(buckets.size() * col, 200.0), h = base + 18;
  std::string out = svg_open(w, h, "hist");
  const double log_top = std::log10(top + 1);
  double x = 0;
  for (const auto& b : buckets) {
    const double bh = log_top > 0 ? std::max(plot_h * std::log10(b.second + 1) / log_top, 1.0) : 0;
    out += rect(x + 4, base - bh, col - 8, bh, "bar", b.first + " ulp: " + fixed("%.0f", b.second) + " elements");
    out += text(x + col / 2, base - bh - 3, fixed("%.0f", b.second), "text-anchor=\"middle\" class=\"count\"");
    out += text(x + col / 2, base + 13, b.first, "text-anchor=\"middle\" class=\"axis\"");
    x += col;
  }
  out += "<line x1=\"0\" y1=\"" + px(base) + "\" x2=\"" + px(w) + "\" y2=\"" + px(base) + "\" class=\"tick\"/>";
  return out + "</svg>";
}

std::string bench_chart_svg(const std::vector<BenchBar>& bars, const std::vector<BenchLine>& lines) {
  double top = 0;
  size_t longest = 8;
  for (const auto& b : bars) {
    if (std::isfinite(b.us)) top = std::max(top, b.us);
    longest = std::max(longest, b.label.size());
  }
  for (const auto& l : lines)
    if (std::isfinite(l.us)) top = std::max(top, l.us);
  top *= 1.05;
  const size_t label_chars = std::min<size_t>(longest, 40);
  const double label_w = label_chars * kCharPx + 12, plot_w = 560, note_w = 240, row_h = 22;
  const double head = 16 * double(lines.size()) + 6;
  const double w = label_w + plot_w + note_w, h = head + bars.size() * row_h + 24;
  const double scale = top > 0 ? plot_w / top : 0;
  std::string out = svg_open(w, h, "bench");
  double y = head;
  for (const auto& b : bars) {
    out += text(0, y + 14, clip(b.label, label_chars), "class=\"label\"");
    const bool drawn = std::isfinite(b.us) && b.us > 0;
    const double bw = drawn ? b.us * scale : 0;
    if (drawn)
      out += rect(label_w, y + 3, bw, row_h - 6, std::string(b.part ? "bar part" : "bar") + " o-" + outcome_class(b.outcome),
                  b.label + ": " + fixed("%.2f us", b.us));
    out += text(label_w + bw + 4, y + 14, (drawn ? fixed("%.1f us", b.us) + "  " : "") + b.note,
                b.outcome == "PASS" ? "" : "class=\"bad\"");
    y += row_h;
  }
  // Reference lines, each labelled in its own row above the plot.
  double ly = 12;
  for (const auto& l : lines) {
    if (!std::isfinite(l.us) || l.us <= 0) continue;
    const double x = label_w + l.us * scale;
    out += "<line x1=\"" + px(x) + "\" y1=\"" + px(ly + 2) + "\" x2=\"" + px(x) + "\" y2=\"" + px(y) + "\" class=\"ref " +
           css_token(l.css) + "\"/>";
    out += text(x + 3, ly, l.label + " " + fixed("%.1f us", l.us), "class=\"ref-label " + css_token(l.css) + "\"");
    ly += 16;
  }
  for (int q = 0; q <= 4; ++q) {
    const double x = label_w + q * plot_w / 4;
    out += "<line x1=\"" + px(x) + "\" y1=\"" + px(y) + "\" x2=\"" + px(x) + "\" y2=\"" + px(y + 4) + "\" class=\"tick\"/>";
    out += text(x, y + 16, fixed("%.0f us", top * q / 4), "class=\"axis\" text-anchor=\"middle\"");
  }
  return out + "</svg>";
}

}  // namespace nvfp4
