// test_html.cpp — `harness --html FILE` and `--report-html` (harness/report/html_report.hpp) as text: the
// grid has one linked cell per trial, BLOCKED cells point at their blocker's trial, every trial
// has its details with the reproducer, histograms and timelines are drawn, the slowest trial comes
// first, nothing is loaded from outside, every report string is escaped, unknown fields and the
// gate's margin appear, and the bench fixture is drawn with its tensor-core floor. That a browser
// runs the page without script errors is tests/report/html_chromium.sh.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "harness_cli.hpp"
#include "json_read.hpp"

using namespace nvfp4;
using harness_cli::has;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const std::string kFixtures = std::string(NVFP4_SOURCE_DIR) + "/tests/report/";

// No resource from outside the file: no URL other than the SVG namespace, no src/href to a file.
void check_self_contained(const std::string& html) {
  std::string rest = html;
  const std::string ns = "http://www.w3.org/2000/svg";
  for (size_t at; (at = rest.find(ns)) != std::string::npos;) rest.erase(at, ns.size());
  CHECK_FALSE(has(rest, "http:"));
  CHECK_FALSE(has(rest, "https:"));
  CHECK_FALSE(has(rest, "//cdn"));
  CHECK_FALSE(std::regex_search(rest, std::regex("<[a-zA-Z]+(\\s+[a-zA-Z-]+(=\"[^\"]*\")?)*\\s+src=")));
  CHECK_FALSE(has(rest, "<link"));
  CHECK_FALSE(has(rest, "@import"));
  CHECK_FALSE(std::regex_search(rest, std::regex("href=\"[^#]")));
  CHECK_FALSE(std::regex_search(rest, std::regex("url\\([^#]")));
}

}  // namespace

TEST_CASE("html: a drill run's page: grid, blocked arrows, details, histograms, timeline") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--verify all --backend cpu --shape 7x13x48,33x65x160 --dist normal,edge "
                                  "--inject corrupt@run:if=fused --json " + dir + "/r.json --html " + dir + "/r.html");
  REQUIRE(r.rc == 1);
  const std::string html = harness_cli::read_text(dir + "/r.html");
  const JsonValue report = read_json_file(dir + "/r.json");
  const auto& trials = report.at("trials").items();
  REQUIRE(trials.size() == 16);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(has(html, "<table class=\"grid\" id=\"grid-cpu\">"));
  CHECK(count(html, "<a class=\"cell\"") == int(trials.size()));
  CHECK(count(html, "<section class=\"trial\" id=\"r0t") == int(trials.size()));
  CHECK(count(html, "<th class=\"combo\">") == 4);
  CHECK(count(html, "<th class=\"case\">") == 4);
  double slowest = -1;
  std::string slowest_id;
  int compared = 0;
  for (const auto& t : trials) {
    const std::string id = "r0t" + t.at("index").text(), outcome = t.at("outcome").str();
    CAPTURE(id);
    CHECK(has(html, "<td class=\"o-" + std::string(outcome == "PASS" ? "pass" : outcome == "FAIL" ? "fail" : "blocked")));
    const size_t at = html.find("<section class=\"trial\" id=\"" + id + "\">");
    REQUIRE(at != std::string::npos);
    const std::string details = html.substr(at, html.find("</section>", at) - at);
    CHECK(has(details, "<pre><code>" + t.at("reproducer").str() + "</code></pre>"));
    if (t.find("metrics")) {
      ++compared;
      CHECK(has(details, "<svg class=\"hist\""));
      CHECK(has(details, "<svg class=\"timeline one\""));
    }
    if (outcome == "BLOCKED") {
      // The cell points at the blocker's trial on the same case, which failed.
      std::smatch m;
      const std::string cell_re = "data-t=\"" + id + "\" data-by=\"(r0t[0-9]+)\"";
      REQUIRE(std::regex_search(html, m, std::regex(cell_re)));
      const std::string blocker = m[1];
      const JsonValue& b = trials.at(std::stoul(blocker.substr(3)) - 1);
      CHECK(b.at("combo").str() == t.at("blocked_by").str());
      CHECK(trial_case_name(b) == trial_case_name(t));
      CHECK(b.at("outcome").str() == "FAIL");
      CHECK(has(details, "<a href=\"#" + blocker + "\">fused on this case (FAIL)</a>"));
    }
    double total = 0;
    for (const auto& st : t.at("stages").items()) total += st.at("seconds").number();
    if (total > slowest) {
      slowest = total;
      slowest_id = id;
    }
  }
  CHECK(compared == 12);
  // The timeline's first row is the slowest trial.
  const size_t tl = html.find("<svg class=\"timeline\"");
  REQUIRE(tl != std::string::npos);
  CHECK(html.find("<a href=\"#", tl) == html.find("<a href=\"#" + slowest_id + "\">", tl));
  check_self_contained(html);
  // Rendering the JSON later gives the same page but for where the report came from.
  const auto again = harness_cli::run("--report-html " + dir + "/r.json --html " + dir + "/later.html");
  REQUIRE(again.rc == 0);
  std::string later = harness_cli::read_text(dir + "/later.html");
  const std::string from = "from " + dir + "/r.json";
  REQUIRE(has(later, from));
  later.replace(later.find(from), from.size(), "from this run");
  CHECK(later == html);
}

TEST_CASE("html: report strings are escaped; unknown fields and the gate's margin are shown") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--report-html " + kFixtures + "hostile_report.json --html " + dir + "/h.html");
  REQUIRE(r.rc == 0);
  const std::string html = harness_cli::read_text(dir + "/h.html");
  CHECK(count(html, "<script") == 2);  // the page's own two
  CHECK_FALSE(has(html, "<img"));
  CHECK_FALSE(has(html, "<b>bold"));
  CHECK_FALSE(has(html, "<i>new"));
  CHECK_FALSE(has(html, "</pre><script>"));
  CHECK(has(html, "&lt;script&gt;alert(&quot;cmd&quot;)&lt;/script&gt; &amp; &#39;q&#39;"));
  CHECK(has(html, "&lt;img src=x onerror=alert(1)&gt;"));
  for (char c = 1; c < 0x20; ++c)
    if (c != '\n') CHECK(html.find(c) == std::string::npos);
  CHECK(html.find('\0') == std::string::npos);
  // Unknown fields, generically; the margin in the gate box and as the combination's smallest.
  CHECK(has(html, "<th>new_metric</th><td>7</td>"));
  CHECK(has(html, "<th>options.future_option</th><td>&lt;i&gt;new&lt;/i&gt;</td>"));
  CHECK(has(html, "<div class=\"gate\"><b>statistical gate</b><table class=\"kv\"><tr><th>statistical_gate.margin</th><td>0.25</td>"));
  CHECK(has(html, "smallest margin 0.25"));
  // The hostile combination name still links its BLOCKED cell to the failing trial.
  CHECK(has(html, "data-t=\"r0t3\" data-by=\"r0t2\""));
  CHECK(has(html, "<td class=\"o-other\">"));  // the unknown outcome
  // An unfinished stage is drawn hatched; the load stage has its colour.
  CHECK(has(html, "class=\"st-run unfinished\""));
  CHECK(has(html, "class=\"st-load\""));
  check_self_contained(html);
}

TEST_CASE("html: the bench fixture is drawn beside the tensor-core floor and the yardstick") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--report-html " + kFixtures + "hostile_report.json --report-html " + kFixtures +
                                  "bench_fixture.json --html " + dir + "/b.html");
  REQUIRE(r.rc == 0);
  const std::string html = harness_cli::read_text(dir + "/b.html");
  CHECK(has(html, "<table class=\"grid\" id=\"grid-cpu\">"));  // both reports on one page
  CHECK(has(html, "nvfp4-dual bench: fixture device (not a measurement)"));
  // 4*256*4096*7168 flop / 800 TFLOP/s = 37.58 us; 4*256*3072*4096 / 800e12 = 16.11 us.
  CHECK(has(html, "Shape 256x4096x7168 <small>(tensor-core floor 37.6 us)</small>"));
  CHECK(has(html, "Shape 256x3072x4096 <small>(tensor-core floor 16.1 us)</small>"));
  CHECK(count(html, "<svg class=\"bench\"") == 2);
  CHECK(has(html, ">tensor-core floor 37.6 us</text>"));
  CHECK(has(html, ">yardstick 47.5 us</text>"));  // the graph-replayed yardstick
  CHECK(has(html, ">torch.compile (quoted) 90.0 us</text>"));
  CHECK(has(html, "44.0 us  0.93x yardstick"));
  // The failing combination has no bar, and its message is escaped.
  CHECK(has(html, "FAIL: fixture: 12 elements over tolerance &lt;on purpose &amp; escaped&gt;"));
  CHECK_FALSE(has(html, "<title>fused+autotune:"));
  CHECK(has(html, "<title>fused+graph: 44.00 us</title>"));
  check_self_contained(html);
}

TEST_CASE("html: bad input is exit 2") {
  const std::string dir = harness_cli::temp_dir();
  {
    std::ofstream f(dir + "/bad.json");
    f << "{\"trials\": [1, 2,, 3]}";
  }
  auto r = harness_cli::run("--report-html " + dir + "/bad.json --html " + dir + "/x.html");
  CHECK(r.rc == 2);
  CHECK(has(r.out, dir + "/bad.json: JSON: expected"));
  // Valid JSON that is no report with trials (another tool's, a check or rehearse report) is
  // refused, not rendered as an empty page.
  const std::vector<std::pair<std::string, std::string>> not_reports = {
      {"[]", "not a JSON object"},
      {"\"report\"", "not a JSON object"},
      {"{}", "not a harness report with trials"},
      {"{\"ok\": true, \"case\": \"case dir x\"}", "its mode is ''"},
      {"{\"schema\": 1, \"mode\": \"rehearse\"}", "its mode is 'rehearse'"},
      {"{\"mode\": \"verify\", \"trials\": 3}", "not a harness report with trials"},
      {"{\"mode\": \"bench\"}", "not a harness report with shapes"},
      {"{\"schema\": 2, \"mode\": \"verify\", \"trials\": []}", "report schema 2"}};
  for (const auto& [text, reason] : not_reports) {
    {
      std::ofstream f(dir + "/other.json");
      f << text;
    }
    for (const char* out : {" --html ", " --junit "}) {
      r = harness_cli::run("render " + dir + "/other.json" + out + dir + "/x.out");
      INFO((text + out + r.out));
      CHECK(r.rc == 2);
      CHECK(has(r.out, dir + "/other.json: "));
      CHECK(has(r.out, reason));
    }
  }
  r = harness_cli::run("--verify plain --backend cpu --html /nonexistent-dir/x.html");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "--html /nonexistent-dir/x.html: its directory /nonexistent-dir does not exist"));
  r = harness_cli::run("--bench plain --backend cpu --shape 1x1x16 --html " + dir);
  CHECK(r.rc == 2);
  CHECK(has(r.out, "--html " + dir + ": is a directory, not a regular file"));
}
