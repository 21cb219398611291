// cases.cpp — case specs, input sets, reference analysis and the reference cache (see cases.hpp).
#include "cases.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "case_dir.hpp"
#include "distributions.hpp"
#include "formats.hpp"
#include "errors.hpp"

namespace nvfp4 {

std::string float_text(float v) {
  // The first round-tripping text without an exponent ("6000", not "6e+03"), else the shortest.
  std::string shortest;
  char buf[48];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, double(v));
    if (std::strtof(buf, nullptr) != v) continue;
    if (std::string(buf).find('e') == std::string::npos) return buf;
    if (shortest.empty()) shortest = buf;
  }
  return shortest.empty() ? buf : shortest;
}

std::string alphas_text(float alpha1, float alpha2) { return float_text(alpha1) + "," + float_text(alpha2); }

std::pair<float, float> parse_alphas(const std::string& text) {
  const size_t comma = text.find(',');
  auto one = [&](const std::string& t) {
    char* end = nullptr;
    const double d = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(d))
      throw InputError("bad alphas '" + text + "': write two finite numbers, A1,A2 (e.g. -1.5,0.3)");
    // The global scales are fp32 (docs/design.md §1.1): a value fp32 cannot hold is refused, not
    // turned into inf or 0.
    const float v = static_cast<float>(d);
    if (!std::isfinite(v))
      throw InputError("bad alphas '" + text + "': " + t + " is outside fp32's range (|alpha| <= 3.4028235e38)");
    if (v == 0.0f && d != 0.0)
      throw InputError("bad alphas '" + text + "': " + t + " is below fp32's smallest subnormal (fp32 would make it 0)");
    return v;
  };
  if (comma == std::string::npos) one("");  // throws with the usage
  return {one(text.substr(0, comma)), one(text.substr(comma + 1))};
}

std::string CaseSpec::name() const {
  std::string s = from_dir() ? "case dir " + inputs_dir + (batch_last ? " (batch-last)" : "")
                             : shape.str() + " " + dist + " seed " + std::to_string(seed);
  if (has_alpha()) s += " alpha " + alphas_text(alpha1, alpha2);
  return s;
}

Problem CaseSpec::make() const {
  Problem p = from_dir() ? load_case(inputs_dir, batch_last) : make_problem(shape, dist, seed);
  p.alpha1 = alpha1;
  p.alpha2 = alpha2;
  return p;
}

Problem CaseSpec::make_set(int set, InputSet mode) const { return make_input_set(*this, make(), set, mode); }

bool CaseSpec::operator==(const CaseSpec& o) const {
  return shape == o.shape && dist == o.dist && seed == o.seed && inputs_dir == o.inputs_dir &&
         batch_last == o.batch_last && alpha1 == o.alpha1 && alpha2 == o.alpha2;
}

uint64_t input_set_seed(uint64_t seed, int set) {
  if (set == 0) return seed;
  // One splitmix64 step over (seed, set): consecutive sets get unrelated seeds.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t(set) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::pair<float, float> alpha_factors(int set) {
  if (set <= 0) return {1.0f, 1.0f};
  // alpha1: -1.25, 1.5, -1.75, 1.25, ...; alpha2: 0.875, 0.75, 0.625, 0.5, 0.875, ...
  const float f1 = (set % 2 ? -1.0f : 1.0f) * (1.0f + 0.25f * float(1 + (set - 1) % 3));
  const float f2 = 1.0f - 0.125f * float(1 + (set - 1) % 4);
  return {f1, f2};
}

namespace {

// Negates one element of A: the first, from a seeded position, whose E2M1 code is not zero and whose
// block scale is finite and not zero, so that its row of G and U changes. False when there is none.
bool negate_one_activation(Problem& p, uint64_t seed) {
  const size_t elems = p.a.size() * 2, row_bytes = size_t(p.shape.K / 2), blocks = size_t(p.shape.K / 16);
  for (size_t t = 0; t < elems; ++t) {
    const size_t e = (size_t(seed % elems) + t) % elems, byte = e / 2;
    const int shift = 4 * int(e % 2);
    const size_t row = byte / row_bytes, k = 2 * (byte % row_bytes) + e % 2;
    const uint8_t scale = p.sfa[row * blocks + k / kBlock] & 0x7F;
    if (((p.a[byte] >> shift) & 0x7) == 0 || scale == 0 || scale == 0x7F) continue;
    p.a[byte] = uint8_t(p.a[byte] ^ (0x8 << shift));
    return true;
  }
  return false;
}

}  // namespace

Problem make_input_set(const CaseSpec& c, const Problem& base, int set, InputSet mode) {
  if (set < 0) throw InputError("input set " + std::to_string(set) + " does not exist");
  Problem p = base;
  if (set == 0) return p;
  if (set == kOtherShapeSet) {
    if (!has_other_shape(c)) throw InputError("a case directory has no input set of another shape");
    CaseSpec other = c;
    other.shape.K += 256;
    return other.make();
  }
  const uint64_t s = input_set_seed(c.from_dir() ? 0 : c.seed, set);
  const bool all = mode == InputSet::All;
  if (set == kNearSet) {  // set 0 but one element of A (whatever the mode)
    if (!negate_one_activation(p, s)) negate_elements(p.a, s);
    return p;
  }
  const bool keep_a = all && set == kSameActivationsSet;
  if (!c.from_dir()) {
    if (all) {
      p = make_problem(base.shape, c.dist, s);
      if (keep_a) {
        p.a = base.a;
        p.sfa = base.sfa;
      }
    } else {
      regenerate_activations(p, c.dist, s);
    }
  }
  if (!keep_a && (c.from_dir() || (p.a == base.a && p.sfa == base.sfa))) negate_elements(p.a, s);
  if (all) {
    if (c.from_dir() || (p.b1 == base.b1 && p.sfb1 == base.sfb1)) negate_elements(p.b1, s + 1);
    if (c.from_dir() || (p.b2 == base.b2 && p.sfb2 == base.sfb2)) negate_elements(p.b2, s + 2);
    const auto f = alpha_factors(set);
    p.alpha1 = base.alpha1 * f.first;
    p.alpha2 = base.alpha2 * f.second;
  } else {
    p.alpha1 = base.alpha1;
    p.alpha2 = base.alpha2;
  }
  return p;
}

std::string input_set_label(int set, int runs) {
  return "input set " + std::to_string(set) + (set == warmup_set(runs) ? " (the warm-up's)" : "");
}

size_t CaseInfo::bytes() const {
  return sizeof(double) * (ref.g.size() + ref.u.size() + ref.g_abs.size() + ref.u_abs.size()) +
         sizeof(uint16_t) * ref.c.size() +
         sizeof(int32_t) * (ref.q_a.size() + ref.q_b1.size() + ref.q_b2.size()) +
         ref.qb_a.size() + ref.qb_b1.size() + ref.qb_b2.size();
}

std::shared_ptr<const CaseInfo> CaseInfo::light() const {
  auto l = std::make_shared<CaseInfo>();
  l->spec = spec;
  l->alpha1 = alpha1;
  l->alpha2 = alpha2;
  l->degeneracy = degeneracy;
  l->warnings = warnings;
  l->reference_seconds = reference_seconds;
  l->ref.shape = ref.shape;
  return l;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The CaseInfo of input set `set` of `spec` (problem `p`) with its reference `ref`, which took
// `seconds` to obtain; the flags are derived from `p` and `ref` here.
std::shared_ptr<const CaseInfo> case_info(const CaseSpec& spec, const Problem& p, int set, InputSet mode,
                                          ReferenceResult&& ref, double seconds) {
  auto info = std::make_shared<CaseInfo>();
  info->spec = spec;
  info->spec.shape = p.shape;
  info->set = set;
  info->mode = mode;
  info->alpha1 = p.alpha1;
  info->alpha2 = p.alpha2;
  info->warnings = scan_scales(p);
  info->ref = std::move(ref);
  info->reference_seconds = seconds;
  info->degeneracy = assess_reference(info->ref.c);
  return info;
}

}  // namespace

std::shared_ptr<const CaseInfo> analyse_case(const CaseSpec& spec, const Problem& p, int set, InputSet mode,
                                             int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  ReferenceOptions opt;
  opt.abs_sums = true;  // a change here changes what the store holds: bump kReferenceStoreFormat
  opt.threads = threads;
  ReferenceResult ref = compute_reference(p, opt);
  return case_info(spec, p, set, mode, std::move(ref), seconds_since(t0));
}

std::shared_ptr<const CaseInfo> ReferenceCache::analyse(const CaseSpec& spec, const Problem& p, int set,
                                                        InputSet mode, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  const Hash128 key = reference_key(p);
  ReferenceResult ref;
  const ReferenceStore::Lookup found = store_ ? store_->load(key, p, ref) : ReferenceStore::Lookup::Absent;
  std::shared_ptr<const CaseInfo> info;
  if (found == ReferenceStore::Lookup::Hit) {
    info = case_info(spec, p, set, mode, std::move(ref), seconds_since(t0));
  } else {
    info = analyse_case(spec, p, set, mode, threads);
    if (store_) {
      store_->note_computed(found);
      store_->save(key, p, info->ref);  // a failure is counted; the run goes on without the entry
    }
  }
  std::const_pointer_cast<CaseInfo>(info)->key = key;  // still this function's own object
  return info;
}

namespace {
// The same case: a case directory is named by its path and order (its shape is known only once
// loaded), a generated case by every field.
bool same_case(const CaseSpec& a, const CaseSpec& b) {
  if (a.from_dir() || b.from_dir())
    return a.inputs_dir == b.inputs_dir && a.batch_last == b.batch_last && a.alpha1 == b.alpha1 &&
           a.alpha2 == b.alpha2;
  return a == b;
}
}  // namespace

std::shared_ptr<const CaseInfo> ReferenceCache::find(const CaseSpec& spec, int set, InputSet mode) {
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if (same_case((*it)->spec, spec) && (*it)->set == set && (*it)->mode == mode) {
      lru_.splice(lru_.begin(), lru_, it);
      return lru_.front();
    }
  }
  return nullptr;
}

void ReferenceCache::insert(std::shared_ptr<const CaseInfo> info) {
  ++computed_;
  lru_.push_front(info);
  bytes_ += info->bytes();
  while (bytes_ > max_bytes_ && lru_.size() > 1) {
    bytes_ -= lru_.back()->bytes();
    lru_.pop_back();
  }
  bool seen = info->set != 0;
  for (const auto& s : seen_summary_) seen |= same_case(s->spec, info->spec);
  if (!seen) seen_summary_.push_back(info->light());
}

std::shared_ptr<const CaseInfo> ReferenceCache::get(const CaseSpec& spec, int set, InputSet mode) {
  if (set == 0) mode = InputSet::Activations;  // set 0 is the case itself in every mode
  std::lock_guard<std::mutex> lock(mu_);
  if (auto hit = find(spec, set, mode)) return hit;
  if (!base_ || !same_case(base_spec_, spec)) {
    base_.reset();  // the old one goes first: two large problems need not coexist
    base_ = std::make_shared<const Problem>(spec.make());
    base_spec_ = spec;
  }
  auto info = analyse(spec, make_input_set(spec, *base_, set, mode), set, mode, 0);
  insert(info);
  return info;
}

size_t ReferenceCache::default_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const double quarter = pages > 0 && page > 0 ? double(pages) * double(page) / 4 : 0;
  const double lo = double(size_t(2) << 30), hi = double(size_t(32) << 30);
  return size_t(std::min(hi, std::max(lo, quarter)));
}

void ReferenceCache::prefetch(const std::vector<CaseSpec>& cases, int runs, InputSet mode, unsigned threads,
                              const SetSink& on_set, bool second_instance) {
  struct Task {
    size_t c;  // index into `todo`
    int set;
    InputSet mode;
    std::shared_ptr<const CaseInfo> info;
    bool elsewhere = false;  // another prefetch was computing it: taken from there
  };
  std::vector<CaseSpec> todo;
  std::vector<Task> tasks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t budget = bytes_ < max_bytes_ ? max_bytes_ - bytes_ : 0;
    for (const auto& c : cases) {
      if (c.from_dir()) continue;
      bool dup = false;
      for (const auto& t : todo) dup |= same_case(t, c);
      if (dup) continue;
      std::vector<Task> mine;
      for (int set = 0; set <= warmup_set(runs); ++set) {
        const InputSet m = set == 0 ? InputSet::Activations : mode;
        if (!find(c, set, m)) mine.push_back({todo.size(), set, m, nullptr});
      }
      if (second_instance && mode != InputSet::All && !find(c, kSameActivationsSet, InputSet::All))
        mine.push_back({todo.size(), kSameActivationsSet, InputSet::All, nullptr});
      // What the arrays of CaseInfo::bytes() take for this shape: G, U and their abs sums in
      // fp64, C in fp16.
      const size_t one = size_t(c.shape.c_elems()) * (4 * sizeof(double) + sizeof(uint16_t));
      if (mine.empty() || one * mine.size() > budget) continue;
      budget -= one * mine.size();
      todo.push_back(c);
      tasks.insert(tasks.end(), mine.begin(), mine.end());
    }
  }
  if (tasks.empty()) return;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned pool = std::max(1u, std::min<unsigned>(threads ? threads : cores, unsigned(tasks.size())));
  // Each reference uses the cores the pool leaves it (results do not depend on the thread count).
  const int inner = int(std::max(1u, cores / pool));
  // Set 0 of each case first (the base every other set derives from), then the other sets.
  std::vector<std::shared_ptr<const Problem>> bases(todo.size());
  std::vector<char> broken(todo.size(), 0);
  auto run_pool = [&](size_t n, const std::function<void(size_t)>& work) {
    std::atomic<size_t> next{0};
    auto body = [&] {
      for (size_t i; (i = next++) < n;) work(i);
    };
    std::vector<std::thread> ts;
    for (unsigned t = 1; t < std::min<unsigned>(pool, unsigned(n)); ++t) ts.emplace_back(body);
    body();
    for (auto& t : ts) t.join();
  };
  run_pool(todo.size(), [&](size_t i) {
    try {
      bases[i] = std::make_shared<const Problem>(todo[i].make());
      if (on_set) on_set(todo[i], 0, InputSet::Activations, *bases[i]);
    } catch (...) {
      broken[i] = 1;  // get() builds it again and reports why
    }
  });
  // Two prefetches at once (a bisect's background one and a step's) compute each (case, set) once:
  // a task another one has started is taken from it when done; one it has not started yet is
  // computed here.
  auto key_of = [&](const Task& t) { return todo[t.c].name() + "|" + std::to_string(t.set) + "|" + input_set_name(t.mode); };
  run_pool(tasks.size(), [&](size_t i) {
    Task& t = tasks[i];
    if (broken[t.c]) return;
    const std::string key = key_of(t);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (running_.count(key) || finished_.count(key) || find(todo[t.c], t.set, t.mode)) {
        t.elsewhere = true;
        return;
      }
      running_.insert(key);
    }
    try {
      const Problem p = make_input_set(todo[t.c], *bases[t.c], t.set, t.mode);
      if (on_set && t.set > 0) on_set(todo[t.c], t.set, t.mode, p);
      t.info = analyse(todo[t.c], p, t.set, t.mode, inner);
    } catch (...) {
      // left to get()
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.erase(key);
      if (t.info) finished_[key] = t.info;
    }
    done_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  for (auto& t : tasks) {
    const std::string key = key_of(t);
    if (t.elsewhere) {
      done_.wait(lock, [&] { return !running_.count(key); });
      auto it = finished_.find(key);
      if (it != finished_.end()) t.info = it->second;  // else in the cache already, or left to get()
    }
    finished_.erase(key);
    if (t.info && !find(todo[t.c], t.set, t.mode)) insert(std::move(t.info));
  }
}

}  // namespace nvfp4
