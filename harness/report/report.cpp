// report.cpp — human-readable and JSON reports (see report.hpp).
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "check_json.hpp"
#include "check_report.hpp"
#include "formats.hpp"
#include "json_read.hpp"
#include "lattice.hpp"

#include "text.hpp"

namespace nvfp4 {

namespace {





// An option whose value differs from the default, as it is written on the command line.
void add_if(std::string& cmd, bool differs, const std::string& flag, const std::string& value) {
  if (differs) cmd += " " + flag + " " + value;
}

std::string shell_quote(const std::string& s) {
  if (s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=@:,./") ==
      std::string::npos && !s.empty())
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The statistical gate's margin: > 1 passes, "inf" when (almost) every element rounds correctly.
std::string stat_margin_text(double m) {
  return std::isfinite(m) ? fmt("%.3g", m) : std::string("inf");
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::string reproducer(const TrialSpec& t, const std::string& program) {
  const TrialOptions d;  // the defaults
  const TrialOptions& o = t.options;
  std::string cmd = shell_quote(program);
  const External* ext = o.external(t.backend);
  if (!t.plugin.empty() || (ext && ext->kind == External::Plugin))
    cmd += " --plugin " + shell_quote(t.plugin.empty() ? ext->path : t.plugin);
  else if (ext)
    cmd += " --submission " + shell_quote(ext->path) + (ext->emulate_fp4 != "auto" ? " --emulate-fp4 " + ext->emulate_fp4 : "");
  // A plugin that did not load has no backend name yet: its load alone reproduces the failure.
  if (t.plugin.empty()) cmd += " --backend " + t.backend;
  cmd += " --verify " + t.combo.str();
  if (t.c.from_dir()) {
    cmd += " --inputs " + shell_quote(t.c.inputs_dir);
    if (t.c.batch_last) cmd += " --batch-last";
  } else {
    cmd += " --shape " + t.c.shape.str() + " --dist " + t.c.dist + " --seed " + std::to_string(t.c.seed);
  }
  add_if(cmd, t.c.has_alpha(), "--alpha", alphas_text(t.c.alpha1, t.c.alpha2));
  add_if(cmd, o.warmup != d.warmup, "--warmup", std::to_string(o.warmup));
  add_if(cmd, o.runs != d.runs, "--runs", std::to_string(o.runs));
  add_if(cmd, o.fresh != d.fresh, "--fresh", input_set_name(o.fresh));
  add_if(cmd, o.configs != d.configs, "--configs", o.configs ? "all" : "chosen");
  add_if(cmd, !o.sanitize.empty(), "--sanitize", o.sanitize);
  // Budgets as the user gave them (--sanitize scales them again).
  const double scale = o.sanitize.empty() ? 1.0 : TrialOptions::kSanitizeSlowdown;
  for (const auto& s : kStages)
    if (has_own_budget(s.id))
      add_if(cmd, o.budget[s.id] != d.budget[s.id] * scale, std::string("--budget-") + s.name,
             num(o.budget[s.id] / scale));
  add_if(cmd, o.budget.trial != d.budget.trial * scale, "--budget-trial", num(o.budget.trial / scale));
  add_if(cmd, !o.plan.tune_cache_dir.empty(), "--tune-cache", shell_quote(o.plan.tune_cache_dir));
  add_if(cmd, o.plan.tune_reps != d.plan.tune_reps, "--tune-reps", std::to_string(o.plan.tune_reps));
  add_if(cmd, o.plan.tune_budget_s != d.plan.tune_budget_s, "--tune-time", num(o.plan.tune_budget_s));
  bool slow = false;
  for (const auto& f : o.faults) {
    cmd += " --inject " + f.str();
    slow |= f.kind == FaultKind::Slow;
  }
  add_if(cmd, slow && o.slow_seconds != d.slow_seconds, "--slow-seconds", num(o.slow_seconds));
  return cmd;
}

std::string trial_name(const TrialSpec& t) {
  return t.backend + " " + t.combo.str() + " " + t.c.name();
}

std::string stage_times(const TrialResult& r) {
  std::string s;
  for (const auto& st : r.stages) {
    if (st.stage == "setup" || st.stage == "teardown") continue;
    s += (s.empty() ? "" : " ") + st.stage + " " + fmt("%.3f", st.seconds) + (st.completed ? "" : "!");
  }
  if (s.empty()) return s;
  // A submission whose torch._scaled_mm on FP4 ran in the driver's emulation (submission_driver.py
  // says so in its last describe): its times are not the hardware's.
  return s + " s" + (r.describe.find("emulated FP4") != std::string::npos ? " (emulated FP4)" : "");
}

std::string trial_summary(const TrialResult& r) {
  std::string s = outcome_name(r.outcome);
  switch (r.outcome) {
    case Outcome::Pass:
      s += "  max " + std::to_string(r.cmp.max_ulp) + " ulp, gate margin " + stat_margin_text(r.cmp.stat_margin);
      if (!r.cmp.gpumode_pass()) s += ", gpumode check fails (" + std::to_string(r.cmp.gpumode_mismatch) + ")";
      if (r.degenerate) s += ", DEGENERATE reference";
      s += "  " + stage_times(r);
      break;
    case Outcome::Fail:
      s += "  " + r.message + "  " + stage_times(r);
      break;
    case Outcome::Timeout:
    case Outcome::Crash:
    case Outcome::Error: {
      // A progress line stays one line: the message's first line (details print the whole).
      const size_t nl = r.message.find('\n');
      s += "  " + r.message.substr(0, nl) + (nl == std::string::npos ? "" : " ...");
      break;
    }
    case Outcome::Skip:
    case Outcome::Blocked:
      s += "  " + r.message;
      break;
  }
  return s;
}

void print_comparison(std::ostream& os, const Comparison& c, const std::string& in) {
  write_comparison_text(os, c, in);  // one rendering for trials and outside outputs (check_report.hpp)
}

void print_trial_details(std::ostream& os, const TrialResult& r, const std::string& program) {
  os << "    " << outcome_name(r.outcome) << " " << trial_name(r.spec);
  if (!r.stage.empty()) os << " in stage " << r.stage << " after " << fmt("%.2f", r.stage_elapsed) << " s";
  os << "\n";
  if (!r.message.empty()) os << "      " << r.message << "\n";
  if (!r.describe.empty()) os << "      path: " << r.describe << "\n";
  bool unfinished = false;
  for (const auto& st : r.stages) unfinished |= !st.completed;
  if (!r.stages.empty())
    os << "      stages: " << stage_times(r) << (unfinished ? " (! = did not finish)" : "") << "\n";
  for (const auto& n : r.notes) os << "      note: " << n << "\n";
  for (const auto& w : r.warnings) os << "      warning: " << w << "\n";
  if (r.degenerate) os << "      DEGENERATE reference: " << r.degeneracy << "\n";
  if (r.compared && !r.cmp.pass()) {
    std::string calls;
    for (size_t i = 0; i < r.over_per_call.size(); ++i) {
      calls += (i ? ", " : "") + std::to_string(r.over_per_call[i]);
      if (i < r.set_per_call.size()) calls += " (set " + std::to_string(r.set_per_call[i]) + ")";
    }
    os << "      over tolerance per call (its input set): " << calls << "; fresh " << input_set_name(r.spec.options.fresh)
       << ", warm-up on set " << warmup_set(r.spec.options.runs) << "; the worst call (" << r.cmp_call << "):\n";
    print_comparison(os, r.cmp, "        ");
  }
  if (!r.child_log.empty()) {
    os << "      child log (tail):\n";
    std::istringstream is(r.child_log);
    for (std::string line; std::getline(is, line);) os << "        | " << line << "\n";
  }
  os << "      reproduce: " << reproducer(r.spec, program) << "\n";
}

std::string busy_line(const std::map<std::string, double>& busy) {
  std::string s = "busy per GPU (CUDA_VISIBLE_DEVICES, trial wall time):";
  for (const auto& [d, t] : busy) s += " " + d + " " + fmt("%.1f", t) + " s";
  return s;
}

std::string overhead_line(double seconds, int trials) {
  return "overhead: " + fmt("%.2f", seconds) + " s outside the stages in " + std::to_string(trials) + " trial" +
         (trials == 1 ? "" : "s") + " (" + fmt("%.1f", trials ? 1e3 * seconds / trials : 0) +
         " ms each: child start, messages, output files)";
}

std::string reference_cache_line(const JsonValue& rc) {
  const JsonValue* on = rc.find("enabled");
  if (!on || !on->is_bool() || !on->boolean()) return "";
  const auto n = [&](const char* k) { return int64_t(rc.number_or(k, 0)); };
  if (n("hits") + n("computed") + n("rejected") + n("write_failures") == 0) return "";
  std::string s = "references: " + std::to_string(n("hits")) + " read from the cache, " +
                  std::to_string(n("computed")) + " computed (" + rc.str_or("dir", "?") + ")";
  if (n("rejected"))
    s += "; " + std::to_string(n("rejected")) + " cache entr" + (n("rejected") == 1 ? "y" : "ies") +
         " rejected and recomputed (first: " + rc.str_or("first_rejection", "?") + ")";
  if (n("write_failures")) s += "; " + std::to_string(n("write_failures")) + " could not be written";
  return s;
}

// The outcomes in the order the summary lists them.
const Outcome kOutcomeOrder[] = {Outcome::Pass, Outcome::Fail, Outcome::Error, Outcome::Crash,
                                 Outcome::Timeout, Outcome::Skip, Outcome::Blocked};

void print_report_summary(std::ostream& os, const JsonValue& report, bool list_failures) {
  const auto& trials = report.at("trials").items();
  char line[256];
  std::snprintf(line, sizeof line, "%.1f", report.number_or("elapsed_s", 0));
  os << "\nSummary (" << trials.size() << " trials, " << line << " s";
  if (const JsonValue* rec = report.find("shard"); rec && rec->find("merged_from"))
    os << " in " << rec->at("merged_from").items().size() << " shards";
  os << ")\n";
  // Per backend and combination, in first-seen order.
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::pair<std::string, std::string>, std::map<std::string, int>> counts;
  std::map<std::pair<std::string, std::string>, int64_t> max_ulp;
  for (const auto& t : trials) {
    const auto k = std::make_pair(t.str_or("backend", "?"), t.str_or("combo", "?"));
    if (!counts.count(k)) keys.push_back(k);
    ++counts[k][t.str_or("outcome", "?")];
    if (const JsonValue* m = t.find("metrics"))
      max_ulp[k] = std::max(max_ulp[k], int64_t(m->number_or("max_ulp", 0)));
  }
  if (!keys.empty()) {
    std::snprintf(line, sizeof line, "  %-8s %-28s %5s %5s %5s %5s %7s %5s %7s  %s\n", "backend",
                  "combination", "PASS", "FAIL", "ERROR", "CRASH", "TIMEOUT", "SKIP", "BLOCKED", "max ulp");
    os << line;
    for (const auto& k : keys) {
      auto& c = counts[k];
      auto n = [&](Outcome o) { return c[outcome_name(o)]; };
      std::snprintf(line, sizeof line, "  %-8s %-28s %5d %5d %5d %5d %7d %5d %7d  %s\n", k.first.c_str(),
                    k.second.c_str(), n(kOutcomeOrder[0]), n(kOutcomeOrder[1]), n(kOutcomeOrder[2]), n(kOutcomeOrder[3]), n(kOutcomeOrder[4]),
                    n(kOutcomeOrder[5]), n(kOutcomeOrder[6]), max_ulp.count(k) ? std::to_string(max_ulp[k]).c_str() : "-");
      os << line;
    }
  }
  int suite_warned = 0;
  for (const auto& c : report.at("cases").items()) {
    const std::string name = c.str_or("name", "?");
    if (const JsonValue* d = c.find("degeneracy"); d && d->is_object()) {
      Degeneracy g;
      g.total = int64_t(d->number_or("total", 0));
      g.inf = int64_t(d->number_or("inf", 0));
      g.nan = int64_t(d->number_or("nan", 0));
      g.zero = int64_t(d->number_or("zero", 0));
      if (g.degenerate())
        os << "  DEGENERATE case " << name << ": " << g.describe()
           << " (this check cannot tell a right kernel from a wrong one)\n";
    }
    const JsonValue* w = c.find("warnings");
    if (!w || !w->is_array() || w->items().empty()) continue;
    if (!c.find("inputs")) {  // a generated case: one line for all of them, as report.cpp prints a run's
      ++suite_warned;
      continue;
    }
    for (const auto& x : w->items()) os << "  warning: " << name << ": " << x.text() << "\n";
  }
  if (suite_warned)
    os << "  note: " << suite_warned << " generated case" << (suite_warned == 1 ? "" : "s")
       << " carry suspicious scale bytes (negative, NaN) on purpose, to test paths on them; details in --json\n";
  // Process-wide settings a submission's import or calls changed (the driver's SETTINGS_CHANGED,
  // harness/backends/nvfp4_driver/inputs.py): not a verdict, but the caller's other work runs with
  // them, so each distinct change is listed once per backend with the number of trials that made it.
  {
    const std::string marker = "changed process-wide settings: ";
    std::map<std::string, std::map<std::string, int>> changed;  // backend -> "at import: ..." -> trials
    for (const auto& t : trials) {
      const JsonValue* notes = t.find("notes");
      if (!notes || !notes->is_array()) continue;
      std::set<std::string> seen;
      for (const auto& n : notes->items()) {
        const std::string text = n.text();
        const size_t at = text.find(marker);
        if (at == std::string::npos) continue;
        const std::string what = (text.rfind("the import", 0) == 0 ? "at import: " : "in a call: ") +
                                 text.substr(at + marker.size());
        if (seen.insert(what).second) ++changed[t.str_or("backend", "?")][what];
      }
    }
    for (const auto& [backend, whats] : changed) {
      std::vector<std::pair<std::string, int>> order(whats.begin(), whats.end());
      std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      for (size_t i = 0; i < order.size() && i < 3; ++i)
        os << "  note: " << backend << " changed process-wide settings " << order[i].first << " (" << order[i].second
           << " trial" << (order[i].second == 1 ? "" : "s") << "; the caller's other work runs with them)\n";
      if (order.size() > 3)
        os << "  note: " << backend << ": " << order.size() - 3 << " more distinct change" << (order.size() == 4 ? "" : "s")
           << " of process-wide settings; details in --json\n";
    }
  }
  // Failing trials with their reproducers; BLOCKED ones grouped per combination.
  std::vector<const JsonValue*> failing;
  std::vector<std::pair<std::string, int>> blocked;
  std::map<std::string, int> total;
  for (const auto& t : trials) {
    const std::string o = t.str_or("outcome", "?");
    ++total[o];
    Outcome oc;
    if (!outcome_of(o, oc) || !is_failure(oc)) continue;
    if (oc != Outcome::Blocked) {
      failing.push_back(&t);
      continue;
    }
    const std::string key = t.str_or("backend", "?") + " " + t.str_or("combo", "?") + " (blocked by " +
                            t.str_or("blocked_by", "?") + ")";
    // Grouped by key, first-seen: in a merged report a combination's trials from different
    // shards may name different failing sub-combinations, each of which gets its line.
    auto it = std::find_if(blocked.begin(), blocked.end(), [&](const auto& b) { return b.first == key; });
    if (it == blocked.end()) it = blocked.insert(blocked.end(), {key, 0});
    ++it->second;
  }
  if (list_failures && !failing.empty()) {
    os << "  failing trials (reproduce each with the command shown):\n";
    size_t shown = 0;
    for (const JsonValue* t : failing) {
      if (++shown > 40) {
        os << "    ... and " << failing.size() - 40 << " more (see --json)\n";
        break;
      }
      os << "    " << t->str_or("outcome", "?") << " " << t->str_or("backend", "?") << " " << t->str_or("combo", "?")
         << " " << trial_case_name(*t);
      if (const JsonValue* st = t->find("stage")) os << " (stage " << st->text() << ")";
      os << "\n      " << t->str_or("reproducer", "?") << "\n";
    }
  }
  for (const auto& b : blocked)
    os << "  BLOCKED " << b.first << ": " << b.second << " trial" << (b.second == 1 ? "" : "s") << " not run\n";
  double overhead = 0;
  int ran = 0;
  for (const auto& t : trials)
    if (const JsonValue* o = t.find("overhead_s")) {
      overhead += o->number();
      ++ran;
    }
  if (ran) os << "  " << overhead_line(overhead, ran) << "\n";
  std::map<std::string, double> busy;
  for (const auto& t : trials)
    if (const JsonValue* d = t.find("device"); d && d->is_string()) busy[d->str()] += t.number_or("wall_s", 0);
  if (busy.size() > 1) os << "  " << busy_line(busy) << "\n";
  if (const JsonValue* rc = report.find("reference_cache")) {
    const std::string line = reference_cache_line(*rc);
    if (!line.empty()) os << "  " << line << "\n";
  }
  os << "result:";
  for (Outcome o : kOutcomeOrder)
    if (total[outcome_name(o)]) os << " " << total[outcome_name(o)] << " " << outcome_name(o);
  if (trials.empty()) os << " no trials";
  os << " -> exit " << report.at("exit_code").text() << "\n";
  if (const JsonValue* v = report.find("verdicts"); v && v->is_array())
    for (const auto& x : v->items()) os << x.text() << "\n";
}

void print_summary(std::ostream& os, const Session& s, int exit_code, bool list_failures) {
  // Rendered from the run's JSON report, as merge, JUnit and HTML are: one summary printer.
  std::ostringstream json;
  write_json(json, s, "verify", "", exit_code);
  print_report_summary(os, JsonValue::parse(json.str()), list_failures);
}

Json report_json(const Session& s, const std::string& mode, const std::string& command, int exit_code) {
  const TrialOptions& o = s.options();
  Json j;
  j["schema"] = kReportSchema;
  j["tool"] = "nvfp4-dual harness";
  j["mode"] = mode;
  j["command"] = command;
  j["exit_code"] = exit_code;
  j["elapsed_s"] = s.elapsed();
  double overhead = 0;
  for (const auto& r : s.results()) overhead += r.overhead();
  j["overhead_s"] = overhead;
  // The on-disk reference store (reference_store.hpp): this run's hits, computations and problems.
  Json cache;
  if (const ReferenceStore* store = s.cache().store()) {
    const ReferenceStoreStats st = store->stats();
    cache = {{"enabled", true},          {"dir", store->dir()},
             {"hits", st.hits},          {"computed", st.computed},
             {"rejected", st.rejected},  {"write_failures", st.write_failures},
             {"evicted", st.evicted}};
    if (!st.first_rejection.empty()) cache["first_rejection"] = st.first_rejection;
  } else {
    cache = {{"enabled", false}};
  }
  j["reference_cache"] = std::move(cache);
  // The parent's own time (lattice.hpp Session::ParentTimes).
  j["parent_s"] = {{"references", s.parent_times().references}, {"evaluation", s.parent_times().evaluation}};
  // Output comparisons scanned, and those served by the memo (comparison_memo.hpp).
  j["comparisons"] = {{"scanned", s.cache().memo().scanned()}, {"reused", s.cache().memo().reused()}};
  Json options = {{"warmup", o.warmup}, {"runs", o.runs}, {"fresh", input_set_name(o.fresh)}};
  Json budgets = Json::object();
  for (const auto& st : kStages)
    if (has_own_budget(st.id) && (st.id != Stage::Time || o.bench)) budgets[st.name] = o.budget[st.id];
  budgets["trial"] = o.budget.trial;
  options["budgets_s"] = std::move(budgets);
  if (o.bench)
    options["bench"] = {{"rse", o.timing.rse},
                        {"max_time_s", o.timing.max_time_s},
                        {"min_reps", o.timing.min_reps},
                        {"max_reps", o.timing.max_reps}};
  Json faults = Json::array();
  for (const auto& f : o.faults) faults.push_back(f.str());
  options["faults"] = std::move(faults);
  options["tune_cache"] = o.plan.tune_cache_dir;
  j["options"] = std::move(options);

  Json backends = Json::array();
  for (const auto& kv : s.backends()) {
    const auto& b = kv.second;
    Json be = {{"name", b.name}, {"available", b.available}};
    if (!b.available) {
      be["reason"] = b.reason;
      be["probe_outcome"] = outcome_name(b.probe_outcome);
    }
    be["optimizations"] = b.optimizations;
    backends.push_back(std::move(be));
  }
  j["backends"] = std::move(backends);

  Json cases = Json::array();
  for (const auto& info : s.cache().seen()) {
    Json c = {{"name", info->spec.name()}, {"shape", info->ref.shape.str()}};
    if (info->spec.from_dir()) {
      c["inputs"] = info->spec.inputs_dir;
    } else {
      c["dist"] = info->spec.dist;
      c["seed"] = uint64_t(info->spec.seed);
    }
    c["alpha1"] = double(info->alpha1);
    c["alpha2"] = double(info->alpha2);
    const Degeneracy& d = info->degeneracy;
    c["degenerate"] = d.degenerate();
    c["degeneracy"] = {{"inf", d.inf}, {"nan", d.nan}, {"zero", d.zero}, {"total", d.total}};
    c["warnings"] = info->warnings;
    c["reference_s"] = info->reference_seconds;
    cases.push_back(std::move(c));
  }
  j["cases"] = std::move(cases);

  Json trials = Json::array();
  int index = 0;
  for (const auto& r : s.results()) {
    Json t;
    t["index"] = ++index;
    t["backend"] = r.spec.backend;
    t["combo"] = r.spec.combo.str();
    Json c = {{"name", r.spec.c.name()}};
    if (r.spec.c.from_dir()) {
      c["inputs"] = r.spec.c.inputs_dir;
      c["batch_last"] = r.spec.c.batch_last;
    } else {
      c["shape"] = r.spec.c.shape.str();
      c["dist"] = r.spec.c.dist;
      c["seed"] = uint64_t(r.spec.c.seed);
    }
    c["alpha1"] = double(r.spec.c.alpha1);
    c["alpha2"] = double(r.spec.c.alpha2);
    t["case"] = std::move(c);
    t["outcome"] = outcome_name(r.outcome);
    if (!r.stage.empty()) {
      t["stage"] = r.stage;
      t["stage_elapsed_s"] = r.stage_elapsed;
    }
    t["message"] = r.message;
    if (!r.blocked_by.empty()) t["blocked_by"] = r.blocked_by;
    t["wall_s"] = r.wall;
    if (r.wall > 0) t["overhead_s"] = r.overhead();
    if (r.started >= 0) t["started_s"] = r.started;
    if (r.judged >= 0) t["judged_s"] = r.judged;
    if (r.child_pid > 0) t["child_pid"] = r.child_pid;
    if (!r.device.empty()) t["device"] = r.device;
    t["path"] = r.describe;
    Json stages = Json::array();
    for (const auto& st : r.stages) {
      stages.push_back(Json{{"stage", st.stage}, {"seconds", st.seconds}, {"completed", st.completed}});
      if (st.ahead) stages.back()["ahead"] = true;
    }
    t["stages"] = std::move(stages);
    t["notes"] = r.notes;
    if (!r.child_log.empty()) t["child_log"] = r.child_log;
    if (r.compared) {
      t["degenerate"] = r.degenerate;
      t["warnings"] = r.warnings;
      t["over_tolerance_per_call"] = r.over_per_call;
      t["input_set_per_call"] = r.set_per_call;
      t["warmup_input_set"] = warmup_set(r.spec.options.runs);
      t["output_matches_set_per_call"] = r.matches_set_per_call;  // -1: none
      t["metrics_call"] = r.cmp_call;
      t["metrics"] = comparison_json(r.cmp);
      if (!r.configs_checked.empty())
        t["configs"] = {{"checked", r.configs_checked}, {"failing", r.configs_failing}};
      if (r.instances_checked)
        t["instances"] = {{"checked", r.instances_checked}, {"failing", r.instances_failing}};
    }
    if (r.timed) {
      const Timing& tm = r.timing.t;
      t["timing"] = {{"reps", tm.reps},
                     {"median_us", tm.median * 1e6},
                     {"min_us", tm.min * 1e6},
                     {"mean_us", tm.mean * 1e6},
                     {"stdev_us", tm.stdev * 1e6},
                     {"median_rse", tm.rse},
                     {"b2b_us", r.timing.b2b * 1e6},
                     {"b2b_calls", r.timing.b2b_calls}};
    }
    t["reproducer"] = reproducer(r.spec, s.program());
    trials.push_back(std::move(t));
  }
  j["trials"] = std::move(trials);
  j["verdicts"] = s.verdicts;
  Json summary = Json::object();
  const Outcome order[] = {Outcome::Pass, Outcome::Fail, Outcome::Error, Outcome::Crash,
                           Outcome::Timeout, Outcome::Skip, Outcome::Blocked};
  for (Outcome oc : order) {
    int n = 0;
    for (const auto& r : s.results()) n += r.outcome == oc;
    summary[outcome_name(oc)] = n;
  }
  j["summary"] = std::move(summary);
  return j;
}

void write_json(std::ostream& os, const Session& s, const std::string& mode, const std::string& command,
                int exit_code) {
  os << json_text(report_json(s, mode, command, exit_code)) << "\n";
}

}  // namespace nvfp4
