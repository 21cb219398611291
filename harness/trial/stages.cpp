// stages.cpp — the stage pipeline after setup (see stages.hpp; the contract is trial.hpp's).
#include "stages.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "input_store.hpp"
#include "output_guard.hpp"

namespace nvfp4 {

namespace {

using Clock = std::chrono::steady_clock;

// Every read_output of the stages goes through here: into a buffer with guard zones before and
// after C (output_guard.hpp), C poisoned first (what read_output leaves unwritten shows as such),
// then copied to `c` for the sink. A write into a guard zone is noted, once per stage (`noted`),
// with a note that carries a FAIL (external.hpp kOutputOverrunNote, evaluate.cpp). FAIL, not ERROR
// (docs/design.md §4.2): ERROR is what the path raised (an exception, a device error), and this one
// raised nothing; like a submission that wrote into its inputs (kInputsChangedNote, a FAIL), it
// returned having written memory that is not its output, which the harness sees after the call.
// Neither the guards nor the copy are in a timed region: stage time times calls, not read-backs.
void read_guarded(Plan& plan, GuardedOutput& out, std::vector<uint16_t>& c, StageSink& sink, Stage s,
                  const std::string& where, bool& noted) {
  out.poison(kPoisonBits);
  plan.read_output(out.data());
  if (const OutputOverrun o = out.overrun(); o && !noted) {
    noted = true;
    sink.note(output_overrun_note(o, out.size(), stage_name(s), where));
  }
  out.copy_to(c);
}

// Stage time (trial.hpp): the steady state under the bench's stopping rule, then the back-to-back
// figure; the last timed call's and the last back-to-back call's outputs go to the sink.
void time_stage(StageSink& sink, const TrialSpec& t, Plan& plan, const std::vector<Problem>& sets) {
  const TrialOptions& o = t.options;
  const Shape& shape = sets[0].shape;
  for (const auto& note : fire_stage_faults(o.faults, Stage::Time, t.combo, o.slow_seconds, &shape)) sink.note(note);
  auto set_of = [&](int call) { return timed_call_set(call, o.runs); };
  BenchFigures f;
  f.t = measure_calls(plan, o.timing, [&](int i) { plan.set_inputs(sets[size_t(set_of(i))], o.fresh); });
  std::vector<uint16_t> c;
  GuardedOutput out(size_t(shape.c_elems()));
  bool noted = false;
  auto send_output = [&](int index, int set) {
    read_guarded(plan, out, c, sink, Stage::Time, index == 0 ? "the last timed call" : "the last back-to-back call",
                 noted);
    for (const auto& note : apply_output_faults(o.faults, Stage::Time, t.combo, shape, c.data(), kPoisonBits))
      sink.note(note);
    sink.timed_output(index, set, c);
  };
  send_output(0, set_of(f.t.reps - 1));
  // Back-to-back: enough calls for about 20 ms (at least 10, at most 2000), on the set after the
  // last timed call's, so its output is not left over from the timed calls.
  const int b2b_set = set_of(f.t.reps);
  f.b2b_calls = back_to_back_calls(f.t.median);
  plan.set_inputs(sets[size_t(b2b_set)], o.fresh);
  f.b2b = plan.back_to_back(plan, f.b2b_calls);
  send_output(1, b2b_set);
  sink.timing(f);
}

// Whether the combination holds no wrapper: its plan is the base plan itself, whose configurations
// stage configs may switch freely (a wrapper such as a captured graph would keep replaying one).
bool only_variants(const std::string& backend, const Combo& combo) {
  for (const auto& name : combo.opts) {
    const Optimization* o = Registry::instance().optimization(backend, name);
    if (!o || o->kind != OptKind::Variant) return false;
  }
  return true;
}

// Stage configs (trial.hpp): each configuration of the base plan, one poisoned checked call on
// input set i mod (R+1), its output to the sink.
void configs_stage(StageSink& sink, Plan& base, const std::vector<Problem>& sets, const TrialOptions& o) {
  const std::vector<std::string> names = base.candidates();
  std::vector<uint16_t> c;
  GuardedOutput out(size_t(sets[0].shape.c_elems()));
  bool noted = false;
  for (size_t i = 0; i < names.size(); ++i) {
    const int set = int(i % size_t(warmup_set(o.runs) + 1));
    base.select(i);
    base.set_inputs(sets[size_t(set)], o.fresh);
    base.poison_output(kPoisonBits);
    base.enqueue();
    base.synchronize();
    read_guarded(base, out, c, sink, Stage::Configs, "configuration " + names[i], noted);
    sink.config_output(int(i), set, names[i], c);
  }
}

// Stage instances: an engine holds one plan per layer, each with its own weights, and calls them
// in turn. A second plan of the same path is built here on other weights (input set 1 under
// --fresh all: set 0's activations, new weights and alphas), taken through the first one's stages
// (init, tune, warm-up, capture), and the two are called in turn: the trial's plan on set 0 then
// the second, the second then the trial's plan on set 1, and, once the second is destroyed, the
// trial's plan on set 2 (sets wrap when there are fewer). A path whose plans share state (a static
// buffer of decoded weights, a global workspace or tuning cache, a resource the destructor frees
// for everyone) gives one plan the other's result or garbage; each output goes to the sink with
// the set and mode it was handed, and the parent judges it (evaluate.cpp, check_instances).
void instances_stage(StageSink& sink, const TrialSpec& t, Plan& first, const std::vector<Problem>& sets) {
  const TrialOptions& o = t.options;
  Problem other;
  if (!read_stored_set(o.input_store, t.c, kSameActivationsSet, InputSet::All, other, &sets[0]))
    other = make_input_set(t.c, sets[0], kSameActivationsSet, InputSet::All);
  std::unique_ptr<Plan> second = build_plan(t.backend, t.combo, other, o.plan);
  if (!second) throw std::runtime_error("build_plan returned no plan for the second instance");
  if (combo_has_stage(t.backend, t.combo, Stage::Tune)) second->tune();
  for (int i = 0; i < std::max(1, o.warmup); ++i) {
    second->enqueue();
    second->synchronize();
  }
  if (combo_has_stage(t.backend, t.combo, Stage::Capture)) second->capture();

  GuardedOutput out(size_t(sets[0].shape.c_elems()));
  std::vector<uint16_t> c;
  bool noted = false;
  int index = 0;
  auto read = [&](Plan& plan, int which, int set, InputSet mode) {
    read_guarded(plan, out, c, sink, Stage::Instances, "call " + std::to_string(index + 1), noted);
    sink.instance_output(index++, which, set, mode, c);
  };
  const int set_a = 0, set_b = 1 % int(sets.size()), set_c = 2 % int(sets.size());
  first.set_inputs(sets[size_t(set_a)], o.fresh);
  second->set_inputs(other, InputSet::All);
  first.poison_output(kPoisonBits);
  second->poison_output(kPoisonBits);
  first.enqueue();
  second->enqueue();
  first.synchronize();
  second->synchronize();
  read(first, 0, set_a, o.fresh);
  read(*second, 1, kSameActivationsSet, InputSet::All);

  first.set_inputs(sets[size_t(set_b)], o.fresh);
  first.poison_output(kPoisonBits);
  second->poison_output(kPoisonBits);
  second->enqueue();
  first.enqueue();
  second->synchronize();
  first.synchronize();
  read(*second, 1, kSameActivationsSet, InputSet::All);
  read(first, 0, set_b, o.fresh);

  second.reset();
  first.set_inputs(sets[size_t(set_c)], o.fresh);
  first.poison_output(kPoisonBits);
  first.enqueue();
  first.synchronize();
  read(first, 0, set_c, o.fresh);
}

}  // namespace

void run_stage(StageSink& sink, Stage s, const std::function<void()>& body) {
  sink.enter(s);
  const auto t0 = Clock::now();
  body();
  sink.leave(s, std::chrono::duration<double>(Clock::now() - t0).count());
}

Problem trial_input_set(const TrialSpec& t, int k, const Problem* set0) {
  const TrialOptions& o = t.options;
  const InputSet mode = k == 0 ? InputSet::Activations : o.fresh;
  Problem p;
  if (read_stored_set(o.input_store, t.c, k, mode, p, k == 0 ? nullptr : set0)) return p;
  if (k == 0) return t.c.make();
  if (!set0) throw std::logic_error("trial_input_set: input set " + std::to_string(k) + " needs set 0");
  return make_input_set(t.c, *set0, k, o.fresh);
}

std::vector<Problem> trial_input_sets(const TrialSpec& t) {
  std::vector<Problem> sets;
  sets.push_back(trial_input_set(t, 0, nullptr));
  for (int k = 1; k <= warmup_set(t.options.runs); ++k) sets.push_back(trial_input_set(t, k, &sets[0]));
  return sets;
}

void run_stages(const TrialSpec& t, const std::vector<Problem>& sets, StageSink& sink) {
  const TrialOptions& o = t.options;
  const Problem& problem = sets[0];
  auto faults_at = [&](Stage s) {
    for (const auto& note : fire_stage_faults(o.faults, s, t.combo, o.slow_seconds, &problem.shape)) sink.note(note);
  };
  std::unique_ptr<Plan> plan;
  run_stage(sink, Stage::Init, [&] {
    faults_at(Stage::Init);
    plan = build_plan(t.backend, t.combo, sets[size_t(warmup_set(o.runs))], o.plan);
    if (!plan) throw std::runtime_error("build_plan returned no plan");
  });
  sink.completed(Stage::Init, *plan);
  sink.describe(plan->describe());
  if (combo_has_stage(t.backend, t.combo, Stage::Tune)) {
    run_stage(sink, Stage::Tune, [&] {
      faults_at(Stage::Tune);
      plan->tune();
    });
    sink.completed(Stage::Tune, *plan);
    sink.describe(plan->describe());
  }
  run_stage(sink, Stage::Warmup, [&] {
    faults_at(Stage::Warmup);
    for (int i = 0; i < o.warmup; ++i) {
      plan->enqueue();
      plan->synchronize();
    }
  });
  sink.completed(Stage::Warmup, *plan);
  if (combo_has_stage(t.backend, t.combo, Stage::Capture)) {
    run_stage(sink, Stage::Capture, [&] {
      faults_at(Stage::Capture);
      plan->capture();
    });
    sink.completed(Stage::Capture, *plan);
    sink.describe(plan->describe());
  }
  run_stage(sink, Stage::Run, [&] {
    faults_at(Stage::Run);
    std::vector<uint16_t> c;
    GuardedOutput out(size_t(problem.shape.c_elems()));
    bool noted = false;
    for (int call = 0; call < o.runs; ++call) {
      const int set = checked_call_set(call + 1);
      plan->set_inputs(sets[size_t(set)], o.fresh);
      // Every checked call but the last starts from the poison pattern (an element it does not
      // write is caught as unwritten); the last starts from the previous call's output, so a path
      // that only computes when it sees the poison returns that stale output and fails.
      if (o.runs == 1 || call + 1 < o.runs) plan->poison_output(kPoisonBits);
      plan->enqueue();
      plan->synchronize();
      // The host copy starts as the poison too: an element read_output leaves unwritten (a plugin
      // that copies nothing back) is named unwritten, not taken from the previous call.
      read_guarded(*plan, out, c, sink, Stage::Run, "call " + std::to_string(call + 1), noted);
      if (call == o.runs - 1)
        for (const auto& note : apply_output_faults(o.faults, Stage::Run, t.combo, problem.shape, c.data(), kPoisonBits))
          sink.note(note);
      sink.output(call, set, c);
    }
    std::vector<float> g, u;
    if (plan->read_intermediates(g, u)) sink.intermediates(g, u);
  });
  sink.completed(Stage::Run, *plan);
  if (o.instances && !o.bench) {
    run_stage(sink, Stage::Instances, [&] { instances_stage(sink, t, *plan, sets); });
    sink.completed(Stage::Instances, *plan);
  }
  if (o.configs && !o.bench && only_variants(t.backend, t.combo) && plan->base()->candidates().size() > 1) {
    run_stage(sink, Stage::Configs, [&] { configs_stage(sink, *plan->base(), sets, o); });
    sink.completed(Stage::Configs, *plan);
  }
  if (o.bench) {
    run_stage(sink, Stage::Time, [&] { time_stage(sink, t, *plan, sets); });
    sink.completed(Stage::Time, *plan);
  }
  run_stage(sink, Stage::Teardown, [&] { plan.reset(); });
}

}  // namespace nvfp4
