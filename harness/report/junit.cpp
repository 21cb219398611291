// junit.cpp — JUnit XML from a parsed harness report (see junit.hpp).
#include "junit.hpp"

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "errors.hpp"

namespace nvfp4 {

namespace {

// XML 1.0 text: markup characters as entities; in attributes also tab and line breaks as character
// references (a parser would otherwise fold them into spaces); control characters that XML 1.0
// cannot carry at all, and U+FFFE/U+FFFF, as U+FFFD. The input is valid UTF-8 (json_read.hpp).
std::string xml(const std::string& s, bool attribute = false) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += attribute ? "&quot;" : "\""; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\r': out += "&#13;"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      default:
        if (c < 0x20) {
          out += "\xEF\xBF\xBD";
        } else if (c == 0xEF && i + 2 < s.size() && (unsigned char)s[i + 1] == 0xBF &&
                   ((unsigned char)s[i + 2] == 0xBE || (unsigned char)s[i + 2] == 0xBF)) {
          out += "\xEF\xBF\xBD";
          i += 2;
        } else {
          out += char(c);
        }
    }
  }
  return out;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", s >= 0 ? s : 0.0);
  return buf;
}

std::string stage_line(const JsonValue& trial) {
  std::string s;
  const JsonValue* stages = trial.find("stages");
  if (!stages || !stages->is_array()) return s;
  for (const auto& st : stages->items()) {
    const std::string name = st.str_or("stage", "?");
    if (name == "setup" || name == "teardown") continue;  // the harness's own, as in report.cpp
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.3f", st.number_or("seconds", 0));
    const JsonValue* done = st.find("completed");
    s += (s.empty() ? "" : " ") + name + buf + (done && done->is_bool() && !done->boolean() ? "!" : "");
  }
  return s.empty() ? s : s + " s";
}

// "FAIL in stage run after 0.012 s: call 3 of 3: ..." — the failure's one line.
std::string headline(const JsonValue& t) {
  std::string s = t.str_or("outcome", "?");
  if (const JsonValue* st = t.find("stage")) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " after %.3f s", t.number_or("stage_elapsed_s", 0));
    s += " in stage " + st->text() + buf;
  }
  const std::string msg = t.str_or("message", "");
  return msg.empty() ? s : s + ": " + msg;
}

// Every field of the trial as text lines: known ones in a fixed order, then the rest as they come.
std::string details(const JsonValue& t) {
  std::ostringstream os;
  os << headline(t) << "\n";
  if (const JsonValue* b = t.find("blocked_by")) os << "blocked by: " << b->text() << "\n";
  const std::string path = t.str_or("path", "");
  if (!path.empty()) os << "path: " << path << "\n";
  const std::string stages = stage_line(t);
  if (!stages.empty())
    os << "stages: " << stages << (stages.find('!') != std::string::npos ? " (! = did not finish)" : "") << "\n";
  for (const char* list : {"notes", "warnings"})
    if (const JsonValue* v = t.find(list); v && v->is_array())
      for (const auto& x : v->items()) os << (list[0] == 'n' ? "note: " : "warning: ") << x.text() << "\n";
  if (const JsonValue* m = t.find("metrics"); m && m->is_object()) {
    os << "metrics (call " << (t.find("metrics_call") ? t.at("metrics_call").text() : "?") << "):\n";
    for (const auto& kv : flatten(*m, {"ulp_histogram", "worst", "unwritten_at"}))
      os << "  " << kv.first << ": " << kv.second << "\n";
    if (const JsonValue* h = m->find("ulp_histogram"); h && h->is_object() && !h->members().empty()) {
      os << "  ulp histogram:";
      for (const auto& b : h->members()) os << " [" << b.first << "] " << b.second.text();
      os << "\n";
    }
    for (const char* list : {"worst", "unwritten_at"})
      if (const JsonValue* v = m->find(list); v && v->is_array())
        for (const auto& e : v->items()) os << "  " << list << ": " << e.text() << "\n";
  }
  static const std::vector<std::string> shown = {
      "index", "backend", "combo", "case", "outcome", "stage", "stage_elapsed_s", "message", "blocked_by",
      "wall_s", "path", "stages", "notes", "warnings", "metrics", "child_log", "reproducer"};
  for (const auto& kv : flatten(t, shown)) os << kv.first << ": " << kv.second << "\n";
  const std::string log = t.str_or("child_log", "");
  if (!log.empty()) os << "child log (tail):\n" << log << (log.back() == '\n' ? "" : "\n");
  os << "reproduce: " << t.str_or("reproducer", "?") << "\n";
  return os.str();
}

enum class Kind { Pass, Failure, Error, Skipped };

Kind kind_of(const std::string& outcome) {
  if (outcome == "PASS") return Kind::Pass;
  if (outcome == "FAIL") return Kind::Failure;
  if (outcome == "SKIP" || outcome == "BLOCKED") return Kind::Skipped;
  return Kind::Error;  // ERROR, CRASH, TIMEOUT, and any outcome this writer does not know
}

struct Suite {
  std::string name;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0;
  std::string body;
};

}  // namespace

void write_junit(std::ostream& os, const JsonValue& report) {
  const JsonValue* trials = report.find("trials");
  if (!trials || !trials->is_array()) throw InputError("JUnit needs a report with \"trials\" (verify, bisect or bench)");

  std::vector<Suite> suites;
  std::map<std::string, size_t> index;
  auto suite = [&](const std::string& backend) -> Suite& {
    auto it = index.find(backend);
    if (it != index.end()) return suites[it->second];
    index[backend] = suites.size();
    suites.emplace_back();
    suites.back().name = "nvfp4-dual." + backend;
    return suites.back();
  };
  // Backends whose probe failed: one error testcase each (junit.hpp).
  if (const JsonValue* bs = report.find("backends"); bs && bs->is_array())
    for (const auto& b : bs->items()) {
      Suite& s = suite(b.str_or("name", "?"));
      const JsonValue* avail = b.find("available");
      const std::string probe = b.str_or("probe_outcome", "SKIP");
      if (!avail || !avail->is_bool() || avail->boolean() || probe == "SKIP") continue;
      ++s.tests;
      ++s.errors;
      s.body += "    <testcase classname=\"" + xml(b.str_or("name", "?"), true) + ".probe\" name=\"backend probe\">\n" +
                "      <error type=\"" + xml(probe, true) + "\" message=\"" +
                xml("backend probe " + probe + ": " + b.str_or("reason", ""), true) + "\"/>\n    </testcase>\n";
    }

  for (const auto& t : trials->items()) {
    const std::string backend = t.str_or("backend", "?"), outcome = t.str_or("outcome", "?");
    Suite& s = suite(backend);
    const double wall = t.number_or("wall_s", 0);
    ++s.tests;
    s.time += wall;
    std::string& b = s.body;
    b += "    <testcase classname=\"" + xml(backend + "." + t.str_or("combo", "?"), true) + "\" name=\"" +
         xml(trial_case_name(t), true) + "\" time=\"" + seconds(wall) + "\">\n";
    switch (kind_of(outcome)) {
      case Kind::Pass: break;
      case Kind::Failure:
      case Kind::Error: {
        const bool failure = kind_of(outcome) == Kind::Failure;
        ++(failure ? s.failures : s.errors);
        const char* tag = failure ? "failure" : "error";
        b += std::string("      <") + tag + " type=\"" + xml(outcome, true) + "\" message=\"" + xml(headline(t), true) +
             "\">" + xml(details(t)) + "</" + tag + ">\n";
        break;
      }
      case Kind::Skipped:
        ++s.skipped;
        b += "      <skipped message=\"" + xml(outcome + ": " + t.str_or("message", ""), true) + "\"/>\n";
        break;
    }
    std::string summary = outcome;
    if (const JsonValue* m = t.find("metrics"))
      if (const JsonValue* u = m->find("max_ulp")) summary += ", max " + u->text() + " ulp";
    const std::string stages = stage_line(t);
    if (!stages.empty()) summary += ", stages " + stages;
    b += "      <system-out>" + xml(summary + "\nreproduce: " + t.str_or("reproducer", "?") + "\n") +
         "</system-out>\n    </testcase>\n";
  }

  Suite total;
  for (const auto& s : suites) {
    total.tests += s.tests;
    total.failures += s.failures;
    total.errors += s.errors;
    total.skipped += s.skipped;
  }
  auto counts = [](const Suite& s) {
    return "tests=\"" + std::to_string(s.tests) + "\" failures=\"" + std::to_string(s.failures) + "\" errors=\"" +
           std::to_string(s.errors) + "\" skipped=\"" + std::to_string(s.skipped) + "\"";
  };
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"nvfp4-dual harness " << xml(report.str_or("mode", "?"), true) << "\" " << counts(total)
     << " time=\"" << seconds(report.number_or("elapsed_s", 0)) << "\">\n";
  for (const auto& s : suites) {
    os << "  <testsuite name=\"" << xml(s.name, true) << "\" " << counts(s) << " time=\"" << seconds(s.time) << "\">\n";
    os << "    <properties>\n";
    os << "      <property name=\"command\" value=\"" << xml(report.str_or("command", ""), true) << "\"/>\n";
    if (const JsonValue* code = report.find("exit_code"))
      os << "      <property name=\"exit_code\" value=\"" << xml(code->text(), true) << "\"/>\n";
    os << "    </properties>\n";
    os << s.body << "  </testsuite>\n";
  }
  os << "</testsuites>\n";
}

}  // namespace nvfp4
