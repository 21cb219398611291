// external.cpp — manifests of outside paths, and the submission driver's side of a trial (see
// external.hpp).
#include "external.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "case_dir.hpp"
#include "check_json.hpp"
#include "errors.hpp"
#include "input_store.hpp"
#include "json_read.hpp"
#include "registry.hpp"
#include "user_file.hpp"

#ifndef NVFP4_HARNESS_SOURCE_DIR
#define NVFP4_HARNESS_SOURCE_DIR ""
#endif

namespace nvfp4 {

namespace {

Stage parse_stage(const std::string& name, const std::string& who) {
  for (Stage s : {Stage::Tune, Stage::Capture})
    if (name == stage_name(s)) return s;
  throw InputError(who + ": unknown extra stage '" + name + "' (known: tune, capture)");
}

std::vector<Stage> parse_stages(const std::string& joined, const std::string& who) {
  std::vector<Stage> out;
  size_t from = 0;
  while (from < joined.size()) {
    size_t comma = joined.find(',', from);
    if (comma == std::string::npos) comma = joined.size();
    if (comma > from) out.push_back(parse_stage(joined.substr(from, comma - from), who));
    from = comma + 1;
  }
  return out;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string shell_word(const std::string& s) {
  std::string o = "'";
  for (char ch : s) o += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return o + "'";
}

// python3 on PATH, resolved here so that the child execs a full path.
std::string find_python() {
  if (const char* env = std::getenv("NVFP4_PYTHON"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t from = 0;
  while (from <= dirs.size()) {
    size_t colon = dirs.find(':', from);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string cand = (colon > from ? dirs.substr(from, colon - from) : ".") + "/python3";
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    from = colon + 1;
  }
  throw InputError("--submission needs python3 on PATH (or NVFP4_PYTHON)");
}

}  // namespace

void register_manifest(const Manifest& m) {
  const std::string who = m.backend;
  auto refuse = [who](const char* what) {
    return std::string(what) + " of " + who + " is loaded only in trial children";
  };
  Backend b;
  b.name = m.backend;
  b.summary = m.summary;
  b.make_plain = [refuse](const Problem&, const PlanOptions&) -> std::unique_ptr<Plan> {
    throw std::logic_error(refuse("the plain path"));
  };
  register_backend(std::move(b));
  for (const auto& mo : m.optimizations) {
    Optimization o{mo, m.backend};
    o.make = [refuse](const Problem&, const PlanOptions&) -> std::unique_ptr<Plan> {
      throw std::logic_error(refuse("an optimization"));
    };
    o.wrap = [refuse](std::unique_ptr<Plan>, const PlanOptions&) -> std::unique_ptr<Plan> {
      throw std::logic_error(refuse("an optimization"));
    };
    register_optimization(std::move(o));
  }
}

Manifest probe_manifest(const ChildReport& probe) {
  Manifest m;
  for (const auto& f : probe.manifest) {
    if (f.size() >= 3 && f[0] == "backend") {
      if (!m.backend.empty())
        throw InputError("the load probe reported two backends, " + m.backend + " and " + f[1] + " (one per module)");
      m.backend = f[1];
      m.summary = f[2];
    } else if (f.size() >= 6 && f[0] == "optimization") {
      OptimizationManifest mo;
      mo.name = f[1];
      mo.stages = parse_stages(f[2], m.backend);
      mo.summary = f[3];
      mo.kind = f[4] == "variant" ? OptKind::Variant : OptKind::Wrapper;
      try {
        mo.order = std::stoi(f[5]);
      } catch (const std::exception&) {
        throw InputError("the load probe reported a bad order '" + f[5] + "' for " + f[1]);
      }
      m.optimizations.push_back(std::move(mo));
    }
  }
  if (m.backend.empty()) throw InputError("the load probe reported no manifest");
  return m;
}

std::string submission_driver_path() {
  if (const char* env = std::getenv("NVFP4_SUBMISSION_DRIVER"); env && *env) {
    if (!is_file(env)) throw InputError(std::string("NVFP4_SUBMISSION_DRIVER: no such file: ") + env);
    return env;
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "nvfp4_dual" / "submission_driver.py";
    if (is_file(installed.string())) return installed.string();
  }
  const std::string source = std::string(NVFP4_HARNESS_SOURCE_DIR) + "/submission_driver.py";
  if (is_file(source)) return source;
  throw InputError("cannot find submission_driver.py (set NVFP4_SUBMISSION_DRIVER)");
}

std::pair<External, Manifest> describe_submission(const std::string& path) {
  External e;
  e.kind = External::Submission;
  e.path = path;
  e.python = find_python();
  e.driver = submission_driver_path();
  if (!is_file(path)) {
    const std::string why = input_file_problem(path);
    throw InputError("--submission " + path + ": " + (why.empty() || why == "does not exist" ? "no such file" : why));
  }
  const std::string cmd = shell_word(e.python) + " " + shell_word(e.driver) + " describe " + shell_word(path) + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + e.driver);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw InputError("--submission: " + (out.empty() ? "the driver failed to describe " + path : out));
  // The description is the last line: stderr is read with stdout (for the refusals above), and
  // whatever the interpreter wrote there first (a warning, a notice from the environment's site
  // packages) is no part of it.
  const size_t last = out.rfind('\n');
  const std::string line = last == std::string::npos ? out : out.substr(last + 1);
  JsonValue d;
  try {
    d = JsonValue::parse(line);
  } catch (const InputError& e) {
    throw InputError("--submission " + path + ": the driver's description is not JSON (" + e.what() + "): " +
                     line.substr(0, 200));
  }
  if (!d.is_object()) throw InputError("--submission " + path + ": the driver's description is not a JSON object");
  std::filesystem::path fp(path);
  std::string name = fp.stem().string();
  if (name == "submission") {
    const std::string folder = std::filesystem::absolute(fp).parent_path().filename().string();
    if (!folder.empty()) name = folder;
  }
  Manifest m;
  m.backend = e.backend = "submission:" + name;
  m.summary = "Python submission " + path;
  e.alphas = d.find("alphas") && d.at("alphas").boolean();
  const bool torch = d.find("torch") && d.at("torch").boolean();
  const bool torch_data = d.str_or("data", "torch") == "torch";
  auto add = [&](const std::string& toggle, const std::string& summary) {
    std::vector<Stage> stages;
    if (const JsonValue* st = d.at("stages").find(toggle))
      for (const auto& s : st->items()) stages.push_back(parse_stage(s.str(), m.backend));
    m.optimizations.push_back({toggle, summary, OptKind::Wrapper, 0, stages});
  };
  for (const auto& t : d.at("toggles").items()) {
    add(t.str(), "the submission's own toggle");
    e.own_toggles.push_back(t.str());
  }
  // The driver could tell from the source alone that nothing binds custom_kernel (false only where
  // the name appears nowhere and nothing dynamic could bind it: protocol.py binds_custom_kernel):
  // no submission.
  const JsonValue* kernel = d.find("custom_kernel");
  if (kernel && kernel->is_bool() && !kernel->boolean())
    throw InputError("--submission " + path + ": defines no custom_kernel (the evaluator imports custom_kernel from it)");
  if (torch && torch_data)
    for (const auto& t : d.at("provided").items()) add(t.str(), "provided by the harness's driver");
  return {e, m};
}

std::vector<SubmissionCall> submission_calls(const TrialSpec& spec, const External& e) {
  const int runs = spec.options.runs;
  const InputSet fresh = spec.options.fresh;
  std::vector<SubmissionCall> calls;
  for (int call = 1; call <= runs; ++call) {
    SubmissionCall k;
    k.set = checked_call_set(call);
    k.new_tensors = runs == 1 || (runs - call) % 2 == 1;
    k.mode = k.new_tensors ? InputSet::All : fresh;
    k.keep_alphas = k.mode == InputSet::All && !e.alphas;
    calls.push_back(k);
  }
  SubmissionCall warm;
  warm.set = warmup_set(runs);
  warm.mode = fresh;
  warm.keep_alphas = fresh == InputSet::All && !e.alphas;
  calls.push_back(warm);
  return calls;
}

Problem submission_input_set(const TrialSpec& spec, const Problem& base, const SubmissionCall& k) {
  Problem p;
  // The parent's store holds the sets of the trial's own mode (input_store.hpp); others are built.
  if (k.set == 0)
    p = base;
  else if (!read_stored_set(spec.options.input_store, spec.c, k.set, k.mode, p))
    p = make_input_set(spec.c, base, k.set, k.mode);
  if (k.keep_alphas) {
    p.alpha1 = base.alpha1;
    p.alpha2 = base.alpha2;
  }
  return p;
}

SubmissionCall submission_timed_set(const TrialSpec& spec, const External& e, int set) {
  SubmissionCall k;
  k.set = set;
  k.mode = spec.options.fresh;
  k.keep_alphas = k.mode == InputSet::All && !e.alphas;
  return k;
}

std::string submission_call_text(const SubmissionCall& k, int runs) {
  return std::string(k.new_tensors ? "new tensors, " : "in place, ") +
         (k.mode == InputSet::All ? "new weights, " : "new activations, ") + input_set_label(k.set, runs);
}

void write_submission_inputs(const TrialSpec& spec, const std::string& dir) {
  const External* e = spec.options.external(spec.backend);
  if (!e) throw std::logic_error("write_submission_inputs: " + spec.backend + " is not a submission");
  Problem base;
  if (!read_stored_set(spec.options.input_store, spec.c, 0, InputSet::Activations, base)) base = spec.c.make();
  const int runs = spec.options.runs;
  const auto calls = submission_calls(spec, *e);
  auto write = [&](const std::string& sub, const Problem& p) {
    const std::string folder = dir + "/" + sub;
    std::filesystem::create_directories(folder);
    save_case(folder, p);
    if (p.alpha1 != 1.0f || p.alpha2 != 1.0f)
      // The driver makes float32 arrays of them (nvfp4_driver/inputs.py): each float's exact double
      // reads back as that float.
      write_text_file(folder + "/alphas.json",
                      json_text(Json{{"alpha1", double(p.alpha1)}, {"alpha2", double(p.alpha2)}}) + "\n");
    return folder;
  };
  auto save = [&](const std::string& sub, const SubmissionCall& k) {
    return write(sub, submission_input_set(spec, base, k));
  };
  save("case", calls[size_t(runs)]);
  for (int i = 0; i < runs; ++i) {
    const SubmissionCall& k = calls[size_t(i)];
    const std::string folder = save("call" + std::to_string(i), k);
    write_text_file(folder + "/set", std::to_string(k.set) + "\n");
    write_text_file(folder + "/call", std::string(k.new_tensors           ? "new"
                                                  : k.mode == InputSet::All ? "in-place all"
                                                                            : "in-place activations") +
                                          "\n");
  }
  // The later calls' one call of another shape (submission_driver.py later_calls), which the driver
  // makes unless it replays its own graph or compiles.
  bool driver_wraps = false;
  for (const char* t : {"graph", "compile", "max-autotune"}) driver_wraps = driver_wraps || spec.combo.has(t);
  if (has_other_shape(spec.c) && !driver_wraps)
    write("other", make_input_set(spec.c, base, kOtherShapeSet, InputSet::Activations));
  // Bench trials time calls on sets 0..R in the trial's own mode (submission_driver.py, stage time).
  if (spec.options.bench)
    for (int set = 0; set < runs; ++set) save("bench" + std::to_string(set), submission_timed_set(spec, *e, set));
}

std::vector<std::string> submission_child_args(const External& e, const TrialSpec& spec, int fd,
                                               const std::string& dir) {
  std::vector<std::string> args = {e.python, e.driver, "run", "--fd", std::to_string(fd), "--dir", dir,
                                   "--submission", e.path, "--toggles", spec.combo.str(),
                                   "--warmup", std::to_string(spec.options.warmup),
                                   "--runs", std::to_string(spec.options.runs), "--emulate-fp4", e.emulate_fp4};
  if (spec.options.bench) {
    const TimingRule& t = spec.options.timing;
    auto num = [](double v) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      return std::string(buf);
    };
    for (const std::string& a : {std::string("--bench"), std::string("--bench-rse"), num(t.rse),
                                 std::string("--bench-max-time"), num(t.max_time_s),
                                 std::string("--bench-min-reps"), std::to_string(t.min_reps),
                                 std::string("--bench-max-reps"), std::to_string(t.max_reps)})
      args.push_back(a);
  }
  return args;
}

}  // namespace nvfp4
