// pool.cpp — the run policy's parsing and Session::run_all, the slots that run a list of trials
// (see pool.hpp and lattice.hpp).
#include "pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "errors.hpp"
#include "lattice.hpp"
#include "worker.hpp"

namespace nvfp4 {

const char* isolation_name(Isolation i) { return i == Isolation::Trial ? "trial" : "worker"; }

Isolation parse_isolation(const std::string& text) {
  if (text == "worker") return Isolation::Worker;
  if (text == "trial") return Isolation::Trial;
  throw InputError("--isolate: must be 'worker' or 'trial', not '" + text + "'");
}

EnvOverrides RunPolicy::env(int slot) const {
  if (gpus.empty()) return {};
  return {"CUDA_VISIBLE_DEVICES=" + gpus[size_t(slot) % gpus.size()]};
}

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (char ch : text) {
    if (ch == sep) out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::vector<std::string> parse_gpu_list(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& id : split(text, ',')) {
    const bool uuid = (id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0) && id.size() > 4 &&
                      id.find_first_not_of("0123456789abcdefABCDEF-/GPUMI") == std::string::npos;
    if (!all_digits(id) && !uuid)
      throw InputError("--gpus: '" + id + "' is not a device index (0, 1, ...) or a GPU-/MIG- UUID");
    if (std::find(out.begin(), out.end(), id) != out.end()) throw InputError("--gpus: device " + id + " given twice");
    out.push_back(id);
  }
  return out;
}

int count_gpus(const std::string& proc_dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(proc_dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++n;
  if (n > 0) return n;
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return 0;
  char line[512];
  while (std::fgets(line, sizeof line, p))
    if (std::string(line).rfind("GPU ", 0) == 0) ++n;
  pclose(p);
  return n;
}

std::vector<std::string> gpus_from_ctest(const std::function<const char*(const std::string&)>& getenv) {
  const char* count = getenv("CTEST_RESOURCE_GROUP_COUNT");
  if (!count || !*count) return {};
  if (!all_digits(count)) throw InputError(std::string("CTEST_RESOURCE_GROUP_COUNT: not a count: '") + count + "'");
  std::vector<std::string> out;
  for (int g = 0; g < std::atoi(count); ++g) {
    const std::string group = "CTEST_RESOURCE_GROUP_" + std::to_string(g);
    const char* types = getenv(group);
    bool has_gpus = false;
    for (const auto& t : split(types ? types : "", ',')) has_gpus |= t == "gpus";
    if (!has_gpus) continue;
    const char* spec = getenv(group + "_GPUS");
    if (!spec || !*spec) throw InputError(group + " names gpus but " + group + "_GPUS is not set");
    for (const auto& entry : split(spec, ';')) {
      std::string id;
      for (const auto& field : split(entry, ',')) {
        if (field.rfind("id:", 0) == 0) id = field.substr(3);
        else if (field.rfind("slots:", 0) != 0 || !all_digits(field.substr(6)))
          throw InputError(group + "_GPUS: malformed entry '" + entry + "' (expected id:ID,slots:N)");
      }
      if (id.empty()) throw InputError(group + "_GPUS: entry '" + entry + "' has no id");
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    }
  }
  return out;
}

std::vector<std::vector<size_t>> work_units(const std::vector<TrialSpec>& specs, Isolation isolate, int jobs) {
  std::vector<std::vector<size_t>> units;
  if (isolate == Isolation::Trial) {
    for (size_t i = 0; i < specs.size(); ++i) units.push_back({i});
    return units;
  }
  std::map<std::pair<std::string, std::string>, size_t> unit_of;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto key = std::make_pair(specs[i].backend, specs[i].combo.str());
    auto it = unit_of.find(key);
    if (it == unit_of.end()) {
      it = unit_of.emplace(key, units.size()).first;
      units.emplace_back();
    }
    units[it->second].push_back(i);
  }
  // Fewer units than slots: split the largest (by case) until every slot has one, or none splits.
  while (int(units.size()) < jobs) {
    auto big = std::max_element(units.begin(), units.end(),
                                [](const auto& a, const auto& b) { return a.size() < b.size(); });
    if (big == units.end() || big->size() < 2) break;
    const size_t half = big->size() / 2;
    std::vector<size_t> tail(big->begin() + long(big->size() - half), big->end());
    big->resize(big->size() - half);
    units.insert(big + 1, std::move(tail));
  }
  return units;
}

// ---------------------------------------------------------------------------------------------

void Session::run_all(const std::vector<TrialSpec>& specs, std::vector<uint16_t>* first_output) {
  if (specs.empty()) return;
  // Every reference these trials need, once per (case, input set), on the host's cores.
  std::vector<CaseSpec> cases;
  for (const auto& s : specs) cases.push_back(s.c);
  // The input sets generated for them go to the store, where the children read them.
  const auto since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const auto t_refs = std::chrono::steady_clock::now();
  cache_.prefetch(cases, options_.runs, options_.fresh, 0,
                  [this](const CaseSpec& c, int set, InputSet mode, const Problem& p) { store_.put(c, set, mode, p); });
  parent_.references += since(t_refs);

  const auto units = work_units(specs, policy_.isolate, policy_.jobs);
  struct Slot {
    std::optional<TrialResult> result;
    std::vector<uint16_t> output;  // the first checked call's, when asked for
  };
  std::vector<Slot> slots(specs.size());
  std::mutex mu;
  std::condition_variable ready;
  std::atomic<size_t> next_unit{0};
  std::atomic<bool> stop{false};
  std::exception_ptr failure;

  auto slot_body = [&](int slot) {
    try {
      std::optional<Worker> worker;
      if (policy_.isolate == Isolation::Worker) worker.emplace(runner_.exe(), runner_.new_dir(), policy_.env(slot));
      for (size_t u; !stop && (u = next_unit++) < units.size();) {
        for (size_t i : units[u]) {
          if (stop) break;
          const TrialSpec& spec = specs[i];
          const External* ext = spec.options.external(spec.backend);
          // A submission's child is its Python driver, not a harness worker: one per trial.
          const bool own_process = !worker || (ext && ext->kind == External::Submission);
          ChildReport child;
          if (own_process) {
            child = runner_.run_child(spec, false, policy_.env(slot));
          } else {
            const std::string dir = runner_.new_dir();
            child = worker->run(spec, dir);
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
          }
          Slot out;
          if (first_output && !child.outputs.empty()) out.output = child.outputs.front();
          const auto t_eval = std::chrono::steady_clock::now();
          out.result = evaluate_trial(spec, std::move(child), cache_);
          const double evaluated = since(t_eval);
          // Fail-stop: no trial runs after a failure in the same process (a FAIL included).
          if (worker && is_failure(out.result->outcome)) worker->end();
          std::lock_guard<std::mutex> lock(mu);
          parent_.evaluation += evaluated;
          slots[i] = std::move(out);
          ready.notify_all();
        }
        if (worker) worker->end();  // the next unit is another combination
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure) failure = std::current_exception();
      stop = true;
      ready.notify_all();
    }
  };
  const int n = std::max(1, std::min(policy_.jobs, int(units.size())));
  std::vector<std::thread> threads;
  // Whatever leaves this function (an exception in the loop below, or a thread that cannot be
  // started), the slots are told to stop and joined first: a joinable std::thread must not be destroyed.
  struct JoinAll {
    std::vector<std::thread>& threads;
    std::atomic<bool>& stop;
    ~JoinAll() {
      stop = true;
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } join_all{threads, stop};
  for (int k = 0; k < n; ++k) threads.emplace_back(slot_body, k);

  // Recorded and printed in the order of `specs`, as each one's turn comes.
  for (size_t i = 0; i < specs.size(); ++i) {
    std::unique_lock<std::mutex> lock(mu);
    ready.wait(lock, [&] { return slots[i].result.has_value() || failure; });
    if (!slots[i].result) break;
    TrialResult r = std::move(*slots[i].result);
    std::vector<uint16_t> output = std::move(slots[i].output);
    lock.unlock();
    if (first_output && first_output->empty() && !output.empty()) *first_output = std::move(output);
    results_.push_back(std::move(r));
    progress_line(results_.back(), results_.size(), results_.size());
  }
  stop = true;
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace nvfp4
