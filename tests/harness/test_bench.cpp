// test_bench.cpp — bench mode as a timed mode of the trials (harness/cli/bench.hpp), on the CPU backend
// through the harness binary: every (shape, combination) is a verified trial with a stage time and
// a timing in the table and the JSON; a path that is wrong when timed (a fault drill on the timed
// outputs) or when checked is FAIL and reports no time; a hang in stage time is a TIMEOUT naming
// it; the bench JSON reads back and renders; --bench-warmup sets the warm-up when --warmup is not given.
#include <doctest/doctest.h>

#include <cmath>
#include <regex>
#include <string>

#include "harness_cli.hpp"
#include "json_read.hpp"

using harness_cli::has;
using nvfp4::JsonValue;

namespace {

const std::string kSmall =
    "--backend cpu --bench-shapes 32x64x128,16x32x256 --bench-min-reps 5 --bench-max-time 0.1 ";

const JsonValue* find_trial(const JsonValue& report, const std::string& combo, const std::string& shape) {
  for (const auto& t : report.at("trials").items())
    if (t.str_or("combo", "") == combo && t.at("case").str_or("shape", "") == shape) return &t;
  return nullptr;
}

const JsonValue* find_row(const JsonValue& report, const std::string& combo, const std::string& shape) {
  for (const auto& s : report.at("shapes").items())
    if (s.str_or("shape", "") == shape)
      for (const auto& r : s.at("combos").items())
        if (r.str_or("combo", "") == combo) return &r;
  return nullptr;
}

bool has_stage(const JsonValue& trial, const std::string& stage) {
  for (const auto& s : trial.at("stages").items())
    if (s.str_or("stage", "") == stage) return true;
  return false;
}

}  // namespace

TEST_CASE("bench on the cpu backend: every (shape, combination) verified, then timed in stage time") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--bench plain,fused " + kSmall + "--bench-json " + dir + "/b.json --html " + dir +
                                  "/b.html");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "Bench ("));
  const JsonValue report = nvfp4::read_json_file(dir + "/b.json");
  CHECK(nvfp4::is_bench_report(report));
  CHECK(report.at("trials").items().size() == 4);
  for (const char* combo : {"plain", "fused"})
    for (const char* shape : {"32x64x128", "16x32x256"}) {
      CAPTURE(combo);
      CAPTURE(shape);
      const JsonValue* t = find_trial(report, combo, shape);
      REQUIRE(t != nullptr);
      CHECK(t->str_or("outcome", "") == "PASS");
      CHECK(has_stage(*t, "run"));
      CHECK(has_stage(*t, "time"));
      const JsonValue* timing = t->find("timing");
      REQUIRE(timing != nullptr);
      CHECK(timing->number_or("reps", 0) >= 5);
      CHECK(timing->number_or("median_us", 0) > 0);
      CHECK(timing->number_or("b2b_us", 0) > 0);
      const JsonValue* row = find_row(report, combo, shape);
      REQUIRE(row != nullptr);
      CHECK(row->str_or("outcome", "") == "PASS");
      CHECK(row->str_or("check", "").rfind("PASS", 0) == 0);
      CHECK(row->number_or("median_us", NAN) == doctest::Approx(timing->number_or("median_us", 0)));
      CHECK(std::isfinite(row->number_or("tflops", NAN)));
      CHECK(row->at("stages_s").find("time") != nullptr);
      // The table has the row, with its time.
      CHECK(std::regex_search(r.out, std::regex(std::string(shape) + " +cpu +" + combo + " +PASS +[0-9]")));
    }
  const std::string html = harness_cli::read_text(dir + "/b.html");
  CHECK(has(html, "nvfp4-dual bench: host CPU"));
  CHECK(has(html, "<svg class=\"bench\""));
}

TEST_CASE("bench: a path wrong when timed is FAIL in stage time and reports no time; plain still timed") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--bench plain,fused " + kSmall + "--inject corrupt@time:if=fused --bench-json " +
                                  dir + "/b.json");
  INFO(r.out);
  CHECK(r.rc == 1);
  const JsonValue report = nvfp4::read_json_file(dir + "/b.json");
  for (const char* shape : {"32x64x128", "16x32x256"}) {
    const JsonValue* fused = find_trial(report, "fused", shape);
    REQUIRE(fused != nullptr);
    CHECK(fused->str_or("outcome", "") == "FAIL");
    CHECK(fused->str_or("stage", "") == "time");
    CHECK(has(fused->str_or("message", ""), "its time is not reported"));
    CHECK(fused->find("timing") == nullptr);
    const JsonValue* row = find_row(report, "fused", shape);
    REQUIRE(row != nullptr);
    CHECK(row->str_or("outcome", "") == "FAIL");
    CHECK(row->at("median_us").is_null());
    const JsonValue* plain = find_trial(report, "plain", shape);
    REQUIRE(plain != nullptr);
    CHECK(plain->str_or("outcome", "") == "PASS");
    CHECK(plain->find("timing") != nullptr);
  }
  CHECK(std::regex_search(r.out, std::regex("32x64x128 +cpu +fused +FAIL +- ")));
}

TEST_CASE("bench: a path wrong when checked is FAIL in stage run and reports no time") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("--bench fused " + kSmall + "--inject corrupt@run --bench-json " + dir + "/b.json");
  INFO(r.out);
  CHECK(r.rc == 1);
  const JsonValue report = nvfp4::read_json_file(dir + "/b.json");
  for (const auto& t : report.at("trials").items()) {
    CHECK(t.str_or("outcome", "") == "FAIL");
    CHECK(t.str_or("stage", "") == "run");
    CHECK(t.find("timing") == nullptr);
  }
}

TEST_CASE("bench: a hang in stage time is a TIMEOUT naming stage time") {
  const auto r = harness_cli::run_argv(
      {"--bench", "plain", "--backend", "cpu", "--bench-shapes", "16x32x128",
       "--bench-min-reps", "5", "--inject", "hang@time", "--budget-time", "1"},
      60);
  INFO(r.out);
  CHECK_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "TIMEOUT"));
  CHECK(has(r.out, "stage time exceeded its budget of 1.0 s"));
}

TEST_CASE("bench takes the suite options and writes the report of every mode (--json, --junit, --html)") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("bench plain --backend cpu --shape 32x32x64 --dist ones --seed 5 --warmup 7 "
                                  "--bench-min-reps 3 --bench-max-time 0.05 --json " + dir + "/b.json --junit " +
                                  dir + "/b.xml --html " + dir + "/b.html");
  INFO(r.out);
  CHECK(r.rc == 0);
  const JsonValue report = nvfp4::read_json_file(dir + "/b.json");
  CHECK(report.at("schema").number() == 1);
  CHECK(report.at("options").at("warmup").number() == 7);
  REQUIRE(report.at("trials").items().size() == 1);
  CHECK(report.at("trials").items()[0].at("case").str_or("name", "") == "32x32x64 ones seed 5");
  CHECK(has(harness_cli::read_text(dir + "/b.xml"), "<testcase"));
  CHECK(has(harness_cli::read_text(dir + "/b.html"), "<html"));
}

TEST_CASE("--bench-max-reps alone below the default minimum lowers the minimum with it") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("bench plain --backend cpu --shape 32x32x64 --bench-max-reps 20 --bench-max-time 0.05 "
                                  "--json " + dir + "/b.json");
  INFO(r.out);
  CHECK(r.rc == 0);
  const auto trials = nvfp4::read_json_file(dir + "/b.json").at("trials").items();
  REQUIRE(trials.size() == 1);
  const double reps = trials[0].at("timing").number_or("reps", 0);
  CHECK(reps >= 3);
  CHECK(reps <= 20);
}

TEST_CASE("--bench-warmup alone sets a bench trial's warm-up; with --warmup as well it is refused") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("bench plain --backend cpu --shape 32x32x64 --bench-warmup 5 --bench-min-reps 3 "
                                  "--bench-max-time 0.05 --json " + dir + "/b.json");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(nvfp4::read_json_file(dir + "/b.json").at("options").at("warmup").number() == 5);
  const auto both = harness_cli::run("bench plain --backend cpu --shape 32x32x64 --warmup 2 --bench-warmup 5");
  CHECK(both.rc == 2);
  CHECK(has(both.out, "--warmup and --bench-warmup both set it; give one"));
}

TEST_CASE("bench times a Python submission through the same bench trials (numpy: host clock)") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("bench plain --submission " + std::string(NVFP4_SOURCE_DIR) +
                                  "/examples/submission_numpy/submission.py --shape 64x96x256 --bench-min-reps 3 "
                                  "--bench-max-time 0.1 --json " + dir + "/b.json");
  INFO(r.out);
  CHECK(r.rc == 0);
  const JsonValue report = nvfp4::read_json_file(dir + "/b.json");
  REQUIRE(report.at("trials").items().size() == 1);
  const JsonValue& t = report.at("trials").items()[0];
  CHECK(t.str_or("outcome", "") == "PASS");
  CHECK(t.at("timing").at("median_us").number() > 0);
  CHECK(t.at("timing").at("b2b_us").number() > 0);
}
