// outputs.cpp — the report sink, render and merge modes (see outputs.hpp).
#include "outputs.hpp"

#include <iostream>
#include <sstream>

#include "cli_checks.hpp"
#include "errors.hpp"
#include "html_report.hpp"
#include "junit.hpp"
#include "merge.hpp"
#include "report.hpp"
#include "user_file.hpp"

namespace po = boost::program_options;

namespace nvfp4::cli {

void write_output(const std::string& path, const std::string& text) {
  write_text_file(path, text);  // non-blocking open; special files refused (user_file.hpp)
}

namespace {

template <class Write>
void write_with(const std::string& path, Write write) {
  std::ostringstream f;
  write(f);
  write_output(path, f.str());
}

// A report render can draw, of this harness's schema: a JSON object with a "trials" array (verify,
// bisect and merged reports) or, for a bench report, its "shapes" array (html_report.hpp draws
// bench reports from their rows). Anything else (another tool's JSON, a check or rehearse report)
// is refused, naming the file, instead of rendering as an empty page.
void check_renderable(const JsonValue& r, const std::string& path) {
  if (!r.is_object()) throw InputError(path + ": not a harness report (not a JSON object)");
  const JsonValue* rows = r.find(is_bench_report(r) ? "shapes" : "trials");
  if (!rows || !rows->is_array())
    throw InputError(path + ": not a harness report with " + (is_bench_report(r) ? "shapes" : "trials") +
                     " (verify, bisect or bench; its mode is '" + r.str_or("mode", "") + "')");
  if (const JsonValue* schema = r.find("schema"); schema && !(schema->is_number() && schema->number() == kReportSchema))
    throw InputError(path + ": report schema " + schema->text() + "; this harness reads schema " +
                     std::to_string(kReportSchema));
}

}  // namespace

void emit(const po::variables_map& vm, const std::string& json, const std::string& label) {
  if (vm.count("json")) write_output(vm["json"].as<std::string>(), json);
  if (!vm.count("junit") && !vm.count("html")) return;
  const JsonValue report = JsonValue::parse(json);
  if (vm.count("junit")) write_with(vm["junit"].as<std::string>(), [&](std::ostream& f) { write_junit(f, report); });
  if (vm.count("html"))
    write_with(vm["html"].as<std::string>(), [&](std::ostream& f) { write_html(f, {report}, {label}); });
}

int render_mode(const po::variables_map& vm) {
  check_paths(vm, false);
  if (vm.count("json")) throw InputError("--json: harness render writes --html and --junit; the reports are already JSON");
  if (!vm.count("html") && !vm.count("junit")) throw InputError("harness render needs --html OUT.html and/or --junit OUT.xml");
  std::vector<JsonValue> reports;
  const auto paths = vm["report-html"].as<std::vector<std::string>>();
  for (const auto& p : paths) {
    reports.push_back(read_json_file(p));
    check_renderable(reports.back(), p);
  }
  if (vm.count("junit")) {
    if (reports.size() != 1) throw InputError("--junit with render needs exactly one report");
    write_with(vm["junit"].as<std::string>(), [&](std::ostream& f) { write_junit(f, reports.front()); });
  }
  if (vm.count("html")) write_with(vm["html"].as<std::string>(), [&](std::ostream& f) { write_html(f, reports, paths); });
  return 0;
}

int merge_mode(const po::variables_map& vm, const std::string& command) {
  check_paths(vm, false);
  const auto paths = vm["merge"].as<std::vector<std::string>>();
  std::vector<JsonValue> reports;
  for (const auto& p : paths) reports.push_back(read_json_file(p));
  const MergedReport m = merge_reports(reports, paths, command);
  std::cout << "merge: " << paths.size() << " shard report" << (paths.size() == 1 ? "" : "s") << " of --verify "
            << m.report.at("shard").at("verify").str() << "\n";
  print_report_summary(std::cout, m.report);
  emit(vm, m.json, "merged shards");
  return m.exit_code;
}

}  // namespace nvfp4::cli
