// test_plugin.cpp — C-ABI plugins (optimized/plugin): the loader's refusals, one per way a library
// can be broken (tests/plugin/broken_plugin.cpp), and the CPU example plugin
// (examples/plugin_cpu) as a Plan and as a registered backend, every output checked against the
// exact reference with the harness's own comparison (harness/check/compare.hpp).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "compare.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "plugin_plan.hpp"
#include "reference.hpp"
#include "registry.hpp"

using namespace nvfp4;

namespace {

// The InputError text load_plugin throws for `path` ("" when it loads).
std::string load_error(const std::string& path) {
  try {
    load_plugin(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string broken(const char* defect) { return std::string(NVFP4_BROKEN_DIR) + "/libbroken_" + defect + ".so"; }

// Runs one call and compares every element with the exact reference of `p`.
Comparison run_and_compare(Plan& plan, const Problem& p) {
  plan.poison_output(kPoisonBits);
  plan.enqueue();
  plan.synchronize();
  std::vector<uint16_t> c(size_t(p.shape.c_elems()));
  plan.read_output(c.data());
  ReferenceOptions ro;
  ro.abs_sums = true;
  const ReferenceResult ref = compute_reference(p, ro);
  std::vector<float> g, u;
  const bool mid = plan.read_intermediates(g, u);
  return compare_output(ref, p.alpha1, p.alpha2, c.data(), mid ? &g : nullptr, mid ? &u : nullptr);
}

void require_pass(const Comparison& c) {
  INFO("over tolerance " << c.over_tolerance << ", poisoned " << c.poisoned << ", max ulp " << c.max_ulp);
  CHECK(c.elements > 0);
  CHECK(c.poisoned == 0);
  CHECK(c.pass());
}

}  // namespace

TEST_CASE("load_plugin refuses a missing file and a file that is not a shared library") {
  CHECK(contains(load_error(std::string(NVFP4_BROKEN_DIR) + "/no_such_plugin.so"), "no such file"));
  const std::string text_file = std::string(NVFP4_SOURCE_DIR) + "/tests/plugin/test_plugin.cpp";
  const std::string e = load_error(text_file);
  CHECK(contains(e, "cannot open as a shared library"));
  CHECK(contains(e, text_file));
}

TEST_CASE("load_plugin names each broken table's defect") {
  std::string e = load_error(broken("missing_symbol"));
  CHECK(contains(e, "missing symbol nvfp4_plugin_v1_get"));
  CHECK(contains(e, "it exports nvfp4_plugin_v2_get"));
  e = load_error(broken("wrong_abi"));
  CHECK(contains(e, "ABI version 99; this harness speaks version 1"));
  e = load_error(broken("small_table"));
  CHECK(contains(e, "entry-point table of"));
  e = load_error(broken("null_entry"));
  CHECK(contains(e, "required entry point enqueue is NULL"));
  e = load_error(broken("stage_without_hook"));
  CHECK(contains(e, "optimization 'tuned' adds stage tune but entry point tune is NULL"));
  e = load_error(broken("bad_opt_name"));
  CHECK(contains(e, "bad optimization name 'Fast Path'"));
  // Each message names the file.
  CHECK(contains(e, broken("bad_opt_name")));
}

TEST_CASE("a create() that fails is the plugin's failure, not bad input, carrying its last_error text") {
  const auto plugin = load_plugin(broken("create_fails"));
  CHECK(plugin->backend_name() == "plugin:broken");
  const Problem p = make_problem(Shape{4, 4, 32, 1}, "uniform", 1);
  // Not an InputError (the trial child would label it "InputError:", the class of the user's bad
  // input): a failure of the code under test, ERROR in stage init.
  std::string e;
  bool input_error = false;
  try {
    make_plugin_plan(plugin, Combo{}, p);
  } catch (const InputError& x) {
    input_error = true;
    e = x.what();
  } catch (const std::runtime_error& x) {
    e = x.what();
  }
  CHECK_FALSE(input_error);
  CHECK(e == "plugin create() failed (plugin:broken, combination plain): create refuses: this plugin is broken on "
             "purpose");
  // A last_error(NULL) that returns NULL is named as such.
  e.clear();
  try {
    make_plugin_plan(load_plugin(broken("create_fails_silently")), Combo{}, p);
  } catch (const InputError& x) {
    input_error = true;
  } catch (const std::runtime_error& x) {
    e = x.what();
  }
  CHECK_FALSE(input_error);
  CHECK(e == "plugin create() failed (plugin:broken, combination plain): no reason given (last_error returned NULL)");
  // A name the plugin does not offer is refused before create().
  e.clear();
  try {
    make_plugin_plan(plugin, Combo::parse("turbo"), p);
  } catch (const InputError& x) {
    e = x.what();
  }
  CHECK(contains(e, "offers no optimization 'turbo'"));
}

TEST_CASE("a plugin that writes into the const input arrays it is handed is an error naming the array") {
  const Problem p = make_problem(Shape{4, 4, 32, 1}, "uniform", 1);
  std::string e;
  try {
    make_plugin_plan(load_plugin(broken("writes_weights")), Combo{}, p);
  } catch (const std::runtime_error& x) {
    e = x.what();
  }
  CHECK(contains(e, "plugin:broken wrote into the input arrays it was handed during create() "
                    "(b1 differs first at byte 1): they are the caller's"));
  // In set_inputs: the activations the call hands over are compared with the caller's.
  auto plan = make_plugin_plan(load_plugin(broken("writes_activations")), Combo{}, p);
  const Problem q = make_problem(Shape{4, 4, 32, 1}, "uniform", 2);
  e.clear();
  try {
    plan->set_inputs(q, InputSet::Activations);
  } catch (const std::runtime_error& x) {
    e = x.what();
  }
  CHECK(contains(e, "during set_inputs() (sfa differs first at byte 0)"));
}

TEST_CASE("a plugin that crashes in create or hangs at load takes down only the process that loads it") {
  SUBCASE("crash in create: SIGSEGV in the loading process") {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      signal(SIGSEGV, SIG_DFL);  // not doctest's handler: the parent must see the signal itself
      try {
        const auto plugin = load_plugin(broken("create_crashes"));
        make_plugin_plan(plugin, Combo{}, make_problem(Shape{4, 4, 32, 1}, "uniform", 1));
      } catch (...) {
      }
      _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGSEGV);
  }
  SUBCASE("hang at load: dlopen does not return (the stage-load watchdog's case)") {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      try {
        load_plugin(broken("load_hang"));
      } catch (...) {
      }
      _exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    int status = 0;
    CHECK(waitpid(pid, &status, WNOHANG) == 0);  // still inside dlopen
    kill(pid, SIGKILL);
    REQUIRE(waitpid(pid, &status, 0) == pid);
  }
}

TEST_CASE("the CPU example plugin: its table, every combination exact, set_inputs") {
  const auto plugin = load_plugin(NVFP4_CPU_PLUGIN);
  CHECK(plugin->name == "cpu-example");
  REQUIRE(plugin->optimizations.size() == 2);
  CHECK(plugin->optimizations[0].name == "threads");
  CHECK(plugin->optimizations[0].stages.empty());
  CHECK(plugin->optimizations[1].name == "blocked");
  CHECK(plugin->optimizations[1].stages == std::vector<Stage>{Stage::Tune});

  const Shape shape{37, 19, 96, 2};  // ragged M and N, two batches
  for (const char* combo : {"plain", "threads", "blocked", "blocked+threads"}) {
    CAPTURE(combo);
    Problem p = make_problem(shape, "normal", 7);
    p.alpha1 = 0.75f;
    p.alpha2 = 1.5f;
    auto plan = make_plugin_plan(plugin, Combo::parse(combo), p);
    plan->tune();
    require_pass(run_and_compare(*plan, p));
    std::vector<float> g, u;
    CHECK(plan->read_intermediates(g, u) == !Combo::parse(combo).has("blocked"));

    // New activations (A, SFA) only: the output must follow them, with the weights kept.
    const Problem fresh = make_problem(shape, "normal", 8);
    Problem next = p;
    next.a = fresh.a;
    next.sfa = fresh.sfa;
    std::vector<uint16_t> before(size_t(shape.c_elems())), after(before.size());
    plan->read_output(before.data());
    plan->set_inputs(fresh, InputSet::Activations);
    require_pass(run_and_compare(*plan, next));
    plan->read_output(after.data());
    CHECK(before != after);

    // Everything new, alphas included.
    Problem all = make_problem(shape, "uniform", 9);
    all.alpha1 = 2.0f;
    all.alpha2 = -0.5f;
    plan->set_inputs(all, InputSet::All);
    require_pass(run_and_compare(*plan, all));
  }
  // The plan refuses inputs of another shape.
  auto plan = make_plugin_plan(plugin, Combo{}, make_problem(shape, "normal", 7));
  CHECK_THROWS_AS(plan->set_inputs(make_problem(Shape{8, 8, 32, 1}, "normal", 1), InputSet::All), InputError);
}

TEST_CASE("a registered plugin is a backend with one optimization per offered name") {
  const auto plugin = load_plugin(NVFP4_CPU_PLUGIN);
  const PluginRegistration reg = plugin_registration(plugin);
  CHECK(reg.backend.name == "plugin:cpu-example");
  REQUIRE(reg.optimizations.size() == 2);
  CHECK(reg.optimizations[1].name == "blocked");
  CHECK(reg.optimizations[1].kind == OptKind::Wrapper);

  const std::string backend = register_plugin(plugin);
  REQUIRE(backend == "plugin:cpu-example");
  const Combo both = Combo::parse("blocked+threads");
  check_combo(backend, both);
  CHECK(combo_has_stage(backend, both, Stage::Tune));
  CHECK_FALSE(combo_has_stage(backend, Combo::parse("threads"), Stage::Tune));
  CHECK_FALSE(combo_has_stage(backend, both, Stage::Capture));

  const Problem p = make_problem(Shape{20, 24, 64, 1}, "uniform", 3);
  // Through the registry's plan assembly (plain, then each wrapper rebuilds with its name) and
  // through make_combo (one create for the whole combination): the same combination either way.
  for (int route = 0; route < 2; ++route) {
    CAPTURE(route);
    std::unique_ptr<Plan> plan = route == 0 ? build_plan(backend, both, p, PlanOptions{})
                                            : reg.make_combo(both, p, PlanOptions{});
    auto* pp = dynamic_cast<PluginPlan*>(plan.get());
    REQUIRE(pp != nullptr);
    CHECK(pp->combo().str() == "blocked+threads");
    CHECK(contains(plan->describe(), "blocks of"));
    plan->tune();
    require_pass(run_and_compare(*plan, p));
  }
}
