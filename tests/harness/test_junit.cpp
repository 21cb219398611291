// test_junit.cpp — `harness --junit FILE` (harness/report/junit.hpp) on real CPU runs with fault drills:
// one testcase per trial, FAIL as <failure>, CRASH as <error>, BLOCKED as <skipped>, counts equal to
// the harness's summary, the reproducer in every failure; the same bytes whether written by the
// run or rendered later from its JSON (--report-html); every report string escaped; bad usage is
// exit 2 before anything runs. Schema validation and a real consumer (junitparser) are
// tests/report/junit_consumers.sh.
#include <doctest/doctest.h>

#include <string>

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

}  // namespace

TEST_CASE("junit: a drill run gives one testcase per trial, results and counts as the harness says") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--verify all --backend cpu --shape 7x13x48,33x65x160 --dist normal "
                                  "--inject crash@warmup:if=autotune --inject corrupt@run:if=fused --json " +
                                  dir + "/r.json --junit " + dir + "/r.xml");
  REQUIRE(r.rc == 1);
  const std::string xml = harness_cli::read_text(dir + "/r.xml");
  const JsonValue report = read_json_file(dir + "/r.json");
  const auto& s = report.at("summary");
  const int fails = int(s.at("FAIL").number()), crashes = int(s.at("CRASH").number());
  const int blocked = int(s.at("BLOCKED").number()), trials = int(report.at("trials").items().size());
  REQUIRE(fails == 2);
  REQUIRE(crashes == 2);
  REQUIRE(blocked == 2);
  CHECK(has(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
  CHECK(has(xml, "tests=\"" + std::to_string(trials) + "\" failures=\"2\" errors=\"2\" skipped=\"2\""));
  CHECK(count(xml, "<testcase ") == trials);
  CHECK(count(xml, "<failure type=\"FAIL\"") == fails);
  CHECK(count(xml, "<error type=\"CRASH\"") == crashes);
  CHECK(count(xml, "<skipped message=\"BLOCKED: sub-combination") == blocked);
  for (const auto& t : report.at("trials").items()) {
    const std::string head = "<testcase classname=\"cpu." + t.at("combo").str() + "\" name=\"" + trial_case_name(t) + "\"";
    CAPTURE(head);
    const size_t at = xml.find(head);
    REQUIRE(at != std::string::npos);
    const std::string tc = xml.substr(at, xml.find("</testcase>", at) - at);
    const std::string outcome = t.at("outcome").str();
    if (outcome == "FAIL")
      CHECK(has(tc, "<failure type=\"FAIL\" message=\"FAIL in stage run after "));
    if (outcome == "CRASH")
      CHECK(has(tc, "<error type=\"CRASH\" message=\"CRASH in stage warmup after "));
    if (outcome == "FAIL" || outcome == "CRASH") {
      CHECK(has(tc, "reproduce: " + t.at("reproducer").str()));
      CHECK(has(tc, "path: "));
    }
    if (outcome == "FAIL") CHECK(has(tc, "  over_tolerance: 1\n"));  // the metrics
    if (outcome == "PASS") CHECK(has(tc, "<system-out>PASS, max "));
  }
}

TEST_CASE("junit: rendering the run's JSON later gives the same bytes as the run") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--verify all --backend cpu --shape 7x13x48 --dist normal --inject corrupt@run:if=fused --json " +
                                  dir + "/r.json --junit " + dir + "/run.xml");
  REQUIRE(r.rc == 1);
  const auto again = harness_cli::run("--report-html " + dir + "/r.json --junit " + dir + "/later.xml");
  REQUIRE(again.rc == 0);
  const std::string run = harness_cli::read_text(dir + "/run.xml");
  CHECK(run.size() > 1000);
  CHECK(run == harness_cli::read_text(dir + "/later.xml"));
}

TEST_CASE("junit: every string from the report is escaped; unknown outcomes and failed probes are errors") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--report-html " + kFixtures + "hostile_report.json --junit " + dir + "/h.xml");
  REQUIRE(r.rc == 0);
  const std::string xml = harness_cli::read_text(dir + "/h.xml");
  CHECK_FALSE(has(xml, "<script"));
  CHECK_FALSE(has(xml, "<img"));
  CHECK_FALSE(has(xml, "<tag>"));
  CHECK(has(xml, "classname=\"cpu.fused&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;\""));
  CHECK(has(xml, "message=\"FAIL in stage run after 0.010 s: line1&#10;line2 \xEF\xBF\xBD &lt;tag&gt; &amp; &quot;q&quot; \xEF\xBF\xBD\""));
  for (char c = 1; c < 0x20; ++c)
    if (c != '\n') CHECK(xml.find(c) == std::string::npos);
  CHECK(xml.find('\0') == std::string::npos);
  CHECK(has(xml, "<testcase classname=\"gpu.probe\" name=\"backend probe\">"));
  CHECK(has(xml, "<error type=\"CRASH\" message=\"backend probe CRASH: probe &lt;crashed&gt; &amp; died\"/>"));
  CHECK(has(xml, "<error type=\"WEIRD\""));
  CHECK(has(xml, "tests=\"5\" failures=\"1\" errors=\"2\" skipped=\"1\""));
}

TEST_CASE("junit: bad usage is exit 2, before any trial runs") {
  const std::string dir = harness_cli::temp_dir();
  auto r = harness_cli::run("--verify all --backend cpu --junit /nonexistent-dir/r.xml");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "--junit /nonexistent-dir/r.xml: its directory /nonexistent-dir does not exist"));
  CHECK_FALSE(has(r.out, "PASS"));
  r = harness_cli::run("--report-html " + kFixtures + "bench_fixture.json --junit " + dir + "/b.xml");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "JUnit needs a report with \"trials\""));  // the fixture predates bench trials
  r = harness_cli::run("--report-html " + dir + "/missing.json --junit " + dir + "/m.xml");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "cannot read " + dir + "/missing.json"));
  r = harness_cli::run("--report-html " + kFixtures + "hostile_report.json");
  CHECK(r.rc == 2);
  r = harness_cli::run("--report-html " + kFixtures + "hostile_report.json --verify all --junit " + dir + "/x.xml");
  CHECK(r.rc == 2);
}
