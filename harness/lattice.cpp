// lattice.cpp — sessions, staged isolation and bisection (see lattice.hpp).
#include "lattice.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "report.hpp"

namespace nvfp4 {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string fixed1(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}
}  // namespace

Session::Session(TrialOptions options, std::string program, std::ostream* progress, std::string exe)
    : options_(std::move(options)),
      program_(std::move(program)),
      progress_(progress),
      runner_(std::move(exe)),
      t0_(now_seconds()) {}

double Session::elapsed() const { return now_seconds() - t0_; }

const BackendStatus& Session::probe(const std::string& backend) {
  auto it = backends_.find(backend);
  if (it != backends_.end() && it->second.probed) return it->second;
  BackendStatus st;
  st.name = backend;
  for (const auto* o : Registry::instance().optimizations(backend)) st.optimizations.push_back(o->name);
  ChildReport rep = runner_.probe(backend, options_);
  st.probed = true;
  st.available = rep.outcome == Outcome::Pass && rep.available;
  st.probe_outcome = st.available ? Outcome::Pass : rep.outcome == Outcome::Pass ? Outcome::Error : rep.outcome;
  st.reason = st.available ? "" : rep.message;
  if (progress_) {
    *progress_ << "backend " << backend << ": "
               << (st.available ? "available" : std::string(outcome_name(st.probe_outcome)) + " (" + st.reason + ")")
               << "; optimizations: ";
    std::string names;
    for (const auto& n : st.optimizations) names += (names.empty() ? "" : ", ") + n;
    *progress_ << (names.empty() ? "none" : names) << "\n";
    progress_->flush();
  }
  return backends_[backend] = st;
}

void Session::progress_line(const TrialResult& r, size_t first, size_t last) {
  if (!progress_) return;
  char head[64];
  const size_t total = std::max(total_, results_.size());
  if (total_ == 0)  // open-ended (bisect): no total to show
    std::snprintf(head, sizeof head, "[%4zu %7.1f s] ", first, elapsed());
  else if (first == last)
    std::snprintf(head, sizeof head, "[%4zu/%zu %7.1f s] ", first, total, elapsed());
  else
    std::snprintf(head, sizeof head, "[%zu-%zu/%zu %7.1f s] ", first, last, total, elapsed());
  *progress_ << head << trial_name(r.spec) << "  " << trial_summary(r) << "\n";
  if (details_ && is_failure(r.outcome) && r.outcome != Outcome::Blocked) print_trial_details(*progress_, r, program_);
  progress_->flush();
}

const TrialResult& Session::run(const TrialSpec& spec, std::vector<uint16_t>* case_output) {
  ChildReport child = runner_.run_child(spec, false, policy_.env(0));
  if (case_output && !child.outputs.empty()) *case_output = child.outputs.front();
  TrialResult r = evaluate_trial(spec, std::move(child), cache_);
  results_.push_back(std::move(r));
  progress_line(results_.back(), results_.size(), results_.size());
  return results_.back();
}

void Session::record(TrialResult r) {
  results_.push_back(std::move(r));
  progress_line(results_.back(), results_.size(), results_.size());
}

void Session::add_not_run(const std::vector<TrialSpec>& specs, Outcome outcome,
                          const std::string& reason, const std::string& blocked_by) {
  if (specs.empty()) return;
  const size_t first = results_.size() + 1;
  for (const auto& spec : specs) {
    TrialResult r;
    r.spec = spec;
    r.outcome = outcome;
    r.message = reason;
    r.blocked_by = blocked_by;
    results_.push_back(std::move(r));
  }
  if (!progress_) return;
  TrialResult shown = results_.back();
  if (specs.size() > 1) {
    // One line for the lot: name the combination, not a case.
    char head[64];
    std::snprintf(head, sizeof head, "[%zu-%zu/%zu %7.1f s] ", first, results_.size(),
                  std::max(total_, results_.size()), elapsed());
    *progress_ << head << specs.front().backend << " " << specs.front().combo.str() << " ("
               << specs.size() << " cases)  " << outcome_name(outcome) << ": " << reason << "\n";
    progress_->flush();
  } else {
    progress_line(shown, first, first);
  }
}

std::vector<Combo> lattice_combos(const std::string& backend) {
  const auto opts = Registry::instance().optimizations(backend);
  std::vector<Combo> out;
  const size_t n = opts.size();
  for (uint64_t mask = 0; mask < (uint64_t(1) << n); ++mask) {
    Combo c;
    int variants = 0;
    for (size_t i = 0; i < n; ++i)
      if (mask >> i & 1) {
        c.opts.push_back(opts[i]->name);
        variants += opts[i]->kind == OptKind::Variant;
      }
    if (variants > 1) continue;  // two variants replace the same base kernel
    std::sort(c.opts.begin(), c.opts.end());
    out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Combo> immediate_subs(const Combo& c) {
  std::vector<Combo> subs;
  for (size_t i = 0; i < c.opts.size(); ++i) {
    Combo s = c;
    s.opts.erase(s.opts.begin() + long(i));
    subs.push_back(s);
  }
  return subs;
}

namespace {

TrialSpec make_spec(const Session& s, const std::string& backend, const Combo& combo, const CaseSpec& c) {
  TrialSpec t;
  t.backend = backend;
  t.combo = combo;
  t.c = c;
  t.options = s.options();
  return t;
}

// Handles an unavailable backend: every trial SKIP (or BLOCKED when the probe itself failed).
bool backend_usable(Session& s, const std::string& backend, const std::vector<Combo>& combos,
                    const std::vector<CaseSpec>& cases) {
  const BackendStatus& st = s.probe(backend);
  if (st.available) return true;
  const Outcome o = st.probe_outcome == Outcome::Skip ? Outcome::Skip : Outcome::Blocked;
  const std::string why = o == Outcome::Skip
                              ? st.reason
                              : "backend probe " + std::string(outcome_name(st.probe_outcome)) + ": " + st.reason;
  for (const auto& combo : combos) {
    std::vector<TrialSpec> specs;
    for (const auto& c : cases) specs.push_back(make_spec(s, backend, combo, c));
    s.add_not_run(specs, o, why, o == Outcome::Blocked ? "backend probe" : "");
  }
  return false;
}

// The first failing trial of (backend, combo) among the session's results, or nullptr.
const TrialResult* first_failure(const Session& s, const std::string& backend, const Combo& combo,
                                 size_t from = 0) {
  const auto& rs = s.results();
  for (size_t i = from; i < rs.size(); ++i)
    if (rs[i].spec.backend == backend && rs[i].spec.combo == combo && is_failure(rs[i].outcome))
      return &rs[i];
  return nullptr;
}

// The trials of `combos` on `cases`, in the order they are recorded: one combination's cases in a
// row with workers (the order one worker runs them in), case-major with one process per trial
// (the order of a run without workers).
std::vector<TrialSpec> level_order(const Session& s, const std::string& backend, const std::vector<Combo>& combos,
                                   const std::vector<CaseSpec>& cases) {
  std::vector<TrialSpec> specs;
  if (s.policy().isolate == Isolation::Worker) {
    for (const auto& combo : combos)
      for (const auto& c : cases) specs.push_back(make_spec(s, backend, combo, c));
  } else {
    for (const auto& c : cases)
      for (const auto& combo : combos) specs.push_back(make_spec(s, backend, combo, c));
  }
  return specs;
}

std::string failure_brief(const TrialResult& r) {
  std::string s = std::string(outcome_name(r.outcome));
  if (!r.stage.empty()) s += " in stage " + r.stage + " after " + fixed1(r.stage_elapsed) + " s";
  if (r.outcome == Outcome::Fail && r.compared)
    s += ", " + std::to_string(r.cmp.over_tolerance) + " element" +
         (r.cmp.over_tolerance == 1 ? "" : "s") + " over tolerance";
  else if ((r.outcome == Outcome::Error || r.outcome == Outcome::Crash) && !r.message.empty()) {
    // The verdict is one line: only the message's first line, shortened.
    std::string m = r.message.substr(0, r.message.find('\n'));
    s += ": " + (m.size() > 90 ? m.substr(0, 87) + "..." : m);
  }
  return s;
}

}  // namespace

void verify_lattice(Session& s, const std::string& backend, const std::vector<CaseSpec>& cases) {
  const auto combos = lattice_combos(backend);
  if (!backend_usable(s, backend, combos, cases)) return;
  const size_t mark = s.results().size();
  std::map<std::string, std::string> failed;  // combo -> why it counts as failed
  size_t max_size = 0;
  for (const auto& c : combos) max_size = std::max(max_size, c.size());
  for (size_t level = 0; level <= max_size; ++level) {
    std::vector<Combo> runnable;
    for (const auto& combo : combos) {
      if (combo.size() != level) continue;
      std::string by, why;
      auto subs = immediate_subs(combo);
      std::sort(subs.begin(), subs.end());
      for (const auto& sub : subs) {
        auto it = failed.find(sub.str());
        if (it == failed.end()) continue;
        by += (by.empty() ? "" : ", ") + sub.str();
        why += (why.empty() ? "" : "; ") + sub.str() + " " + it->second;
      }
      if (by.empty()) {
        runnable.push_back(combo);
        continue;
      }
      std::vector<TrialSpec> specs;
      for (const auto& c : cases) specs.push_back(make_spec(s, backend, combo, c));
      s.add_not_run(specs, Outcome::Blocked, "sub-combination " + why, by);
      failed[combo.str()] = "BLOCKED (by " + by + ")";
    }
    s.run_all(level_order(s, backend, runnable, cases));
    for (const auto& combo : runnable)
      if (const TrialResult* f = first_failure(s, backend, combo, mark))
        failed[combo.str()] = "failed (" + failure_brief(*f) + " on " + f->spec.c.name() + ")";
  }
}

void verify_combos(Session& s, const std::string& backend, const std::vector<Combo>& combos,
                   const std::vector<CaseSpec>& cases, std::vector<uint16_t>* first_output) {
  if (!backend_usable(s, backend, combos, cases)) return;
  s.run_all(level_order(s, backend, combos, cases), first_output);
}

namespace {

// Runs a combination on the cases until the first failure (failing cases first); memoized.
class SubsetOracle {
 public:
  SubsetOracle(Session& s, std::string backend, std::vector<CaseSpec> cases)
      : s_(s), backend_(std::move(backend)), cases_(std::move(cases)) {}

  struct Result {
    bool failed = false, all_skipped = true;
    size_t failure = 0;  // index into the session's results
  };

  const Result& test(const Combo& combo) {
    auto it = memo_.find(combo.str());
    if (it != memo_.end()) return it->second;
    Result r;
    for (size_t i = 0; i < cases_.size(); ++i) {
      const TrialResult& t = s_.run(make_spec(s_, backend_, combo, cases_[i]));
      if (t.outcome != Outcome::Skip) r.all_skipped = false;
      if (is_failure(t.outcome)) {
        r.failed = true;
        r.failure = s_.results().size() - 1;
        // Try this case first for the next combination: failures tend to share a case.
        std::rotate(cases_.begin(), cases_.begin() + long(i), cases_.begin() + long(i) + 1);
        break;
      }
    }
    return memo_[combo.str()] = r;
  }

 private:
  Session& s_;
  std::string backend_;
  std::vector<CaseSpec> cases_;
  std::map<std::string, Result> memo_;
};

Combo subset(const std::vector<std::string>& opts, uint64_t mask) {
  Combo c;
  for (size_t i = 0; i < opts.size(); ++i)
    if (mask >> i & 1) c.opts.push_back(opts[i]);
  std::sort(c.opts.begin(), c.opts.end());
  return c;
}
}  // namespace

std::vector<Combo> minimal_failing_subsets(const std::vector<std::string>& opts,
                                           const std::function<bool(const Combo&)>& fails) {
  std::vector<uint64_t> masks;
  for (uint64_t m = 0; m < (uint64_t(1) << opts.size()); ++m) masks.push_back(m);
  std::stable_sort(masks.begin(), masks.end(), [](uint64_t a, uint64_t b) {
    return __builtin_popcountll(a) < __builtin_popcountll(b);
  });
  std::vector<uint64_t> failing;
  std::vector<Combo> out;
  for (uint64_t m : masks) {
    bool covers = false;
    for (uint64_t f : failing) covers |= (m & f) == f;
    if (covers) continue;  // a superset of a failing subset is never minimal
    if (fails(subset(opts, m))) {
      failing.push_back(m);
      out.push_back(subset(opts, m));
    }
  }
  return out;
}

Combo ddmin_failing(const std::vector<std::string>& opts, const std::function<bool(const Combo&)>& fails) {
  auto test = [&](const std::vector<std::string>& v) {
    Combo k;
    k.opts = v;
    std::sort(k.opts.begin(), k.opts.end());
    return fails(k);
  };
  std::vector<std::string> c = opts;
  size_t n = 2;
  while (c.size() >= 2) {
    std::vector<std::vector<std::string>> parts(n);
    for (size_t i = 0; i < c.size(); ++i) parts[i * n / c.size()].push_back(c[i]);
    bool reduced = false;
    for (const auto& p : parts)  // a failing part
      if (!p.empty() && test(p)) {
        c = p;
        n = 2;
        reduced = true;
        break;
      }
    for (size_t i = 0; i < n && !reduced; ++i) {  // a failing complement
      std::vector<std::string> comp;
      for (size_t j = 0; j < n; ++j)
        if (j != i) comp.insert(comp.end(), parts[j].begin(), parts[j].end());
      if (!comp.empty() && comp.size() < c.size() && test(comp)) {
        c = comp;
        n = std::max<size_t>(n - 1, 2);
        reduced = true;
      }
    }
    if (!reduced) {
      if (n >= c.size()) break;  // every single element removed passes: 1-minimal
      n = std::min(2 * n, c.size());
    }
  }
  Combo out;
  out.opts = c;
  std::sort(out.opts.begin(), out.opts.end());
  return out;
}

BisectVerdict bisect(Session& s, const std::string& backend, const Combo& combo,
                     const std::vector<CaseSpec>& cases) {
  BisectVerdict v;
  if (!backend_usable(s, backend, {combo}, cases)) {
    v.kind = BisectVerdict::Skipped;
    v.line = "skip: backend " + backend + " cannot run here (" + s.backends().at(backend).reason + ")";
    return v;
  }
  SubsetOracle oracle(s, backend, cases);
  const auto& full = oracle.test(combo);
  if (full.all_skipped) {
    v.kind = BisectVerdict::Skipped;
    v.line = "skip: " + combo.str() + " is not supported on any case here";
    return v;
  }
  if (!full.failed) {
    v.kind = BisectVerdict::Passed;
    v.line = "pass: " + combo.str() + " passes on " + std::to_string(cases.size()) + " case" +
             (cases.size() == 1 ? "" : "s") + "; nothing to bisect";
    return v;
  }

  const std::vector<std::string>& opts = combo.opts;
  auto fails = [&](const Combo& c) { return oracle.test(c).failed; };
  std::vector<Combo> culprits;
  if (opts.size() <= 6)
    culprits = minimal_failing_subsets(opts, fails);
  else if (fails(Combo{}))
    culprits.push_back(Combo{});
  else
    culprits.push_back(ddmin_failing(opts, fails));

  v.kind = BisectVerdict::Culprit;
  v.culprits = culprits;
  std::string line = culprits.size() == 1 ? "culprit: " : "culprits: ";
  for (size_t i = 0; i < culprits.size(); ++i) {
    const auto& r = s.results()[oracle.test(culprits[i]).failure];
    line += (i ? "; " : "") + culprits[i].str() + " (" + failure_brief(r) + ")";
    if (i == 0) v.reproducer = reproducer(r.spec, s.program());
  }
  if (culprits.size() == 1) {
    const Combo& c = culprits[0];
    if (c.size() == 0) line += "; the base path fails without any optimization";
    else if (c.size() == 1) line += "; plain passes";
    else if (c.size() == 2) line += "; each alone passes";
    else line += "; every smaller combination passes";
    if (opts.size() > 6) line += " (ddmin: 1-minimal)";
  }
  v.line = line;
  return v;
}

}  // namespace nvfp4
