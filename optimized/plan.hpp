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
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "problem.hpp"

namespace nvfp4 {

enum class Stage { Init, Tune, Warmup, Capture, Run };
const char* stage_name(Stage s);  // "init", "tune", "warmup", "capture", "run"

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
  // Seconds per call, averaged over `iters` back-to-back calls, timed as precisely as the plan
  // can (CUDA events on a GPU). The default uses the host clock around enqueue/synchronize.
  virtual double seconds_per_call(int iters);

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
  double seconds_per_call(int iters) override { return inner_->seconds_per_call(iters); }
  void tune() override { inner_->tune(); }
  void capture() override { inner_->capture(); }
  Plan* base() override { return inner_->base(); }

 protected:
  Plan& inner() { return *inner_; }
  const Plan& inner() const { return *inner_; }

 private:
  std::unique_ptr<Plan> inner_;
};

}  // namespace nvfp4
