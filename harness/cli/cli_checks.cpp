// cli_checks.cpp — the harness CLI's up-front refusals (see cli_checks.hpp).
#include "cli_checks.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "autotune.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "registry.hpp"
#include "user_file.hpp"

namespace po = boost::program_options;

namespace nvfp4::cli {

namespace {

[[noreturn]] void refuse(const std::string& what) { throw InputError(what); }

bool blank(const std::string& s) { return s.find_first_not_of(" \t\n\r") == std::string::npos; }

// "12.3 GiB" (or MiB below 1 GiB).
std::string gib(double bytes) {
  char buf[48];
  if (bytes < double(1u << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1u << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1u << 30));
  return buf;
}

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// A decimal unsigned integer below 2^64, nothing else (no sign, no exponent, no spaces).
bool is_u64(const std::string& s) {
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  uint64_t v = 0;
  for (char c : s) {
    const uint64_t d = uint64_t(c - '0');
    if (v > (~uint64_t(0) - d) / 10) return false;
    v = v * 10 + d;
  }
  return true;
}

// Whether two paths name the same existing file: the same device and inode, so ./x, x, a hard
// link and a symbolic link to it all match.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// `path` made absolute, with the symbolic links of its final component followed, also to a target
// that does not exist yet: weakly_canonical resolves only a path's existing part, so a dangling
// link would keep its own name and a write through it would land on another output unseen. A
// relative target is resolved against the link's directory; at most 40 links are followed (a
// loop stops there, as the kernel's ELOOP does).
std::filesystem::path follow_final_links(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return fs::path(path);
  for (int i = 0; i < 40; ++i) {
    if (!fs::is_symlink(fs::symlink_status(p, ec)) || ec) break;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p;
}

// Whether two output paths will be one file: same_file when both exist, else the same absolute
// path once the symbolic links of the final component are followed (follow_final_links, dangling
// ones too) and ".", ".." and the links of the directories that exist are resolved.
bool same_output(const std::string& a, const std::string& b) {
  if (same_file(a, b)) return true;
  std::error_code e1, e2;
  const auto ca = std::filesystem::weakly_canonical(follow_final_links(a), e1);
  const auto cb = std::filesystem::weakly_canonical(follow_final_links(b), e2);
  return !e1 && !e2 && ca.lexically_normal() == cb.lexically_normal();
}

std::string in_dir(const std::string& dir, const std::string& file) {
  return dir.empty() || dir.back() == '/' ? dir + file : dir + "/" + file;
}

const char* const kCaseFiles[] = {"a.npy", "b1.npy", "b2.npy", "sfa.npy", "sfb1.npy", "sfb2.npy"};

template <typename T>
T get(const po::variables_map& vm, const char* name) {
  return vm[name].as<T>();
}

}  // namespace

void check_tokens(const po::parsed_options& parsed) {
  for (const auto& o : parsed.options) {
    if (o.string_key.empty() || o.position_key >= 0) {
      const std::string tok = !o.original_tokens.empty() ? o.original_tokens.front()
                              : !o.value.empty()         ? o.value.front()
                                                         : std::string();
      refuse("unexpected argument '" + tok +
             "': a mode word comes first (harness verify|bisect|bench|check|merge|render|list|rehearse ...), and every "
             "option takes one value; write lists with commas (--verify plain,fused; --shape 1x1x16,7x13x48)");
    }
    const std::string opt = "--" + o.string_key;
    for (const auto& v : o.value)
      if (blank(v)) refuse(opt + " needs a value (got an empty string)");
    if (o.string_key == "seed" || o.string_key == "bench-seed" || o.string_key == "secret-seed")
      for (const auto& v : o.value)
        if (!is_u64(v)) refuse(opt + " '" + v + "': expected an integer in [0, 2^64 - 1]");
  }
}

void check_values(const po::variables_map& vm) {
  auto at_least = [&](const char* name, int lo) {
    const int v = get<int>(vm, name);
    if (v < lo) refuse(std::string("--") + name + " must be >= " + std::to_string(lo) + " (got " + std::to_string(v) + ")");
  };
  at_least("warmup", 0);
  at_least("runs", 1);
  if (get<int>(vm, "runs") > kMaxRuns)
    refuse("--runs must be at most " + std::to_string(kMaxRuns) + " (got " + std::to_string(get<int>(vm, "runs")) +
           "): each checked call's input set and exact reference are built before the trial");
  at_least("tune-reps", 1);
  // Seconds are bounded so that deadline arithmetic cannot overflow (a huge budget would wrap
  // into the past); NaN fails both comparisons.
  auto seconds = [&](const char* name, bool zero_ok) {
    const double v = get<double>(vm, name);
    if (!(zero_ok ? v >= 0 : v > 0) || !(v <= 1e6))
      refuse(std::string("--") + name + " must be a " + (zero_ok ? "non-negative" : "positive") +
             " number of seconds, at most 1e6 (got " + number(v) + ")");
  };
  for (const auto& s : kStages)
    if (has_own_budget(s.id)) seconds((std::string("budget-") + s.name).c_str(), false);
  seconds("budget-trial", false);
  seconds("tune-time", false);
  seconds("slow-seconds", true);
  if (vm.count("max-memory")) {
    const double g = get<double>(vm, "max-memory");
    if (!(g > 0) || !(g <= 1e6)) refuse("--max-memory must be a positive number of GiB, at most 1e6 (got " + number(g) + ")");
  }

  const bool inputs = vm.count("inputs") > 0;
  for (const char* needs_inputs : {"batch-last", "check", "save-output"})
    if (vm.count(needs_inputs) && !inputs)
      refuse(std::string("--") + needs_inputs + " needs --inputs DIR (it is about a case directory)");
  if (inputs)
    for (const char* generated : {"shape", "dist", "seed"})
      if (vm.count(generated))
        refuse(std::string("--") + generated + " describes generated cases; not with --inputs (the directory is the case)");
}

RunPolicy run_policy(const po::variables_map& vm) {
  RunPolicy p;
  if (vm.count("isolate")) p.isolate = parse_isolation(get<std::string>(vm, "isolate"));
  if (vm.count("gpus")) {
    const std::string text = get<std::string>(vm, "gpus");
    if (text == "all") {
      const int n = count_gpus();
      if (n == 0) refuse("--gpus all: no NVIDIA GPU found (/proc/driver/nvidia/gpus, nvidia-smi -L)");
      for (int i = 0; i < n; ++i) p.gpus.push_back(std::to_string(i));
    } else {
      p.gpus = parse_gpu_list(text);
    }
  } else {
    p.gpus = gpus_from_ctest([](const std::string& name) { return std::getenv(name.c_str()); });
  }
  p.jobs = default_jobs(p.gpus.size(), std::thread::hardware_concurrency());
  if (vm.count("jobs")) {
    p.jobs = get<int>(vm, "jobs");
    if (p.jobs < 1 || p.jobs > 1024) refuse("--jobs must be in [1, 1024] (got " + std::to_string(p.jobs) + ")");
  }
  return p;
}

namespace {

// No output is a file this run reads, and no two outputs are one file: a report or C written
// over a case file, the c.npy or --check file being judged, a plugin, a submission, a report
// being merged or rendered or the autotune cache would destroy the user's own data (the case's
// c.npy would silently become the reference it is checked against). The case's c.npy is an input
// only where it is read (`reads_case_output`: harness check); verify and bisect never read it.
void check_outputs_spare_inputs(const po::variables_map& vm, bool reads_case_output) {
  // (path, what it is, for the message): inputs only, existing when read (compared by identity).
  std::vector<std::pair<std::string, std::string>> inputs;
  if (vm.count("inputs")) {
    const std::string dir = get<std::string>(vm, "inputs");
    for (const char* f : kCaseFiles) inputs.push_back({in_dir(dir, f), std::string("the case's input ") + f});
    if (reads_case_output)
      inputs.push_back({in_dir(dir, "c.npy"), "the case's input c.npy (the output checked when no --check is given)"});
  }
  if (vm.count("check")) inputs.push_back({get<std::string>(vm, "check"), "the --check file (the output being checked)"});
  for (const char* many : {"plugin", "submission", "merge", "report-html"})
    if (vm.count(many))
      for (const auto& path : get<std::vector<std::string>>(vm, many))
        inputs.push_back({path, many == std::string("report-html") ? "a report this render reads"
                                : many == std::string("merge")     ? "a shard report this merge reads"
                                                                   : std::string("the --") + many + " file"});
  if (vm.count("task")) inputs.push_back({get<std::string>(vm, "task"), "the --task file"});
  // The autotune cache is read and also written by the run, so it may not exist yet: compared as
  // an output (same_output), not only by the identity of an existing file.
  const std::string cache = vm.count("tune-cache") ? autotune_cache_file(get<std::string>(vm, "tune-cache")) : "";
  std::vector<std::string> seen;  // the outputs before this one
  for (const char* out : {"json", "save-output", "bench-json", "junit", "html"}) {
    if (!vm.count(out)) continue;
    const std::string path = get<std::string>(vm, out), opt = std::string("--") + out;
    for (const auto& [in, what] : inputs)
      if (same_file(path, in))
        refuse(opt + " " + path + ": is " + what + "; it would be overwritten (name another file)");
    if (!cache.empty() && same_output(path, cache))
      refuse(opt + " " + path + ": is the --tune-cache directory's cache file " + cache +
             "; it would be overwritten (name another file)");
    for (const auto& other : seen)
      if (!(other == "json" && out == std::string("bench-json")) &&  // two names of one report: bench_cli refuses
          same_output(path, get<std::string>(vm, other.c_str())))
        refuse("--" + other + " and " + opt + " name the same file " + path + ": give each output a file of its own");
    seen.push_back(out);
  }
}

}  // namespace

void check_paths(const po::variables_map& vm, bool reads_case_output) {
  for (const char* out : {"json", "save-output", "junit", "html", "bench-json"}) {
    if (!vm.count(out)) continue;
    const std::string path = get<std::string>(vm, out);
    const std::string why = output_file_problem(path);
    if (!why.empty()) refuse(std::string("--") + out + " " + path + ": " + why);
  }
  // Outside paths: each names an existing readable regular file. The library or module is opened
  // only in trial children (a load that fails there is that trial's ERROR), but a path that names
  // nothing, a directory or a FIFO is the user's mistake, refused here before any work.
  for (const char* outside : {"plugin", "submission"}) {
    if (!vm.count(outside)) continue;
    for (const auto& path : get<std::vector<std::string>>(vm, outside)) {
      struct stat st;
      const bool missing = ::stat(path.c_str(), &st) != 0 && errno == ENOENT;
      const std::string why = missing ? "no such file" : input_file_problem(path);
      if (!why.empty()) refuse(std::string("--") + outside + " " + path + ": " + why);
    }
  }
  if (vm.count("check")) {
    const std::string path = get<std::string>(vm, "check");
    const std::string why = input_file_problem(path);
    if (!why.empty()) refuse("--check " + path + ": " + why);
  }
  if (vm.count("inputs")) {
    const std::string dir = get<std::string>(vm, "inputs");
    const std::string why = directory_problem(dir, false, false);
    if (!why.empty()) {
      const bool npz = dir.size() > 4 && dir.compare(dir.size() - 4, 4, ".npz") == 0;
      refuse("--inputs " + dir + ": " + why + " (a case directory holds a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy" +
             (npz ? "; from an .npz archive: np.savez's arrays, each saved with np.save as DIR/NAME.npy)" : ")"));
    }
  }
  if (vm.count("tune-cache")) {
    const std::string dir = get<std::string>(vm, "tune-cache");
    std::string why = directory_problem(dir, true, true);
    if (!why.empty()) refuse("--tune-cache " + dir + ": " + why);
    // Made now, so that a directory that cannot exist (under /proc, say) is refused before any work.
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) refuse("--tune-cache " + dir + ": cannot be created (" + ec.message() + ")");
    const std::string file = autotune_cache_file(dir);
    struct stat st;
    if (::lstat(file.c_str(), &st) == 0) {
      why = input_file_problem(file);
      if (why.empty()) why = output_file_problem(file);
      if (!why.empty()) refuse("--tune-cache " + dir + ": its cache file " + file + " " + why);
    }
  }
  check_outputs_spare_inputs(vm, reads_case_output);
}

void check_case_output(const std::string& inputs_dir, const std::string& c_npy) {
  const std::string why = input_file_problem(c_npy);
  if (!why.empty())
    refuse(c_npy + ": " + why + " (a c.npy in the --inputs directory " + inputs_dir +
           " is checked against the exact reference)");
}

std::vector<std::string> list_values(const po::variables_map& vm, const char* option) {
  if (!vm.count(option)) return {};
  const std::string opt = std::string("--") + option;
  std::vector<std::string> items;
  // Repeatable options hold a vector of values, the others one string.
  std::vector<std::string> values;
  if (const auto* many = boost::any_cast<std::vector<std::string>>(&vm[option].value()))
    values = *many;
  else
    values.push_back(get<std::string>(vm, option));
  for (const auto& value : values) {
    if (blank(value)) refuse(opt + " needs a value (got an empty string)");
    std::string cur;
    for (char ch : value + ",") {
      if (ch == ',') {
        if (cur.empty()) refuse(opt + " '" + value + "': empty item in the comma-separated list");
        items.push_back(cur);
        cur.clear();
      } else if (ch != ' ') {
        cur += ch;
      }
    }
  }
  return items;
}

SuiteFilter suite_filter(const po::variables_map& vm) {
  SuiteFilter f;
  for (const auto& s : list_values(vm, "shape")) {
    try {
      f.shapes.push_back(Shape::parse(s));
    } catch (const InputError& e) {
      refuse(std::string("--shape: ") + e.what());
    }
  }
  const auto& names = distribution_names();
  for (const auto& d : list_values(vm, "dist")) {
    if (std::find(names.begin(), names.end(), d) == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      refuse("--dist: unknown distribution '" + d + "' (known: " + known + ")");
    }
    f.dists.push_back(d);
  }
  if (vm.count("seed")) f.seed = get<uint64_t>(vm, "seed");  // digits below 2^64: check_tokens
  return f;
}

std::vector<Fault> faults(const po::variables_map& vm) {
  std::vector<Fault> out;
  if (!vm.count("inject")) return out;
  for (const auto& text : vm["inject"].as<std::vector<std::string>>()) {
    Fault f;
    try {
      f = Fault::parse(text);
    } catch (const InputError& e) {
      refuse(std::string("--inject: ") + e.what());
    }
    if (f.conditional) {
      const Registry& reg = Registry::instance();
      bool valid = false;
      std::string first_error, known;
      for (const auto* b : reg.backends()) {
        try {
          check_combo(b->name, f.only_if);
          valid = true;
        } catch (const InputError& e) {
          if (first_error.empty()) first_error = e.what();
        }
        std::string names;
        for (const auto* o : reg.optimizations(b->name)) names += (names.empty() ? "" : " ") + o->name;
        known += (known.empty() ? "" : "; ") + b->name + ": " + names;
      }
      if (!valid)
        refuse("--inject " + text + ": if=" + f.only_if.str() +
               " is no combination of any backend, so the fault would never fire (" + first_error +
               "; optimizations: " + known + ")");
    }
    out.push_back(f);
  }
  return out;
}

// ---- memory ----

MemoryLimit memory_limit(const po::variables_map& vm) {
  MemoryLimit lim;
  if (vm.count("max-memory")) {
    lim.bytes = get<double>(vm, "max-memory") * double(1u << 30);
    lim.source = "--max-memory";
    return lim;
  }
  {
    std::ifstream f("/proc/meminfo");
    std::string key;
    double kb = 0;
    std::string unit;
    while (f >> key >> kb) {
      std::getline(f, unit);
      if (key == "MemAvailable:") {
        lim.bytes = kb * 1024;
        lim.source = "MemAvailable in /proc/meminfo";
        break;
      }
    }
  }
  if (lim.source.empty()) {
    lim.bytes = double(sysconf(_SC_AVPHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
    lim.source = "free physical memory";
  }
  // A container's own limit (cgroup v2) is lower than the machine's when it is set.
  std::ifstream max_f("/sys/fs/cgroup/memory.max"), cur_f("/sys/fs/cgroup/memory.current");
  std::string max_s;
  double cur = 0;
  if (max_f >> max_s && max_s != "max" && cur_f >> cur) {
    const double room = std::max(0.0, std::strtod(max_s.c_str(), nullptr) - cur);
    if (room < lim.bytes) {
      lim.bytes = room;
      lim.source = "the cgroup's memory.max less memory.current";
    }
  }
  return lim;
}

MemoryEstimate estimate_memory(const Shape& s, int runs) {
  const double L = double(s.L), M = double(s.M), N = double(s.N), K = double(s.K);
  const double lmn = L * M * N, T = std::max(1u, std::thread::hardware_concurrency());
  const double problem = L * (M + 2 * N) * (K / 2 + K / 16);  // A, B1, B2 and their scales
  MemoryEstimate e;

  // Parent, reference/reference.cpp: G, U, |G| and |U| sums in double and C in fp16; the decoded
  // A super-block (at most 2^25 rows x K elements) with its |A|; per worker thread 2*min(N, 256)
  // decoded B rows (fp64 and |B|) and the products of its tile.
  const double w = 2 * std::min(N, 256.0);
  const double super_m = std::max(1.0, std::min(M, std::floor(double(1 << 25) / K)));
  const double n_chunks = std::ceil(N / 256);
  double tile_m = super_m;
  if (n_chunks < 2 * T) {
    const double m_tiles = std::max(1.0, std::min(std::ceil(2 * T / n_chunks), std::ceil(super_m / 16)));
    tile_m = std::ceil(super_m / m_tiles);
  }
  e.reference = problem + 34 * lmn + 16 * super_m * K + T * (16 * w * K + 21 * tile_m * w);
  if (runs <= 0) return e;

  // A trial child (the CPU paths hold the most on the host, optimized/cpu/): the problem, the
  // plan's C and the run stage's copy; plain's fp32 G and U, their copies read back and decoded
  // A, or fused's decoded [B1; B2] and per-thread row blocks (up to 256 rows). The parent then
  // reads back every checked call's C and the fp32 intermediates.
  const double plain = 16 * lmn + 4 * M * K + T * 256 * K * 4;
  const double fused = 8 * N * K + T * 256 * (K + 2 * N) * 4;
  const double child = problem + 4 * lmn + std::max(plain, fused);
  // Stage configs: one output per configuration the path offers, read back by the parent (the
  // fused kernel offers up to 18 on a shape, the CPU paths fewer; 24 errs high).
  const double config_outputs = 24;
  e.trial = child + 2 * lmn * runs + 8 * lmn + 2 * lmn * config_outputs;
  return e;
}

void check_memory(const Shape& s, int runs, const MemoryLimit& limit, const std::string& what) {
  const MemoryEstimate e = estimate_memory(s, runs);
  if (e.total() <= limit.bytes) return;
  refuse(what + ": shape " + s.str() + " needs about " + gib(e.total()) + " (exact reference " + gib(e.reference) +
         (runs > 0 ? ", a trial " + gib(e.trial) : std::string()) + "), more than the " + gib(limit.bytes) +
         " available (" + limit.source + (limit.source == "--max-memory" ? "" : "; --max-memory GiB sets the limit") +
         ")");
}

}  // namespace nvfp4::cli
