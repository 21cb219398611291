// html_report.cpp — the self-contained HTML page (see html_report.hpp). The page's style and
// script are html_page_style() and html_page_script() at the end of this file.
#include "html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "html_charts.hpp"

namespace nvfp4 {

namespace {

const char* html_page_style();
const char* html_page_script();

std::string fixed(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "16384" -> "16k": a grid cell has room for four characters; the exact number is in its title.
std::string short_count(const std::string& n) {
  if (n.size() <= 4 || n.find_first_not_of("0123456789") != std::string::npos) return n;
  return n.substr(0, n.size() - 3) + "k";
}

std::string badge(const std::string& outcome, const std::string& text) {
  return "<span class=\"badge o-" + outcome_class(outcome) + "\">" + html_escape(text) + "</span>";
}

// A two-column table of (key, text) pairs; empty string when there are none.
std::string kv_table(const std::vector<std::pair<std::string, std::string>>& kv, const std::string& cls = "kv") {
  if (kv.empty()) return "";
  std::string out = "<table class=\"" + cls + "\">";
  for (const auto& p : kv)
    out += "<tr><th>" + html_escape(p.first) + "</th><td>" + html_escape(p.second) + "</td></tr>";
  return out + "</table>";
}

// A table whose columns are the union of the objects' keys (flattened), in first-seen order.
std::string object_table(const std::vector<JsonValue>& objects) {
  std::vector<std::string> cols;
  std::vector<std::map<std::string, std::string>> rows;
  for (const auto& o : objects) {
    rows.emplace_back();
    for (const auto& kv : flatten(o)) {
      if (std::find(cols.begin(), cols.end(), kv.first) == cols.end()) cols.push_back(kv.first);
      rows.back()[kv.first] = kv.second;
    }
  }
  std::string out = "<table class=\"data\"><tr>";
  for (const auto& c : cols) out += "<th>" + html_escape(c) + "</th>";
  out += "</tr>";
  for (auto& r : rows) {
    out += "<tr>";
    for (const auto& c : cols) out += "<td>" + html_escape(r[c]) + "</td>";
    out += "</tr>";
  }
  return out + "</table>";
}

std::vector<StageSpan> stages_of(const JsonValue& trial) {
  std::vector<StageSpan> out;
  const JsonValue* st = trial.find("stages");
  if (!st || !st->is_array()) return out;
  for (const auto& s : st->items()) {
    const JsonValue* done = s.find("completed");
    out.push_back({s.str_or("stage", "?"), s.number_or("seconds", 0), !(done && done->is_bool() && !done->boolean())});
  }
  return out;
}

// Fields whose name contains "margin" (the statistical gate's), anywhere in the trial.
std::vector<std::pair<std::string, std::string>> margins(const JsonValue& trial) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : flatten(trial))
    if (kv.first.find("margin") != std::string::npos) out.push_back(kv);
  return out;
}

// ---- a verify/bisect report ----

struct Trial {
  const JsonValue* json;
  std::string id, backend, combo, case_name, outcome;
};

class VerifyPage {
 public:
  VerifyPage(std::ostream& os, const JsonValue& report, int r) : os_(os), report_(report) {
    const JsonValue* trials = report.find("trials");
    if (!trials || !trials->is_array()) return;
    int position = 0;
    for (const auto& t : trials->items()) {
      ++position;
      const JsonValue* index = t.find("index");
      const std::string n = index && index->is_number() ? index->text() : std::to_string(position);
      trials_.push_back({&t, "r" + std::to_string(r) + "t" + n, t.str_or("backend", "?"), t.str_or("combo", "?"),
                         trial_case_name(t), t.str_or("outcome", "?")});
    }
  }

  void write(const std::string& source) {
    header(source);
    std::vector<std::string> backends;
    for (const auto& t : trials_)
      if (std::find(backends.begin(), backends.end(), t.backend) == backends.end()) backends.push_back(t.backend);
    for (const auto& b : backends) grid(b);
    os_ << "<div class=\"details\"><p class=\"placeholder\">Click a cell to see the trial's details and its "
           "reproducer.</p>";
    for (const auto& t : trials_) details(t);
    os_ << "</div>";
    timeline();
    cases();
    os_ << "</section>";
  }

 private:
  const Trial* find(const std::string& backend, const std::string& combo, const std::string& case_name) const {
    for (const auto& t : trials_)
      if (t.backend == backend && t.combo == combo && t.case_name == case_name) return &t;
    return nullptr;
  }

  // The trials a BLOCKED trial points to: each combination of "blocked_by" on the same case.
  std::vector<const Trial*> blockers(const Trial& t) const {
    std::vector<const Trial*> out;
    std::stringstream ss(t.json->str_or("blocked_by", ""));
    for (std::string combo; std::getline(ss, combo, ',');) {
      combo.erase(0, combo.find_first_not_of(' '));
      if (const Trial* b = find(t.backend, combo, t.case_name)) out.push_back(b);
    }
    return out;
  }

  void header(const std::string& source) {
    const JsonValue& r = report_;
    os_ << "<section class=\"report\"><h1>nvfp4-dual harness: " << html_escape(r.str_or("mode", "report"));
    if (const JsonValue* code = r.find("exit_code")) os_ << " <small>exit " << html_escape(code->text()) << "</small>";
    os_ << "</h1><p class=\"cmd\"><code>" << html_escape(r.str_or("command", "")) << "</code></p><p>";
    if (const JsonValue* s = r.find("summary"); s && s->is_object())
      for (const auto& m : s->members())
        if (m.second.text() != "0") os_ << badge(m.first, m.second.text() + " " + m.first) << " ";
    os_ << html_escape(std::to_string(trials_.size()) + " trials in " + human_seconds(r.number_or("elapsed_s", NAN)) +
                       "; from " + source)
        << "</p>";
    if (const JsonValue* v = r.find("verdicts"); v && v->is_array() && !v->items().empty()) {
      os_ << "<h2>Verdicts</h2>";
      for (const auto& line : v->items()) os_ << "<pre>" << html_escape(line.text()) << "</pre>";
    }
    if (const JsonValue* bs = r.find("backends"); bs && bs->is_array()) {
      os_ << "<ul class=\"backends\">";
      for (const auto& b : bs->items()) {
        const JsonValue* a = b.find("available");
        const bool ok = a && a->is_bool() && a->boolean();
        os_ << "<li>backend <b>" << html_escape(b.str_or("name", "?")) << "</b>: "
            << (ok ? "available" : "not available: " + html_escape(b.str_or("reason", ""))) << "</li>";
      }
      os_ << "</ul>";
    }
    std::vector<std::pair<std::string, std::string>> rest =
        flatten(r, {"tool", "mode", "command", "exit_code", "elapsed_s", "backends", "cases", "trials", "verdicts",
                    "summary"});
    if (!rest.empty()) os_ << "<details><summary>options and other fields</summary>" << kv_table(rest) << "</details>";
  }

  void grid(const std::string& backend) {
    std::vector<std::string> combos, cases;
    for (const auto& t : trials_) {
      if (t.backend != backend) continue;
      if (std::find(combos.begin(), combos.end(), t.combo) == combos.end()) combos.push_back(t.combo);
      if (std::find(cases.begin(), cases.end(), t.case_name) == cases.end()) cases.push_back(t.case_name);
    }
    os_ << "<h2>Lattice: backend " << html_escape(backend) << " <small>(" << combos.size() << " combinations x "
        << cases.size() << " cases)</small></h2><div class=\"gridwrap\"><table class=\"grid\" id=\"grid-"
        << html_escape(css_token(backend)) << "\"><tr><th class=\"corner\">combination \\ case</th>";
    for (const auto& c : cases) os_ << "<th class=\"case\"><div>" << html_escape(c) << "</div></th>";
    os_ << "</tr>";
    for (const auto& combo : combos) {
      std::map<std::string, int> counts;
      double min_margin = INFINITY;
      for (const auto& t : trials_) {
        if (t.backend != backend || t.combo != combo) continue;
        ++counts[t.outcome];
        for (const auto& m : margins(*t.json)) {
          char* end = nullptr;
          const double v = std::strtod(m.second.c_str(), &end);
          if (end && *end == '\0' && !m.second.empty()) min_margin = std::min(min_margin, v);
        }
      }
      std::string tally;
      for (const auto& kv : counts) tally += (tally.empty() ? "" : " ") + std::to_string(kv.second) + " " + kv.first;
      if (std::isfinite(min_margin)) tally += "; smallest margin " + fixed("%.3g", min_margin);
      os_ << "<tr><th class=\"combo\">" << html_escape(combo) << "<br><small>" << html_escape(tally) << "</small></th>";
      for (const auto& c : cases) {
        const Trial* t = find(backend, combo, c);
        if (!t) {
          os_ << "<td class=\"empty\"></td>";
          continue;
        }
        cell(*t);
      }
      os_ << "</tr>";
    }
    os_ << "</table><svg class=\"arrows\" xmlns=\"http://www.w3.org/2000/svg\"></svg></div>" << legend();
  }

  void cell(const Trial& t) {
    const JsonValue& j = *t.json;
    std::string label = "?", title = t.outcome + " " + t.backend + " " + t.combo + " " + t.case_name;
    std::string extra, by;
    if (t.outcome == "PASS") {
      const JsonValue* m = j.find("metrics");
      const JsonValue* u = m ? m->find("max_ulp") : nullptr;
      label = u ? short_count(u->text()) : "ok";
      title += u ? ", max " + u->text() + " ulp" : "";
      const JsonValue* d = j.find("degenerate");
      if (d && d->is_bool() && d->boolean()) {
        extra = " degen";
        title += ", DEGENERATE reference";
      }
    } else if (t.outcome == "BLOCKED") {
      label = "\xE2\x86\x91";  // an arrow up: the blocker's row is above
      for (const Trial* b : blockers(t)) by += (by.empty() ? "" : " ") + b->id;
    } else if (!t.outcome.empty()) {
      label = t.outcome.substr(0, 1);
    }
    const std::string msg = j.str_or("message", "");
    if (!msg.empty()) title += ": " + msg;
    os_ << "<td class=\"o-" << outcome_class(t.outcome) << extra << "\"><a class=\"cell\" href=\"#" << t.id
        << "\" data-t=\"" << t.id << "\"" << (by.empty() ? "" : " data-by=\"" + by + "\"") << " title=\""
        << html_escape(title) << "\">" << html_escape(label) << "</a></td>";
  }

  static std::string legend() {
    std::string out = "<p class=\"legend\">";
    for (const char* o : {"PASS", "FAIL", "ERROR", "CRASH", "TIMEOUT", "SKIP", "BLOCKED"}) out += badge(o, o) + " ";
    return out + "PASS cells show the largest ULP error; a dotted outline marks a DEGENERATE reference; "
                 "\xE2\x86\x91 = BLOCKED by a failing sub-combination (hover or click to see which).</p>";
  }

  void details(const Trial& t) {
    const JsonValue& j = *t.json;
    os_ << "<section class=\"trial\" id=\"" << t.id << "\"><h3>" << badge(t.outcome, t.outcome) << " "
        << html_escape(t.backend + " " + t.combo + " " + t.case_name) << "</h3>";
    std::string head;
    if (const JsonValue* st = j.find("stage"))
      head = "in stage " + st->text() + " after " + human_seconds(j.number_or("stage_elapsed_s", NAN)) + ": ";
    head += j.str_or("message", "");
    if (!head.empty()) os_ << "<p class=\"msg\">" << html_escape(head) << "</p>";
    const auto gate = margins(j);
    if (!gate.empty()) os_ << "<div class=\"gate\"><b>statistical gate</b>" << kv_table(gate) << "</div>";
    os_ << "<div class=\"repro\"><span>reproduce</span><button class=\"copy\" type=\"button\">copy</button><pre><code>"
        << html_escape(j.str_or("reproducer", "")) << "</code></pre></div>";
    if (t.outcome == "BLOCKED") {
      os_ << "<p>blocked by " << html_escape(j.str_or("blocked_by", "?"));
      for (const Trial* b : blockers(t))
        os_ << " &rarr; <a href=\"#" << b->id << "\">" << html_escape(b->combo + " on this case (" + b->outcome + ")")
            << "</a>";
      os_ << "</p>";
    }
    std::vector<std::pair<std::string, std::string>> facts;
    if (!j.str_or("path", "").empty()) facts.push_back({"path", j.str_or("path", "")});
    if (t.outcome != "BLOCKED" && t.outcome != "SKIP") facts.push_back({"wall time", human_seconds(j.number_or("wall_s", NAN))});
    os_ << kv_table(facts);
    const auto stages = stages_of(j);
    if (!stages.empty()) os_ << "<h4>Stages</h4>" << trial_timeline_svg(stages);
    for (const char* list : {"notes", "warnings"})
      if (const JsonValue* v = j.find(list); v && v->is_array() && !v->items().empty()) {
        os_ << "<h4>" << list << "</h4><ul>";
        for (const auto& x : v->items()) os_ << "<li>" << html_escape(x.text()) << "</li>";
        os_ << "</ul>";
      }
    if (const JsonValue* m = j.find("metrics"); m && m->is_object()) metrics(j, *m);
    const auto rest = flatten(j, {"index", "backend", "combo", "case", "outcome", "stage", "stage_elapsed_s", "message",
                                  "blocked_by", "wall_s", "path", "stages", "notes", "warnings", "metrics", "child_log",
                                  "reproducer"});
    if (!rest.empty()) os_ << "<h4>Other fields</h4>" << kv_table(rest);
    const std::string log = j.str_or("child_log", "");
    if (!log.empty()) os_ << "<h4>Child log (tail)</h4><pre class=\"log\">" << html_escape(log) << "</pre>";
    os_ << "</section>";
  }

  void metrics(const JsonValue& trial, const JsonValue& m) {
    std::vector<std::pair<std::string, double>> buckets;
    if (const JsonValue* h = m.find("ulp_histogram"); h && h->is_object())
      for (const auto& b : h->members()) buckets.push_back({b.first, b.second.is_number() ? b.second.number() : 0});
    const std::string call = trial.find("metrics_call") ? trial.at("metrics_call").text() : "?";
    os_ << "<h4>ULP histogram <small>(call " << html_escape(call) << ", elements per error size)</small></h4>";
    if (buckets.empty()) os_ << "<p>no element has a finite error to count</p>";
    else os_ << ulp_histogram_svg(buckets);
    for (const char* list : {"worst", "unwritten_at"})
      if (const JsonValue* v = m.find(list); v && v->is_array() && !v->items().empty())
        os_ << "<h4>" << (list[0] == 'w' ? "Worst elements" : "Unwritten elements") << "</h4>" << object_table(v->items());
    os_ << "<h4>Metrics</h4>" << kv_table(flatten(m, {"ulp_histogram", "worst", "unwritten_at"}), "kv metrics");
  }

  void timeline() {
    std::vector<TimelineRow> rows;
    for (const auto& t : trials_) {
      TimelineRow row{t.backend + " " + t.combo + " " + t.case_name, "#" + t.id, t.outcome, stages_of(*t.json), 0};
      for (const auto& s : row.stages) row.total += s.seconds;
      if (!row.stages.empty()) rows.push_back(std::move(row));
    }
    if (rows.empty()) return;
    std::stable_sort(rows.begin(), rows.end(), [](const TimelineRow& a, const TimelineRow& b) { return a.total > b.total; });
    const size_t shown = std::min<size_t>(rows.size(), 40);
    os_ << "<h2>Stage times, slowest trials first <small>(" << shown << " of " << rows.size() << ")</small></h2>";
    std::vector<std::string> names;  // in the order trials run them
    for (const auto& r : rows)
      for (const auto& s : r.stages)
        if (std::find(names.begin(), names.end(), s.stage) == names.end()) names.push_back(s.stage);
    os_ << "<p class=\"legend\">";
    for (const auto& n : names)
      os_ << "<span class=\"swatch st-" << css_token(n) << "\"></span>" << html_escape(n) << " ";
    os_ << "<span class=\"swatch unfinished\"></span>did not finish</p>";
    rows.resize(shown);
    os_ << "<div class=\"scroll\">" << timeline_svg(rows) << "</div>";
  }

  void cases() {
    const JsonValue* cs = report_.find("cases");
    if (!cs || !cs->is_array() || cs->items().empty()) return;
    os_ << "<h2>Cases</h2><div class=\"scroll\">" << object_table(cs->items()) << "</div>";
  }

  std::ostream& os_;
  const JsonValue& report_;
  std::vector<Trial> trials_;
};

// ---- a bench report ----

// 4*M*N*K*L for "MxNxK[xL]", or NaN.
double shape_flops(const std::string& shape) {
  std::vector<double> d;
  std::stringstream ss(shape);
  for (std::string part; std::getline(ss, part, 'x');) d.push_back(std::strtod(part.c_str(), nullptr));
  if (d.size() < 3 || d.size() > 4) return NAN;
  return 4 * d[0] * d[1] * d[2] * (d.size() == 4 ? d[3] : 1);
}

void bench_section(std::ostream& os, const JsonValue& r, const std::string& source) {
  const JsonValue* dev = r.find("device");
  os << "<section class=\"report\"><h1>nvfp4-dual bench: " << html_escape(dev ? dev->str_or("name", "?") : "?")
     << "</h1><p>from " << html_escape(source) << "</p>";
  std::vector<std::pair<std::string, std::string>> top = flatten(r, {"mode", "shapes"});
  os << "<details><summary>device, method and other fields</summary>" << kv_table(top) << "</details>";
  const double peak = r.number_or("peak_bf16_tflops", NAN);
  os << "<p>Bars: median time per call (cold L2). Lines: the tensor-core floor = 4&middot;M&middot;N&middot;K&middot;L / "
     << html_escape(fixed("%.0f", peak)) << " TFLOP/s (the bf16 peak measured in this run), the yardstick "
        "(cuBLASLt bf16 GEMM, graph-replayed) and torch.compile (quoted, not measured in this run).</p>";
  const JsonValue* shapes = r.find("shapes");
  if (!shapes || !shapes->is_array()) {
    os << "<p>no shapes in this report</p></section>";
    return;
  }
  static const std::vector<std::string> known = {
      "combo", "outcome", "message", "describe", "check", "max_ulp", "gpumode_mismatch", "stages_s", "reps",
      "median_us", "min_us", "mean_us", "stdev_us", "median_rse", "b2b_us", "tflops", "pct_peak",
      "x_yardstick_graph", "x_yardstick_eager", "speedup_vs_torch_compile"};
  for (const auto& s : shapes->items()) {
    const std::string shape = s.str_or("shape", "?");
    const double floor_us = shape_flops(shape) / (peak * 1e12) * 1e6;
    std::vector<BenchBar> bars;
    double yard_us = NAN;  // the last yardstick row that passed: the graph-replayed one (optimized/gpu/bench.cpp)
    std::string table =
        "<table class=\"data\"><tr><th>row</th><th>combination</th><th>outcome</th><th>median us</th><th>min us</th>"
        "<th>rse</th><th>reps</th><th>b2b us</th><th>TFLOP/s</th><th>% peak</th><th>x yardstick</th>"
        "<th>vs torch.compile</th><th>check</th><th>stages (s)</th><th>other</th></tr>";
    for (const char* group : {"yardstick", "combos", "plain_parts"}) {
      const JsonValue* rows = s.find(group);
      if (!rows || !rows->is_array()) continue;
      for (const auto& row : rows->items()) {
        const std::string combo = row.str_or("combo", "?"), outcome = row.str_or("outcome", "?");
        const double med = row.number_or("median_us", NAN);
        std::string note = outcome == "PASS" ? "" : outcome + ": " + row.str_or("message", "");
        const double x = row.number_or("x_yardstick_graph", NAN);
        if (outcome == "PASS" && std::string(group) == "combos" && std::isfinite(x)) note += fixed("%.2fx yardstick", x);
        const std::string kind = std::string(group) == "combos" ? "" : std::string(group) == "yardstick" ? "yardstick: " : "part: ";
        bars.push_back({kind + combo, outcome, note, outcome == "PASS" ? med : NAN, std::string(group) == "plain_parts"});
        if (std::string(group) == "yardstick" && outcome == "PASS" && std::isfinite(med)) yard_us = med;
        std::string stages;
        if (const JsonValue* st = row.find("stages_s"))
          for (const auto& kv : flatten(*st))
            if (kv.second != "null") stages += kv.first + " " + kv.second + " ";
        std::string other;
        for (const auto& kv : flatten(row, known)) other += kv.first + " " + kv.second + "; ";
        table += "<tr><td>" + html_escape(group) + "</td><td>" + html_escape(combo) + "</td><td>" + badge(outcome, outcome) +
                 "</td><td>" + fixed("%.2f", med) + "</td><td>" + fixed("%.2f", row.number_or("min_us", NAN)) + "</td><td>" +
                 fixed("%.2f%%", 100 * row.number_or("median_rse", NAN)) + "</td><td>" +
                 fixed("%.0f", row.number_or("reps", NAN)) + "</td><td>" + fixed("%.2f", row.number_or("b2b_us", NAN)) +
                 "</td><td>" + fixed("%.1f", row.number_or("tflops", NAN)) + "</td><td>" +
                 fixed("%.1f", row.number_or("pct_peak", NAN)) + "</td><td>" + fixed("%.2f", x) + "</td><td>" +
                 fixed("%.2fx", row.number_or("speedup_vs_torch_compile", NAN)) + "</td><td>" +
                 html_escape(row.str_or("check", "")) + "</td><td>" + html_escape(stages) + "</td><td>" +
                 html_escape(other) + "</td></tr>";
      }
    }
    const std::vector<BenchLine> lines = {{"tensor-core floor", "floor", floor_us},
                                          {"yardstick", "yard", yard_us},
                                          {"torch.compile (quoted)", "torch", s.number_or("torch_compile_us", NAN)}};
    os << "<h2>Shape " << html_escape(shape) << " <small>(tensor-core floor " << html_escape(fixed("%.1f us", floor_us))
       << ")</small></h2><div class=\"scroll\">" << bench_chart_svg(bars, lines) << "</div><div class=\"scroll\">"
       << table << "</table></div>";
  }
  os << "</section>";
}

}  // namespace

void write_html(std::ostream& os, const std::vector<JsonValue>& reports, const std::vector<std::string>& sources) {
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<title>nvfp4-dual harness report</title><style>"
     << html_page_style()
     << "</style><script>window.onerror = function (msg, src, line) {"
        " var d = document.createElement('div'); d.id = 'script-error'; d.className = 'script-error';"
        " d.textContent = 'script error: ' + msg + ' (line ' + line + ')';"
        " (document.body || document.documentElement).appendChild(d); };</script></head><body>\n"
        "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>"
        "<marker id=\"arrowhead\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
        "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#222\"/></marker>"
        "<pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"3\" height=\"6\" fill=\"#d62728\"/></pattern></defs></svg>\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    const std::string source = i < sources.size() ? sources[i] : "a report";
    if (is_bench_report(reports[i])) {
      bench_section(os, reports[i], source);
    } else {
      VerifyPage(os, reports[i], int(i)).write(source);
    }
    os << "\n";
  }
  os << "<script>" << html_page_script() << "</script></body></html>\n";
}

namespace {

const char* html_page_style() {
  return R"CSS(
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 16px 24px; color: #1d1d1f; background: #fff; }
h1 { font-size: 20px; margin: 8px 0 4px; } h2 { font-size: 16px; margin: 22px 0 6px; } h3 { font-size: 14px; margin: 4px 0; } h4 { font-size: 13px; margin: 12px 0 4px; }
small { color: #666; font-weight: normal; } code, pre { font: 12px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: #f5f5f7; padding: 6px 8px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; margin: 4px 0; }
.cmd code { background: #f5f5f7; padding: 2px 6px; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 12px; font-weight: 600; }
.o-pass { background: #d3f1d8; color: #14532d; } .o-fail { background: #f8c9c9; color: #7f1d1d; }
.o-error { background: #fdd9b5; color: #7c2d12; } .o-crash { background: #7f1d1d; color: #fff; }
.o-timeout { background: #ddd0f4; color: #3b0764; } .o-skip { background: #e5e5e5; color: #555; }
.o-blocked { background: repeating-linear-gradient(135deg, #e5e5e5 0 4px, #f4f4f4 4px 8px); color: #333; }
.o-other { background: #fff3a3; color: #333; }
rect.o-pass { fill: #3fae5a; } rect.o-fail { fill: #d62728; } rect.o-error { fill: #f28e2b; } rect.o-crash { fill: #7f1d1d; }
rect.o-timeout { fill: #9467bd; } rect.o-skip, rect.o-blocked, rect.o-other { fill: #bbb; }
.gridwrap { position: relative; overflow-x: auto; padding-bottom: 4px; }
table.grid { border-collapse: separate; border-spacing: 2px; }
table.grid th.case { vertical-align: bottom; padding: 0 0 4px; }
table.grid th.case div { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; font-size: 11px; font-weight: normal; color: #333; }
table.grid th.combo { text-align: right; padding-right: 6px; white-space: nowrap; font-weight: 600; }
table.grid th.corner { vertical-align: bottom; text-align: right; color: #888; font-weight: normal; font-size: 11px; }
table.grid td { width: 28px; height: 24px; padding: 0; text-align: center; border-radius: 3px; }
table.grid td.empty { background: #fafafa; }
table.grid td.degen { outline: 2px dotted #b45309; outline-offset: -3px; }
a.cell { display: block; line-height: 24px; color: inherit; text-decoration: none; font-size: 11px; font-weight: 600; border-radius: 3px; }
a.cell:hover { box-shadow: 0 0 0 2px #1d1d1f; }
a.cell.sel { box-shadow: 0 0 0 3px #2563eb; } a.cell.blocker { box-shadow: 0 0 0 3px #111; }
svg.arrows { position: absolute; left: 0; top: 0; pointer-events: none; overflow: visible; }
svg.arrows line { stroke: #111; stroke-width: 2; }
.legend { color: #444; font-size: 12px; }
.swatch { display: inline-block; width: 12px; height: 10px; margin: 0 3px 0 8px; vertical-align: middle; }
span.st-setup, span.st-teardown { background: #c9c9c9; } span.st-load { background: #9c755f; } span.st-init { background: #4e79a7; }
span.st-tune { background: #f28e2b; } span.st-warmup { background: #76b7b2; } span.st-first_call { background: #edc948; }
span.st-capture { background: #b07aa1; } span.st-run { background: #59a14f; } span.st-other { background: #999; }
span.unfinished { background: repeating-linear-gradient(45deg, #d62728 0 3px, #fff 3px 6px); }
rect.st-setup, rect.st-teardown { fill: #c9c9c9; } rect.st-load { fill: #9c755f; } rect.st-init { fill: #4e79a7; }
rect.st-tune { fill: #f28e2b; } rect.st-warmup { fill: #76b7b2; } rect.st-first_call { fill: #edc948; }
rect.st-capture { fill: #b07aa1; } rect.st-run { fill: #59a14f; } rect.st-other { fill: #999; }
rect.unfinished { fill: url(#hatch); stroke: #d62728; }
svg text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: #222; } svg text.axis { fill: #666; font-size: 10px; }
svg .tick { stroke: #999; } rect.bar { fill: #4e79a7; } rect.bar.part { fill: #a0bcd8; } svg text.bad { fill: #b91c1c; }
svg.bench rect.bar.o-fail, svg.bench rect.bar.o-error { fill: #d62728; }
svg line.ref { stroke-width: 1.5; stroke-dasharray: 5 3; } line.floor { stroke: #b91c1c; } line.yard { stroke: #111; } line.torch { stroke: #7c3aed; }
text.ref-label.floor { fill: #b91c1c; } text.ref-label.torch { fill: #7c3aed; }
svg.timeline a:hover text.label { text-decoration: underline; }
.details { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; margin: 12px 0; max-width: 1100px; }
.details:has(.trial:target) .placeholder, .details:has(.trial.shown) .placeholder { display: none; }
.placeholder { color: #777; margin: 4px 0; }
.trial { display: none; } .trial:target { display: block; }
body.js .trial { display: none; } body.js .trial.shown { display: block; }
.msg { font-weight: 600; }
.repro { position: relative; } .repro span { font-size: 11px; color: #666; } .repro button { position: absolute; right: 4px; top: 0; font-size: 11px; }
.gate { background: #eef5ff; border-left: 3px solid #2563eb; padding: 4px 8px; margin: 6px 0; }
table.kv, table.data { border-collapse: collapse; margin: 4px 0; }
table.kv th, table.kv td, table.data th, table.data td { border-bottom: 1px solid #eee; padding: 2px 8px; text-align: left; vertical-align: top; }
table.kv th { color: #555; font-weight: 500; white-space: nowrap; }
table.data th { background: #f5f5f7; font-weight: 600; white-space: nowrap; } table.data td { white-space: nowrap; }
.scroll { overflow-x: auto; }
.backends { margin: 4px 0; padding-left: 18px; }
.script-error { position: fixed; top: 0; left: 0; right: 0; background: #b91c1c; color: #fff; padding: 6px; }
)CSS";
}

const char* html_page_script() {
  return R"JS(
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  function each(list, f) { Array.prototype.forEach.call(list, f); }
  function clearMarks() {
    each(document.querySelectorAll('a.cell.sel, a.cell.blocker'), function (c) { c.classList.remove('sel', 'blocker'); });
    each(document.querySelectorAll('svg.arrows'), function (s) { while (s.firstChild) s.removeChild(s.firstChild); });
  }
  // Arrows from a BLOCKED cell to the cells of the sub-combinations that blocked it.
  function arrowsFrom(cell) {
    var ids = (cell.getAttribute('data-by') || '').split(' ').filter(Boolean);
    var wrap = cell.closest('.gridwrap');
    if (!ids.length || !wrap) return;
    var svg = wrap.querySelector('svg.arrows'), base = wrap.getBoundingClientRect();
    svg.setAttribute('width', wrap.scrollWidth);
    svg.setAttribute('height', wrap.scrollHeight);
    var from = cell.getBoundingClientRect();
    ids.forEach(function (id) {
      var target = wrap.querySelector('a.cell[data-t="' + id + '"]');
      if (!target) return;
      var to = target.getBoundingClientRect(), line = document.createElementNS(NS, 'line');
      line.setAttribute('x1', from.left + from.width / 2 - base.left + wrap.scrollLeft);
      line.setAttribute('y1', from.top + 4 - base.top);
      line.setAttribute('x2', to.left + to.width / 2 - base.left + wrap.scrollLeft);
      line.setAttribute('y2', to.bottom - base.top);
      line.setAttribute('marker-end', 'url(#arrowhead)');
      svg.appendChild(line);
      target.classList.add('blocker');
    });
  }
  // Marks the trial named by the URL's fragment: its cell (and a BLOCKED cell's arrows), its details.
  function select() {
    clearMarks();
    each(document.querySelectorAll('.trial.shown'), function (t) { t.classList.remove('shown'); });
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) return null;
    each(document.querySelectorAll('a.cell[data-t="' + id + '"]'), function (c) { c.classList.add('sel'); arrowsFrom(c); });
    var details = document.getElementById(id);
    if (details && details.classList.contains('trial')) details.classList.add('shown');
    return details;
  }
  document.body.classList.add('js');
  // A click on a cell shows the details below the grid without jumping away from the grid.
  each(document.querySelectorAll('a.cell'), function (c) {
    c.addEventListener('click', function (e) {
      e.preventDefault();
      history.replaceState(null, '', '#' + c.getAttribute('data-t'));
      var details = select();
      if (details) details.scrollIntoView({ block: 'nearest' });
    });
  });
  each(document.querySelectorAll('a.cell[data-by]'), function (c) {
    c.addEventListener('mouseenter', function () { arrowsFrom(c); });
    c.addEventListener('mouseleave', select);
  });
  each(document.querySelectorAll('button.copy'), function (b) {
    b.addEventListener('click', function () {
      var code = b.parentNode.querySelector('code'), range = document.createRange();
      range.selectNodeContents(code);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      var done = function () { b.textContent = 'copied'; setTimeout(function () { b.textContent = 'copy'; }, 1500); };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(code.textContent).then(done, function () {});
    });
  });
  window.addEventListener('hashchange', function () {
    var details = select();
    if (details) details.scrollIntoView({ block: 'nearest' });
  });
  window.addEventListener('resize', select);
  // Opened with a trial's fragment: show the grid with the trial selected, not the details alone.
  if (select()) {
    var cell = document.querySelector('a.cell.sel');
    var top = function () { if (cell) cell.closest('section.report').scrollIntoView(); };
    top();
    window.addEventListener('load', top);
  }
  var ready = document.createElement('div');
  ready.id = 'report-ready';
  ready.hidden = true;
  document.body.appendChild(ready);
})();
)JS";
}

}  // namespace

}  // namespace nvfp4
