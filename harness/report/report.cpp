// report.cpp — human-readable and JSON reports (see report.hpp).
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "check_report.hpp"
#include "formats.hpp"
#include "json.hpp"
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
  return s.empty() ? s : s + " s";
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

namespace {


}  // namespace

void write_json(std::ostream& os, const Session& s, const std::string& mode, const std::string& command,
                int exit_code, const std::function<void(JsonWriter&)>& extra) {
  JsonWriter j(os);
  const TrialOptions& o = s.options();
  j.begin_object();
  j.key("schema").value(kReportSchema);
  j.key("tool").value("nvfp4-dual harness");
  j.key("mode").value(mode);
  j.key("command").value(command);
  j.key("exit_code").value(exit_code);
  j.key("elapsed_s").value(s.elapsed());
  double overhead = 0;
  for (const auto& r : s.results()) overhead += r.overhead();
  j.key("overhead_s").value(overhead);
  // The on-disk reference store (reference_store.hpp): this run's hits, computations and problems.
  j.key("reference_cache").begin_object();
  if (const ReferenceStore* store = s.cache().store()) {
    const ReferenceStoreStats st = store->stats();
    j.key("enabled").value(true).key("dir").value(store->dir());
    j.key("hits").value(st.hits).key("computed").value(st.computed).key("rejected").value(st.rejected);
    j.key("write_failures").value(st.write_failures).key("evicted").value(st.evicted);
    if (!st.first_rejection.empty()) j.key("first_rejection").value(st.first_rejection);
  } else {
    j.key("enabled").value(false);
  }
  j.end_object();
  // The parent's own time (lattice.hpp Session::ParentTimes).
  j.key("parent_s").begin_object();
  j.key("references").value(s.parent_times().references).key("evaluation").value(s.parent_times().evaluation);
  j.end_object();
  // Output comparisons scanned, and those served by the memo (comparison_memo.hpp).
  j.key("comparisons").begin_object();
  j.key("scanned").value(s.cache().memo().scanned()).key("reused").value(s.cache().memo().reused());
  j.end_object();
  j.key("options").begin_object();
  j.key("warmup").value(o.warmup).key("runs").value(o.runs);
  j.key("fresh").value(input_set_name(o.fresh));
  j.key("budgets_s").begin_object();
  for (const auto& s : kStages)
    if (has_own_budget(s.id) && (s.id != Stage::Time || o.bench)) j.key(s.name).value(o.budget[s.id]);
  j.key("trial").value(o.budget.trial);
  j.end_object();
  if (o.bench) {
    j.key("bench").begin_object();
    j.key("rse").value(o.timing.rse).key("max_time_s").value(o.timing.max_time_s);
    j.key("min_reps").value(o.timing.min_reps).key("max_reps").value(o.timing.max_reps);
    j.end_object();
  }
  j.key("faults").begin_array();
  for (const auto& f : o.faults) j.value(f.str());
  j.end_array();
  j.key("tune_cache").value(o.plan.tune_cache_dir);
  j.end_object();

  j.key("backends").begin_array();
  for (const auto& kv : s.backends()) {
    const auto& b = kv.second;
    j.begin_object();
    j.key("name").value(b.name).key("available").value(b.available);
    if (!b.available) j.key("reason").value(b.reason).key("probe_outcome").value(outcome_name(b.probe_outcome));
    j.key("optimizations").array(b.optimizations);
    j.end_object();
  }
  j.end_array();

  j.key("cases").begin_array();
  for (const auto& info : s.cache().seen()) {
    j.begin_object();
    j.key("name").value(info->spec.name());
    j.key("shape").value(info->ref.shape.str());
    if (info->spec.from_dir()) j.key("inputs").value(info->spec.inputs_dir);
    else j.key("dist").value(info->spec.dist).key("seed").value(uint64_t(info->spec.seed));
    j.key("alpha1").value(double(info->alpha1)).key("alpha2").value(double(info->alpha2));
    j.key("degenerate").value(info->degeneracy.degenerate());
    j.key("degeneracy").begin_object();
    j.key("inf").value(info->degeneracy.inf).key("nan").value(info->degeneracy.nan);
    j.key("zero").value(info->degeneracy.zero).key("total").value(info->degeneracy.total);
    j.end_object();
    j.key("warnings").array(info->warnings);
    j.key("reference_s").value(info->reference_seconds);
    j.end_object();
  }
  j.end_array();

  j.key("trials").begin_array();
  int index = 0;
  for (const auto& r : s.results()) {
    j.begin_object();
    j.key("index").value(++index);
    j.key("backend").value(r.spec.backend);
    j.key("combo").value(r.spec.combo.str());
    j.key("case").begin_object();
    j.key("name").value(r.spec.c.name());
    if (r.spec.c.from_dir()) {
      j.key("inputs").value(r.spec.c.inputs_dir).key("batch_last").value(r.spec.c.batch_last);
    } else {
      j.key("shape").value(r.spec.c.shape.str()).key("dist").value(r.spec.c.dist);
      j.key("seed").value(uint64_t(r.spec.c.seed));
    }
    j.key("alpha1").value(double(r.spec.c.alpha1)).key("alpha2").value(double(r.spec.c.alpha2));
    j.end_object();
    j.key("outcome").value(outcome_name(r.outcome));
    if (!r.stage.empty()) j.key("stage").value(r.stage).key("stage_elapsed_s").value(r.stage_elapsed);
    j.key("message").value(r.message);
    if (!r.blocked_by.empty()) j.key("blocked_by").value(r.blocked_by);
    j.key("wall_s").value(r.wall);
    if (r.wall > 0) j.key("overhead_s").value(r.overhead());
    if (r.child_pid > 0) j.key("child_pid").value(r.child_pid);
    if (!r.device.empty()) j.key("device").value(r.device);
    j.key("path").value(r.describe);
    j.key("stages").begin_array();
    for (const auto& st : r.stages) {
      j.begin_object();
      j.key("stage").value(st.stage).key("seconds").value(st.seconds).key("completed").value(st.completed);
      j.end_object();
    }
    j.end_array();
    j.key("notes").array(r.notes);
    if (!r.child_log.empty()) j.key("child_log").value(r.child_log);
    if (r.compared) {
      j.key("degenerate").value(r.degenerate);
      j.key("warnings").array(r.warnings);
      j.key("over_tolerance_per_call").array(r.over_per_call);
      j.key("input_set_per_call").array(r.set_per_call);
      j.key("warmup_input_set").value(warmup_set(r.spec.options.runs));
      j.key("output_matches_set_per_call").array(r.matches_set_per_call);  // -1: none
      j.key("metrics_call").value(r.cmp_call);
      j.key("metrics");
      write_comparison_json(j, r.cmp);
      if (!r.configs_checked.empty()) {
        j.key("configs").begin_object();
        j.key("checked").array(r.configs_checked);
        j.key("failing").array(r.configs_failing);
        j.end_object();
      }
    }
    if (r.timed) {
      const Timing& t = r.timing.t;
      j.key("timing").begin_object();
      j.key("reps").value(t.reps).key("median_us").value(t.median * 1e6).key("min_us").value(t.min * 1e6);
      j.key("mean_us").value(t.mean * 1e6).key("stdev_us").value(t.stdev * 1e6).key("median_rse").value(t.rse);
      j.key("b2b_us").value(r.timing.b2b * 1e6).key("b2b_calls").value(r.timing.b2b_calls);
      j.end_object();
    }
    j.key("reproducer").value(reproducer(r.spec, s.program()));
    j.end_object();
  }
  j.end_array();
  j.key("verdicts").array(s.verdicts);
  j.key("summary").begin_object();
  const Outcome order[] = {Outcome::Pass, Outcome::Fail, Outcome::Error, Outcome::Crash,
                           Outcome::Timeout, Outcome::Skip, Outcome::Blocked};
  for (Outcome oc : order) {
    int n = 0;
    for (const auto& r : s.results()) n += r.outcome == oc;
    j.key(outcome_name(oc)).value(n);
  }
  j.end_object();
  if (extra) extra(j);
  j.end_object();
  os << "\n";
}

}  // namespace nvfp4
