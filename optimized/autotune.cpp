// autotune.cpp — the "autotune" optimization (docs/design.md §3), one generic wrapper for every backend.
//
// Stage tune: for each candidate configuration the wrapped plan offers (Plan::candidates(), e.g.
// cuBLASLt algorithms, fused tile configs, CPU block sizes) it selects it, makes one warm call,
// then times the median of reps calls with the timing helper every timing shares (plan.hpp:
// seconds_per_call over Plan::timed_calls, so cold caches and CUDA events on a GPU, the host clock
// on the CPU; the bench's stage time uses the same helper); the fastest is selected. reps is tune_reps, or fewer
// (at least 1) when the warm call shows that tune_reps calls would overrun the candidate's share
// of PlanOptions::tune_budget_s (budget / number of candidates); candidates stop being tried once
// the budget has passed (at least one is always timed).
// The winner is cached per Plan::tune_key() (which names the device, driver and library versions,
// the shape and the variant): in this process (a static map) and, when
// PlanOptions::tune_cache_dir is set, on disk in <dir>/autotune-cache.txt, one line per result:
//   v1 <TAB> key <TAB> candidate count <TAB> index <TAB> candidate name <TAB> seconds per call
// (the last matching line wins; an entry is used only if the candidate at that index still has
// that name). An empty tune_key disables caching. describe() says what was chosen and how
// ("timed", "cached in process", "cached on disk").
// It is a Wrapper with order 10, inside graph (order 20): tuning is never inside a capture.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "autotune.hpp"
#include "registry.hpp"
#include "user_file.hpp"

namespace nvfp4 {

namespace {

struct Winner {
  size_t index = 0;
  std::string candidate;
  double seconds = 0;
};

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, Winner>& process_cache() {
  static std::map<std::string, Winner> m;
  return m;
}

// Tabs and newlines would break the one-line-per-entry file format.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string cache_file(const std::string& dir) { return autotune_cache_file(dir); }

// The cache file is opened through user_file.hpp: a FIFO or device where it should be is refused
// (InputError naming its type) instead of blocking the trial until its tune budget runs out.
bool disk_lookup(const std::string& dir, const std::string& key, size_t count, Winner* w) {
  struct stat st;
  if (::stat(cache_file(dir).c_str(), &st) != 0) return false;  // no cache yet
  UserFile f = UserFile::open_read(cache_file(dir));
  std::string text(size_t(f.size()), '\0');
  f.read_exact(&text[0], text.size());
  bool found = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream is(line);
    for (std::string field; std::getline(is, field, '\t');) fields.push_back(field);
    if (fields.size() != 6 || fields[0] != "v1" || fields[1] != key) continue;
    if (std::strtoull(fields[2].c_str(), nullptr, 10) != count) continue;
    w->index = size_t(std::strtoull(fields[3].c_str(), nullptr, 10));
    w->candidate = fields[4];
    w->seconds = std::strtod(fields[5].c_str(), nullptr);
    found = true;
  }
  return found;
}

void disk_store(const std::string& dir, const std::string& key, size_t count, const Winner& w) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.9g", w.seconds);
  const std::string line = "v1\t" + key + '\t' + std::to_string(count) + '\t' + std::to_string(w.index) + '\t' +
                           one_line(w.candidate) + '\t' + secs + '\n';
  try {
    UserFile f = UserFile::open_write(cache_file(dir), /*append=*/true);
    f.write_all(line.data(), line.size());
    f.close();
  } catch (const std::runtime_error&) {
    // A cache that cannot be written (a read-only directory, a full disk) only costs time next
    // run; a special file where the cache belongs is refused like every user-named path.
    struct stat st;
    if (::stat(cache_file(dir).c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw;
  }
}

std::string micros(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

class AutotunePlan : public PlanWrapper {
 public:
  AutotunePlan(std::unique_ptr<Plan> inner, const PlanOptions& options)
      : PlanWrapper(std::move(inner)), options_(options) {}

  std::string describe() const override { return inner().describe() + " [autotune: " + how_ + "]"; }

  void tune() override {
    inner().tune();  // anything inside tunes first
    const std::vector<std::string> cands = inner().candidates();
    if (cands.empty()) {
      how_ = "nothing to tune (the path offers no candidates)";
      return;
    }
    const std::string raw_key = inner().tune_key();
    const std::string key = one_line(raw_key);
    const size_t n = cands.size();
    if (!key.empty()) {
      Winner w;
      bool hit;
      {
        std::lock_guard<std::mutex> lock(cache_mutex());
        auto it = process_cache().find(key + '\t' + std::to_string(n));
        hit = it != process_cache().end();
        if (hit) w = it->second;
      }
      if (hit && w.index < n && one_line(cands[w.index]) == w.candidate) {
        inner().select(w.index);
        how_ = cands[w.index] + " (cached in process, " + micros(w.seconds) + " per call when timed)";
        return;
      }
      if (!options_.tune_cache_dir.empty() && disk_lookup(options_.tune_cache_dir, key, n, &w) &&
          w.index < n && one_line(cands[w.index]) == w.candidate) {
        inner().select(w.index);
        remember(key, n, w);
        how_ = cands[w.index] + " (cached on disk in " + cache_file(options_.tune_cache_dir) + ", " +
               micros(w.seconds) + " per call when timed)";
        return;
      }
    }

    // Time the candidates. Each gets an equal share of the tuning budget: the warm call's time
    // decides how many timed calls fit (at least 1, at most tune_reps).
    const auto t0 = std::chrono::steady_clock::now();
    auto since_t0 = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    const int max_reps = options_.tune_reps < 1 ? 1 : options_.tune_reps;
    const double share = options_.tune_budget_s / double(n);
    Winner best;
    best.seconds = -1;
    size_t timed = 0;
    int min_reps = max_reps;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0 && since_t0() > options_.tune_budget_s) break;
      inner().select(i);
      const double w0 = since_t0();
      inner().enqueue();  // warm call: first-use costs (code paths, caches) are not timed
      inner().synchronize();
      const double warm = since_t0() - w0;
      int reps = max_reps;
      if (warm > 0 && warm * max_reps > share) reps = std::max(1, int(share / warm));
      min_reps = std::min(min_reps, reps);
      const double s = seconds_per_call(inner(), reps);
      ++timed;
      if (best.seconds < 0 || s < best.seconds) {
        best.index = i;
        best.candidate = one_line(cands[i]);
        best.seconds = s;
      }
    }
    inner().select(best.index);
    how_ = cands[best.index] + " (timed " + std::to_string(timed) + " of " + std::to_string(n) +
           " candidates, " + micros(best.seconds) + " per call" +
           (min_reps < max_reps ? ", down to " + std::to_string(min_reps) + " timed calls per candidate to fit the budget" : "") +
           (timed < n ? ", stopped by the " + std::to_string(options_.tune_budget_s) + " s tuning budget" : "") +
           (key.empty() ? "; not cached: the path gives no tune key" : "") + ")";
    if (!key.empty()) {
      remember(key, n, best);
      if (!options_.tune_cache_dir.empty()) disk_store(options_.tune_cache_dir, key, n, best);
    }
  }

 private:
  static void remember(const std::string& key, size_t n, const Winner& w) {
    std::lock_guard<std::mutex> lock(cache_mutex());
    process_cache()[key + '\t' + std::to_string(n)] = w;
  }

  PlanOptions options_;
  std::string how_ = "not tuned yet";
};

}  // namespace

Optimization autotune_for(const char* backend) {
  Optimization o;
  o.backend = backend;
  o.name = "autotune";
  o.summary = "time the path's candidate configurations on first use and keep the fastest (cached per tune key)";
  o.kind = OptKind::Wrapper;
  o.order = 10;  // inside graph (20): tuning never happens inside a capture
  o.stages = {Stage::Tune};
  o.wrap = [](std::unique_ptr<Plan> inner, const PlanOptions& options) -> std::unique_ptr<Plan> {
    return std::make_unique<AutotunePlan>(std::move(inner), options);
  };
  return o;
}

}  // namespace nvfp4
