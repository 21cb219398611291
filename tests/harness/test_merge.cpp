// test_merge.cpp — `harness --merge A.json B.json ...` (harness/report/merge.hpp) on real shard runs of the
// cpu lattice: the merge of the shards prints the unsharded run's summary (table, failing trials,
// BLOCKED lines, result) and exits with its code, with and without a fault drill; its JSON has the
// run's summary counts and trials, and renders as JUnit and HTML; every inconsistent set of
// reports (missing, overlapping, duplicate or foreign trials, other options, malformed files) is
// refused with exit 2 and the reason.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "errors.hpp"
#include "harness_cli.hpp"
#include "json_read.hpp"
#include "merge.hpp"

using namespace nvfp4;
using harness_cli::has;
using harness_cli::read_text;

namespace {

const std::string kRun = "--verify all --backend cpu --shape 7x13x48,33x65x160 --dist normal,edge,ones ";
const std::string kDrill = " --inject corrupt@run:if=fused ";

// Everything the harness prints after its "Summary (N trials, T s)" line.
// The summary after its header line, without the overhead line (times, like the header's).
std::string summary_block(const std::string& out) {
  const size_t at = out.find("\nSummary (");
  if (at == std::string::npos) return "";
  std::string s = out.substr(out.find('\n', at + 1) + 1);
  // The lines that depend on the run, not on its outcomes: the overhead, and how many references
  // came from the cache (a merge's shards may find what the unsharded run computed).
  for (const char* line : {"  overhead: ", "  references: "}) {
    const size_t o = s.find(line);
    if (o != std::string::npos) s.erase(o, s.find('\n', o) + 1 - o);
  }
  return s;
}

std::map<std::string, std::string> outcomes(const JsonValue& report) {
  std::map<std::string, std::string> out;
  for (const auto& t : report.at("trials").items())
    out[t.at("backend").str() + " " + t.at("combo").str() + " " + trial_case_name(t)] = t.at("outcome").str();
  return out;
}

// Runs `args` unsharded (full.json) and as `n` shards (s0.json ...) in `dir`; returns the unsharded result.
harness_cli::Result run_shards(const std::string& dir, const std::string& args, int n) {
  const auto full = harness_cli::run(args + " --json " + dir + "/full.json");
  for (int i = 0; i < n; ++i) {
    const auto r = harness_cli::run(args + " --shard " + std::to_string(i) + "/" + std::to_string(n) + " --json " +
                                    dir + "/s" + std::to_string(i) + ".json");
    CHECK(r.rc == full.rc);
  }
  return full;
}

std::string shard_files(const std::string& dir, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += " " + dir + "/s" + std::to_string(i) + ".json";
  return s;
}

// The trial objects of a report's text (from its "trials" member on: the shard record, which comes
// before it, also has an "index").
std::vector<std::string> trials_of(const std::string& json) {
  return harness_cli::json_trials(json.substr(json.find("\"trials\":[")));
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("merge: the shards of a passing run give the unsharded summary, counts, trials and exit code") {
  const std::string dir = harness_cli::temp_dir();
  // With a degenerate case (1x1x16 gpumode: its one output is zero), whose line the summary carries.
  const auto full = run_shards(dir, "--verify all --backend cpu --shape 1x1x16,7x13x48,33x65x160 --dist normal,gpumode", 3);
  REQUIRE(full.rc == 0);
  const auto m = harness_cli::run("--merge" + shard_files(dir, 3) + " --json " + dir + "/m.json --junit " + dir +
                                  "/m.xml --html " + dir + "/m.html");
  CHECK(m.rc == 0);
  CHECK(has(m.out, "Summary (24 trials, "));
  CHECK(summary_block(m.out) == summary_block(full.out));
  CHECK(has(summary_block(m.out), "  DEGENERATE case 1x1x16 gpumode seed 7: "));
  CHECK(has(summary_block(m.out), "result: 24 PASS -> exit 0"));
  CHECK(has(m.out, "  overhead: "));  // the shards' trials' overheads, summed
  CHECK(has(m.out, " s outside the stages in 24 trials"));
  const JsonValue merged = read_json_file(dir + "/m.json"), unsharded = read_json_file(dir + "/full.json");
  CHECK(merged.at("summary").text() == unsharded.at("summary").text());
  CHECK(merged.at("exit_code").text() == "0");
  CHECK(outcomes(merged) == outcomes(unsharded));
  CHECK(merged.at("cases").items().size() == unsharded.at("cases").items().size());
  // Trials are renumbered 1..N, and the merged report renders like a run's.
  int index = 0;
  for (const auto& t : merged.at("trials").items()) CHECK(t.at("index").number() == ++index);
  const std::string xml = read_text(dir + "/m.xml");
  CHECK(count(xml, "<testcase ") == 24);
  CHECK(has(xml, "tests=\"24\" failures=\"0\" errors=\"0\" skipped=\"0\""));
  CHECK(has(read_text(dir + "/m.html"), "<html"));
}

TEST_CASE("merge: a fault drill run in shards exits 1 and names the failure and the BLOCKED combination") {
  const std::string dir = harness_cli::temp_dir();
  const auto full = run_shards(dir, kRun + kDrill, 3);
  REQUIRE(full.rc == 1);
  const auto m = harness_cli::run("--merge" + shard_files(dir, 3) + " --junit " + dir + "/m.xml");
  CHECK(m.rc == 1);
  const std::string s = summary_block(m.out);
  CHECK(s == summary_block(full.out));
  CHECK(has(s, "    FAIL cpu fused 33x65x160 edge seed 7 (stage run)\n      "));
  CHECK(has(s, " --backend cpu --verify fused --shape 33x65x160 --dist edge --seed 7 --inject corrupt@run:if=fused\n"));
  CHECK(has(s, "  BLOCKED cpu autotune+fused (blocked by fused): 6 trials not run\n"));
  CHECK(has(s, "result: 12 PASS 6 FAIL 6 BLOCKED -> exit 1\n"));
  CHECK(has(read_text(dir + "/m.xml"), "tests=\"24\" failures=\"6\" errors=\"0\" skipped=\"6\""));
}

TEST_CASE("merge: empty shards (more shards than cases) still merge into the whole run") {
  const std::string dir = harness_cli::temp_dir();
  const std::string args = "--verify all --backend cpu --shape 7x13x48,33x65x160 --dist normal";
  const auto full = harness_cli::run(args + " --json " + dir + "/full.json");
  REQUIRE(full.rc == 0);
  for (int i = 0; i < 3; ++i) {
    const auto r = harness_cli::run(args + " --shard " + std::to_string(i) + "/3 --json " + dir + "/s" +
                                    std::to_string(i) + ".json");
    CHECK(r.rc == (i < 2 ? 0 : 125));  // shard 2 owns no case: nothing tested there
  }
  const auto m = harness_cli::run("--merge" + shard_files(dir, 3));
  CHECK(m.rc == 0);
  CHECK(summary_block(m.out) == summary_block(full.out));
}

TEST_CASE("merge: one shard 0/1 comes back trial for trial, byte for byte") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run(kRun + kDrill + "--shard 0/1 --json " + dir + "/s0.json");
  REQUIRE(r.rc == 1);
  const auto m = harness_cli::run("--merge " + dir + "/s0.json --json " + dir + "/m.json");
  CHECK(m.rc == 1);
  // Each trial's text without its index (the merge renumbers, grouped by combination).
  auto texts = [](const std::string& json) {
    const size_t begin = json.find("\"trials\":["), end = json.find("],\"verdicts\":");
    std::multiset<std::string> out;
    for (auto t : harness_cli::json_trials(json.substr(begin, end - begin))) {
      if (t.back() == ',') t.pop_back();
      out.insert(t.substr(t.find(',')));
    }
    return out;
  };
  const auto a = texts(read_text(dir + "/s0.json")), b = texts(read_text(dir + "/m.json"));
  CHECK(a.size() == 24);
  CHECK(a == b);
}

TEST_CASE("merge: inconsistent or broken sets of reports are exit 2 with the reason") {
  const std::string dir = harness_cli::temp_dir();
  run_shards(dir, kRun, 3);
  const std::string s0 = dir + "/s0.json", s1 = dir + "/s1.json", s2 = dir + "/s2.json";
  // Other runs: a drill in one shard only, another case list, another shard count, a bisect.
  REQUIRE(harness_cli::run(kRun + kDrill + "--shard 1/3 --json " + dir + "/drill1.json").rc == 1);
  REQUIRE(harness_cli::run(kRun + "--seed 9 --shard 1/3 --json " + dir + "/seed1.json").rc == 0);
  REQUIRE(harness_cli::run(kRun + "--shard 1/2 --json " + dir + "/half1.json").rc == 0);
  REQUIRE(harness_cli::run("--bisect fused --backend cpu --shape 7x13x48 --json " + dir + "/bisect.json").rc == 0);
  {
    std::ofstream(dir + "/broken.json") << "{\"mode\": \"verify\", \"trials\": [";
  }
  struct Bad {
    std::string args, says;
  };
  for (const auto& b : std::vector<Bad>{
           {s0 + " " + s1, "missing shard 2/3: a merge needs all 3"},
           {s0 + " " + s1 + " " + s1 + " " + s2, "overlapping shards: " + s1 + " and " + s1 + " are both shard 1/3"},
           {s0 + " " + dir + "/drill1.json " + s2, "shards of different runs: different trial options (faults: [] and "
                                                   "[\"corrupt@run:if=fused\"])"},
           {s0 + " " + dir + "/seed1.json " + s2, "different case lists for backend cpu"},
           {s0 + " " + dir + "/half1.json " + s2, "different shard counts (0/3 and 1/2)"},
           {dir + "/full.json", "has no shard record (run each part with --shard I/N)"},
           {dir + "/bisect.json", "is a bisect report"},
           {dir + "/broken.json", dir + "/broken.json: JSON: "},
           {dir + "/absent.json", "cannot read " + dir + "/absent.json"},
           {s0 + " " + s1 + " " + s2 + " --verify all", "two modes: --verify and --merge; give one"},
       }) {
    CAPTURE(b.args);
    const auto r = harness_cli::run("--merge " + b.args);
    CHECK(r.rc == 2);
    CHECK(has(r.out, b.says));
    CHECK(!has(r.out, "Summary"));
  }
}

TEST_CASE("merge: duplicate, missing and foreign trials in a report are refused") {
  const std::string dir = harness_cli::temp_dir();
  run_shards(dir, kRun, 2);
  const std::string t0 = read_text(dir + "/s0.json"), t1 = read_text(dir + "/s1.json");
  const auto trials0 = trials_of(t0), trials1 = trials_of(t1);
  REQUIRE(trials0.size() == 12);
  REQUIRE(trials1.size() == 12);
  const std::vector<std::string> names{"s0.json", "s1.json"};
  auto merge = [&](const std::string& a, const std::string& b) {
    return merge_reports({JsonValue::parse(a), JsonValue::parse(b)}, names, "harness --merge");
  };
  CHECK(merge(t0, t1).exit_code == 0);
  // Each trial text but the last ends with ","; insert after the first trial.
  const std::string first = trials0[0];
  const size_t at = t0.find(first) + first.size();
  CHECK_THROWS_WITH_AS(merge(t0.substr(0, at) + first + t0.substr(at), t1),
                       doctest::Contains("duplicate trial cpu plain"), InputError);
  CHECK_THROWS_WITH_AS(merge(t0.substr(0, t0.find(first)) + t0.substr(at), t1),
                       doctest::Contains("s0.json is incomplete: it lacks the trial cpu plain"), InputError);
  const std::string foreign = trials1[0];
  CHECK_THROWS_WITH_AS(merge(t0.substr(0, at) + foreign + t0.substr(at), t1),
                       doctest::Contains("s0.json has a trial outside its shard: cpu plain"), InputError);
}
