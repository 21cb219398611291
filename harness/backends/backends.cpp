// backends.cpp — the run's backends and the built-in ones' load probes (backends.hpp).
#include "backends.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "errors.hpp"
#include "external.hpp"
#include "registry.hpp"

namespace nvfp4 {

std::vector<std::string> chosen_backends(const std::vector<std::string>& names, const std::vector<std::string>& builtins,
                                         const std::vector<std::string>& externals, const ModuleDir& dir) {
  std::vector<std::string> known = builtins;
  known.insert(known.end(), externals.begin(), externals.end());
  if (names.size() == 1 && names.front() == "all") return known;
  if (std::find(names.begin(), names.end(), "all") != names.end())
    throw InputError("--backend: 'all' stands alone (it already means every backend); or list some of them");
  std::vector<std::string> v;
  for (const auto& name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InputError("--backend: unknown backend '" + name + "' (known: " + (list.empty() ? "none" : list) +
                       ", all" + (builtins.empty() ? "; no built-in backend modules found in " + dir.tried : "") +
                       ")");
    }
    v.push_back(name);
  }
  return v;
}

void load_builtins(std::vector<std::string>& backends, const std::vector<std::string>& builtins,
                   const TrialOptions& opt, const SuiteFilter& filter, std::vector<TrialResult>& failed,
                   std::map<std::string, ChildReport>& loaded, const EnvOverrides& env) {
  std::vector<std::string> todo;
  for (const auto& b : backends)
    if (std::find(builtins.begin(), builtins.end(), b) != builtins.end()) todo.push_back(b);
  if (todo.empty()) return;
  std::vector<ChildReport> reports(todo.size());
  std::vector<std::atomic<bool>> done(todo.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < todo.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        TrialRunner runner;
        reports[i] = runner.probe(todo[i], opt, env);
      } catch (const std::exception& e) {
        reports[i].outcome = Outcome::Error;
        reports[i].stage = "load";
        reports[i].message = e.what();
      }
      done[i] = true;
    });
  // Quiet when the probes are quick; a load that takes longer is named while it runs.
  const auto t0 = std::chrono::steady_clock::now();
  bool told = false;
  for (;;) {
    std::string pending;
    for (size_t i = 0; i < todo.size(); ++i)
      if (!done[i]) pending += (pending.empty() ? "" : ", ") + todo[i];
    if (pending.empty()) break;
    if (!told && std::chrono::steady_clock::now() - t0 > std::chrono::seconds(1)) {
      std::cout << "loading backends: still waiting for " << pending << " after 1 s (each loads in a child, stage load, "
                << "budget " << opt.budget[Stage::Load] << " s: --budget-load)" << std::endl;
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < todo.size(); ++i) {
    ChildReport& rep = reports[i];
    if (!rep.manifest.empty()) {
      const Manifest m = probe_manifest(rep);
      if (m.backend != todo[i])
        rep.outcome = Outcome::Error, rep.stage = "load",
        rep.message = "the module registered backend '" + m.backend + "', not '" + todo[i] + "'";
      else {
        register_manifest(m);
        loaded[todo[i]] = std::move(rep);  // it also says whether the backend is available here
        continue;
      }
    }
    TrialSpec spec;
    spec.backend = todo[i];
    spec.options = opt;
    const auto suite = narrow_suite(default_suite(spec.backend), filter);
    if (!suite.empty()) spec.c = suite.front();
    if (rep.outcome == Outcome::Pass || rep.outcome == Outcome::Skip) {
      rep.outcome = Outcome::Error;
      if (rep.stage.empty()) rep.stage = "load";
      rep.message = "the module reported no manifest" + (rep.message.empty() ? "" : ": " + rep.message);
    }
    ReferenceCache unused;
    TrialResult r = evaluate_trial(spec, std::move(rep), unused);
    r.message = "backend " + todo[i] + " did not load (" + module_path(module_dir(), todo[i]) + "): " + r.message;
    failed.push_back(std::move(r));
    backends.erase(std::find(backends.begin(), backends.end(), todo[i]));
  }
}

}  // namespace nvfp4
