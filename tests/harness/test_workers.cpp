// test_workers.cpp — workers, --jobs and --gpus (pool.hpp, worker.hpp) through the real binary,
// and the parsing and reference prefetch behind them: a worker runs a combination's trials in one
// process; a crash or a FAIL ends it and loses only that trial (the rest run in a fresh worker,
// with what one process per trial gives); progress stays in list order with several slots; each
// slot's child sees its GPU; references are computed once per (case, set); a trial is judged while
// its worker runs the next. (Over 600 lines: every case drives the same pool through the same
// helpers; a split would copy them.)
#include <doctest/doctest.h>

#include <algorithm>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cases.hpp"
#include "reference_store.hpp"
#include "faults.hpp"
#include "lattice.hpp"
#include "errors.hpp"
#include "external.hpp"
#include "harness_cli.hpp"
#include "json_read.hpp"
#include "pool.hpp"
#include "worker.hpp"

using namespace nvfp4;
using harness_cli::has;
using harness_cli::read_text;
using harness_cli::run;

namespace {

const std::string kThree = " --backend cpu --shape 7x13x48,33x65x160,128x96x256x2 --dist normal --seed 7 ";

// The trials of a run's JSON report.
std::vector<JsonValue> trials_of(const std::string& args) {
  const std::string json = harness_cli::temp_dir() + "/r.json";
  run(args + " --json " + json);
  return JsonValue::parse(read_text(json)).at("trials").items();
}

int pid_of(const JsonValue& t) { return int(t.number_or("child_pid", 0)); }

// What must not depend on the isolation: name, outcome, stage and message of every trial.
std::vector<std::string> verdicts(const std::vector<JsonValue>& trials) {
  std::vector<std::string> v;
  for (const auto& t : trials)
    v.push_back(t.str_or("combo", "") + " | " + t.at("case").str_or("name", "") + " | " + t.str_or("outcome", "") +
                " | " + t.str_or("stage", "") + " | " + t.str_or("message", ""));
  return v;
}

}  // namespace

TEST_CASE("a worker runs one combination's trials in one process; --isolate trial one process each") {
  const auto w = trials_of("--verify plain,fused" + kThree + "--isolate worker --jobs 1");
  REQUIRE(w.size() == 6);
  for (size_t c = 0; c < 2; ++c) {  // combination-major: plain's three cases, then fused's
    CHECK(pid_of(w[3 * c]) > 0);
    CHECK(pid_of(w[3 * c]) == pid_of(w[3 * c + 1]));
    CHECK(pid_of(w[3 * c]) == pid_of(w[3 * c + 2]));
  }
  CHECK(pid_of(w[0]) != pid_of(w[3]));
  const auto t = trials_of("--verify plain,fused" + kThree + "--isolate trial");
  REQUIRE(t.size() == 6);
  std::set<int> pids;
  for (const auto& x : t) pids.insert(pid_of(x));
  CHECK(pids.size() == 6);
  for (const auto& x : w) CHECK(x.str_or("outcome", "") == "PASS");
  for (const auto& x : t) CHECK(x.str_or("outcome", "") == "PASS");
}

TEST_CASE("a worker killed mid-trial loses only that trial; the rest run in a fresh worker") {
  for (const std::string fault : {"crash@run", "hang@warmup", "error@init", "corrupt@run"}) {
    CAPTURE(fault);
    const std::string args = "--verify plain" + kThree + "--jobs 1 --budget-warmup 1 --inject " + fault + ":case=33x65x160";
    const auto w = trials_of(args + " --isolate worker");
    REQUIRE(w.size() == 3);
    CHECK(w[0].str_or("outcome", "") == "PASS");
    CHECK(w[1].str_or("outcome", "") != "PASS");
    CHECK(w[2].str_or("outcome", "") == "PASS");
    // The failing trial ran in the worker of the first; the third in a fresh one.
    CHECK(pid_of(w[1]) == pid_of(w[0]));
    CHECK(pid_of(w[2]) != pid_of(w[0]));
    // Exactly what one process per trial gives.
    CHECK(verdicts(w) == verdicts(trials_of(args + " --isolate trial")));
  }
}

TEST_CASE("the fault drills classify the same in both modes, on a whole lattice") {
  const std::string args = "--verify all --backend cpu --shape 7x13x48,33x65x160 --dist normal,ones --budget-tune 1 "
                           "--inject crash@warmup:if=fused:case=33x65x160 --inject hang@tune:case=7x13x48";
  auto w = verdicts(trials_of(args + " --isolate worker"));
  auto t = verdicts(trials_of(args + " --isolate trial"));
  REQUIRE(w.size() == 16);
  // Within a level the order differs (combination-major with workers); the trials do not.
  std::multiset<std::string> ws(w.begin(), w.end()), ts(t.begin(), t.end());
  CHECK(ws == ts);
  int crash = 0, timeout = 0, blocked = 0;
  for (const auto& v : w) {
    crash += has(v, "| CRASH | warmup | SIGSEGV in stage warmup");
    timeout += has(v, "| TIMEOUT | tune |");
    blocked += has(v, "| BLOCKED |");
  }
  CHECK(crash == 2);    // fused on the two 33x65x160 cases
  CHECK(timeout == 2);  // autotune on the two 7x13x48 cases
  CHECK(blocked == 4);  // autotune+fused: both of its subs failed
}

TEST_CASE("--jobs: progress lines and the report stay in list order; the lattice stays staged") {
  const std::string args = "--verify all --backend cpu --shape 7x13x48,33x65x160,128x96x256x2 --dist normal,uniform "
                           "--inject error@warmup:if=fused:case=128x96x256x2";
  auto names = [](const harness_cli::Result& r) {
    std::vector<std::string> lines;
    std::string line;
    for (char ch : r.out) {
      if (ch != '\n') {
        line += ch;
        continue;
      }
      if (line.rfind("[", 0) == 0) {  // "[  i/N  t s] NAME  OUTCOME ..."
        const size_t from = line.find("] ") + 2;
        lines.push_back(line.substr(from, line.find("  ", from) - from));
      }
      line.clear();
    }
    return lines;
  };
  const auto one = run(args + " --jobs 1");
  const auto three = run(args + " --jobs 3");
  CHECK(one.rc == 1);
  CHECK(three.rc == 1);
  CHECK(names(one).size() >= 18);
  CHECK(names(one) == names(three));
  CHECK(verdicts(trials_of(args + " --jobs 1")) == verdicts(trials_of(args + " --jobs 3")));
  CHECK(has(three.out, "BLOCKED cpu autotune+fused (blocked by fused)"));
}

TEST_CASE("--gpus: each slot's child runs with its own CUDA_VISIBLE_DEVICES; ctest's resource spec") {
  // Four combinations for two slots: each slot runs some (a combination's three trials stay in one
  // worker).
  const auto t = trials_of("--verify plain,fused,autotune,autotune+fused" + kThree + "--gpus 3,5 --jobs 2");
  REQUIRE(t.size() == 12);
  std::set<std::string> seen;
  for (const auto& x : t) {
    CHECK(x.str_or("outcome", "") == "PASS");
    seen.insert(x.str_or("device", ""));
  }
  CHECK(seen == std::set<std::string>{"3", "5"});
  // One combination of four slow trials (2 s each) on two GPUs: a worker on each (a worker's start
  // is cheap against trials on a GPU of its own).
  std::set<std::string> both;
  for (const auto& x : trials_of("--verify plain --backend cpu --shape 7x13x48,9x5x32 --dist normal,uniform --seed 7 "
                                 "--gpus 3,5 --jobs 2 --inject slow@run"))
    both.insert(x.str_or("device", ""));
  CHECK(both == std::set<std::string>{"3", "5"});
  // --isolate trial passes it too.
  for (const auto& x : trials_of("--verify plain" + kThree + "--gpus 4 --isolate trial"))
    CHECK(x.str_or("device", "") == "4");
  // Without --gpus: the GPUs ctest allocated.
  const std::string env = "CTEST_RESOURCE_GROUP_COUNT=1 CTEST_RESOURCE_GROUP_0=gpus CTEST_RESOURCE_GROUP_0_GPUS=id:2,slots:1 ";
  const std::string json = harness_cli::temp_dir() + "/r.json";
  const std::string cmd = env + harness_cli::harness_bin() + " --verify plain" + kThree + "--json " + json + " >/dev/null 2>&1";
  CHECK(std::system(cmd.c_str()) == 0);
  const JsonValue rep = JsonValue::parse(read_text(json));
  REQUIRE(rep.at("trials").items().size() == 3);
  for (const auto& x : rep.at("trials").items()) CHECK(x.str_or("device", "") == "2");
  // No GPU given: the variable is left as it is (unset here).
  for (const auto& x : trials_of("--verify plain" + kThree)) CHECK(x.find("device") == nullptr);
}

TEST_CASE("bad --isolate, --jobs, --gpus: exit 2") {
  for (const char* bad : {"--isolate process", "--jobs 0", "--jobs -3", "--gpus x", "--gpus 1,1", "--gpus 0,,1"}) {
    CAPTURE(bad);
    const auto r = run("--verify plain" + kThree + bad);
    CHECK(r.rc == 2);
  }
}

TEST_CASE("overhead: per trial wall minus its stages, and the total in the summary") {
  const std::string json = harness_cli::temp_dir() + "/r.json";
  const auto r = run("--verify plain" + kThree + "--json " + json);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "overhead: "));
  CHECK(has(r.out, "s outside the stages in 3 trials"));
  const JsonValue rep = JsonValue::parse(read_text(json));
  double total = 0;
  for (const auto& t : rep.at("trials").items()) {
    double stages = 0;
    for (const auto& s : t.at("stages").items())
      if (!(s.find("ahead") && s.at("ahead").boolean())) stages += s.number_or("seconds", 0);  // a worker's head start is outside its wall
    const double o = t.number_or("overhead_s", -1);
    CHECK(o >= 0);
    CHECK(o == doctest::Approx(t.number_or("wall_s", 0) - stages).epsilon(1e-9));
    total += o;
  }
  CHECK(rep.number_or("overhead_s", -1) == doctest::Approx(total));
  // What it measures: a worker's start counts in its first trial only, so with one process per
  // trial the same trials spend more outside their stages (a process start each) than with workers
  // (one start per combination: here one, for three trials).
  auto total_overhead = [&](const std::string& isolate) {
    const std::string j = harness_cli::temp_dir() + "/o.json";
    run("--verify plain" + kThree + "--isolate " + isolate + " --json " + j);
    const JsonValue v = JsonValue::parse(read_text(j));
    // The later trials' smallest overhead: one trial slowed by a busy machine does not decide it.
    double first = 0, later = 1e9;
    int n = 0;
    for (const auto& t : v.at("trials").items()) {
      const double o = t.number_or("overhead_s", 0);
      if (n++ == 0) first = o;
      else later = std::min(later, o);
    }
    return std::make_pair(first, later);
  };
  const auto worker = total_overhead("worker"), trial = total_overhead("trial");
  INFO("worker first/later " << worker.first << "/" << worker.second << ", trial " << trial.first << "/" << trial.second);
  CHECK(trial.second > worker.second);  // a process start each against none
}

TEST_CASE("run policy parsing: GPU lists, ctest resource groups, /proc counting, work units") {
  CHECK(parse_gpu_list("0,2,7") == std::vector<std::string>{"0", "2", "7"});
  CHECK(parse_gpu_list("GPU-1a2b-3c") == std::vector<std::string>{"GPU-1a2b-3c"});
  for (const char* bad : {"", "0,", "a", "1,1", "-1", "0;1"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_gpu_list(bad), InputError);
  }
  std::map<std::string, std::string> env = {{"CTEST_RESOURCE_GROUP_COUNT", "2"},
                                            {"CTEST_RESOURCE_GROUP_0", "gpus"},
                                            {"CTEST_RESOURCE_GROUP_0_GPUS", "id:1,slots:1;id:3,slots:2"},
                                            {"CTEST_RESOURCE_GROUP_1", "gpus,cpus"},
                                            {"CTEST_RESOURCE_GROUP_1_GPUS", "id:0,slots:1"}};
  auto get = [&](const std::string& k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  CHECK(gpus_from_ctest(get) == std::vector<std::string>{"1", "3", "0"});
  env["CTEST_RESOURCE_GROUP_1"] = "cpus";  // a group without gpus gives none
  CHECK(gpus_from_ctest(get) == std::vector<std::string>{"1", "3"});
  env["CTEST_RESOURCE_GROUP_0_GPUS"] = "slots:1";
  CHECK_THROWS_AS(gpus_from_ctest(get), InputError);
  env.clear();
  CHECK(gpus_from_ctest(get).empty());

  const std::string proc = harness_cli::temp_dir();
  for (const char* bus : {"0000:01:00.0", "0000:41:00.0", "0000:81:00.0"}) std::filesystem::create_directory(proc + "/" + bus);
  CHECK(count_gpus(proc) == 3);

  RunPolicy p;
  CHECK(p.env(0).empty());
  p.gpus = {"2", "6"};
  CHECK(p.env(0) == EnvOverrides{"CUDA_VISIBLE_DEVICES=2"});
  CHECK(p.env(3) == EnvOverrides{"CUDA_VISIBLE_DEVICES=6"});

  std::vector<TrialSpec> specs;
  for (const char* combo : {"plain", "fused"})
    for (int c = 0; c < 4; ++c) {
      TrialSpec s;
      s.backend = "cpu";
      s.combo = Combo::parse(combo);
      s.c.seed = uint64_t(c);
      specs.push_back(s);
    }
  std::swap(specs[1], specs[5]);  // a group need not be contiguous
  const Schedule sch = Schedule::of(specs);
  CHECK(sch.group == std::vector<size_t>{0, 1, 0, 0, 1, 0, 1, 1});
  CHECK(sch.needs == std::vector<std::vector<size_t>>{{}, {}});

  // Slots: a quarter of the cores per GPU, 1 to 4 per GPU; no GPU counts as one device.
  CHECK(default_jobs(0, 2) == 1);
  CHECK(default_jobs(0, 16) == 4);
  CHECK(default_jobs(1, 16) == 4);
  CHECK(default_jobs(1, 256) == 4);
  CHECK(default_jobs(4, 64) == 8);  // at most 8 in all
  CHECK(default_jobs(16, 64) == 16);  // but one per GPU
  CHECK(default_jobs(2, 12) == 2);
  CHECK(default_jobs(8, 8) == 8);
}

TEST_CASE("prefetch: every (case, set) once, in parallel, within the byte budget") {
  std::vector<CaseSpec> cases;
  for (const char* shape : {"7x13x48", "33x65x160", "128x96x256x2"}) {
    CaseSpec c;
    c.shape = Shape::parse(shape);
    c.dist = "normal";
    c.seed = 7;
    cases.push_back(c);
  }
  ReferenceCache cache;
  cases.push_back(cases[0]);  // a repeated case is computed once
  cache.prefetch(cases, 2, InputSet::Activations, 4);
  CHECK(cache.computed() == 3 * 3);  // sets 0, 1 and the warm-up's (2) of each case
  for (const auto& c : cases)
    for (int set = 0; set <= 2; ++set) {
      const auto info = cache.get(c, set, InputSet::Activations);
      ReferenceCache fresh;
      CHECK(info->ref.c == fresh.get(c, set, InputSet::Activations)->ref.c);
    }
  CHECK(cache.computed() == 9);  // get() found them all
  REQUIRE(cache.seen().size() == 3);
  CHECK(cache.seen()[0]->spec.shape.str() == "7x13x48");  // in the order given
  CHECK(cache.seen()[2]->spec.shape.str() == "128x96x256x2");

  // A budget for one small case: the others are left to get().
  ReferenceCache small(3 * size_t(7 * 13) * (4 * sizeof(double) + 2));
  small.prefetch(cases, 2, InputSet::Activations);
  CHECK(small.computed() == 3);
  small.get(cases[1]);
  CHECK(small.computed() == 4);
}

TEST_CASE("a worker that dies between trials is not blamed on the next trial: it runs in a fresh worker") {
  const std::string dir = harness_cli::temp_dir();
  Worker w(harness_cli::harness_bin(), dir, EnvOverrides{});
  TrialSpec t;
  t.backend = "cpu";
  t.combo = Combo::parse("plain");
  t.c.shape = Shape::parse("7x13x48");
  t.c.dist = "normal";
  t.c.seed = 7;
  auto trial_dir = [&](int i) {
    const std::string d = dir + "/t" + std::to_string(i);
    std::filesystem::create_directories(d);
    return d;
  };
  const ChildReport first = w.run(t, trial_dir(0));
  REQUIRE(first.outcome == Outcome::Pass);
  REQUIRE(w.running());
  // The idle worker dies (the OOM killer, a stray thread of a path): the next trial still passes.
  REQUIRE(kill(first.pid, SIGKILL) == 0);
  usleep(200 * 1000);
  const ChildReport second = w.run(t, trial_dir(1));
  INFO(second.message);
  CHECK(second.outcome == Outcome::Pass);
  CHECK(second.pid != first.pid);
  CHECK(w.started() == 2);
  bool noted = false;
  for (const auto& n : second.notes) noted |= has(n, "died while idle (SIGKILL)");
  CHECK(noted);
}

namespace {
TrialSpec small_trial(const std::string& backend = "cpu", const std::string& combo = "plain") {
  TrialSpec t;
  t.backend = backend;
  t.combo = Combo::parse(combo);
  t.c.shape = Shape::parse("7x13x48");
  t.c.dist = "normal";
  t.c.seed = 7;
  return t;
}
// A small cpu trial under the session's options.
TrialSpec trial_of(const Session& s, const std::string& combo) {
  TrialSpec t = small_trial("cpu", combo);
  t.options = s.options();
  return t;
}
}  // namespace

TEST_CASE("a worker started ahead has loaded its backend when its first trial comes; that trial is timed from its hand-over") {
  const std::string dir = harness_cli::temp_dir();
  auto trial_dir = [&](const std::string& name) {
    const std::string d = dir + "/" + name;
    std::filesystem::create_directories(d);
    return d;
  };
  Worker w(harness_cli::harness_bin(), dir, EnvOverrides{}, "cpu");
  w.start();
  REQUIRE(w.running());
  usleep(1500 * 1000);  // idle, loaded: not the first trial's time
  const ChildReport first = w.run(small_trial(), trial_dir("a"));
  INFO(first.message);
  REQUIRE(first.outcome == Outcome::Pass);
  REQUIRE(!first.stages.empty());
  CHECK(first.stages.front().stage == "load");  // the head start, reported by the first trial
  CHECK(first.stages.front().completed);
  CHECK(first.stages.front().ahead);
  CHECK(first.wall < 1.5);
  const ChildReport second = w.run(small_trial(), trial_dir("b"));
  REQUIRE(second.outcome == Outcome::Pass);
  CHECK(second.pid == first.pid);
  for (const auto& st : second.stages) CHECK(st.stage != "load");
  CHECK(w.started() == 1);

  // A backend that cannot load: the first trial's ERROR in stage load, with the loader's reason.
  Worker bad(harness_cli::harness_bin(), dir, EnvOverrides{}, "nosuch");
  bad.start();
  const ChildReport failed = bad.run(small_trial("nosuch"), trial_dir("c"));
  CHECK(failed.outcome == Outcome::Error);
  CHECK(failed.stage == "load");
  CHECK(has(failed.message, "nosuch"));
  CHECK(!bad.running());  // fail-stop

  // A trial of another backend than the one loaded ahead is refused, not run beside it.
  Worker other(harness_cli::harness_bin(), dir, EnvOverrides{}, "cpu");
  const ChildReport wrong = other.run(small_trial("gpu"), trial_dir("d"));
  CHECK(wrong.outcome == Outcome::Error);
  CHECK(has(wrong.message, "loaded backend cpu ahead, not gpu"));
}

TEST_CASE("a schedule starts a group when the groups it needs finish, not when every earlier group has") {
  TrialOptions o;
  o.faults = {Fault::parse("slow@run:if=autotune")};
  o.slow_seconds = 2.0;
  Session s(o, "harness", nullptr, harness_cli::harness_bin());
  RunPolicy p;
  p.jobs = 2;
  p.kept_spares = 2;  // spares the slot threads start stay for the next run
  s.set_policy(p);
  auto spec = [&](const std::string& combo) { return trial_of(s, combo); };
  // Listed in lattice order: plain, autotune (slow), fused (needs plain only).
  Schedule sch;
  sch.specs = {spec("plain"), spec("autotune"), spec("fused")};
  sch.group = {0, 1, 2};
  sch.needs = {{}, {}, {0}};
  s.run_schedule(sch, nullptr);
  const auto& r = s.results();
  REQUIRE(r.size() == 3);
  for (const auto& t : r) CHECK(t.outcome == Outcome::Pass);
  CHECK(r[2].spec.combo.str() == "fused");
  // fused ran while autotune, listed before it, was still sleeping in stage run.
  CHECK(r[2].started >= 0);
  CHECK(r[2].started < r[1].started + r[1].wall - 0.5);

  // The spares the slots started live on after their slot threads ended (a child's death signal
  // follows the thread that forked it): the next run's trials take them, whole.
  s.run_all({spec("plain"), spec("fused"), spec("plain"), spec("fused")});
  REQUIRE(s.results().size() == 7);
  // Its first trial ran in a spare kept from the first run (its load done ahead).
  REQUIRE(!s.results()[3].stages.empty());
  CHECK(s.results()[3].stages.front().stage == "load");
  CHECK(s.results()[3].stages.front().ahead);
  for (size_t i = 3; i < 7; ++i) {
    INFO(s.results()[i].message);
    CHECK(s.results()[i].outcome == Outcome::Pass);
    for (const auto& note : s.results()[i].notes) CHECK_FALSE(has(note, "died"));
  }

  // A group whose need failed is BLOCKED for the reason `why` gives, and so is one that needs it.
  TrialOptions bad = o;
  bad.faults = {Fault::parse("corrupt@run:if=fused")};
  Session s2(bad, "harness", nullptr, harness_cli::harness_bin());
  s2.set_policy(p);
  auto spec2 = [&](const std::string& combo) { return trial_of(s2, combo); };
  Schedule chain;
  chain.specs = {spec2("fused"), spec2("autotune+fused"), spec2("autotune"), spec2("plain")};
  chain.group = {0, 1, 2, 3};
  chain.needs = {{}, {0}, {1}, {}};
  std::vector<size_t> asked;
  s2.run_schedule(chain, [&](size_t g, const std::vector<std::pair<size_t, const TrialResult*>>& failed) {
    asked.push_back(g);
    REQUIRE(failed.size() == 1);
    return std::make_pair("needs " + std::to_string(failed[0].first) + " (" + outcome_name(failed[0].second->outcome) + ")",
                          std::to_string(failed[0].first));
  });
  const auto& r2 = s2.results();
  REQUIRE(r2.size() == 4);
  CHECK(r2[0].outcome == Outcome::Fail);
  CHECK(r2[1].outcome == Outcome::Blocked);
  CHECK(r2[1].message == "needs 0 (FAIL)");
  CHECK(r2[2].outcome == Outcome::Blocked);
  CHECK(r2[2].message == "needs 1 (BLOCKED)");
  CHECK(r2[2].blocked_by == "1");
  CHECK(r2[3].outcome == Outcome::Pass);
  CHECK(asked == std::vector<size_t>{1, 2});
}

TEST_CASE("a slot joins a combination that has a worker only when both keep at least 16 trials") {
  // A worker's start is worth tens of trials (the GPU driver's initialization): 8 trials stay in
  // one worker with 4 slots free; 42 trials are shared by 2 workers (21 each), not 3 (14 each).
  auto pids = [](const std::string& shapes, const std::string& dists) {
    std::set<int> p;
    for (const auto& t : trials_of("--verify plain --backend cpu --seed 7 --jobs 4 --shape " + shapes + " --dist " + dists)) {
      CHECK(t.str_or("outcome", "") == "PASS");
      p.insert(pid_of(t));
    }
    return p.size();
  };
  CHECK(pids("7x13x48,9x5x32", "normal,uniform,edge,ones") == 1);
  CHECK(pids("7x13x48,9x5x32,3x3x16,5x7x64,2x2x32,4x9x16", "normal,uniform,edge,gpumode,ones,identity,suspicious") == 2);
}

TEST_CASE("references prefetched in the background are what the next run uses") {
  TrialOptions o;  // no on-disk cache: every reference this session has, it computed
  Session s(o, "harness", nullptr, harness_cli::harness_bin());
  std::vector<CaseSpec> cases;
  std::vector<TrialSpec> specs;
  for (const char* shape : {"7x13x48", "33x65x160"}) {
    TrialSpec t = small_trial();
    t.c.shape = Shape::parse(shape);
    t.options = s.options();
    cases.push_back(t.c);
    specs.push_back(t);
  }
  s.prefetch_in_background(cases);
  s.wait_references();
  // The checked calls' sets, the warm-up's, and stage instances' second plan's (set 1, all new).
  const int sets = warmup_set(o.runs) + 2;
  CHECK(s.cache().computed() == 2 * sets);
  s.run_all(specs);
  REQUIRE(s.results().size() == 2);
  for (const auto& r : s.results()) CHECK(r.outcome == Outcome::Pass);
  CHECK(s.cache().computed() == 2 * sets);  // none computed again
}

TEST_CASE("two prefetches at once compute each reference once (a bisect's background one and a step's)") {
  std::vector<CaseSpec> cases;
  for (const char* shape : {"7x13x48", "33x65x160", "128x96x256x2", "64x96x768"})
    for (const char* dist : {"normal", "uniform"}) {
      CaseSpec c;
      c.shape = Shape::parse(shape);
      c.dist = dist;
      c.seed = 7;
      cases.push_back(c);
    }
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    std::string why;
    auto store = ReferenceStore::open(harness_cli::temp_dir() + "/refs", &why);
    REQUIRE(store);
    ReferenceCache cache;
    cache.set_store(store);
    std::vector<CaseSpec> reversed(cases.rbegin(), cases.rend());
    std::thread background([&] { cache.prefetch(cases, 2, InputSet::Activations, 2); });
    cache.prefetch(reversed, 2, InputSet::Activations, 2);
    background.join();
    CHECK(store->stats().computed == int64_t(cases.size()) * 3);  // sets 0, 1 and the warm-up's
    CHECK(store->stats().hits == 0);
    CHECK(cache.computed() == int(cases.size()) * 3);
  }
}

namespace {
// One slot: the trials of a run one after another, in one worker while they pass.
RunPolicy one_slot() {
  RunPolicy p;
  p.jobs = 1;
  return p;
}
}  // namespace

TEST_CASE("a trial is judged while its worker runs the next one; a failing one's successor runs again in a fresh worker") {
  TrialOptions o;
  Session s(o, "harness", nullptr, harness_cli::harness_bin());
  RunPolicy p = one_slot();
  s.set_policy(p);
  // Two trials of one combination whose outputs take the parent a while to compare (2M elements
  // per call, three calls), while the cpu path computes them quickly (K = 16).
  auto big = [&](int seed) {
    TrialSpec t = trial_of(s, "plain");
    t.c.shape = Shape::parse("1024x2048x16");
    t.c.seed = seed;
    return t;
  };
  s.run_all({big(1), big(2)});
  const auto& r = s.results();
  REQUIRE(r.size() == 2);
  for (const auto& t : r) {
    INFO(t.message);
    CHECK(t.outcome == Outcome::Pass);
  }
  REQUIRE(r[0].judged > 0.1);
  CHECK(r[0].child_pid == r[1].child_pid);
  // The second trial was handed to the worker before the first one's judgement ended.
  CHECK(r[1].started < r[0].started + r[0].wall + r[0].judged / 2);

  // The bench's policy judges first: the second trial starts after the first one is judged.
  Session b(o, "harness", nullptr, harness_cli::harness_bin());
  p.overlap = false;
  b.set_policy(p);
  b.run_all({big(1), big(2)});
  REQUIRE(b.results().size() == 2);
  CHECK(b.results()[1].started >= b.results()[0].started + b.results()[0].wall + b.results()[0].judged);

  // A FAIL found while the next trial ran in the same worker: that report is dropped and the trial
  // runs again in a fresh worker (fail-stop), with the verdicts of one process per trial.
  for (const bool overlap : {true, false}) {
    CAPTURE(overlap);
    TrialOptions bad;
    bad.faults = {Fault::parse("corrupt@run:case=1024x2048x16")};
    Session f(bad, "harness", nullptr, harness_cli::harness_bin());
    p.overlap = overlap;
    f.set_policy(p);
    TrialSpec small = trial_of(f, "plain");
    TrialSpec large = small;
    large.c.shape = Shape::parse("1024x2048x16");
    f.run_all({small, large, small, small});
    const auto& x = f.results();
    REQUIRE(x.size() == 4);
    CHECK(x[0].outcome == Outcome::Pass);
    CHECK(x[1].outcome == Outcome::Fail);
    CHECK(x[2].outcome == Outcome::Pass);
    CHECK(x[3].outcome == Outcome::Pass);
    CHECK(x[1].child_pid == x[0].child_pid);
    CHECK(x[2].child_pid != x[1].child_pid);
    CHECK(x[3].child_pid == x[2].child_pid);
  }
}

TEST_CASE("judging on the side keeps a worker after a SKIP and runs the trial after a CRASH once") {
  // A SKIP keeps the worker (the gpu backend SKIPs without a usable GPU, PASSes with one).
  TrialOptions o;
  Session s(o, "harness", nullptr, harness_cli::harness_bin());
  RunPolicy p = one_slot();
  s.set_policy(p);
  TrialSpec t = small_trial("gpu", "plain");
  t.options = s.options();
  TrialSpec t2 = t, t3 = t;
  t2.c.seed = 8;
  t3.c.seed = 9;
  s.run_all({t, t2, t3});
  const auto& r = s.results();
  REQUIRE(r.size() == 3);
  CHECK(r[0].child_pid == r[1].child_pid);
  CHECK(r[1].child_pid == r[2].child_pid);

  // The trial after one whose child crashed runs once, in a fresh worker, with or without overlap.
  for (const bool overlap : {false, true}) {
    CAPTURE(overlap);
    TrialOptions c;
    c.faults = {Fault::parse("crash@run:case=7x13x48"), Fault::parse("slow@run:case=9x13x48")};
    c.slow_seconds = 1.5;
    Session cs(c, "harness", nullptr, harness_cli::harness_bin());
    p.overlap = overlap;
    cs.set_policy(p);
    TrialSpec a = trial_of(cs, "plain");
    TrialSpec b = a;
    b.c.shape = Shape::parse("9x13x48");
    cs.run_all({a, b});
    const auto& x = cs.results();
    REQUIRE(x.size() == 2);
    CHECK(x[0].outcome == Outcome::Crash);
    CHECK(x[1].outcome == Outcome::Pass);
    CHECK(x[1].child_pid != x[0].child_pid);
    CHECK(x[1].started - (x[0].started + x[0].wall) < 1.0);  // handed over at once, not after a dropped run
  }
}

TEST_CASE("--gpus: a combination of quick trials keeps one worker whatever the GPUs; long trials spread") {
  // 20 quick trials (fewer than 2 x 16) on two GPUs with two slots each: one worker, not one per GPU
  // (more GPUs make more worker starts at once, not cheaper ones).
  std::set<int> p;
  std::set<std::string> devices;
  for (const auto& t : trials_of("--verify plain --backend cpu --seed 7 --jobs 4 --gpus 3,5 --shape "
                                 "7x13x48,9x5x32,3x3x16,5x7x64,2x2x32 --dist normal,uniform,edge,ones")) {
    CHECK(t.str_or("outcome", "") == "PASS");
    p.insert(pid_of(t));
    devices.insert(t.str_or("device", ""));
  }
  CHECK(p.size() == 1);
  CHECK(devices.size() == 1);
}

TEST_CASE("a child's messages are bounded in the parent: texts, over-long lines, notes") {
  CHECK(bounded_text("short") == "short");
  const std::string five_k(5000, 'x');
  const std::string cut = bounded_text(five_k);
  CHECK(cut == std::string(kMaxMessageText, 'x') + " ... [904 more bytes left out]");
  CHECK(bounded_text(five_k, true) == std::string(kMaxMessageText, 'x') + " ... [at least 904 more bytes left out]");
  // A three-byte character across the cut is kept whole or left out whole, never split.
  const std::string euro = std::string(kMaxMessageText - 1, 'a') + "\xe2\x82\xac" + std::string(10, 'b');
  const std::string e = bounded_text(euro);
  CHECK(e.substr(0, kMaxMessageText) == std::string(kMaxMessageText - 1, 'a') + " ");
  // Invalid UTF-8 (continuation bytes only): at most three bytes given back.
  CHECK(bounded_text(std::string(5000, '\x80')).find(" ... [") >= kMaxMessageText - 3);

  // Through converse: a 2 MiB note line (no newline for a while), a short note, 70 more notes, then
  // one that carries a verdict.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread writer([&] {
    std::string s = "note\t" + std::string(2 << 20, 'y') + "\nnote\tafter the long line\n";
    for (int i = 0; i < 70; ++i) s += "note\tn" + std::to_string(i) + "\n";
    s += std::string("note\tcall 9 (in place): ") + kInputsChangedNote + ": b1 (1 of 8 bytes, first at byte 0)\n";
    for (size_t at = 0; at < s.size();) {
      const ssize_t n = ::write(fds[1], s.data() + at, s.size() - at);
      if (n <= 0) break;
      at += size_t(n);
    }
    ::close(fds[1]);
  });
  std::string pending;
  ChildReport rep;
  Conversation talk;
  talk.t0 = Conversation::Clock::now();
  converse(fds[0], int(::getpid()), Budgets(), pending, rep, talk);
  writer.join();
  ::close(fds[0]);
  REQUIRE(rep.notes.size() == kMaxNotes + 1);  // the note that carries a verdict is kept past the cap
  CHECK(has(rep.notes.back(), kInputsChangedNote));
  CHECK(rep.notes[0].substr(0, 4) == "yyyy");
  CHECK(has(rep.notes[0], "[at least "));
  CHECK(rep.notes[0].size() < kMaxMessageText + 64);
  CHECK(rep.notes[1] == "after the long line");
  CHECK(rep.notes[2] == "n0");
  CHECK(talk.notes_dropped == 72 - kMaxNotes);
  CHECK_FALSE(talk.killed);
}
