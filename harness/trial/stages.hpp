// stages.hpp — a trial's stage pipeline after setup (trial.hpp's stage contract): init, tune,
// warmup, capture, run, configs, time and teardown on the input sets the caller made, each stage's
// products handed to a StageSink. The trial child (trial_child.cpp) runs it with a sink that writes
// the trial directory's files and the pipe's messages; a test runs it in its own process with a
// MemorySink and judges the outputs itself (tests/gpu), so it runs exactly the child's sequence.
//
//   std::vector<Problem> sets = trial_input_sets(spec);
//   MemorySink sink;
//   run_stages(spec, sets, sink);   // throws what the plan throws; sink.outputs[i]: checked call i+1
//
// Layouts: outputs are (L, M, N) fp16 bit patterns, intermediates (L, M, N) fp32 (plan.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trial.hpp"

namespace nvfp4 {

// What the stages produce, in the order they produce it.
class StageSink {
 public:
  virtual ~StageSink() = default;
  // Stage `s` begins; it ends with leave() after `seconds`. A stage whose body throws never leaves.
  virtual void enter(Stage s) = 0;
  virtual void leave(Stage s, double seconds) = 0;
  // After stage `s` completed, with the plan it ran (none after teardown): where a test adds checks
  // of its own. The child adds none.
  virtual void completed(Stage, Plan&) {}
  // The plan's describe() after init, and again after tune and after capture.
  virtual void describe(const std::string& text) = 0;
  // A fault drill's note (faults.hpp).
  virtual void note(const std::string& text) = 0;
  // Checked call `call` (0-based) on input set `set`.
  virtual void output(int call, int set, const std::vector<uint16_t>& c) = 0;
  // The last checked call's G and U, when the plan exposes them.
  virtual void intermediates(const std::vector<float>& g, const std::vector<float>& u) = 0;
  // Stage configs: configuration `index`, named `name`, on input set `set`.
  virtual void config_output(int index, int set, const std::string& name, const std::vector<uint16_t>& c) = 0;
  // Stage instances: call `index` (0-based, in order), made by plan `plan` (0: the trial's, 1: the
  // second) on input set `set` under `mode`.
  virtual void instance_output(int index, int plan, int set, InputSet mode, const std::vector<uint16_t>& c) = 0;
  // Stage time: the last timed call's output (index 0) and the last back-to-back call's (index 1),
  // each with its input set; then the figures.
  virtual void timed_output(int index, int set, const std::vector<uint16_t>& c) = 0;
  virtual void timing(const BenchFigures& f) = 0;
};

// Everything the stages produced, kept in memory. `on_completed`, when set, is called by completed().
class MemorySink : public StageSink {
 public:
  struct Output {
    int index = 0, set = 0;
    std::string name;  // configs: the configuration; instances: "PLAN MODE"
    std::vector<uint16_t> c;
  };
  std::vector<StageTime> stages;  // in order; completed false: the stage threw
  std::vector<std::string> describes, notes;
  std::vector<Output> outputs, configs, instances, timed;  // outputs[i]: checked call i+1
  bool has_intermediates = false;
  std::vector<float> g, u;
  BenchFigures figures;
  std::function<void(Stage, Plan&)> on_completed;

  void enter(Stage s) override { stages.push_back({stage_name(s), 0.0, false}); }
  void leave(Stage, double seconds) override {
    stages.back().seconds = seconds;
    stages.back().completed = true;
  }
  void completed(Stage s, Plan& plan) override {
    if (on_completed) on_completed(s, plan);
  }
  void describe(const std::string& text) override { describes.push_back(text); }
  void note(const std::string& text) override { notes.push_back(text); }
  void output(int call, int set, const std::vector<uint16_t>& c) override { outputs.push_back({call, set, "", c}); }
  void intermediates(const std::vector<float>& g_, const std::vector<float>& u_) override {
    has_intermediates = true;
    g = g_;
    u = u_;
  }
  void config_output(int index, int set, const std::string& name, const std::vector<uint16_t>& c) override {
    configs.push_back({index, set, name, c});
  }
  void instance_output(int index, int plan, int set, InputSet mode, const std::vector<uint16_t>& c) override {
    instances.push_back({index, set, std::to_string(plan) + (mode == InputSet::All ? " all" : " activations"), c});
  }
  void timed_output(int index, int set, const std::vector<uint16_t>& c) override { timed.push_back({index, set, "", c}); }
  void timing(const BenchFigures& f) override { figures = f; }
};

// Runs `body` as stage `s`: enter, body, leave with its wall time. An exception leaves the stage
// open (whoever reads the sink then knows where it happened).
void run_stage(StageSink& sink, Stage s, const std::function<void()>& body);

// Input set `k` of the trial (cases.hpp): from the parent's store when it holds it
// (TrialOptions::input_store, input_store.hpp), else generated. `set0` is set 0 (unused for k = 0).
Problem trial_input_set(const TrialSpec& t, int k, const Problem* set0);
// Sets 0 .. warmup_set(runs), what run_stages takes.
std::vector<Problem> trial_input_sets(const TrialSpec& t);

// The stages after setup, on `sets` (index: input set; the last one the warm-up's). The backend
// must be registered and available and the combination valid and supported for the shape (stage
// setup's checks). Throws what the plan or a fault drill throws, with the stage left open.
void run_stages(const TrialSpec& t, const std::vector<Problem>& sets, StageSink& sink);

}  // namespace nvfp4
