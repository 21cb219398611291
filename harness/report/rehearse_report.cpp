// rehearse_report.cpp — the rehearsal's verdicts, console text and JSON (see rehearse_report.hpp).
// The child's account is read with nlohmann/json; an account that is missing or unreadable (a
// child killed before its first write) counts as empty, never as an error of the harness.
#include "rehearse_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace nvfp4 {

namespace {

using json = nlohmann::json;

json parse_account(const std::string& text) {
  if (text.empty()) return json::object();
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

double num(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

bool ranked(const json& c) {
  const std::string ph = str(c, "phase");
  return ph == "benchmark" || ph == "leaderboard";
}

bool warmup(const json& c) { return str(c, "phase").find("warmup") != std::string::npos; }

// "64x32x64x1 seed 5", or "seeds 53..221" for a benchmark's 50 data objects.
std::string case_shape(const json& c) {
  std::string s;
  if (c.contains("shape") && c["shape"].is_array())
    for (const auto& d : c["shape"]) s += (s.empty() ? "" : "x") + std::to_string(d.get<long long>());
  if (c.contains("seeds") && c["seeds"].is_array() && c["seeds"].size() == 2)
    return s + " seeds " + std::to_string(c["seeds"][0].get<long long>()) + ".." +
           std::to_string(c["seeds"][1].get<long long>());
  return s + " seed " + std::to_string(c.value("seed", 0LL));
}

// "test 3", "case 2", "warm-up 1" (benchmark mode's single warm-up: "warm-up").
std::string case_name(const json& c) {
  const std::string ph = str(c, "phase");
  const int i = c.value("index", 0) + 1;
  if (ph == "test") return "test " + std::to_string(i);
  if (ph == "benchmark-warmup") return "warm-up";
  if (ph == "leaderboard-warmup") return "warm-up " + std::to_string(i);
  return "case " + std::to_string(i);
}

double mean_us(const json& c) {
  const auto it = c.find("stats");
  return it != c.end() && it->is_object() ? num(*it, "mean_ns") / 1e3 : NAN;
}

// The geometric mean of the ranked cases' means (the leaderboard's score, task.yml:64), when every
// ranked case of the task passed; NAN otherwise.
double geomean_us(const json& account) {
  const json cases = account.value("cases", json::array());
  int n = 0;
  double logs = 0;
  for (const auto& c : cases)
    if (ranked(c)) {
      if (str(c, "status") != "pass" || !(mean_us(c) > 0)) return NAN;
      logs += std::log(mean_us(c));
      ++n;
    }
  const int total = account.contains("case_counts") ? account["case_counts"].value("benchmarks", 0) : 0;
  return n > 0 && n == total ? std::exp(logs / n) : NAN;
}

// The case a killed or failed child was in: the last entry still running.
const json* current_case(const json& account) {
  const auto it = account.find("cases");
  if (it == account.end() || !it->is_array() || it->empty()) return nullptr;
  const json& last = it->back();
  return str(last, "status") == "running" ? &last : nullptr;
}

std::string of_total(const json& account, const json& c) {
  const json counts = account.value("case_counts", json::object());
  const int n = str(c, "phase") == "test" ? counts.value("tests", 0) : counts.value("benchmarks", 0);
  if (str(c, "phase") == "benchmark-warmup" || n == 0) return "";
  return " of " + std::to_string(n);
}

// The account saves a benchmark's repeat count at most once a second (rehearse.py _repeats), so a
// killed child had done at least the count it says.
std::string step_text(const json& c) {
  const std::string step = str(c, "step");
  if (step == "generate") return "generating its data";
  if (step == "call") return str(c, "phase") == "test" ? "in its call" : "in its first call";
  if (step == "calls") return "in its other checked calls";
  if (step == "check") return "checking its outputs";
  if (step == "repeats") return "in its timed repeats (at least " + std::to_string(c.value("repeats", 0)) + " done)";
  return step;
}

// "tests 1-3 ..." : the cases that had finished, each with its status (and mean when timed).
std::string finished_text(const json& account) {
  std::string out;
  for (const auto& c : account.value("cases", json::array())) {
    if (str(c, "status") == "running") continue;
    std::string item = case_name(c) + " " + (str(c, "status") == "pass" ? "passed" : "failed");
    if (ranked(c) && mean_us(c) > 0) item += " (" + fmt("%.2f", mean_us(c)) + " us)";
    out += (out.empty() ? "" : ", ") + item;
  }
  return out.empty() ? "nothing" : out;
}

// Where the child was when it ended: the stage, and the case and step when in one.
// With `elapsed`, the seconds it had spent in that stage (for a child that was killed).
std::string where_text(const RehearsalChild& ch, const json& account, bool elapsed = true) {
  std::string s = "in stage " + ch.stage, what;
  if (ch.stage == "load") what = "the import of the submission";
  if (ch.stage == "setup") what = "the interpreter's and the driver's start";
  if (elapsed) what += (what.empty() ? "" : "; ") + fmt("%.1f", ch.stage_elapsed_s) + " s in it";
  if (!what.empty()) s += " (" + what + ")";
  if (const json* c = current_case(account))
    s += ", " + case_name(*c) + of_total(account, *c) + " (" + case_shape(*c) + "), " + step_text(*c);
  return s;
}

std::string first_failure(const json& account) {
  int failing = 0;
  std::string first;
  for (const auto& c : account.value("cases", json::array()))
    if (str(c, "status") == "fail" && !c.value("ignored_by_evaluator", false)) {
      if (first.empty()) first = case_name(c) + " (" + case_shape(c) + "): " + str(c, "message");
      ++failing;
    }
  if (failing > 1) first = std::to_string(failing) + " cases fail; the first, " + first;
  return first;
}

struct Breakdown {
  double start = 0, import = 0, first = 0, other = 0, timed = 0, data = 0, ref = 0, check = 0, l2 = 0, rest = 0;
  double after_exit = 0;  // the child's exit to the end: the wait for a held output pipe, the kill
  double in_flight = 0;   // of the step a killed or dead child was in (charged to that step)
  std::string in_flight_step, in_flight_text;  // "repeats", "in its timed repeats (at least 3 done)"
  int first_shapes = 0, repeats = 0;
  double evaluator() const { return data + ref + check + l2; }
};

Breakdown breakdown(const RehearsalChild& ch, const json& account) {
  Breakdown b;
  double in_stages = 0, setup = 0;
  for (const auto& s : ch.stages) {
    in_stages += s.seconds;
    if (s.stage == "setup") setup += s.seconds;
    if (s.stage == "load") b.import += s.seconds;
  }
  b.after_exit = ch.exit_wait_s;
  b.start = std::max(0.0, (ch.talk_s > 0 ? ch.talk_s : ch.wall_s) - in_stages) + setup;
  for (const auto& c : account.value("cases", json::array())) {
    // A case's first call is the compile only where its shape is new to the process.
    const bool first_of_shape = c.value("first_call_of_shape", false);
    (first_of_shape ? b.first : b.other) += num(c, "first_call_s");
    b.first_shapes += first_of_shape ? 1 : 0;
    b.other += num(c, "other_calls_s");
    b.timed += num(c, "timed_s");
    b.data += num(c, "generate_s");
    b.ref += num(c, "reference_s");
    b.check += num(c, "check_s") + num(c, "recheck_s");
    b.l2 += num(c, "l2_clear_s");
    b.repeats += c.value("repeats", 0);
  }
  // A child that ended inside a step (killed at the limit, or dead) has no seconds of that step in
  // its account: the time from the step's start (step_t0, on the driver's clock, like the
  // stage's start stage_t0) to the end of its stage, which the parent measured, is charged to it,
  // less what the account already holds of that step (the timed repeats saved so far).
  if (const json* c = current_case(account); c && c->contains("step_t0") && account.contains("stage_t0")) {
    const double into_stage = num(*c, "step_t0") - num(account, "stage_t0");
    if (into_stage >= 0 && into_stage <= ch.stage_elapsed_s) {
      b.in_flight = ch.stage_elapsed_s - into_stage;
      b.in_flight_step = str(*c, "step");
      b.in_flight_text = step_text(*c);
      if (b.in_flight_step == "call")
        (c->value("first_call_of_shape", false) ? b.first : b.other) += b.in_flight;
      else if (b.in_flight_step == "calls")
        b.other += b.in_flight;
      else if (b.in_flight_step == "repeats")  // the repeats saved are in timed_s and beside it already
        b.timed += (b.in_flight = std::max(0.0, b.in_flight - num(*c, "timed_s") - num(*c, "l2_clear_s") -
                                                    num(*c, "recheck_s")));
      else if (b.in_flight_step == "generate")
        b.data += b.in_flight;
      else if (b.in_flight_step == "check")
        b.check += b.in_flight;
      else
        b.in_flight = 0, b.in_flight_step.clear(), b.in_flight_text.clear();
    }
  }
  b.rest = ch.wall_s - (b.start + b.import + b.first + b.other + b.timed + b.evaluator() + b.after_exit);
  return b;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : "; ") + i;
  return out;
}

std::string outcome_text(const RehearsalChild& c) {
  if (c.output_held)
    return std::string(c.outcome == Outcome::Pass ? "completed" : outcome_name(c.outcome)) +
           ", but a process it started still held the output pipe: the evaluator's compile run would wait for it "
           "until its limit (its outcome is ignored all the same)";
  if (c.outcome == Outcome::Pass) return "completed";
  if (c.outcome == Outcome::Timeout)
    return "TIMEOUT at its " + fmt("%g", c.limit_s) + " s limit " + where_text(c, json::object(), false);
  return std::string(outcome_name(c.outcome)) + ": " + c.message;
}

// `killed`: the child was killed (at a limit or a budget); a case still running otherwise ended
// with the process (a crash, an exit).
void print_case(std::ostream& os, const json& c, bool emulated, bool killed) {
  const std::string status = str(c, "status");
  char head[160];
  std::snprintf(head, sizeof head, "  %-10s %-32s %-6s", case_name(c).c_str(), case_shape(c).c_str(),
                status == "running" ? (killed ? "KILLED" : "ENDED") : status == "pass" ? "PASS" : "FAIL");
  os << head;
  const double first = num(c, "first_call_s");
  const std::string first_text =
      "first call " + fmt("%.3f", first) + " s" + (c.value("first_call_of_shape", false) ? " (first of its shape)" : "");
  const double evaluator = num(c, "generate_s") + num(c, "reference_s") + num(c, "check_s") + num(c, "recheck_s") +
                           num(c, "l2_clear_s");
  if (str(c, "phase") == "test") {
    os << "  call " << fmt("%.3f", first) << " s" << (c.value("first_call_of_shape", false) ? " (first of its shape)" : "")
       << ", evaluator " << fmt("%.3f", evaluator) << " s\n";
  } else {
    if (mean_us(c) > 0 && status == "pass" && !warmup(c)) {
      const json& st = c["stats"];
      os << "  " << fmt("%.2f", mean_us(c)) << " us +- " << fmt("%.2f", 100 * num(st, "err_ns") / num(st, "mean_ns"))
         << "%" << (emulated ? " (emulated FP4)" : "") << ", " << c.value("repeats", 0) << " repeats (stop: "
         << str(c, "stop") << ");";
    } else if (warmup(c) && status == "pass") {
      os << "  discarded by the evaluator;";
    }
    os << " " << first_text << ", " << (c.value("calls", 1) - 1) << " more " << fmt("%.3f", num(c, "other_calls_s"))
       << " s, repeats " << fmt("%.2f", num(c, "timed_s")) << " s, evaluator " << fmt("%.3f", evaluator) << " s\n";
  }
  if (status == "running") os << "      " << (killed ? "killed " : "the process ended ") << step_text(c) << "\n";
  if (status == "fail" || (status == "pass" && !str(c, "message").empty()))
    os << "      " << (status == "fail" ? "" : "warning: ") << str(c, "message") << "\n";
}

json child_json(const RehearsalChild& c) {
  json j = {{"ran", c.ran}, {"outcome", outcome_name(c.outcome)}, {"limit_s", c.limit_s}, {"wall_s", c.wall_s},
            {"stage", c.stage}, {"stage_elapsed_s", c.stage_elapsed_s}, {"limit_hit", c.limit_hit},
            {"message", c.message}, {"notes", c.notes}, {"log_tail", c.log_tail}, {"died", c.died},
            {"output_held", c.output_held}, {"left_behind", c.left_behind}, {"exit_wait_s", c.exit_wait_s}};
  json stages = json::array();
  for (const auto& s : c.stages) stages.push_back({{"stage", s.stage}, {"seconds", s.seconds}, {"completed", s.completed}});
  j["stages"] = stages;
  return j;
}

}  // namespace

void judge(RehearsalMode& m) {
  const RehearsalChild& c = m.child;
  const json account = parse_account(c.account);
  m.message.clear();
  if (c.outcome == Outcome::Timeout) {
    m.verdict = c.limit_hit ? "WOULD TIME OUT" : "TIMEOUT";
    m.message = (c.limit_hit ? "killed at its " + fmt("%g", c.limit_s) + " s limit "
                             : c.message + " (a stage budget given on the command line, not the evaluator's) ") +
                where_text(c, account) + "; finished: " + finished_text(account);
    return;
  }
  // kernelbot reads the mode's stdout and stderr until EOF: a process holding them outlives
  // eval.py's own verdict, pass or fail.
  if (c.output_held) {
    const std::string v = str(account, "verdict");
    m.verdict = "WOULD TIME OUT";
    m.message = "a process the submission started still holds the output pipe: the evaluator waits for it until its "
                "limit (" + (c.left_behind.empty() ? std::string("a process the harness could not name")
                                                    : joined(c.left_behind)) +
                "; the mode itself " + (v == "pass" ? "passed" : v == "fail" ? "failed" : "ended") + " " +
                fmt("%.1f", c.talk_s) + " s after its start)";
    return;
  }
  // The evaluator runs the import and every call in its pool worker; what ends that process
  // (a signal, an exit, SystemExit, KeyboardInterrupt) leaves pool.apply waiting until the limit.
  const std::string dies = str(account, "worker_dies");
  if (c.died || !dies.empty()) {
    m.verdict = "WOULD TIME OUT";
    if (!dies.empty())
      m.message = dies;
    else
      m.message = (c.outcome == Outcome::Crash ? "crashed: " + c.message
                                               : c.message + " (os._exit, or an exit in native code)") +
                  ": the evaluator's pool worker would die and eval.py would wait for it until the limit";
    m.message += "; " + where_text(c, account, false);
    return;
  }
  switch (c.outcome) {
    case Outcome::Crash:
    case Outcome::Error:
      m.verdict = "FAIL";
      m.message = (c.outcome == Outcome::Crash ? "crashed: " : "") + c.message + "; " + where_text(c, account, false);
      return;
    case Outcome::Skip:
      m.verdict = "SKIP";
      m.message = c.message;
      return;
    default:
      break;
  }
  const std::string v = str(account, "verdict");
  if (v == "pass") {
    m.verdict = "PASS";
  } else {
    m.verdict = "FAIL";
    m.message = v == "fail" ? first_failure(account) : "the driver ended without a verdict";
  }
}

std::string close_to_limit(const RehearsalMode& m) {
  const RehearsalChild& c = m.child;
  if (m.verdict != "PASS" || !(c.limit_s > 0) || c.wall_s < 0.9 * c.limit_s) return "";
  return "close to the limit (" + fmt("%.1f", c.wall_s) + " s of " + fmt("%g", c.limit_s) +
         " s): the evaluator's own start-up and its per-recheck reference (not counted here) may push it over";
}

void print_rehearsal_mode(std::ostream& os, const RehearsalMode& m, double compile_limit_s) {
  const RehearsalChild& c = m.child;
  const json account = parse_account(c.account);
  const bool emulated = account.value("emulated_fp4", false);
  char head[200];
  std::snprintf(head, sizeof head, "%-12s %-15s %6.1f s of its %g s limit", m.name.c_str(), m.verdict.c_str(), c.wall_s,
                c.limit_s);
  os << head << (emulated ? "  [emulated FP4: no time here is a B200's]" : "") << "\n";
  if (m.compile.ran)
    os << "  compile run before it (the submission run as a script, limit " << fmt("%g", compile_limit_s)
       << " s; the evaluator ignores its outcome): " << fmt("%.2f", m.compile.wall_s) << " s, " << outcome_text(m.compile)
       << "\n";
  if (!m.message.empty()) os << "  " << (m.verdict == "SKIP" ? "skip" : "why") << ": " << m.message << "\n";
  if (const std::string w = close_to_limit(m); !w.empty()) os << "  warning: " << w << "\n";
  for (const auto& n : c.notes) os << "  note: " << n << "\n";
  if (m.verdict == "SKIP") return;
  const Breakdown b = breakdown(c, account);
  os << "  time: start " << fmt("%.2f", b.start) << " s, import " << fmt("%.2f", b.import) << " s";
  if (!account.value("cases", json::array()).empty()) {  // else it ended before its first case
    os << ", first calls of " << b.first_shapes << (b.first_shapes == 1 ? " shape " : " shapes ") << fmt("%.2f", b.first)
       << " s, other calls "
       << fmt("%.2f", b.other) << " s, ";
    if (m.name != "test") os << "timed repeats " << fmt("%.2f", b.timed) << " s (" << b.repeats << " repeats), ";
    os << "evaluator's work " << fmt("%.2f", b.evaluator()) << " s (data " << fmt("%.2f", b.data) << ", references "
       << fmt("%.2f", b.ref) << ", checks " << fmt("%.2f", b.check) << ", L2 clears " << fmt("%.2f", b.l2)
       << "), other " << fmt("%.2f", std::max(0.0, b.rest)) << " s";
    if (!b.in_flight_step.empty())
      os << " (it ended " << b.in_flight_text << ": its " << fmt("%.2f", b.in_flight) << " s there counted above)";
  }
  if (b.after_exit >= 0.05 || c.output_held)
    os << ", after the child's exit " << fmt("%.2f", b.after_exit) << " s"
       << (c.output_held ? " (the output pipe held: the grace given to the process holding it, then the kill)" : "");
  os << (emulated ? " (emulated FP4)" : "") << "\n";
  for (const auto& cs : account.value("cases", json::array()))
    print_case(os, cs, emulated, c.outcome == Outcome::Timeout);
  const double g = geomean_us(account);
  if (g > 0)
    os << "  geometric mean of the " << account["case_counts"].value("benchmarks", 0)
       << " benchmark means: " << fmt("%.2f", g) << " us (the leaderboard's ranking, task.yml:64)"
       << (emulated ? " (emulated FP4)" : "") << "\n";
  if ((c.outcome == Outcome::Error || c.outcome == Outcome::Crash) && !c.log_tail.empty()) {
    os << "  the child's last output:\n";
    std::istringstream is(c.log_tail);
    for (std::string line; std::getline(is, line);) os << "    " << line << "\n";
  }
}

std::string rehearsal_json(const Rehearsal& r) {
  json j = {{"schema", 1}, {"mode", "rehearse"}, {"evaluator", "gpumode"}, {"command", r.command},
            {"submission", r.submission}, {"toggles", r.toggles}, {"emulate_fp4", r.emulate_fp4},
            {"task", {{"name", r.task_name}, {"file", r.task_file}, {"source", r.task_source}}},
            {"not_run", r.not_run}, {"exit_code", r.exit_code}};
  j["secret_seed"] = r.secret_seed ? json(*r.secret_seed) : json(nullptr);
  json modes = json::array();
  for (const auto& m : r.modes) {
    json account = parse_account(m.child.account);
    const bool emulated = account.value("emulated_fp4", false);
    if (account.contains("cases") && account["cases"].is_array())
      for (auto& c : account["cases"]) {
        if (mean_us(c) > 0) c["mean_us"] = mean_us(c);
        c["emulated_fp4"] = emulated;
      }
    const Breakdown b = breakdown(m.child, account);
    json mj = child_json(m.child);
    mj["mode"] = m.name;
    mj["verdict"] = m.verdict;
    mj["message"] = m.message;
    mj["emulated_fp4"] = emulated;
    mj["compile_run"] = child_json(m.compile);
    mj["breakdown_s"] = {{"start", b.start},
                         {"import", b.import},
                         {"first_calls", b.first},
                         {"other_calls", b.other},
                         {"timed_repeats", b.timed},
                         {"evaluator", {{"data", b.data}, {"reference", b.ref}, {"check", b.check}, {"l2_clear", b.l2}}},
                         {"after_exit", b.after_exit},
                         {"in_flight", {{"step", b.in_flight_step}, {"seconds", b.in_flight}}},
                         {"other", b.rest}};
    const std::string warning = close_to_limit(m);
    mj["warnings"] = warning.empty() ? json::array() : json::array({warning});
    const double g = geomean_us(account);
    mj["geomean_us"] = g > 0 ? json(g) : json(nullptr);
    mj["account"] = account;
    modes.push_back(mj);
  }
  j["modes"] = modes;
  // A child's log may hold any bytes: those that are not UTF-8 become U+FFFD (as json_text does,
  // check_json.hpp) instead of making the whole report unwritable.
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace nvfp4
