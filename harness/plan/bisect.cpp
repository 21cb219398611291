// bisect.cpp — the minimal failing sub-combinations, found on one failing case and confirmed on the
// suite (see bisect.hpp).
#include "bisect.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "report.hpp"

namespace nvfp4 {

namespace {

// Every (combination, case) trial a bisect ran, each at most once, by its index in the session's
// results (indices, not pointers: the results grow while the bisect runs).
class TrialTable {
 public:
  TrialTable(Session& s, std::string backend, std::vector<CaseSpec> cases)
      : s_(s), backend_(std::move(backend)), cases_(std::move(cases)) {}

  // Runs, in one batch through the session's workers, every pair of combos x case_ids not run yet.
  void run(const std::vector<Combo>& combos, const std::vector<size_t>& case_ids) {
    std::vector<TrialSpec> specs;
    std::vector<std::pair<std::string, size_t>> keys;
    for (const auto& combo : combos)
      for (size_t id : case_ids) {
        auto key = std::make_pair(combo.str(), id);
        if (index_.count(key) || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        specs.push_back(make_spec(s_, backend_, combo, cases_[id]));
        keys.push_back(key);
      }
    if (specs.empty()) return;
    const size_t first = s_.results().size();
    s_.run_all(specs);  // records them in the order of specs
    for (size_t i = 0; i < keys.size(); ++i) index_[keys[i]] = first + i;
  }
  const TrialResult* get(const Combo& c, size_t id) const {
    const auto it = index_.find({c.str(), id});
    return it == index_.end() ? nullptr : &s_.results()[it->second];
  }
  bool fails(const Combo& c, size_t id) const {
    const TrialResult* r = get(c, id);
    return r && is_failure(r->outcome);
  }
  const std::vector<CaseSpec>& cases() const { return cases_; }

 private:
  Session& s_;
  std::string backend_;
  std::vector<CaseSpec> cases_;
  std::map<std::pair<std::string, size_t>, size_t> index_;
};

Combo subset(const std::vector<std::string>& opts, uint64_t mask) {
  Combo c;
  for (size_t i = 0; i < opts.size(); ++i)
    if (mask >> i & 1) c.opts.push_back(opts[i]);
  std::sort(c.opts.begin(), c.opts.end());
  return c;
}

// Every sub-combination of c, plain and c included, smallest first.
std::vector<Combo> all_subsets(const Combo& c) {
  std::vector<Combo> out;
  for (uint64_t m = 0; m < (uint64_t(1) << c.size()); ++m) out.push_back(subset(c.opts, m));
  std::stable_sort(out.begin(), out.end(), [](const Combo& a, const Combo& b) { return a.size() < b.size(); });
  return out;
}

bool proper_subset_of(const Combo& a, const Combo& b) { return a.size() < b.size() && b.contains(a); }

// The minimal failing sub-combinations of `opts` on one case.
std::vector<Combo> search_on_case(TrialTable& t, const std::vector<std::string>& opts, size_t id) {
  auto batch = [&](const std::vector<Combo>& cs) {
    t.run(cs, {id});
    std::vector<bool> out;
    for (const auto& c : cs) out.push_back(t.fails(c, id));
    return out;
  };
  if (opts.size() <= 6) return minimal_failing_subsets_batched(opts, batch);
  auto one = [&](const Combo& c) { return batch({c}).front(); };
  if (one(Combo{})) return {Combo{}};
  return {ddmin_failing(opts, one)};
}

uint64_t case_size(const CaseSpec& c) {
  const Shape& s = c.shape;
  return uint64_t(s.M) * uint64_t(s.N) * uint64_t(s.K) * uint64_t(s.L);
}

}  // namespace

std::vector<Combo> minimal_failing_subsets_batched(
    const std::vector<std::string>& opts, const std::function<std::vector<bool>(const std::vector<Combo>&)>& fails) {
  std::vector<uint64_t> failing;
  std::vector<Combo> out;
  for (size_t size = 0; size <= opts.size(); ++size) {
    std::vector<uint64_t> level;
    for (uint64_t m = 0; m < (uint64_t(1) << opts.size()); ++m) {
      if (size_t(__builtin_popcountll(m)) != size) continue;
      bool covers = false;
      for (uint64_t f : failing) covers |= (m & f) == f;
      if (!covers) level.push_back(m);  // a superset of a failing subset is never minimal
    }
    if (level.empty()) continue;
    std::vector<Combo> combos;
    for (uint64_t m : level) combos.push_back(subset(opts, m));
    const std::vector<bool> verdicts = fails(combos);
    for (size_t i = 0; i < level.size(); ++i)
      if (i < verdicts.size() && verdicts[i]) {
        failing.push_back(level[i]);
        out.push_back(combos[i]);
      }
  }
  return out;
}

std::vector<Combo> minimal_failing_subsets(const std::vector<std::string>& opts,
                                           const std::function<bool(const Combo&)>& fails) {
  return minimal_failing_subsets_batched(opts, [&](const std::vector<Combo>& cs) {
    std::vector<bool> out;
    for (const auto& c : cs) out.push_back(fails(c));
    return out;
  });
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
  // The confirmation (3.) runs on every case: their references load while the first steps run on
  // one case at a time.
  // (Sorted smallest first, as step 1 takes them.) Whichever way the bisect ends, the background
  // work has ended before its report is written.
  std::vector<CaseSpec> smallest_first = cases;
  std::stable_sort(smallest_first.begin(), smallest_first.end(),
                   [](const CaseSpec& a, const CaseSpec& b) { return case_size(a) < case_size(b); });
  s.prefetch_in_background(smallest_first);
  struct WaitForReferences {
    Session& s;
    ~WaitForReferences() { s.wait_references(); }
  } wait_for_references{s};
  TrialTable t(s, backend, cases);
  std::vector<size_t> all(cases.size());
  std::iota(all.begin(), all.end(), size_t(0));
  // 1. Where does it fail? The cases smallest first, in batches of 1, 2, 4, ... until one fails (a
  // failing trial ends its worker, so a batch that fails everywhere costs a new worker per case).
  std::vector<size_t> by_size = all;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return case_size(cases[a]) < case_size(cases[b]); });
  bool all_skipped = true;
  std::vector<size_t> failing;
  for (size_t done = 0, batch = 1; done < by_size.size() && failing.empty(); done += batch, batch *= 2) {
    const std::vector<size_t> part(by_size.begin() + long(done),
                                   by_size.begin() + long(std::min(by_size.size(), done + batch)));
    t.run({combo}, part);
    for (size_t id : part) {
      all_skipped &= t.get(combo, id)->outcome == Outcome::Skip;
      if (t.fails(combo, id)) failing.push_back(id);
    }
  }
  if (all_skipped && failing.empty()) {
    v.kind = BisectVerdict::Skipped;
    v.line = "skip: " + combo.str() + " is not supported on any case here";
    return v;
  }
  const std::string n_cases = std::to_string(cases.size()) + " case" + (cases.size() == 1 ? "" : "s");
  if (failing.empty()) {
    v.kind = BisectVerdict::Passed;
    v.line = "pass: " + combo.str() + " passes on " + n_cases + "; nothing to bisect";
    return v;
  }
  // 2. The search on the smallest failing case (its trials are the quickest).
  const size_t c0 = failing.front();
  std::vector<Combo> culprits = search_on_case(t, combo.opts, c0);
  std::map<std::string, size_t> found_on;  // culprit -> the case it was found on
  for (const auto& c : culprits) found_on[c.str()] = c0;
  // 3. Confirmation on the suite: every sub-combination of COMBO that contains no culprit must pass
  // everywhere for the culprits to be the minimal failing ones (the culprits themselves are known to
  // fail on one case; running them everywhere would only count failures).
  // Each round adds a culprit from the finite set of sub-combinations, so the loop ends.
  s.wait_references();
  for (;;) {
    std::vector<Combo> confirm;
    for (const auto& c : combo.size() <= 6 ? all_subsets(combo) : immediate_subs(culprits.front()))
      if (std::none_of(culprits.begin(), culprits.end(), [&](const Combo& k) { return c.contains(k); }))
        confirm.push_back(c);
    t.run(confirm, all);
    // The smallest sub-combination that fails somewhere else is a culprit there.
    const Combo* smaller = nullptr;
    size_t where = 0;
    for (const auto& c : confirm)
      for (size_t id : all)
        if (t.fails(c, id) && std::none_of(culprits.begin(), culprits.end(), [&](const Combo& k) { return k == c; }) &&
            (!smaller || c.size() < smaller->size())) {
          smaller = &c;
          where = id;
        }
    if (!smaller) break;
    for (const auto& c : search_on_case(t, smaller->opts, where)) {
      found_on.emplace(c.str(), where);
      culprits.push_back(c);
    }
    std::vector<Combo> minimal;
    for (const auto& c : culprits)
      if (std::none_of(culprits.begin(), culprits.end(), [&](const Combo& k) { return proper_subset_of(k, c); }) &&
          std::none_of(minimal.begin(), minimal.end(), [&](const Combo& k) { return k == c; }))
        minimal.push_back(c);
    culprits = minimal;
  }
  std::sort(culprits.begin(), culprits.end());

  v.kind = BisectVerdict::Culprit;
  v.culprits = culprits;
  std::string line = culprits.size() == 1 ? "culprit: " : "culprits: ";
  for (size_t i = 0; i < culprits.size(); ++i) {
    const TrialResult& r = *t.get(culprits[i], found_on.at(culprits[i].str()));
    line += (i ? "; " : "") + culprits[i].str() + " (" + failure_brief(r) + ")";
    if (i == 0) v.reproducer = reproducer(r.spec, s.program());
  }
  if (culprits.size() == 1) {
    const Combo& c = culprits[0];
    if (c.size() == 0) line += "; the base path fails without any optimization";
    else if (c.size() == 1) line += "; plain passes";
    else if (c.size() == 2) line += "; each alone passes";
    else line += "; every smaller combination passes";
    if (combo.size() > 6) line += " (ddmin: 1-minimal)";
  }
  // How far the verdict holds: every smaller combination passed on every case.
  line += combo.size() <= 6 ? "; confirmed on all " + n_cases + ": no smaller combination fails on any"
                            : "; confirmed on all " + n_cases + ": none of its immediate sub-combinations fails";
  v.line = line;
  return v;
}

}  // namespace nvfp4
