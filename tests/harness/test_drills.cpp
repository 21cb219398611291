// test_drills.cpp — fault drills through the real binary and real child processes: each fault
// class is detected and classified with the right outcome and stage, a hang is cut within its
// budget plus one second, --bisect names exactly the combination a conditional fault was tied
// to, BLOCKED propagates through the lattice, and the exit codes are 0/1/2/125. The drills run
// with workers (the default) and with one process per trial (--isolate).
// The cpu backend (always built) carries the drills; its trials take milliseconds.
#include <doctest/doctest.h>

#include <set>

#include "harness_cli.hpp"

using harness_cli::has;
using harness_cli::json_number;
using harness_cli::json_trials;
using harness_cli::read_text;
using harness_cli::run;

namespace {
// One small case on the cpu backend.
const std::string kCase = " --backend cpu --shape 33x65x160 --dist normal --seed 7 ";
// Every drill runs in both modes (pool.hpp): a worker per combination, and one process per trial.
const std::vector<std::string> kIsolation = {"--isolate worker ", "--isolate trial "};

// Runs one trial with --json and returns (result, the only trial's JSON text).
std::pair<harness_cli::Result, std::string> one_trial(const std::string& args) {
  const std::string json = harness_cli::temp_dir() + "/r.json";
  auto r = run(args + " --json " + json);
  const auto trials = json_trials(read_text(json));
  return {r, trials.size() == 1 ? trials[0] : std::string()};
}
}  // namespace

TEST_CASE("hang: TIMEOUT naming the stage, cut within the budget plus one second") {
  for (const std::string& iso : kIsolation) {
    CAPTURE(iso);
    for (const char* stage : {"tune", "run"}) {
      CAPTURE(stage);
      const std::string s = stage;
      auto [r, t] = one_trial("--verify autotune" + kCase + iso + "--inject hang@" + s + " --budget-" + s + " 1");
      CHECK(r.rc == 1);
      CHECK(has(r.out, "TIMEOUT"));
      CHECK(has(r.out, "stage " + s + " exceeded its budget of 1.0 s"));
      CHECK(has(t, "\"outcome\":\"TIMEOUT\""));
      CHECK(has(t, "\"stage\":\"" + s + "\""));
      const double elapsed = json_number(t, "stage_elapsed_s");
      CHECK(elapsed >= 1.0);
      CHECK(elapsed <= 2.0);
      CHECK(r.seconds < 6.0);  // the whole harness run, not only the stage
    }
  }
}

TEST_CASE("crash: CRASH with the signal and the stage") {
  for (const std::string& iso : kIsolation) {
    CAPTURE(iso);
    for (const char* stage : {"init", "warmup"}) {
      CAPTURE(stage);
      auto [r, t] = one_trial("--verify plain" + kCase + iso + "--inject crash@" + std::string(stage));
      CHECK(r.rc == 1);
      CHECK(has(t, "\"outcome\":\"CRASH\""));
      CHECK(has(t, "\"stage\":\"" + std::string(stage) + "\""));
      CHECK(has(t, "SIGSEGV in stage " + std::string(stage)));
    }
  }
}

TEST_CASE("error: ERROR with the message and the stage") {
  for (const std::string& iso : kIsolation) {
    CAPTURE(iso);
    auto [r, t] = one_trial("--verify fused" + kCase + iso + "--inject error@warmup");
    CHECK(r.rc == 1);
    CHECK(has(t, "\"outcome\":\"ERROR\""));
    CHECK(has(t, "\"stage\":\"warmup\""));
    CHECK(has(t, "injected fault error@warmup"));
  }
}

TEST_CASE("nan / corrupt / unwritten: FAIL with the right counters, found in the LAST call") {
  for (const std::string& iso : kIsolation) {
    CAPTURE(iso);
    struct Drill {
      const char* fault;
      int nan, unwritten;
    };
    for (const Drill d : {Drill{"nan", 1, 0}, Drill{"corrupt", 0, 0}, Drill{"unwritten", 0, 1}}) {
      CAPTURE(d.fault);
      auto [r, t] = one_trial("--verify plain" + kCase + iso + "--runs 4 --inject " + d.fault + "@run");
      CHECK(r.rc == 1);
      CHECK(has(t, "\"outcome\":\"FAIL\""));
      CHECK(has(t, "\"stage\":\"run\""));
      CHECK(json_number(t, "over_tolerance") == 1);
      CHECK(json_number(t, "nan_mismatch") == d.nan);
      CHECK(json_number(t, "unwritten") == d.unwritten);
      // Only the 4th checked call carries the fault: every call is checked, not only the first.
      CHECK(has(t, "\"over_tolerance_per_call\":[0,0,0,1]"));
      CHECK(has(t, "\"metrics_call\":4"));
      // The element is the middle one of 33x65: index 1072 -> (0,16,32).
      CHECK(has(t, "\"l\":0,\"m\":16,\"n\":32"));
      CHECK(has(r.out, "reproduce: "));
    }
  }
}

TEST_CASE("slow: PASS, and the sleep is visible in the stage time") {
  for (const std::string& iso : kIsolation) {
    CAPTURE(iso);
    auto [r, t] = one_trial("--verify plain" + kCase + iso + "--inject slow@warmup --slow-seconds 0.6");
    CHECK(r.rc == 0);
    CHECK(has(t, "\"outcome\":\"PASS\""));
    CHECK(harness_cli::stage_seconds(t, "warmup") >= 0.6);
    CHECK(harness_cli::stage_seconds(t, "run") < 0.6);
  }
}

TEST_CASE("a printed reproducer re-runs exactly the failing trial") {
  for (const std::string& iso : kIsolation) {
    CAPTURE(iso);
    const auto r = run("--verify plain,fused" + kCase + iso + "--inject corrupt@run:if=fused");
    CHECK(r.rc == 1);
    const size_t at = r.out.find("reproduce: ");
    REQUIRE(at != std::string::npos);
    std::string cmd = r.out.substr(at + 11, r.out.find('\n', at) - at - 11);
    CHECK(has(cmd, "--verify fused "));
    CHECK(has(cmd, "--inject corrupt@run:if=fused"));
    // Drop the program name: run() adds the binary itself.
    cmd = cmd.substr(cmd.find(' '));
    const auto again = run(cmd);
    CHECK(again.rc == 1);
    CHECK(has(again.out, "1 FAIL -> exit 1"));
    CHECK_FALSE(has(again.out, "cpu plain"));  // exactly the one trial
  }
}

TEST_CASE("bisect names exactly the combination a conditional fault was tied to") {
  SUBCASE("a pair: hang in tune only when autotune and fused meet") {
    const auto r = run("--bisect autotune+fused" + kCase + "--inject hang@tune:if=autotune+fused --budget-tune 1");
    CHECK(r.rc == 1);
    CHECK(has(r.out, "culprit: autotune+fused (TIMEOUT in stage tune after 1.0 s); each alone passes"));
  }
  SUBCASE("a single optimization inside a larger combination") {
    const auto r = run("--bisect autotune+fused" + kCase + "--inject error@warmup:if=fused");
    CHECK(r.rc == 1);
    CHECK(has(r.out, "culprit: fused (ERROR in stage warmup after"));
    CHECK(has(r.out, "injected fault error@warmup:if=fused"));
    CHECK(has(r.out, "; plain passes"));
    CHECK_FALSE(has(r.out, "culprit: autotune+fused"));
  }
  SUBCASE("a numeric failure") {
    const auto r = run("--bisect autotune+fused" + kCase + "--inject corrupt@run:if=autotune");
    CHECK(r.rc == 1);
    CHECK(has(r.out, "culprit: autotune (FAIL in stage run after"));
    CHECK(has(r.out, "1 element over tolerance"));
  }
  SUBCASE("the base path itself") {
    const auto r = run("--bisect autotune+fused" + kCase + "--inject crash@init");
    CHECK(r.rc == 1);
    CHECK(has(r.out, "culprit: plain (CRASH in stage init"));
  }
  SUBCASE("a passing combination: exit 0") {
    const auto r = run("--bisect autotune+fused" + kCase);
    CHECK(r.rc == 0);
    CHECK(has(r.out, "pass: autotune+fused passes on 1 case"));
  }
}

TEST_CASE("bisect searches on the smallest failing case and confirms the verdict on the whole suite") {
  const std::string dir = harness_cli::temp_dir();
  SUBCASE("one culprit: a few trials, not the suite per subset") {
    const auto r = run("bisect autotune+fused --backend cpu --jobs 2 --inject corrupt@run:if=fused --json " + dir +
                       "/b.json");
    CHECK(r.rc == 1);
    CHECK(has(r.out, "culprit: fused (FAIL in stage run"));
    CHECK(has(r.out, "; plain passes; confirmed on all "));
    CHECK(has(r.out, "no smaller combination fails on any"));
    // The trials ran in workers (one child runs many trials), as verify's do: bisect honours
    // --isolate and --jobs.
    const auto trials = json_trials(read_text(dir + "/b.json"));
    std::set<double> pids;
    for (const auto& t : trials) pids.insert(json_number(t, "child_pid"));
    CHECK(trials.size() > 50);
    CHECK(pids.size() * 4 < trials.size());
  }
  SUBCASE("a second culprit that fails only on another case is found by the confirmation") {
    const auto r = run("bisect autotune+fused --backend cpu --inject corrupt@run:if=fused "
                       "--inject corrupt@run:if=autotune:case=33x65x160");
    CHECK(r.rc == 1);
    CHECK(has(r.out, "culprits: autotune (FAIL in stage run"));
    CHECK(has(r.out, "; fused (FAIL in stage run"));
  }
}

TEST_CASE("staged isolation: a failing optimization blocks every combination above it") {
  for (const std::string& iso : kIsolation) {
    CAPTURE(iso);
    const std::string json = harness_cli::temp_dir() + "/r.json";
    const auto r = run(iso + "--verify all --backend cpu --shape 7x13x48 --dist normal,ones --inject error@warmup:if=fused --json " + json);
    CHECK(r.rc == 1);
    int plain = 0, autotune = 0, fused = 0, blocked = 0;
    for (const auto& t : json_trials(read_text(json))) {
      if (has(t, "\"combo\":\"plain\"")) plain += has(t, "\"outcome\":\"PASS\"");
      if (has(t, "\"combo\":\"autotune\"")) autotune += has(t, "\"outcome\":\"PASS\"");
      if (has(t, "\"combo\":\"fused\"")) fused += has(t, "\"outcome\":\"ERROR\"");
      if (has(t, "\"combo\":\"autotune+fused\""))
        blocked += has(t, "\"outcome\":\"BLOCKED\"") && has(t, "\"blocked_by\":\"fused\"");
    }
    CHECK(plain == 2);
    CHECK(autotune == 2);
    CHECK(fused == 2);
    CHECK(blocked == 2);
    CHECK(has(r.out, "BLOCKED cpu autotune+fused (blocked by fused)"));

    // When plain fails, everything above it is blocked, transitively.
    const auto all_blocked = run(iso + "--verify all --backend cpu --shape 7x13x48 --dist normal --inject crash@init --json " + json);
    CHECK(all_blocked.rc == 1);
    const auto trials = json_trials(read_text(json));
    REQUIRE(trials.size() == 4);
    CHECK(has(trials[0], "\"outcome\":\"CRASH\""));
    for (size_t i = 1; i < trials.size(); ++i) CHECK(has(trials[i], "\"outcome\":\"BLOCKED\""));
    CHECK(has(trials[3], "\"blocked_by\":\"autotune, fused\""));
  }
}

TEST_CASE("exit codes: 0 pass, 1 failure, 2 bad usage or input, 125 nothing testable") {
  CHECK(run("--verify plain" + kCase).rc == 0);
  CHECK(run("--verify plain" + kCase + "--inject error@run").rc == 1);
  for (const char* bad : {"--frobnicate", "--verify nosuch --backend cpu", "--verify plain --shape 8x8x15",
                          "--verify plain --inject boom@run", "--verify plain --dist nosuch",
                          "--verify plain --runs 0", "--verify plain --backend tpu", "",
                          "--check x.npy", "--verify plain --budget-run 0"}) {
    CAPTURE(bad);
    const auto r = run(std::string(bad));
    CHECK(r.rc == 2);
  }
  // No GPU here (or no CUDA in this build): every GPU trial is SKIP, nothing testable — also for
  // the GPU-only optimizations, whose names a build without CUDA knows too (exit 2 there would
  // make `git bisect run` mark a commit bad on a machine that cannot test it).
  for (const char* args : {"--backend gpu --verify plain --shape 7x13x48 --dist normal",
                           "--backend gpu --verify fused+graph --shape 7x13x48 --dist normal",
                           "--backend gpu --bisect autotune+fused+graph --shape 7x13x48 --dist normal"}) {
    CAPTURE(args);
    const auto gpu = run(args);
    if (has(gpu.out, "backend gpu: available")) {
      MESSAGE("a GPU is present: the 125 case is not testable here");
    } else {
      CHECK(gpu.rc == 125);
      CHECK(has(gpu.out, "SKIP"));
    }
  }
}
