// plan.hpp — what every path (CPU or GPU, plain or optimized) looks like to the harness.
//
// A Plan computes C = silu(alpha1*A*B1^T) * (alpha2*A*B2^T) for ONE fixed Problem. It is built in
// stage `init` (allocations, handles, uploads), optionally tuned (stage `tune`, the autotune
// optimization) and captured (stage `capture`, the graph optimization), then called repeatedly.
// Optimizations that change *how* a call is issued are wrappers (PlanWrapper) around an inner
// plan; optimizations that change *what kernel runs* are variants that build the base plan.
// Library code never prints or exits: it throws (InputError for bad input, anything else for a
// failure of the path).
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "problem.hpp"

namespace nvfp4 {

// The stages of a trial, in the order they run (docs/design.md §3). kStages is the one table of
// them: the CLI's --budget-* options, their range checks, the report's budgets, the watchdog, the
// fault drills and the child's pipeline all iterate it, so a stage cannot be known to one and not
// another. Load, setup and teardown belong to the harness's child around the path; tune and
// capture run only when an optimization adds them; configs only where the base path offers more than
// one configuration (§3.2); time only in bench mode (§4.1).
enum class Stage { Load, Setup, Init, Tune, Warmup, Capture, Run, Instances, Configs, Time, Teardown };

struct StageInfo {
  Stage id;
  const char* name;
  double default_budget;  // seconds; 0 where the stage has no budget of its own (see budget_of)
  Stage budget_of;        // whose budget watches it: itself, or init for setup and teardown
  bool drills;            // fault drills (--inject FAULT@STAGE) can fire in it
  const char* help;
};

inline constexpr StageInfo kStages[] = {
    {Stage::Load, "load", 30, Stage::Load, false,
     "the path's code loaded in the child: a built-in module, a plugin library, a submission's import"},
    {Stage::Setup, "setup", 0, Stage::Init, false, "the harness's own input building and support checks"},
    {Stage::Init, "init", 60, Stage::Init, true, "plan construction: allocations, handles, uploads"},
    {Stage::Tune, "tune", 30, Stage::Tune, true, "autotune: candidate configurations timed"},
    {Stage::Warmup, "warmup", 30, Stage::Warmup, true, "the eager calls before the checked ones"},
    {Stage::Capture, "capture", 30, Stage::Capture, true, "graph capture and instantiation"},
    {Stage::Run, "run", 60, Stage::Run, true, "the checked calls"},
    {Stage::Instances, "instances", 60, Stage::Instances, false,
     "a second plan of the path built on other weights beside the first, the two called in turn and the "
     "first once more after the second is destroyed: state shared between instances"},
    {Stage::Configs, "configs", 300, Stage::Configs, false,
     "every configuration the base path offers for the shape (Plan::candidates), one checked call each"},
    {Stage::Time, "time", 60, Stage::Time, true, "bench mode: the timed steady state"},
    {Stage::Teardown, "teardown", 0, Stage::Init, false, "the plan destroyed"},
};
inline constexpr int kStageCount = int(sizeof(kStages) / sizeof(kStages[0]));

inline const StageInfo& stage_info(Stage s) { return kStages[int(s)]; }
inline const char* stage_name(Stage s) { return stage_info(s).name; }
// Whether `s` is watched by a budget of its own (--budget-NAME).
inline bool has_own_budget(Stage s) { return stage_info(s).budget_of == s; }
// The stage called `name`, or nullptr: an unknown name is the caller's error, never a fallback.
inline const StageInfo* find_stage(const std::string& name) {
  for (const auto& s : kStages)
    if (name == s.name) return &s;
  return nullptr;
}

// A support check's answer: ok, or the reason it is not supported (the trial is then SKIP).
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

struct PlanOptions {
  // Directory for the on-disk autotune cache; empty keeps the cache in the process only.
  std::string tune_cache_dir;
  int tune_reps = 10;          // timed calls per candidate
  double tune_budget_s = 1.5;  // tuning stops trying new candidates after this much time
};

class Plan {
 public:
  virtual ~Plan() = default;
  // The configuration in use, e.g. "cublasLt algo 3" (goes into reports).
  virtual std::string describe() const = 0;
  // Writes new inputs into the buffers the plan owns, as an engine does between calls: outside any
  // timed call, never while a call is in flight, never changing the buffers' addresses (a captured
  // graph must see the new values when it replays). `p` has the plan's shape (InputError
  // otherwise); with `Activations` only p.a and p.sfa are read, with `All` every array and both
  // alphas. Synchronous: the next enqueue() sees the new values.
  virtual void set_inputs(const Problem& p, InputSet which) = 0;
  // Issues one call (asynchronous on a GPU; synchronize() waits and throws on device errors).
  virtual void enqueue() = 0;
  virtual void synchronize() = 0;
  // Fills the whole output with `bits` (the harness poisons with a NaN before every checked call).
  virtual void poison_output(uint16_t bits) = 0;
  // Copies the output (L*M*N fp16 bit patterns, (L, M, N) order) to the host. Synchronizes.
  virtual void read_output(uint16_t* c) = 0;
  // Optional: the two GEMM results as the path holds them (fp32, (L, M, N), alpha NOT applied),
  // so a report can tell a GEMM error from an epilogue error. Returns false when unavailable.
  virtual bool read_intermediates(std::vector<float>& g, std::vector<float>& u) {
    (void)g;
    (void)u;
    return false;
  }

  // Tunable configurations for the autotune optimization (empty: nothing to tune).
  virtual std::vector<std::string> candidates() const { return {}; }
  virtual void select(size_t index) { (void)index; }
  // Key under which a tuning result may be cached: must name the device, driver and library
  // versions, the shape and the variant. Empty disables caching.
  virtual std::string tune_key() const { return {}; }
  // Per-call timing, the one helper behind autotune and the bench (measure_calls below). Times
  // `n` calls of `outer` (the outermost plan: its enqueue() is the call, e.g. a graph replay),
  // one at a time: before(i) runs first, outside the timed region (the bench writes call i's
  // inputs there), then the plan readies a cold start where it can and times exactly one call.
  // Returns the n times in seconds. The default uses the host clock around enqueue+synchronize;
  // a GPU plan writes more than its L2 between calls and times each with CUDA events on its
  // stream. Wrappers forward to their inner plan, so the base plan's clock times the outer call.
  virtual std::vector<double> timed_calls(Plan& outer, int n, const std::function<void(int)>& before) {
    std::vector<double> t;
    for (int i = 0; i < n; ++i) {
      if (before) before(i);
      outer.synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      outer.enqueue();
      outer.synchronize();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return t;
  }
  // Mean seconds of `n` back-to-back calls of `outer` (no flushing, one clock pair around all of
  // them, after one untimed call), so launch overhead overlaps the previous call.
  virtual double back_to_back(Plan& outer, int n) {
    if (n < 1) n = 1;
    outer.enqueue();
    outer.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) outer.enqueue();
    outer.synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  }

  // Stage hooks: wrappers override the ones they own; base plans ignore them.
  virtual void tune() {}
  virtual void capture() {}
  // The innermost plan (wrappers return their inner plan's base()).
  virtual Plan* base() { return this; }
};

// Forwards everything to an inner plan; optimizations that wrap derive from it.
class PlanWrapper : public Plan {
 public:
  explicit PlanWrapper(std::unique_ptr<Plan> inner) : inner_(std::move(inner)) {}
  std::string describe() const override { return inner_->describe(); }
  void set_inputs(const Problem& p, InputSet which) override { inner_->set_inputs(p, which); }
  void enqueue() override { inner_->enqueue(); }
  void synchronize() override { inner_->synchronize(); }
  void poison_output(uint16_t bits) override { inner_->poison_output(bits); }
  void read_output(uint16_t* c) override { inner_->read_output(c); }
  bool read_intermediates(std::vector<float>& g, std::vector<float>& u) override {
    return inner_->read_intermediates(g, u);
  }
  std::vector<std::string> candidates() const override { return inner_->candidates(); }
  void select(size_t index) override { inner_->select(index); }
  std::string tune_key() const override { return inner_->tune_key(); }
  std::vector<double> timed_calls(Plan& outer, int n, const std::function<void(int)>& before) override {
    return inner_->timed_calls(outer, n, before);
  }
  double back_to_back(Plan& outer, int n) override { return inner_->back_to_back(outer, n); }
  void tune() override { inner_->tune(); }
  void capture() override { inner_->capture(); }
  Plan* base() override { return inner_->base(); }

 protected:
  Plan& inner() { return *inner_; }
  const Plan& inner() const { return *inner_; }

 private:
  std::unique_ptr<Plan> inner_;
};

// ---------------------------------------------------------------------------------------------
// The stopping rule of every timing (autotune's candidates, the bench's stage time): timed calls in
// batches of kTimingBatch until the median's relative standard error is below `rse` (with at
// least min_reps calls), or max_time_s seconds have passed, or max_reps calls were timed.

struct TimingRule {
  double rse = 0.005;       // stop when the median's relative standard error is below this
  double max_time_s = 2.0;  // seconds of timing at most (checked after each batch)
  int min_reps = 50, max_reps = 5000;
};

struct Timing {
  int reps = 0;
  double median = NAN, min = NAN, mean = NAN, stdev = NAN, rse = NAN;  // seconds; rse relative
};

constexpr int kTimingBatch = 10;

inline double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Robust relative standard error of the median: 1.2533 * sigma / sqrt(n) / median, sigma from the
// median absolute deviation (1.4826 * MAD), so that a few slow outliers do not keep it high.
inline double median_rse(const std::vector<double>& v, double med) {
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - med));
  return 1.2533 * 1.4826 * median_of(dev) / std::sqrt(double(v.size())) / med;
}

// How many back-to-back calls the "b2b" figure times: about 20 ms of calls at the measured median,
// at least 10 and at most 2000 (the bench trials' stage time and the GPU extras use the same count).
inline int back_to_back_calls(double median_s) {
  if (!(median_s > 0)) return 2000;
  const double n = 0.02 / median_s;
  return n < 10 ? 10 : n > 2000 ? 2000 : int(n);
}

// Times calls of `plan` (Plan::timed_calls; call i gets before(i) first) under `rule`.
inline Timing measure_calls(Plan& plan, const TimingRule& rule, const std::function<void(int)>& before = nullptr) {
  const int min_reps = std::max(1, rule.min_reps), max_reps = std::max(min_reps, rule.max_reps);
  std::vector<double> t;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const int first = int(t.size());
    const int n = std::min(kTimingBatch, max_reps - first);
    const auto batch = plan.timed_calls(plan, n, [&](int i) {
      if (before) before(first + i);
    });
    t.insert(t.end(), batch.begin(), batch.end());
    const int done = int(t.size());
    if (done >= max_reps) break;
    if (done >= min_reps) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (median_rse(t, median_of(t)) < rule.rse || elapsed > rule.max_time_s) break;
    }
  }
  Timing s;
  s.reps = int(t.size());
  s.median = median_of(t);
  s.min = *std::min_element(t.begin(), t.end());
  double sum = 0, sq = 0;
  for (double x : t) sum += x;
  s.mean = sum / s.reps;
  for (double x : t) sq += (x - s.mean) * (x - s.mean);
  s.stdev = s.reps > 1 ? std::sqrt(sq / (s.reps - 1)) : 0.0;
  s.rse = median_rse(t, s.median);
  return s;
}

// The median of exactly `reps` timed calls (autotune's candidates; tests).
inline double seconds_per_call(Plan& plan, int reps) {
  TimingRule r;
  r.rse = 0;
  r.max_time_s = INFINITY;
  r.min_reps = r.max_reps = std::max(1, reps);
  return measure_calls(plan, r).median;
}

}  // namespace nvfp4
