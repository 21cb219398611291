// test_autotune.cpp — the generic autotune optimization (optimized/autotune.cpp): it times every
// candidate and keeps the fastest, caches the winner per tune key in the process and on disk,
// ignores stale or foreign cache entries, respects its time budget, and says in describe() what it
// chose and how. In process with a fake plan whose candidates have known speeds, then end to end
// through the real binary (--tune-cache).
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "harness_cli.hpp"
#include "registry.hpp"

using namespace nvfp4;
using harness_cli::has;

namespace {

// A plan whose candidate i costs `costs[i]` seconds per call; counts calls.
class FakePlan : public Plan {
 public:
  FakePlan(std::vector<double> costs, std::string key) : costs_(std::move(costs)), key_(std::move(key)) {}
  std::string describe() const override { return "fake"; }
  void enqueue() override {
    ++calls;
    std::this_thread::sleep_for(std::chrono::duration<double>(costs_[selected]));
  }
  void set_inputs(const Problem&, InputSet) override {}
  void synchronize() override {}
  void poison_output(uint16_t) override {}
  void read_output(uint16_t*) override {}
  std::vector<std::string> candidates() const override {
    std::vector<std::string> v;
    for (size_t i = 0; i < costs_.size(); ++i) v.push_back("cand" + std::to_string(i));
    return v;
  }
  void select(size_t i) override { selected = i; }
  std::string tune_key() const override { return key_; }

  size_t selected = 0;
  int calls = 0;

 private:
  std::vector<double> costs_;
  std::string key_;
};

struct Tuned {
  std::unique_ptr<Plan> plan;
  FakePlan* fake;
};

Tuned autotuned(std::vector<double> costs, const std::string& key, const PlanOptions& opt) {
  const Optimization* o = Registry::instance().optimization("cpu", "autotune");
  REQUIRE(o != nullptr);
  auto fake = std::make_unique<FakePlan>(std::move(costs), key);
  FakePlan* raw = fake.get();
  return {o->wrap(std::move(fake), opt), raw};
}

// Keys unique to this test process, so runs never see each other's cache entries.
std::string unique_key(const std::string& name) {
  return "test-autotune pid " + std::to_string(getpid()) + " " + name;
}

}  // namespace

TEST_CASE("autotune is one registered wrapper per backend, adding stage tune, inside graph") {
  for (const char* be : {"cpu", "gpu"}) {
    const Optimization* o = Registry::instance().optimization(be, "autotune");
    REQUIRE(o != nullptr);
    CHECK(o->kind == OptKind::Wrapper);
    CHECK(o->order == 10);
    CHECK(o->stages == std::vector<Stage>{Stage::Tune});
  }
}

TEST_CASE("autotune times every candidate and selects the fastest") {
  PlanOptions opt;
  opt.tune_reps = 3;
  auto t = autotuned({0.004, 0.001, 0.003}, unique_key("fastest"), opt);
  CHECK(has(t.plan->describe(), "not tuned yet"));
  t.plan->tune();
  CHECK(t.fake->selected == 1);
  CHECK(t.fake->calls == 3 * (1 + 3));  // a warm call plus 3 timed calls per candidate
  CHECK(has(t.plan->describe(), "[autotune: cand1 (timed 3 of 3 candidates"));
}

TEST_CASE("autotune caches the winner in the process, per tune key") {
  PlanOptions opt;
  opt.tune_reps = 2;
  const std::string key = unique_key("process");
  auto first = autotuned({0.003, 0.0005}, key, opt);
  first.plan->tune();
  CHECK(first.fake->selected == 1);
  auto second = autotuned({0.003, 0.0005}, key, opt);
  second.fake->selected = 0;
  second.plan->tune();
  CHECK(second.fake->selected == 1);
  CHECK(second.fake->calls == 0);  // nothing timed
  CHECK(has(second.plan->describe(), "cand1 (cached in process"));
  // Another key is tuned afresh.
  auto other = autotuned({0.0005, 0.003}, key + " other shape", opt);
  other.plan->tune();
  CHECK(other.fake->selected == 0);
  CHECK(other.fake->calls > 0);
}

TEST_CASE("autotune's disk cache: written after timing, read back, stale entries ignored") {
  const std::string dir = harness_cli::temp_dir() + "/cache";
  PlanOptions opt;
  opt.tune_reps = 2;
  opt.tune_cache_dir = dir;
  const std::string key = unique_key("disk");
  auto t = autotuned({0.002, 0.0005, 0.002}, key, opt);
  t.plan->tune();
  const std::string file = harness_cli::read_text(dir + "/autotune-cache.txt");
  CHECK(has(file, "v1\t" + key + "\t3\t1\tcand1\t"));

  // An entry written by another process (not in this process's map) is used without timing.
  const std::string foreign = unique_key("written by another run");
  std::ofstream(dir + "/autotune-cache.txt", std::ios::app) << "v1\t" << foreign << "\t3\t2\tcand2\t1e-05\n";
  auto d = autotuned({0.0005, 0.002, 0.002}, foreign, opt);
  d.plan->tune();
  CHECK(d.fake->selected == 2);
  CHECK(d.fake->calls == 0);
  CHECK(has(d.plan->describe(), "cand2 (cached on disk in " + dir + "/autotune-cache.txt"));

  // A stale entry (the candidate at that index has another name now) is ignored: timed instead.
  const std::string stale = unique_key("stale");
  std::ofstream(dir + "/autotune-cache.txt", std::ios::app) << "v1\t" << stale << "\t3\t2\trenamed\t1e-05\n";
  auto s = autotuned({0.0005, 0.002, 0.002}, stale, opt);
  s.plan->tune();
  CHECK(s.fake->selected == 0);
  CHECK(s.fake->calls > 0);
  CHECK(has(s.plan->describe(), "timed"));
}

TEST_CASE("autotune without a tune key does not cache") {
  PlanOptions opt;
  opt.tune_reps = 1;
  for (int i = 0; i < 2; ++i) {
    auto t = autotuned({0.001, 0.0002}, "", opt);
    t.plan->tune();
    CHECK(t.fake->selected == 1);
    CHECK(t.fake->calls == 4);
    CHECK(has(t.plan->describe(), "not cached: the path gives no tune key"));
  }
}

TEST_CASE("autotune respects its time budget") {
  PlanOptions opt;
  opt.tune_reps = 10;
  opt.tune_budget_s = 0.15;
  auto t = autotuned({0.05, 0.05, 0.05, 0.05, 0.05, 0.05}, unique_key("budget"), opt);
  const auto t0 = std::chrono::steady_clock::now();
  t.plan->tune();
  const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(spent < 0.6);  // untimed, 6 candidates x 11 calls x 50 ms would be 3.3 s
  CHECK(has(t.plan->describe(), "stopped by the"));
  CHECK(has(t.plan->describe(), "down to 1 timed calls per candidate"));
}

TEST_CASE("autotune on a plan without candidates says so") {
  auto t = autotuned({}, unique_key("none"), PlanOptions{});
  t.plan->tune();
  CHECK(has(t.plan->describe(), "nothing to tune"));
}

TEST_CASE("end to end: --tune-cache makes the second run's tune stage read the disk cache") {
  const std::string dir = harness_cli::temp_dir();
  const std::string args = "--backend cpu --verify autotune --shape 64x96x256 --dist normal --tune-cache " + dir +
                           " --json " + dir + "/r.json";
  auto r = harness_cli::run(args);
  REQUIRE(r.rc == 0);
  auto trials = harness_cli::json_trials(harness_cli::read_text(dir + "/r.json"));
  REQUIRE(trials.size() == 1);
  CHECK(has(trials[0], "(timed "));
  r = harness_cli::run(args);
  REQUIRE(r.rc == 0);
  trials = harness_cli::json_trials(harness_cli::read_text(dir + "/r.json"));
  REQUIRE(trials.size() == 1);
  CHECK(has(trials[0], "(cached on disk in "));
  // Without --tune-cache every run tunes for real (the stage tune stays visible).
  r = harness_cli::run("--backend cpu --verify autotune --shape 64x96x256 --dist normal --json " + dir + "/r.json");
  trials = harness_cli::json_trials(harness_cli::read_text(dir + "/r.json"));
  REQUIRE(trials.size() == 1);
  CHECK(has(trials[0], "(timed "));
}
