// evaluate.cpp — a child's report turned into a trial result: every checked call against the exact
// reference of its own input set, both criteria (compare.hpp), and the stale-output diagnosis (a
// failing output that matches another set's reference). See trial.hpp, evaluate_trial.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "external.hpp"
#include "input_store.hpp"
#include "misreading.hpp"
#include "output_guard.hpp"
#include "trial.hpp"

namespace nvfp4 {

namespace {

// The inputs checked call i was handed (index i-1) and the warm-up's (index R): for a built-in
// path input set i-1 in the trial's mode, written into its buffers; for a Python submission the
// driver's mix of in-place refills and new tensors (external.hpp, submission_calls).
std::vector<SubmissionCall> calls_of(const TrialSpec& spec) {
  const External* e = spec.options.external(spec.backend);
  if (e && e->kind == External::Submission) return submission_calls(spec, *e);
  std::vector<SubmissionCall> calls;
  for (int set = 0; set <= warmup_set(spec.options.runs); ++set) {
    SubmissionCall k;
    k.set = set;
    k.mode = spec.options.fresh;
    calls.push_back(k);
  }
  return calls;
}

// The reference of the inputs `k` describes. A set that keeps the case's alphas shares G and U with
// the cached set of its seed; only its output and the flags derived from it are computed again.
std::shared_ptr<const CaseInfo> reference_of(ReferenceCache& cache, const CaseSpec& c, const SubmissionCall& k) {
  auto info = cache.get(c, k.set, k.mode);
  if (!k.keep_alphas) return info;
  const auto base = cache.get(c);  // set 0: the case's own alphas (a case directory's included)
  const float a1 = base->alpha1, a2 = base->alpha2;
  if (info->alpha1 == a1 && info->alpha2 == a2) return info;
  auto own = std::make_shared<CaseInfo>(*info);
  own->alpha1 = a1;
  own->alpha2 = a2;
  for (size_t i = 0; i < own->ref.c.size(); ++i)
    own->ref.c[i] = reference_epilogue(own->ref.g[i], own->ref.u[i], a1, a2);
  own->degeneracy = assess_reference(own->ref.c);
  return own;
}

std::string joined(const std::vector<int>& v, const char* sep = ",") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

// Bench mode (trial.hpp, stage time): every timed output against the reference of its own input
// set. Only a trial whose timed outputs all pass keeps its figures; one that fails is FAIL in stage
// time and reports no time.
void check_timed(TrialResult& r, const ChildReport& child, ReferenceCache& cache) {
  const TrialSpec& spec = r.spec;
  auto fail = [&](Outcome o, const std::string& why) {
    r.outcome = o;
    r.stage = "time";
    r.stage_elapsed = r.stage_seconds("time");
    r.message = why;
  };
  if (!child.timed || child.timed_outputs.size() != 2 || child.timed_sets.size() != 2)
    return fail(Outcome::Error, "bench mode: the child reported no timing or not the 2 timed outputs of stage time");
  const int runs = spec.options.runs;
  static const char* what[] = {"the last timed call", "the last back-to-back call"};
  for (size_t i = 0; i < 2; ++i) {
    const int set = child.timed_sets[i];
    if (set < 0 || set > warmup_set(runs))
      return fail(Outcome::Error, std::string("bench mode: ") + what[i] + " names input set " + std::to_string(set));
    const External* e = spec.options.external(spec.backend);
    SubmissionCall k;
    k.set = set;
    k.mode = spec.options.fresh;
    if (e && e->kind == External::Submission) k = submission_timed_set(spec, *e, set);
    const auto info = reference_of(cache, spec.c, k);
    if (int64_t(child.timed_outputs[i].size()) != info->ref.shape.c_elems())
      return fail(Outcome::Error, std::string("bench mode: the output of ") + what[i] + " has the wrong size");
    const Comparison c = cache.compare(*info, child.timed_outputs[i].data(), 1);
    if (!c.pass()) {
      std::ostringstream m;
      m << "output of " << what[i] << " (" << input_set_label(set, runs) << ") out of tolerance: "
        << c.over_tolerance << " of " << c.elements << " elements over";
      if (c.poisoned) m << " (" << c.poisoned << " unwritten)";
      m << "; its time is not reported";
      return fail(Outcome::Fail, m.str());
    }
  }
  r.timed = true;
  r.timing = child.timing;
}

// A submission's later calls (submission_driver.py later_calls, after the checked calls): on the
// warm-up's input set, each output the driver sent (those that differ from the first of them), and
// one call of another shape (set -1: kOtherShapeSet, K + 256), each against its reference. A trial
// whose checked calls passed but one of whose later calls fails is FAIL in stage run.
void check_late(TrialResult& r, const ChildReport& child, const std::vector<SubmissionCall>& inputs,
                ReferenceCache& cache) {
  const int runs = r.spec.options.runs;
  int other_call = 0;  // the call of another shape, once seen
  for (size_t i = 0; i < child.late_outputs.size() && i < child.late_sets.size(); ++i) {
    const int set = child.late_sets[i], call = child.late_calls[i];
    const bool is_other = set == -1 && has_other_shape(r.spec.c);
    if (set != warmup_set(runs) && !is_other) {
      r.outcome = Outcome::Error;
      r.stage = "run";
      r.message = "the child's later call " + std::to_string(call) + " names input set " + std::to_string(set) +
                  "; expected the warm-up's, " + std::to_string(warmup_set(runs)) + ", or -1 (another shape)";
      return;
    }
    const auto info = is_other ? cache.get(r.spec.c, kOtherShapeSet)
                               : reference_of(cache, r.spec.c, inputs[size_t(warmup_set(runs))]);
    if (is_other) other_call = call;
    if (int64_t(child.late_outputs[i].size()) != info->ref.shape.c_elems()) continue;  // (read_outputs noted it)
    const Comparison c = cache.compare(*info, child.late_outputs[i].data(), call);
    if (c.pass()) continue;
    std::ostringstream m;
    m << "call " << call << " of the trial (after the " << runs << " checked calls; new tensors, ";
    if (is_other)
      m << "another shape, " << info->ref.shape.str() << "): ";
    else
      m << input_set_label(warmup_set(runs), runs) << "): ";
    m << c.over_tolerance << " of " << c.elements << " elements over tolerance";
    if (c.poisoned) m << " (" << c.poisoned << " unwritten)";
    if (is_other)
      m << "; the trial's own shape passes: state kept from it (a plan, workspace or graph cached by the output's "
           "shape, or by M or N alone)?";
    else if (other_call)
      m << "; every checked call passed and so did the calls before call " << other_call
        << " of another shape: state that shape left behind?";
    else
      m << "; every checked call passed: a path taken only after more calls (an autotuner switching variants, a "
           "periodic slow path, a cache that fills up)?";
    r.outcome = Outcome::Fail;
    r.stage = "run";
    r.stage_elapsed = r.stage_seconds("run");
    r.message = m.str();
    return;
  }
}

// Stage configs (trial.hpp): every configuration's output against the reference of its own input
// set. A trial whose checked calls passed but one of whose configurations fails is FAIL in stage
// configs, naming the configurations that fail.
void check_configs(TrialResult& r, const ChildReport& child, ReferenceCache& cache) {
  const TrialSpec& spec = r.spec;
  std::string first_detail;
  for (size_t i = 0; i < child.config_outputs.size() && i < child.config_sets.size(); ++i) {
    const std::string& name = child.config_names[i];
    r.configs_checked.push_back(name);
    const int set = child.config_sets[i];
    if (set < 0 || set > warmup_set(spec.options.runs)) {
      r.configs_failing.push_back(name);
      if (first_detail.empty()) first_detail = "names input set " + std::to_string(set);
      continue;
    }
    const auto info = cache.get(spec.c, set, spec.options.fresh);
    if (int64_t(child.config_outputs[i].size()) != info->ref.shape.c_elems()) {
      r.configs_failing.push_back(name);
      if (first_detail.empty()) first_detail = "output of the wrong size";
      continue;
    }
    const Comparison c = cache.compare(*info, child.config_outputs[i].data(), 1);
    if (c.pass()) continue;
    r.configs_failing.push_back(name);
    if (first_detail.empty()) {
      std::ostringstream m;
      m << c.over_tolerance << " of " << c.elements << " elements over tolerance";
      if (c.poisoned) m << " (" << c.poisoned << " unwritten)";
      m << " on " << input_set_label(set, spec.options.runs);
      first_detail = m.str();
    }
  }
  if (r.configs_failing.empty()) return;
  std::string names;
  for (const auto& n : r.configs_failing) names += (names.empty() ? "" : ", ") + ("[" + n + "]");
  r.outcome = Outcome::Fail;
  r.stage = "configs";
  r.stage_elapsed = r.stage_seconds("configs");
  r.message = std::to_string(r.configs_failing.size()) + " of " + std::to_string(r.configs_checked.size()) +
              " configurations fail on this shape: " + names + " (the first: " + first_detail +
              "); the configuration the path chose passed";
}

// Stage instances (stages.cpp, instances_stage): every call of the trial's plan and of the second
// plan beside it, against the reference of the set and mode it was handed. A failing call makes the
// trial FAIL in stage instances, though every checked call passed; where its output is the result
// of the other plan's inputs, the message says the plans share state.
void check_instances(TrialResult& r, const ChildReport& child, ReferenceCache& cache) {
  const TrialSpec& spec = r.spec;
  const size_t n = child.instance_outputs.size();
  if (n == 0) return;
  auto error = [&](const std::string& why) {
    r.outcome = Outcome::Error;
    r.stage = "instances";
    r.stage_elapsed = r.stage_seconds("instances");
    r.message = "stage instances: " + why;
  };
  if (child.instance_sets.size() != n || child.instance_plans.size() != n || child.instance_modes.size() != n)
    return error("the child's report of its calls is incomplete");
  const int runs = spec.options.runs;
  auto what = [&](size_t i) {
    const int set = child.instance_sets[i];
    return std::string(child.instance_plans[i] == 0 ? "the trial's plan" : "the second plan") + " on " +
           input_set_label(set, runs) + (child.instance_modes[i] == InputSet::All && set > 0 ? " under --fresh all" : "");
  };
  std::vector<std::shared_ptr<const CaseInfo>> infos;
  for (size_t i = 0; i < n; ++i) {
    const int set = child.instance_sets[i];
    if (set < 0 || set > warmup_set(runs)) return error("call " + std::to_string(i + 1) + " names input set " + std::to_string(set));
    infos.push_back(cache.get(spec.c, set, child.instance_modes[i]));
    if (int64_t(child.instance_outputs[i].size()) != infos.back()->ref.shape.c_elems())
      return error("call " + std::to_string(i + 1) + "'s output has the wrong size");
  }
  r.instances_checked = int(n);
  bool shared = false;
  for (size_t i = 0; i < n; ++i) {
    const Comparison c = cache.compare(*infos[i], child.instance_outputs[i].data(), 1);
    if (c.pass()) continue;
    std::ostringstream m;
    m << "call " << i + 1 << " (" << what(i) << (i + 1 == n ? ", after the second plan was destroyed" : "")
      << "): " << c.over_tolerance << " of " << c.elements << " elements over tolerance";
    if (c.poisoned) m << " (" << c.poisoned << " unwritten)";
    // The result of the other plan's inputs?
    for (size_t j = 0; j < n; ++j) {
      if (child.instance_plans[j] == child.instance_plans[i]) continue;
      if (cache.compare(*infos[j], child.instance_outputs[i].data(), 1).pass()) {
        m << ", and it is the other plan's result (" << what(j) << ")";
        shared = true;
        break;
      }
    }
    r.instances_failing.push_back(m.str());
  }
  if (r.instances_failing.empty()) return;
  r.outcome = Outcome::Fail;
  r.stage = "instances";
  r.stage_elapsed = r.stage_seconds("instances");
  std::string joined_calls;
  for (const auto& f : r.instances_failing) joined_calls += (joined_calls.empty() ? "" : "; ") + f;
  r.message = "every checked call passed, but with a second plan of the path built on other weights and called in "
              "turn with it, " + std::to_string(r.instances_failing.size()) + " of " + std::to_string(n) +
              " calls fail: " + joined_calls +
              (shared ? ": the plans share state (a static buffer of decoded weights, a global workspace or cache)?"
                      : ": state shared between plans (a static buffer, a global workspace or cache, a resource one "
                        "plan's destructor frees for both)?");
}

}  // namespace

// What the failing calls' outputs match instead (another call's or the warm-up's inputs: stale
// inputs or a cached result), and for a submission what kind of cache that suggests, as one
// clause appended to the failure message ("" when nothing matches).
static std::string stale_diagnosis(const TrialResult& r, const std::vector<int>& failing,
                                   const std::vector<SubmissionCall>& inputs, bool submission, int calls, int runs,
                                   const std::vector<int>& case_alphas) {
  const bool one = failing.size() == 1;
  std::vector<std::string> stale, hints;
  auto hint = [&](const std::string& h) {
    if (std::find(hints.begin(), hints.end(), h) == hints.end()) hints.push_back(h);
  };
  // Every failing output (two or more) is the result of the inputs of the call before it, the
  // warm-up's for call 1: the submission answers one call late.
  bool late = submission && failing.size() >= 2;
  for (int call : failing)
    late = late && r.matches_set_per_call[size_t(call - 1)] ==
                       (call > 1 ? checked_call_set(call - 1) : warmup_set(runs));
  if (late)
    hint("every failing call returned the previous call's result (one call late): a double buffer returned "
         "before its swap, or a result handed back a call after its inputs?");
  for (int call : failing) {
    const int other = r.matches_set_per_call[size_t(call - 1)];
    if (other < 0) continue;
    std::string s = (one ? std::string("output") : "call " + std::to_string(call) + "'s output") +
                    " matches the reference of " + input_set_label(other, runs);
    if (submission) {
      // Which earlier inputs it computed on says what kind of cache it keeps.
      const SubmissionCall& k = inputs[size_t(call - 1)];
      if (other != warmup_set(runs)) s += ", call " + std::to_string(other + 1) + "'s";
      if (!late) {
        if (call == calls && calls > 1 && other == checked_call_set(call - 1) && failing.size() == 1)
          hint("the previous call's output, left in place: computes only when the output holds the poison?");
        else if (k.set == kNearSet && other == 0)
          hint("input set 2 is set 0 with one element of A negated: a result cached under a partial key "
               "(sampled bytes, a checksum of part of the inputs)?");
        else if (k.new_tensors && k.mode == InputSet::All && k.set == kSameActivationsSet && other == 0)
          hint("input set 1 has set 0's activations and new weights: weights or decoded weights cached from an "
               "earlier call, a result keyed by the activations alone, or a graph over the first call's tensors?");
        else if (k.new_tensors)
          hint("a cache keyed by shape or a graph over the first call's tensors?");
        else
          hint("a result cached by shape or by tensor identity (id, data_ptr)?");
      }
    }
    stale.push_back(s);
  }
  if (!case_alphas.empty()) {
    const bool one_call = case_alphas.size() == 1;
    hint(std::string(one_call ? "call " : "calls ") + joined(case_alphas) +
         (one_call ? " matches its inputs" : " match their inputs") +
         " under the case's global scales, not the new alpha1, alpha2 handed with the new weights: the alphas "
         "ignored, or kept from an earlier call?");
  } else if (submission && stale.empty()) {
    // Only the calls with new weights fail, and a call with the weights of the warm-up passes; and
    // each fails in most of its elements, as other weights give (a precision loss that happens to
    // show only in the call with new weights fails in a few elements, or in a criterion alone).
    bool weights_only = true, kept_weights_pass = false;
    for (int i = 0; i < calls; ++i) {
      const bool fails = std::find(failing.begin(), failing.end(), i + 1) != failing.end();
      const bool new_weights = inputs[size_t(i)].mode == InputSet::All;
      weights_only = weights_only && fails == new_weights;
      weights_only = weights_only && (!fails || 2 * r.over_per_call[size_t(i)] > r.cmp.elements);
      kept_weights_pass = kept_weights_pass || (!new_weights && !fails);
    }
    if (weights_only && kept_weights_pass)
      hint("only the calls with new weights fail: weights or decoded weights cached from an earlier call?");
  }
  std::ostringstream m;
  if (!stale.empty()) {
    m << "; ";
    for (size_t i = 0; i < stale.size(); ++i) m << (i ? ", " : "") << stale[i];
    if (!submission) m << ": stale inputs or a cached result?";
  }
  for (size_t i = 0; i < hints.size(); ++i) m << (i || stale.empty() ? "; " : ": ") << hints[i];
  return m.str();
}

// What the first failing call that no other input set explains computes instead (misreading.hpp),
// as a clause appended to the failure message ("" when no misreading fits). Its sources for kept
// tensors are inputs the path was handed before that call: the warm-up's and the previous call's.
static std::string misreading_clause(const TrialSpec& spec, TrialResult& r, const ChildReport& child,
                                     const std::vector<int>& failing, const std::vector<SubmissionCall>& inputs) {
  // A run whose every trial fails on large cases would otherwise spend minutes here: the run's
  // diagnoses share one budget of wall time (a diagnosis is ~0.2 s plus reading its input sets).
  static std::atomic<int64_t> spent_ms{0};
  constexpr int64_t kBudgetMs = 60000;
  int call = 0;
  for (int f : failing)
    if (r.matches_set_per_call[size_t(f - 1)] < 0 && (call == 0 || f == r.cmp_call)) call = f;
  if (call == 0) return "";
  if (spent_ms.load() > kBudgetMs) return "; no misreading sought (the run's minute for them is spent)";
  const auto t0 = std::chrono::steady_clock::now();
  struct Charge {  // adds this diagnosis's time to the budget however it ends
    std::chrono::steady_clock::time_point t0;
    ~Charge() {
      spent_ms += std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    }
  } charge{t0};
  const int runs = spec.options.runs;
  try {
    Problem base;
    if (!read_stored_set(spec.options.input_store, spec.c, 0, InputSet::Activations, base)) base = spec.c.make();
    const Problem own = submission_input_set(spec, base, inputs[size_t(call - 1)]);
    std::vector<Problem> earlier;
    std::vector<std::string> labels;
    auto add = [&](int index, const std::string& label) {
      if (index < 0 || index >= int(inputs.size()) || index == call - 1) return;
      earlier.push_back(submission_input_set(spec, base, inputs[size_t(index)]));
      labels.push_back(label);
    };
    // The warm-up's (what a path sees first) and the previous call's (one call late): the likely
    // sources, and each set rebuilt costs memory and time at the largest shapes.
    add(warmup_set(runs), "the warm-up's inputs");
    if (call > 1) add(call - 2, "call " + std::to_string(call - 1) + "'s inputs");
    std::vector<MisreadingSource> sources;
    for (size_t i = 0; i < earlier.size(); ++i) sources.push_back({labels[i], &earlier[i]});
    const auto found = find_misreading(own, child.outputs[size_t(call - 1)].data(), sources);
    if (!found) return "";
    if (call == r.cmp_call) r.cmp.misreading = found->text();
    return "; " + std::string(failing.size() > 1 ? "in call " + std::to_string(call) + ", " : "") + found->text();
  } catch (const std::exception&) {
    return "";  // the inputs cannot be rebuilt here (a case directory gone): no diagnosis
  }
}

TrialResult evaluate_trial(const TrialSpec& spec, ChildReport&& child, ReferenceCache& cache) {
  TrialResult r;
  r.spec = spec;
  r.outcome = child.outcome;
  r.stage = child.stage;
  r.stage_elapsed = child.stage_elapsed;
  r.message = child.message;
  r.stages = child.stages;
  r.describe = child.describe;
  r.notes = child.notes;
  r.child_log = child.child_log;
  r.wall = child.wall;
  r.child_pid = child.pid;
  r.device = child.device;
  if (child.outcome != Outcome::Pass) return r;

  const int runs = spec.options.runs;
  const auto case_info = cache.get(spec.c);  // set 0: the case itself
  r.spec.c.shape = case_info->ref.shape;
  r.warnings = case_info->warnings;
  const int64_t elems = case_info->ref.shape.c_elems();
  const int calls = int(child.outputs.size());
  auto error = [&](const std::string& why) {
    r.outcome = Outcome::Error;
    r.stage = "run";
    r.message = why;
    return r;
  };
  if (calls != runs)
    return error("the child reported " + std::to_string(calls) + " outputs; expected " + std::to_string(runs));
  for (int i = 0; i < calls; ++i) {
    if (int64_t(child.outputs[size_t(i)].size()) != elems)
      return error("output has " + std::to_string(child.outputs[size_t(i)].size()) +
                   " elements; the case has " + std::to_string(elems));
    const int want = checked_call_set(i + 1);
    const int got = i < int(child.output_sets.size()) ? child.output_sets[size_t(i)] : -1;
    if (got != want)
      return error("the child wrote input set " + std::to_string(got) + " before call " +
                   std::to_string(i + 1) + "; expected " + std::to_string(want));
  }

  // Every call against the reference of its own input set. The intermediates belong to the last
  // call (trial.hpp), so only its comparison can attribute an error to a GEMM or the epilogue.
  r.compared = true;
  const std::vector<SubmissionCall> inputs = calls_of(spec);
  const External* ext = spec.options.external(spec.backend);
  const bool submission = ext && ext->kind == External::Submission;
  std::vector<int> failing;
  std::vector<std::shared_ptr<const CaseInfo>> infos;
  for (int i = 0; i < calls; ++i) infos.push_back(reference_of(cache, spec.c, inputs[size_t(i)]));
  // The calls' comparisons are independent: one thread each (a large output takes a while), each
  // scanning its output on its share of the cores. When no thread can be started, the comparison
  // runs here (std::launch::deferred).
  const int share = std::max(1, int(std::max(1u, std::thread::hardware_concurrency())) / std::max(1, calls));
  std::vector<std::future<Comparison>> compared;
  for (int i = 0; i < calls; ++i) {
    const bool mid = child.have_intermediates && i == calls - 1;
    auto work = [&, i, mid] {
      const CaseInfo& info = *infos[size_t(i)];
      // Intermediates (the attribution) are compared afresh; an output alone may be remembered.
      if (mid) return compare_output(info.ref, info.alpha1, info.alpha2, child.outputs[size_t(i)].data(),
                                     &child.g, &child.u, i + 1, share);
      return cache.compare(info, child.outputs[size_t(i)].data(), i + 1, share);
    };
    try {
      compared.push_back(std::async(std::launch::async, work));
    } catch (const std::system_error&) {
      compared.push_back(std::async(std::launch::deferred, work));
    }
  }
  for (int i = 0; i < calls; ++i) {
    const int set = checked_call_set(i + 1);
    const CaseInfo& info = *infos[size_t(i)];
    if (info.degeneracy.degenerate() && !r.degenerate) {
      r.degenerate = true;
      r.degeneracy = (set == 0 ? "" : input_set_label(set, runs) + ": ") + info.degeneracy.describe();
    }
    Comparison c = compared[size_t(i)].get();
    r.set_per_call.push_back(set);
    r.over_per_call.push_back(c.over_tolerance);
    r.matches_set_per_call.push_back(-1);
    if (!c.pass()) failing.push_back(i + 1);
    const bool better = r.cmp_call == 0 || (!c.pass() && r.cmp.pass()) ||
                        c.over_tolerance > r.cmp.over_tolerance ||
                        (c.over_tolerance == r.cmp.over_tolerance && r.cmp.over_tolerance == 0 &&
                         (c.stat_margin < r.cmp.stat_margin ||
                          (c.stat_margin == r.cmp.stat_margin && c.max_ulp > r.cmp.max_ulp)));
    if (better) {
      r.cmp = std::move(c);
      r.cmp_call = i + 1;
    }
  }
  // What a submission's driver sees that the output files cannot show (submission_driver.py), each a
  // FAIL whatever the outputs compare like: an output read in order on the calling stream that
  // differs from a read after a device-wide synchronize (still being written when the caller's
  // stream reached it), inputs that no longer hold what the driver put there, a current stream
  // left other than the caller's, and an output that a later call changed. For every backend, what
  // the stages' guard zones saw (output_guard.hpp): a read_output that wrote outside C.
  std::vector<std::string> flagged;
  for (const auto& note : child.notes)
    if (carries_verdict(note)) flagged.push_back(note);
  if (failing.empty() && flagged.empty()) {
    r.outcome = Outcome::Pass;
    r.stage.clear();
    if (submission) check_late(r, child, inputs, cache);
    if (r.outcome != Outcome::Pass) return r;
    check_instances(r, child, cache);
    if (r.outcome != Outcome::Pass) return r;
    check_configs(r, child, cache);
    if (spec.options.bench && r.outcome == Outcome::Pass) check_timed(r, child, cache);
    return r;
  }

  // Does a failing output pass against the reference of other inputs the path was handed (another
  // checked call's or the warm-up's)? Then the path computed on inputs it should no longer see.
  for (int call : failing) {
    for (int other = 0; other < int(inputs.size()); ++other) {
      if (other == call - 1) continue;
      const auto info = reference_of(cache, spec.c, inputs[size_t(other)]);
      const Comparison c = cache.compare(*info, child.outputs[size_t(call - 1)].data(), call);
      if (c.pass()) {
        r.matches_set_per_call[size_t(call - 1)] = inputs[size_t(other)].set;
        break;
      }
    }
  }
  // A submission that takes the global scales gets new ones with new weights: does a failing call
  // of that kind pass against its own inputs under the case's alphas? Then it ignored the call's
  // alphas or kept earlier ones.
  std::vector<int> case_alphas;
  if (submission)
    for (int call : failing) {
      SubmissionCall k = inputs[size_t(call - 1)];
      if (r.matches_set_per_call[size_t(call - 1)] >= 0 || k.mode != InputSet::All || k.keep_alphas) continue;
      k.keep_alphas = true;
      if (cache.compare(*reference_of(cache, spec.c, k), child.outputs[size_t(call - 1)].data(), call).pass())
        case_alphas.push_back(call);
    }

  r.outcome = Outcome::Fail;
  r.stage = "run";
  // Where every checked call passes, a write outside C in stage configs or time is the verdict's stage.
  if (failing.empty())
    for (const auto& note : flagged)
      if (const std::string at = output_overrun_stage(note); !at.empty()) {
        r.stage = at;
        break;
      }
  r.stage_elapsed = r.stage_seconds(r.stage);
  std::ostringstream m;
  bool explained = false;  // the inputs-changed explanation, once, right after the first such note
  for (size_t i = 0; i < flagged.size(); ++i) {
    m << (i ? "; " : "") << flagged[i];
    if (!explained && flagged[i].find(kInputsChangedNote) != std::string::npos) {
      explained = true;
      m << " (custom_kernel, in that call or an earlier one, wrote into tensors of `data` other than c, which "
           "are the caller's: an engine keeps its weights for the next call and may hand the same activations "
           "to another layer)";
    }
  }
  if (failing.empty()) {
    r.message = m.str();
    return r;
  }
  if (!flagged.empty()) m << "; ";
  std::vector<int> failing_sets;
  for (int f : failing) failing_sets.push_back(checked_call_set(f));
  const bool one = failing.size() == 1;
  m << (one ? "call " : "calls ") << joined(failing) << " of " << calls;
  if (submission) {  // how each failing call was handed its inputs
    m << " (";
    for (size_t i = 0; i < failing.size(); ++i)
      m << (i ? "; " : "") << submission_call_text(inputs[size_t(failing[i] - 1)], runs);
    m << "): ";
  } else {
    m << " (input set" << (one ? " " : "s ") << joined(failing_sets) << "): ";
  }
  m << r.cmp.over_tolerance << " of " << r.cmp.elements << " elements over tolerance";
  if (!one) m << " in call " << r.cmp_call;
  std::vector<std::string> kinds;
  if (r.cmp.poisoned) kinds.push_back(std::to_string(r.cmp.poisoned) + " unwritten");
  if (r.cmp.poison_read)
    kinds.push_back(std::to_string(r.cmp.poison_read) +
                    " computed from the poison the output held before the call (c read before it was written: "
                    "c += ...?)");
  if (r.cmp.nan_mismatch) kinds.push_back(std::to_string(r.cmp.nan_mismatch) + " NaN mismatch");
  if (r.cmp.inf_mismatch) kinds.push_back(std::to_string(r.cmp.inf_mismatch) + " inf mismatch");
  if (!kinds.empty()) {
    m << " (";
    for (size_t i = 0; i < kinds.size(); ++i) m << (i ? ", " : "") << kinds[i];
    m << ")";
  }
  if (one && calls > 1) m << " (other calls pass)";
  if (const std::string w = r.cmp.flagged.text(); !w.empty())
    m << "; the " << r.cmp.flagged.count << " elements any criterion flags" << (one ? "" : " in call " + std::to_string(r.cmp_call))
      << " all lie in " << w;
  m << stale_diagnosis(r, failing, inputs, submission, calls, runs, case_alphas);
  if (case_alphas.empty()) m << misreading_clause(spec, r, child, failing, inputs);
  // Where every failing output is another set's result, the criteria's details describe the wrong
  // inputs, not a precision loss: left out.
  bool all_stale = true;
  for (int f : failing) all_stale = all_stale && r.matches_set_per_call[size_t(f - 1)] >= 0;
  if (all_stale) {
    r.message = m.str();
    return r;
  }
  if (!r.cmp.cert_pass()) m << "; exactness certificate: " << r.cmp.cert_message();
  if (!r.cmp.stat_pass()) m << "; statistical gate: " << r.cmp.stat_message();
  if (!r.cmp.ms_pass()) m << "; mean-square gate: " << r.cmp.ms_message();
  if (!r.cmp.dir_pass()) m << "; rounding direction: " << r.cmp.dir_message();
  r.message = m.str();
  return r;
}

}  // namespace nvfp4
