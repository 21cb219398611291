// test_lattice_units.cpp — the pieces under the CLI, in process: combination and fault parsing,
// the child's SPEC encoding, the lattice's combinations, the bisect searches (exhaustive and
// ddmin) against known answers, and suite narrowing.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <utility>

#include "distributions.hpp"
#include "errors.hpp"
#include "faults.hpp"
#include "bisect.hpp"
#include "lattice.hpp"
#include "registry.hpp"
#include "report.hpp"
#include "suite.hpp"
#include "trial.hpp"

using namespace nvfp4;

TEST_CASE("combination parsing: canonical, sorted, plain is empty, errors are InputError") {
  CHECK(Combo::parse("plain").str() == "plain");
  CHECK(Combo::parse("plain").size() == 0);
  CHECK(Combo::parse("graph+fused+autotune").str() == "autotune+fused+graph");
  CHECK(Combo::parse("fused+fused").str() == "fused");
  CHECK(Combo::parse("autotune+fused").contains(Combo::parse("fused")));
  CHECK_FALSE(Combo::parse("fused").contains(Combo::parse("autotune+fused")));
  CHECK(Combo::parse("fused").contains(Combo::parse("plain")));
  CHECK_THROWS_AS(Combo::parse(""), InputError);
  CHECK_THROWS_AS(Combo::parse("fused++graph"), InputError);
  CHECK_THROWS_AS(Combo::parse("Fused"), InputError);
  CHECK_THROWS_AS(check_combo("cpu", Combo::parse("nosuch")), InputError);
}

TEST_CASE("fault parsing round-trips and rejects nonsense") {
  for (const char* text : {"hang@tune", "crash@warmup", "error@init", "slow@capture", "nan@run",
                           "corrupt@run", "unwritten@run", "hang@tune:if=autotune+fused",
                           "error@warmup:if=fused"}) {
    const Fault f = Fault::parse(text);
    CHECK(f.str() == text);
  }
  const Fault f = Fault::parse("hang@tune:if=fused+autotune");
  CHECK(f.kind == FaultKind::Hang);
  CHECK(f.stage == Stage::Tune);
  CHECK(f.fires(Stage::Tune, Combo::parse("autotune+fused+graph")));
  CHECK_FALSE(f.fires(Stage::Tune, Combo::parse("autotune")));
  CHECK_FALSE(f.fires(Stage::Warmup, Combo::parse("autotune+fused")));
  CHECK(Fault::parse("error@init").fires(Stage::Init, Combo::parse("plain")));
  CHECK_THROWS_AS(Fault::parse("boom@run"), InputError);
  CHECK_THROWS_AS(Fault::parse("hang"), InputError);
  CHECK_THROWS_AS(Fault::parse("hang@compile"), InputError);
  CHECK_THROWS_AS(Fault::parse("nan@warmup"), InputError);  // output faults act on run's output
  CHECK_THROWS_AS(Fault::parse("hang@tune:when=fused"), InputError);
}

TEST_CASE("output faults change exactly one element, the middle one") {
  const Shape s{3, 5, 16, 2};
  std::vector<uint16_t> c(size_t(s.c_elems()), 0x3C00);
  const auto notes = apply_output_faults({Fault::parse("corrupt@run"), Fault::parse("unwritten@run:if=fused")},
                                         Combo::parse("plain"), s, c.data(), 0x7D5A);
  REQUIRE(notes.size() == 1);  // the conditional one does not fire for plain
  int changed = 0;
  for (size_t i = 0; i < c.size(); ++i) changed += c[i] != 0x3C00;
  CHECK(changed == 1);
  CHECK(c[c.size() / 2] == (0x3C00 ^ 0x4000));
}

TEST_CASE("the child's SPEC survives encoding") {
  TrialSpec t;
  t.backend = "cpu";
  t.combo = Combo::parse("autotune+fused");
  t.c.shape = Shape::parse("33x65x160x2");
  t.c.dist = "edge";
  t.c.seed = 18446744073709551615ull;
  t.c.alpha1 = 1.0f / 3000.0f;
  t.c.alpha2 = -250.5f;
  t.options.fresh = InputSet::All;
  t.options.warmup = 5;
  t.options.runs = 2;
  t.options.slow_seconds = 0.25;
  t.options.plan.tune_cache_dir = "/tmp/a dir/with%percent\nand newline";
  t.options.faults = {Fault::parse("hang@tune:if=fused"), Fault::parse("nan@run")};
  int fd = -1;
  std::string dir;
  bool probe = true;
  const TrialSpec u = decode_trial(encode_trial(t, 9, "/tmp/x", false), &fd, &dir, &probe);
  CHECK(fd == 9);
  CHECK(dir == "/tmp/x");
  CHECK_FALSE(probe);
  CHECK(u.backend == "cpu");
  CHECK(u.combo == t.combo);
  CHECK(u.c.shape == t.c.shape);
  CHECK(u.c.dist == "edge");
  CHECK(u.c.seed == t.c.seed);
  CHECK(u.c.alpha1 == t.c.alpha1);  // bit-exact through the text
  CHECK(u.c.alpha2 == t.c.alpha2);
  CHECK(u.options.fresh == InputSet::All);
  TrialSpec plain_spec = t;
  plain_spec.options.fresh = InputSet::Activations;
  plain_spec.c.alpha1 = plain_spec.c.alpha2 = 1.0f;
  const TrialSpec v = decode_trial(encode_trial(plain_spec, 1, "/", false), nullptr, nullptr, nullptr);
  CHECK(v.options.fresh == InputSet::Activations);
  CHECK_FALSE(v.c.has_alpha());
  CHECK(u.options.warmup == 5);
  CHECK(u.options.runs == 2);
  CHECK(u.options.slow_seconds == 0.25);
  CHECK(u.options.plan.tune_cache_dir == t.options.plan.tune_cache_dir);
  REQUIRE(u.options.faults.size() == 2);
  CHECK(u.options.faults[0].str() == "hang@tune:if=fused");
}

TEST_CASE("reap_within: reaps an exited child, gives up on a live one within its limit") {
  using Clock = std::chrono::steady_clock;
  int status = -1;
  const pid_t quick = fork();
  REQUIRE(quick >= 0);
  if (quick == 0) _exit(7);
  CHECK(nvfp4::reap_within(int(quick), &status, 5.0));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);

  // A child that outlives the limit (here it sleeps; in the harness: a process stuck in a driver
  // call after SIGKILL): reap_within returns false at the limit instead of blocking.
  const pid_t slow = fork();
  REQUIRE(slow >= 0);
  if (slow == 0) {
    sleep(30);
    _exit(0);
  }
  const auto t0 = Clock::now();
  CHECK_FALSE(nvfp4::reap_within(int(slow), &status, 0.2));
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  CHECK(waited >= 0.2);
  CHECK(waited < 5.0);
  kill(slow, SIGKILL);
  CHECK(nvfp4::reap_within(int(slow), &status, 5.0));
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("lattice combinations come from the registry, never two variants") {
  for (const auto* b : Registry::instance().backends()) {
    const auto combos = lattice_combos(b->name);
    REQUIRE_FALSE(combos.empty());
    CHECK(combos.front().str() == "plain");
    for (size_t i = 1; i < combos.size(); ++i) CHECK(combos[i - 1].size() <= combos[i].size());
    std::set<std::string> seen;
    for (const auto& c : combos) {
      CHECK(seen.insert(c.str()).second);
      int variants = 0;
      for (const auto& name : c.opts)
        variants += Registry::instance().optimization(b->name, name)->kind == OptKind::Variant;
      CHECK(variants <= 1);
      CHECK_NOTHROW(check_combo(b->name, c));
    }
    // Every optimization of the backend appears alone.
    for (const auto* o : Registry::instance().optimizations(b->name)) CHECK(seen.count(o->name) == 1);
  }
  const auto subs = immediate_subs(Combo::parse("autotune+fused+graph"));
  REQUIRE(subs.size() == 3);
  CHECK(subs[0].str() == "fused+graph");
  CHECK(subs[2].str() == "autotune+fused");
  CHECK(immediate_subs(Combo::parse("fused"))[0].str() == "plain");
}

TEST_CASE("bisect search: exhaustive finds exactly the minimal failing subsets") {
  // Failing iff it contains {b} or {a, c} (two independent culprits).
  const std::vector<std::string> opts = {"a", "b", "c", "d"};
  int calls = 0;
  auto fails = [&](const Combo& k) {
    ++calls;
    return k.has("b") || (k.has("a") && k.has("c"));
  };
  const auto found = minimal_failing_subsets(opts, fails);
  REQUIRE(found.size() == 2);
  CHECK(found[0].str() == "b");
  CHECK(found[1].str() == "a+c");
  CHECK(calls < 16);  // supersets of failing subsets were not run

  // A pair culprit where each alone passes.
  const auto pair = minimal_failing_subsets({"autotune", "fused"}, [](const Combo& k) { return k.size() == 2; });
  REQUIRE(pair.size() == 1);
  CHECK(pair[0].str() == "autotune+fused");
}

TEST_CASE("bisect search: ddmin finds a 1-minimal failing subset among many toggles") {
  std::vector<std::string> opts;
  for (char ch = 'a'; ch <= 'l'; ++ch) opts.push_back(std::string("opt") + ch);  // 12 toggles
  auto fails = [](const Combo& k) { return k.has("optc") && k.has("optj"); };
  const Combo c = ddmin_failing(opts, fails);
  CHECK(c.str() == "optc+optj");
  const Combo single = ddmin_failing(opts, [](const Combo& k) { return k.has("optk"); });
  CHECK(single.str() == "optk");
}

TEST_CASE("the default suite covers every distribution, ragged shapes, and GPU MODE shapes on gpu") {
  const auto cpu = default_suite("cpu"), gpu = default_suite("gpu");
  for (const auto& d : distribution_names()) {
    bool found = false;
    for (const auto& c : cpu) found |= c.dist == d;
    CHECK(found);
  }
  bool ragged = false, batched = false, gpumode_shape = false;
  for (const auto& c : cpu) {
    ragged |= c.shape.M % 8 != 0 && c.shape.N % 8 != 0;
    batched |= c.shape.L > 1;
  }
  for (const auto& c : gpu) gpumode_shape |= c.shape.str() == "512x4096x7168";
  CHECK(ragged);
  CHECK(batched);
  CHECK(gpumode_shape);
  for (const auto& c : cpu) CHECK(c.shape.str() != "512x4096x7168");
}

TEST_CASE("the default suite's scales cases carry every finite E4M3 scale code on A, B1 and B2") {
  // Which decodes are visible there is tests/reference/test_scales.cpp's subject (on these cases).
  std::set<uint8_t> seen[3];
  int cases = 0, patterns = 0;
  for (const auto& c : default_suite("cpu")) {
    if (c.dist != "scales") continue;
    ++cases;
    patterns += c.shape.L >= 2;  // the saturation pattern's batch
    const Problem p = make_problem(c.shape, c.dist, c.seed);
    int op = 0;
    for (const auto* sf : {&p.sfa, &p.sfb1, &p.sfb2}) seen[op++].insert(sf->begin(), sf->end());
  }
  CHECK(cases == 5);
  CHECK(patterns >= 1);
  for (int op = 0; op < 3; ++op) {
    CAPTURE(op);
    CHECK(seen[op].size() == 254);  // 0x00-0x7E and 0x80-0xFE
    CHECK_FALSE(seen[op].count(0x7F));
    CHECK_FALSE(seen[op].count(0xFF));
  }
}

TEST_CASE("suite narrowing: --shape replaces shapes, --dist filters, --seed replaces seeds") {
  const auto suite = default_suite("cpu");
  SuiteFilter f;
  f.shapes = {Shape::parse("33x65x160")};
  f.dists = {"edge"};
  f.seed = 99;
  auto one = narrow_suite(suite, f);
  REQUIRE(one.size() == 1);
  CHECK(one[0].name() == "33x65x160 edge seed 99");

  SuiteFilter with_alpha = f;
  with_alpha.alphas = std::make_pair(-1.5f, 0.3f);
  auto alpha = narrow_suite(suite, with_alpha);
  REQUIRE(alpha.size() == 1);
  CHECK(alpha[0].name() == "33x65x160 edge seed 99 alpha -1.5,0.3");
  CHECK(with_alpha.empty() == f.empty());  // alphas also apply to a case directory
  CHECK(parse_alphas(alphas_text(alpha[0].alpha1, alpha[0].alpha2)) == std::make_pair(-1.5f, 0.3f));
  CHECK(float_text(1.0f / 3000.0f) == "0.00033333333");
  CHECK_THROWS_AS(parse_alphas("1"), InputError);
  CHECK_THROWS_AS(parse_alphas("1,inf"), InputError);
  CHECK_THROWS_AS(parse_alphas("1,2x"), InputError);

  SuiteFilter only_dist;
  only_dist.dists = {"ones"};
  for (const auto& c : narrow_suite(suite, only_dist)) CHECK(c.dist == "ones");

  SuiteFilter only_shape;
  only_shape.shapes = {Shape::parse("5x5x32")};
  const auto per_dist = narrow_suite(suite, only_shape);
  CHECK(per_dist.size() == distribution_names().size());
}

TEST_CASE("stage times of a submission whose FP4 matmuls were emulated say so; others do not") {
  TrialResult r;
  r.stages.push_back({"run", 0.25, true});
  r.describe = "python submission s.py (torch data), toggles plain";
  CHECK(stage_times(r) == "run 0.250 s");
  r.describe = "python submission s.py (torch data, emulated FP4), toggles plain";
  CHECK(stage_times(r) == "run 0.250 s (emulated FP4)");
}
