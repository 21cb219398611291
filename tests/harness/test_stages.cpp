// test_stages.cpp — the trial's stage pipeline in the test's own process (harness/trial/stages.hpp
// run_stages, through tests/support/in_process.hpp, the route the GPU tests take): on the cpu
// backend every combination's checked calls run on the child's input sets and pass against their
// own sets' references, the stages come in the child's order with the plan handed out after each,
// stage configs checks every configuration, a fault drill fires as in a child, and the same trial
// through the real binary reports the same input sets and metrics.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "harness_cli.hpp"
#include "in_process.hpp"
#include "json_read.hpp"
#include "lattice.hpp"
#include "output_guard.hpp"

using namespace nvfp4;

namespace {

CaseSpec small_case() {
  CaseSpec c;
  c.shape = Shape::parse("33x65x160x2");
  c.dist = "normal";
  c.seed = 7;
  c.alpha1 = -1.5f;
  c.alpha2 = 0.3f;
  return c;
}

std::string stage_list(const MemorySink& s) {
  std::string out;
  for (const auto& st : s.stages) out += (out.empty() ? "" : " ") + st.stage + (st.completed ? "" : "!");
  return out;
}

}  // namespace

TEST_CASE("run_stages in this process: every cpu combination passes on the child's input sets") {
  ReferenceCache refs;
  TrialOptions o;
  o.fresh = InputSet::All;
  const std::vector<Combo> combos = lattice_combos("cpu");
  REQUIRE(combos.size() >= 4);
  for (const Combo& combo : combos) {
    CAPTURE(combo.str());
    std::vector<std::string> completed;
    const auto t = test::run_in_process("cpu", combo.str(), small_case(), o, refs,
                                        [&](Stage s, Plan&) { completed.push_back(stage_name(s)); });
    REQUIRE(t.calls.size() == 3);
    for (size_t i = 0; i < t.calls.size(); ++i) {
      CAPTURE(i);
      CHECK(t.sink.outputs[i].set == checked_call_set(int(i) + 1));
      CHECK(t.calls[i].pass());
      CHECK(t.calls[i].poisoned == 0);
    }
    // Each call computed on its own set: the three outputs differ.
    CHECK(t.sink.outputs[0].c != t.sink.outputs[1].c);
    CHECK(t.sink.outputs[1].c != t.sink.outputs[2].c);
    CHECK_FALSE(t.sink.describes.empty());
    const bool tune = combo.has("autotune");
    // Stage configs runs where the combination holds no wrapper and the plan offers several
    // configurations: fused always (row blocks), plain on a machine of several cores (threads).
    const bool configs = !tune && !t.sink.configs.empty();
    if (combo.str() == "fused") CHECK(configs);
    CHECK(stage_list(t.sink) == std::string("init") + (tune ? " tune" : "") + " warmup run instances" +
                                    (configs ? " configs" : "") + " teardown");
    // Stage instances: the two plans' five calls (stages.cpp), the second plan's on set 1 of mode all.
    REQUIRE(t.sink.instances.size() == 5);
    CHECK(t.sink.instances[1].name == "1 all");
    CHECK(t.sink.instances[1].set == kSameActivationsSet);
    CHECK(t.sink.instances[4].name == std::string("0 ") + input_set_name(o.fresh));
    // The hook sees the plan after every stage but teardown (the plan is gone).
    CHECK(completed.size() == t.sink.stages.size() - 1);
    if (configs) {
      REQUIRE(t.configs.size() == t.sink.configs.size());
      CHECK(t.configs.size() > 1);
      std::set<std::string> names;
      for (size_t i = 0; i < t.configs.size(); ++i) {
        CAPTURE(t.sink.configs[i].name);
        CHECK(t.configs[i].pass());
        CHECK(t.sink.configs[i].set == int(i % 4));
        names.insert(t.sink.configs[i].name);
      }
      CHECK(names.size() == t.configs.size());
    }
    if (!combo.has("fused")) {  // the unfused path exposes G and U: judged with the last call
      CHECK(t.sink.has_intermediates);
      CHECK(t.calls.back().g_out_of_bound == 0);
      CHECK(t.calls.back().u_out_of_bound == 0);
    }
  }
}

TEST_CASE("run_stages in this process: a fault drill fires as in a child, and a throwing stage stays open") {
  ReferenceCache refs;
  TrialOptions o;
  o.faults = {Fault::parse("corrupt@run:if=fused")};
  const auto t = test::run_in_process("cpu", "fused", small_case(), o, refs);
  REQUIRE(t.calls.size() == 3);
  CHECK(t.calls[0].pass());
  CHECK_FALSE(t.calls[2].pass());  // the drill corrupts the last checked call
  REQUIRE(t.sink.notes.size() == 1);
  CHECK(t.sink.notes[0].find("corrupt@run:if=fused") != std::string::npos);

  o.faults = {Fault::parse("error@warmup")};
  MemorySink sink;
  TrialSpec spec;
  spec.backend = "cpu";
  spec.combo = Combo::parse("plain");
  spec.c = small_case();
  spec.options = o;
  CHECK_THROWS(run_stages(spec, trial_input_sets(spec), sink));
  CHECK(stage_list(sink) == "init warmup!");
  CHECK(sink.outputs.empty());
}

TEST_CASE("run_stages in this process and the trial child agree: the same input sets and metrics") {
  const std::string dir = harness_cli::temp_dir();
  const auto r = harness_cli::run("verify fused --backend cpu --shape 33x65x160x2 --dist normal --seed 7 --alpha -1.5,0.3 "
                                  "--fresh all --json " + dir + "/r.json");
  REQUIRE(r.rc == 0);
  const JsonValue trial = read_json_file(dir + "/r.json").at("trials").items().at(0);
  ReferenceCache refs;
  TrialOptions o;
  o.fresh = InputSet::All;
  const auto t = test::run_in_process("cpu", "fused", small_case(), o, refs);
  const auto& sets = trial.at("input_set_per_call").items();
  REQUIRE(sets.size() == t.sink.outputs.size());
  for (size_t i = 0; i < sets.size(); ++i) CHECK(int(sets[i].number()) == t.sink.outputs[i].set);
  const int call = int(trial.at("metrics_call").number());
  REQUIRE(call >= 1);
  const Comparison& c = t.calls.at(size_t(call - 1));
  const JsonValue& m = trial.at("metrics");
  CHECK(m.at("max_ulp").number() == double(c.max_ulp));
  CHECK(m.at("max_abs").number() == c.max_abs);
  CHECK(m.at("elements").number() == double(c.elements));
  CHECK(trial.at("configs").at("checked").items().size() == t.sink.configs.size());
}

TEST_CASE("read_output's guard zones: a write before or past C is measured and named, C alone is not") {
  GuardedOutput out(91);
  out.poison(kPoisonBits);
  std::fill(out.data(), out.data() + 91, uint16_t(0x3C00));  // exactly C: no overrun
  CHECK_FALSE(out.overrun());
  std::vector<uint16_t> c;
  out.copy_to(c);
  CHECK(c == std::vector<uint16_t>(91, 0x3C00));
  std::fill(out.data() + 91, out.data() + 96, uint16_t(0));  // rounded up to 96: 5 past the end
  out.data()[-3] = 0;                                       // and one 3 before the start
  const OutputOverrun o = out.overrun();
  CHECK(o.after == 5);
  CHECK(o.before == 3);
  const std::string note = output_overrun_note(o, 91, "configs", "configuration v2");
  CHECK(note == "read_output wrote outside C (stage configs, configuration v2): 3 elements before its start and 5 "
                "elements past its end (L·M·N = 91): an offset or index off?");
  CHECK(carries_verdict(note));
  CHECK(output_overrun_stage(note) == "configs");
  out.poison(kPoisonBits);  // rearmed: the earlier overrun is not counted again
  CHECK_FALSE(out.overrun());
  out.data()[91 + kOutputGuard - 1] = 0;  // the zone's last element
  CHECK(output_overrun_note(out.overrun(), 91, "run", "call 1").find("written to its edge") != std::string::npos);
}
