// test_fresh_inputs.cpp — fresh inputs on every call (harness/check/cases.hpp, harness/trial/trial.hpp) and
// the coverage of the default suite (harness/plan/suite.hpp).
//
// Input sets: deterministic, distinct, activations-only or all; the reference the parent uses for
// a call is the exact reference of that call's own set. Through the real trial machinery (fork +
// exec of this test binary as a trial child, the real child stages, the real evaluation), planted
// CPU paths that keep their first result, ignore Plan::set_inputs, or take new activations but
// keep the weights and alphas they were built with, FAIL naming the call, its input set and the
// set whose reference their output matches; the correct paths pass. The planted paths are
// registered in this binary only (as wrappers around the cpu plans): a trial child of this
// binary is started by doctest's main like any run of it, and a listener hands it to child_main
// before any test runs (after static initialization, so every registration is in place).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "case_dir.hpp"
#include "distributions.hpp"
#include "harness_cli.hpp"
#include "input_store.hpp"
#include "registry.hpp"
#include "report.hpp"
#include "suite.hpp"
#include "trial.hpp"

using namespace nvfp4;
using harness_cli::has;

namespace {

// ---- planted paths (test-only wrappers) ------------------------------------------------------

// Computes once, then returns that first result on every later call (a cached result). A variant
// around the cpu plain path, so that it knows the output's size.
class FirstResultPlan : public PlanWrapper {
 public:
  FirstResultPlan(std::unique_ptr<Plan> inner, const Shape& s)
      : PlanWrapper(std::move(inner)), out_(size_t(s.c_elems()), 0) {}
  void enqueue() override {
    if (!have_) {
      inner().enqueue();
      inner().synchronize();
      cached_.resize(out_.size());
      inner().read_output(cached_.data());
      have_ = true;
    }
    out_ = cached_;
  }
  void poison_output(uint16_t bits) override {
    inner().poison_output(bits);
    std::fill(out_.begin(), out_.end(), bits);
  }
  void read_output(uint16_t* c) override { std::copy(out_.begin(), out_.end(), c); }

 private:
  bool have_ = false;
  std::vector<uint16_t> out_, cached_;
};

// Takes new inputs and drops them: computes on what it was built with (stale buffers).
class IgnoreInputsPlan : public PlanWrapper {
 public:
  using PlanWrapper::PlanWrapper;
  void set_inputs(const Problem&, InputSet) override {}
};

// Takes new activations only, whatever it is asked (weights and alphas decoded once at init).
class ActivationsOnlyPlan : public PlanWrapper {
 public:
  using PlanWrapper::PlanWrapper;
  void set_inputs(const Problem& p, InputSet) override { inner().set_inputs(p, InputSet::Activations); }
};

const bool planted = [] {
  Optimization v;
  v.backend = "cpu";
  v.kind = OptKind::Variant;
  v.name = "planted-first-result";
  v.summary = "test only: cpu plain that returns its first result on every call";
  v.make = [](const Problem& p, const PlanOptions& opt) -> std::unique_ptr<Plan> {
    return std::make_unique<FirstResultPlan>(Registry::instance().backend("cpu")->make_plain(p, opt), p.shape);
  };
  register_optimization(v);
  Optimization o;
  o.backend = "cpu";
  o.kind = OptKind::Wrapper;
  o.order = 1000;  // outermost
  o.name = "planted-ignore-inputs";
  o.summary = "test only: ignores set_inputs";
  o.wrap = [](std::unique_ptr<Plan> inner, const PlanOptions&) -> std::unique_ptr<Plan> {
    return std::make_unique<IgnoreInputsPlan>(std::move(inner));
  };
  register_optimization(o);
  o.name = "planted-activations-only";
  o.summary = "test only: takes new activations, keeps weights and alphas";
  o.wrap = [](std::unique_ptr<Plan> inner, const PlanOptions&) -> std::unique_ptr<Plan> {
    return std::make_unique<ActivationsOnlyPlan>(std::move(inner));
  };
  register_optimization(o);
  return true;
}();

// A trial child of this binary: `argv[1] == --child-trial`. doctest ignores the arguments; the
// listener below runs the child before any test case.
std::vector<std::string> own_args() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string cur;
  for (char ch : all) {
    if (ch == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  return args;
}

struct ChildEntry : doctest::IReporter {
  explicit ChildEntry(const doctest::ContextOptions&) {}
  void test_run_start() override {
    const auto args = own_args();
    if (args.size() >= 3 && args[1] == "--child-trial") child_main(args[2]);  // never returns
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
DOCTEST_REGISTER_LISTENER("trial-child", 0, ChildEntry);

CaseSpec small_case(const char* shape = "33x65x160", const char* dist = "normal", uint64_t seed = 7) {
  CaseSpec c;
  c.shape = Shape::parse(shape);
  c.dist = dist;
  c.seed = seed;
  return c;
}

bool same_inputs(const Problem& x, const Problem& y) {
  return x.a == y.a && x.sfa == y.sfa && x.b1 == y.b1 && x.b2 == y.b2 && x.sfb1 == y.sfb1 &&
         x.sfb2 == y.sfb2 && x.alpha1 == y.alpha1 && x.alpha2 == y.alpha2;
}

// Runs one trial through the real child protocol (this binary as the child).
TrialResult run_trial(const std::string& combo, const CaseSpec& c, TrialOptions o, ReferenceCache& cache) {
  static TrialRunner runner;  // /proc/self/exe: this test binary
  TrialSpec t;
  t.backend = "cpu";
  t.combo = Combo::parse(combo);
  t.c = c;
  t.options = o;
  return runner.run(t, cache);
}

}  // namespace

// ---- input sets ---------------------------------------------------------------------------------

TEST_CASE("input sets: set 0 is the case; others are deterministic, distinct, and change what the mode says") {
  for (const auto& d : distribution_names()) {
    CAPTURE(d);
    CaseSpec c = small_case("9x12x64x2", d.c_str(), 5);
    c.alpha1 = -1.5f;
    c.alpha2 = 0.3f;
    const Problem base = c.make();
    CHECK(same_inputs(c.make_set(0, InputSet::All), base));
    std::vector<Problem> act, all;
    for (int k = 1; k <= 4; ++k) {
      act.push_back(c.make_set(k, InputSet::Activations));
      all.push_back(c.make_set(k, InputSet::All));
      CHECK(same_inputs(act.back(), c.make_set(k, InputSet::Activations)));  // deterministic
      const Problem& a = act.back();
      CHECK(a.a != base.a);  // new activations (seedless `ones`: negated elements)
      CHECK(a.b1 == base.b1);
      CHECK(a.b2 == base.b2);
      CHECK(a.sfb1 == base.sfb1);
      CHECK(a.sfb2 == base.sfb2);
      CHECK(a.alpha1 == base.alpha1);
      CHECK(a.alpha2 == base.alpha2);
      const Problem& w = all.back();
      if (k == kNearSet) {  // set 0 with one element of A negated, in either mode
        CHECK(same_inputs(w, a));
        continue;
      }
      CHECK((w.a != base.a) == (k != kSameActivationsSet));  // set 1: set 0's activations, new weights
      CHECK(w.b1 != base.b1);
      CHECK(w.b2 != base.b2);
      CHECK(w.alpha1 == base.alpha1 * alpha_factors(k).first);
      CHECK(w.alpha2 == base.alpha2 * alpha_factors(k).second);
      CHECK(w.alpha1 != base.alpha1);
    }
    // The near set: one element of A negated, in a block whose scale is finite and not zero, at a
    // nonzero code; nothing else changed.
    const Problem& near = act[size_t(kNearSet - 1)];
    std::vector<size_t> diff;
    for (size_t i = 0; i < base.a.size(); ++i)
      if (near.a[i] != base.a[i]) diff.push_back(i);
    REQUIRE(diff.size() == 1);
    const uint8_t x = uint8_t(near.a[diff[0]] ^ base.a[diff[0]]);
    CHECK((x == 0x08 || x == 0x80));
    const int shift = x == 0x80 ? 4 : 0;
    CHECK(((base.a[diff[0]] >> shift) & 0x7) != 0);
    const int64_t row_bytes = 64 / 2, row = int64_t(diff[0]) / row_bytes;
    const int64_t k = 2 * (int64_t(diff[0]) % row_bytes) + shift / 4;
    const uint8_t scale = base.sfa[size_t(row * (64 / 16) + k / 16)] & 0x7F;
    CHECK((scale != 0 && scale != 0x7F));
    CHECK(near.sfa == base.sfa);
    CHECK(near.b1 == base.b1);
    CHECK(near.alpha1 == base.alpha1);
    for (size_t i = 0; i < act.size(); ++i)
      for (size_t j = i + 1; j < act.size(); ++j) {
        CHECK(act[i].a != act[j].a);
        CHECK_FALSE(same_inputs(all[i], all[j]));
      }
  }
}

TEST_CASE("input sets of a case directory: signs of a quarter of the elements flipped, scales kept") {
  const std::string dir = harness_cli::temp_dir();
  const Problem p = make_problem(Shape::parse("7x13x48"), "suspicious", 3);
  save_case(dir, p);
  CaseSpec c;
  c.inputs_dir = dir;
  const Problem base = c.make();
  REQUIRE(same_inputs(base, p));
  const Problem a1 = c.make_set(1, InputSet::Activations), a2 = c.make_set(2, InputSet::Activations);
  CHECK(a1.a != base.a);
  CHECK(a1.a != a2.a);
  CHECK(a1.sfa == base.sfa);  // NaN and negative scale bytes stay
  CHECK(a1.b1 == base.b1);
  for (size_t i = 0; i < base.a.size(); ++i) CHECK(((a1.a[i] ^ base.a[i]) & 0x77) == 0);  // magnitudes kept
  const Problem w = c.make_set(1, InputSet::All);
  CHECK(w.b1 != base.b1);
  CHECK(w.b2 != base.b2);
  CHECK(w.sfb1 == base.sfb1);
  CHECK(w.alpha1 != base.alpha1);
}

TEST_CASE("every call's reference is the exact reference of its own input set, computed once") {
  const CaseSpec c = small_case("17x9x80x3", "uniform", 11);
  for (InputSet mode : {InputSet::Activations, InputSet::All}) {
    CAPTURE(input_set_name(mode));
    ReferenceCache cache;
    std::vector<std::vector<uint16_t>> seen;
    for (int set = 0; set <= 3; ++set) {
      const auto info = cache.get(c, set, mode);
      const Problem q = c.make_set(set, mode);
      ReferenceOptions ro;
      ro.abs_sums = true;
      const ReferenceResult want = compute_reference(q, ro);
      CHECK(info->set == set);
      CHECK(info->ref.c == want.c);
      CHECK(info->ref.g == want.g);
      CHECK(info->ref.u_abs == want.u_abs);
      CHECK(info->alpha1 == q.alpha1);
      CHECK(info->alpha2 == q.alpha2);
      for (const auto& other : seen) CHECK(other != info->ref.c);  // sets really differ
      seen.push_back(info->ref.c);
      CHECK(cache.get(c, set, mode).get() == info.get());  // cached: computed once
    }
    CHECK(cache.computed() == 4);
    CHECK(cache.seen().size() == 1);  // one case in the report, whatever its sets
  }
  // Set 0 is the same in both modes (one reference); derived sets are not.
  ReferenceCache cache;
  CHECK(cache.get(c, 0, InputSet::All).get() == cache.get(c, 0, InputSet::Activations).get());
  CHECK(cache.get(c, 1, InputSet::All)->ref.c != cache.get(c, 1, InputSet::Activations)->ref.c);
}

TEST_CASE("evaluation: each call against its own set; an output of another set is named as stale") {
  const CaseSpec c = small_case();
  ReferenceCache cache;
  TrialSpec spec;
  spec.backend = "cpu";
  spec.c = c;
  spec.options.runs = 3;
  auto child_with = [&](std::vector<int> output_of) {
    ChildReport rep;
    rep.outcome = Outcome::Pass;
    for (int i = 0; i < 3; ++i) {
      rep.outputs.push_back(cache.get(c, output_of[size_t(i)])->ref.c);
      rep.output_sets.push_back(i);
    }
    return rep;
  };
  const TrialResult ok = evaluate_trial(spec, child_with({0, 1, 2}), cache);
  CHECK(ok.outcome == Outcome::Pass);
  CHECK(ok.set_per_call == std::vector<int>{0, 1, 2});

  // The first result returned again: calls 2 and 3 fail, and both match set 0.
  const TrialResult stale = evaluate_trial(spec, child_with({0, 0, 0}), cache);
  CHECK(stale.outcome == Outcome::Fail);
  CHECK(stale.over_per_call[0] == 0);
  CHECK(stale.over_per_call[1] > 0);
  CHECK(stale.matches_set_per_call == std::vector<int>{-1, 0, 0});
  CHECK(has(stale.message, "calls 2,3 of 3 (input sets 1,2): "));
  CHECK(has(stale.message, "call 2's output matches the reference of input set 0"));
  CHECK(has(stale.message, "stale inputs or a cached result?"));

  // The previous call's activations: call i computes set i-2; one failing call names its set.
  const TrialResult prev = evaluate_trial(spec, child_with({0, 1, 1}), cache);
  CHECK(prev.outcome == Outcome::Fail);
  CHECK(has(prev.message, "call 3 of 3 (input set 2): "));
  CHECK(has(prev.message, "(other calls pass); output matches the reference of input set 1: stale inputs"));

  // The warm-up's inputs (set 3 for 3 runs) are recognised too.
  const TrialResult warm = evaluate_trial(spec, child_with({3, 3, 3}), cache);
  CHECK(warm.matches_set_per_call == std::vector<int>{3, 3, 3});
  CHECK(has(warm.message, "matches the reference of input set 3 (the warm-up's)"));

  // A wrong output that matches no set is not called stale.
  ChildReport junk = child_with({0, 1, 2});
  for (auto& b : junk.outputs[1]) b = 0x3C00;
  const TrialResult bad = evaluate_trial(spec, std::move(junk), cache);
  CHECK(bad.outcome == Outcome::Fail);
  CHECK_FALSE(has(bad.message, "stale"));

  // A child that wrote another set than the protocol says is an ERROR, not a pass.
  ChildReport wrong_set = child_with({0, 1, 2});
  wrong_set.output_sets[2] = 1;
  const TrialResult err = evaluate_trial(spec, std::move(wrong_set), cache);
  CHECK(err.outcome == Outcome::Error);
  CHECK(has(err.message, "wrote input set 1 before call 3; expected 2"));
}

// ---- planted paths through the real child protocol ---------------------------------------------

TEST_CASE("a path that returns its first result FAILs, naming the call, its set and the stale set") {
  ReferenceCache cache;
  TrialOptions o;
  for (const char* combo : {"plain", "fused"}) {
    CAPTURE(combo);
    const TrialResult good = run_trial(combo, small_case(), o, cache);
    CHECK(good.outcome == Outcome::Pass);
    CHECK(good.set_per_call == std::vector<int>{0, 1, 2});
  }
  // With warm-up calls, the first result is the warm-up's (set 3): every checked call is stale.
  const TrialResult r = run_trial("planted-first-result", small_case(), o, cache);
  CHECK(r.outcome == Outcome::Fail);
  CHECK(r.stage == "run");
  CHECK(has(r.message, "calls 1,2,3 of 3 (input sets 0,1,2)"));
  CHECK(has(r.message, "matches the reference of input set 3 (the warm-up's)"));
  CHECK(r.matches_set_per_call == std::vector<int>{3, 3, 3});
  // Without warm-up, the first checked call computes and the later ones repeat it.
  o.warmup = 0;
  const TrialResult r0 = run_trial("planted-first-result", small_case(), o, cache);
  CHECK(r0.outcome == Outcome::Fail);
  CHECK(r0.over_per_call[0] == 0);
  CHECK(has(r0.message, "calls 2,3 of 3 (input sets 1,2)"));
  CHECK(has(r0.message, "call 3's output matches the reference of input set 0: stale inputs or a cached result?"));
  CHECK(has(reproducer(r0.spec, "harness"), "--warmup 0"));
}

TEST_CASE("a path that ignores set_inputs FAILs; one that keeps its weights FAILs with --fresh all") {
  ReferenceCache cache;
  TrialOptions o;
  const TrialResult r = run_trial("planted-ignore-inputs", small_case("65x33x272x2", "uniform"), o, cache);
  CHECK(r.outcome == Outcome::Fail);
  CHECK(has(r.message, "calls 1,2,3 of 3 (input sets 0,1,2)"));
  CHECK(r.matches_set_per_call == std::vector<int>{3, 3, 3});

  // New activations but weights and alphas from init: right for an engine's pattern, wrong when
  // everything changes.
  const TrialResult act = run_trial("planted-activations-only", small_case(), o, cache);
  CHECK(act.outcome == Outcome::Pass);
  o.fresh = InputSet::All;
  const TrialResult all = run_trial("planted-activations-only", small_case(), o, cache);
  CHECK(all.outcome == Outcome::Fail);
  CHECK(all.over_per_call[0] > 0);
  CHECK(has(reproducer(all.spec, "harness"), "--fresh all"));
  for (const char* combo : {"plain", "fused"}) {
    CAPTURE(combo);
    CHECK(run_trial(combo, small_case(), o, cache).outcome == Outcome::Pass);
  }
}

// ---- the default suite ----------------------------------------------------------------------------

TEST_CASE("default suite: alphas, suspicious scales, ragged K, odd tiles, batches; on every backend") {
  for (const char* backend : {"cpu", "gpu"}) {
    CAPTURE(backend);
    const auto suite = default_suite(backend);
    bool negative = false, non_pow2 = false, tiny = false, huge = false, alpha_suspicious = false;
    std::set<int64_t> ragged_k;
    bool odd_tiles = false, batched_ragged = false, suspicious = false;
    for (const auto& c : suite) {
      for (float a : {c.alpha1, c.alpha2}) {
        negative |= a < 0;
        int e;
        non_pow2 |= std::frexp(std::fabs(a), &e) != 0.5;
        tiny |= std::fabs(a) < 1e-3f;
        huge |= std::fabs(a) > 1e3f;
      }
      alpha_suspicious |= c.has_alpha() && c.dist == "suspicious";
      suspicious |= c.dist == "suspicious";
      if (c.shape.K % 64 != 0) ragged_k.insert(c.shape.K);
      odd_tiles |= c.shape.M % 2 == 1 && c.shape.N % 2 == 1 && c.shape.M > 64 && c.shape.N > 64;
      batched_ragged |= c.shape.L > 1 && c.shape.K % 64 != 0;
    }
    CHECK(negative);
    CHECK(non_pow2);
    CHECK(tiny);
    CHECK(huge);
    CHECK(suspicious);
    CHECK(alpha_suspicious);
    for (int64_t k : {48, 80, 144, 272, 1040}) CHECK(ragged_k.count(k) == 1);
    CHECK(odd_tiles);
    CHECK(batched_ragged);
  }
  // At GPU MODE sizes too: NaN/negative scales and alphas on the GPU's main paths.
  bool big_suspicious = false, big_alpha = false;
  for (const auto& c : default_suite("gpu")) {
    if (c.shape.K < 4096 || c.shape.N < 3072) continue;
    big_suspicious |= c.dist == "suspicious";
    big_alpha |= c.has_alpha();
  }
  CHECK(big_suspicious);
  CHECK(big_alpha);
}

TEST_CASE("default suite: batches differ per batch; no case is degenerate in any checked input set") {
  ReferenceCache cache;
  const TrialOptions defaults;
  std::vector<CaseSpec> cases = default_suite("gpu");  // the cpu suite is its prefix
  for (const auto& c : default_suite("cpu")) CHECK(std::find(cases.begin(), cases.end(), c) != cases.end());
  int checked = 0;
  for (const auto& c : cases) {
    CAPTURE(c.name());
    // The GPU MODE sizes take seconds of reference each: they are checked on the GPU machine
    // (the harness flags a degenerate set in every report).
    if (double(c.shape.M) * double(c.shape.N) * double(c.shape.K) > 128.0 * 256 * 7168) continue;
    ++checked;
    if (c.shape.L > 1 && c.dist != "ones") {  // ones is one value by design
      const Problem p = c.make();
      const size_t half = p.a.size() / size_t(c.shape.L), bhalf = p.b1.size() / size_t(c.shape.L);
      CHECK_FALSE(std::equal(p.a.begin(), p.a.begin() + long(half), p.a.begin() + long(half)));
      CHECK_FALSE(std::equal(p.b1.begin(), p.b1.begin() + long(bhalf), p.b1.begin() + long(bhalf)));
    }
    for (int call = 1; call <= defaults.runs; ++call) {
      const int set = checked_call_set(call);
      const auto info = cache.get(c, set, defaults.fresh);
      CAPTURE(set);
      CHECK_FALSE(info->degeneracy.degenerate());
    }
  }
  CHECK(checked >= 50);
}

// ---- the CLI ------------------------------------------------------------------------------------------

TEST_CASE("cli: --alpha names the case and round-trips through the reproducer; --fresh all runs") {
  const std::string json = harness_cli::temp_dir() + "/r.json";
  const auto r = harness_cli::run("--backend cpu --verify plain --shape 7x13x48 --dist suspicious --seed 7 "
                                  "--alpha -1.5,0.3 --fresh all --runs 2 --json " + json);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "cpu plain 7x13x48 suspicious seed 7 alpha -1.5,0.3  PASS"));
  const auto trials = harness_cli::json_trials(harness_cli::read_text(json));
  REQUIRE(trials.size() == 1);
  CHECK(has(trials[0], "\"input_set_per_call\":[0,1]"));
  CHECK(has(trials[0], "\"warmup_input_set\":2"));
  CHECK(has(trials[0], "--alpha -1.5,0.3"));
  CHECK(has(trials[0], "--fresh all"));
  CHECK(has(harness_cli::read_text(json), "\"fresh\":\"all\""));
  for (const char* bad : {"--verify plain --fresh some", "--verify plain --alpha 1", "--verify plain --alpha x,1"}) {
    CAPTURE(bad);
    CHECK(harness_cli::run(std::string("--backend cpu ") + bad).rc == 2);
  }
}

// ---- the input store: sets generated once by the parent, read by the children ---------------------

TEST_CASE("input store: a stored set reads back byte for byte; another case's or a damaged file is never taken") {
  const std::string dir = harness_cli::temp_dir() + "/store";
  InputStore store(dir, size_t(1) << 30);
  REQUIRE(store.dir() == dir);
  const CaseSpec c = small_case("17x9x80x3", "uniform", 11);
  const Problem base = c.make();
  const Problem set2 = make_input_set(c, base, 2, InputSet::All);
  store.put(c, 0, InputSet::Activations, base);
  store.put(c, 2, InputSet::All, set2);
  Problem p;
  REQUIRE(read_stored_set(dir, c, 0, InputSet::Activations, p));
  CHECK(same_inputs(p, base));
  REQUIRE(read_stored_set(dir, c, 2, InputSet::All, p));
  CHECK(same_inputs(p, set2));
  // A set of mode activations leaves the weights out of its file (they are set 0's) and reads back
  // whole, with set 0 given or taken from the store; without set 0 anywhere it is not taken.
  const Problem act1 = make_input_set(c, base, 1, InputSet::Activations);
  store.put(c, 1, InputSet::Activations, act1);
  namespace fs = std::filesystem;
  CHECK(fs::file_size(stored_set_path(dir, c, 1, InputSet::Activations)) <
        fs::file_size(stored_set_path(dir, c, 0, InputSet::Activations)) - base.b1.size());
  REQUIRE(read_stored_set(dir, c, 1, InputSet::Activations, p, &base));
  CHECK(same_inputs(p, act1));
  p = Problem();
  REQUIRE(read_stored_set(dir, c, 1, InputSet::Activations, p));
  CHECK(same_inputs(p, act1));
  {
    const std::string lone = harness_cli::temp_dir() + "/lone";
    InputStore only_set1(lone, size_t(1) << 30);
    only_set1.put(c, 1, InputSet::Activations, act1);
    CHECK_FALSE(read_stored_set(lone, c, 1, InputSet::Activations, p));
    CHECK(read_stored_set(lone, c, 1, InputSet::Activations, p, &base));
  }
  fs::remove(stored_set_path(dir, c, 1, InputSet::Activations));
  // Not stored: set 1, set 2 of the other mode, another seed.
  CHECK_FALSE(read_stored_set(dir, c, 1, InputSet::All, p));
  CHECK_FALSE(read_stored_set(dir, c, 2, InputSet::Activations, p));
  CaseSpec other = c;
  other.seed = 12;
  CHECK_FALSE(read_stored_set(dir, other, 0, InputSet::Activations, p));
  // A file of another case under this case's name is refused (its key is checked), and so is a
  // truncated file.
  fs::copy_file(stored_set_path(dir, c, 0, InputSet::Activations), stored_set_path(dir, other, 0, InputSet::Activations));
  CHECK_FALSE(read_stored_set(dir, other, 0, InputSet::Activations, p));
  const std::string path = stored_set_path(dir, c, 0, InputSet::Activations);
  fs::resize_file(path, fs::file_size(path) - 1);
  CHECK_FALSE(read_stored_set(dir, c, 0, InputSet::Activations, p));
  // One byte too many, an empty file and a FIFO under the set's name are refused too (the FIFO
  // without blocking: the reader maps only regular files).
  store.put(c, 1, InputSet::Activations, make_input_set(c, base, 1, InputSet::Activations));
  const std::string one = stored_set_path(dir, c, 1, InputSet::Activations);
  REQUIRE(read_stored_set(dir, c, 1, InputSet::Activations, p, &base));
  fs::resize_file(one, fs::file_size(one) + 1);
  CHECK_FALSE(read_stored_set(dir, c, 1, InputSet::Activations, p, &base));
  fs::resize_file(one, 0);
  CHECK_FALSE(read_stored_set(dir, c, 1, InputSet::Activations, p, &base));
  fs::remove(one);
  REQUIRE(::mkfifo(one.c_str(), 0600) == 0);
  CHECK_FALSE(read_stored_set(dir, c, 1, InputSet::Activations, p, &base));
  // Over the byte budget nothing is written (the children then generate the sets).
  InputStore tiny(harness_cli::temp_dir() + "/tiny", 100);
  tiny.put(c, 0, InputSet::Activations, base);
  CHECK_FALSE(read_stored_set(tiny.dir(), c, 0, InputSet::Activations, p));
}

TEST_CASE("input store: the child computes on the stored sets (a tampered stored set FAILs the trial)") {
  const CaseSpec c = small_case();
  TrialOptions o;
  const std::string dir = harness_cli::temp_dir() + "/store";
  InputStore store(dir, size_t(1) << 30);
  o.input_store = dir;
  ReferenceCache cache;
  const Problem base = c.make();
  for (int k = 0; k <= warmup_set(o.runs); ++k)
    store.put(c, k, k == 0 ? InputSet::Activations : o.fresh, k == 0 ? base : make_input_set(c, base, k, o.fresh));
  CHECK(run_trial("plain", c, o, cache).outcome == Outcome::Pass);
  // Set 1 in the store now holds other activations: the child takes them, so call 2 is wrong.
  Problem tampered = make_input_set(c, base, 1, o.fresh);
  for (auto& b : tampered.a) b = uint8_t(b ^ 0x11);
  std::filesystem::remove(stored_set_path(dir, c, 1, o.fresh));
  store.put(c, 1, o.fresh, tampered);
  const TrialResult r = run_trial("plain", c, o, cache);
  CHECK(r.outcome == Outcome::Fail);
  CHECK(r.over_per_call.size() == 3);
  if (r.over_per_call.size() == 3) {
    CHECK(r.over_per_call[0] == 0);
    CHECK(r.over_per_call[1] > 0);
    CHECK(r.over_per_call[2] == 0);
  }
}
