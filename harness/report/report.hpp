// report.hpp — what the harness tells the user: progress lines, failure details with a
// reproducer, the summary table, and the JSON report (--json FILE). Evaluation lives elsewhere;
// this file only formats.
#pragma once
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "compare.hpp"
#include "trial.hpp"

namespace nvfp4 {
class JsonValue;

// The version of the JSON report's layout ("schema"), read by merge, JUnit, HTML and the Python
// module. It changes when a member is renamed, removed or changes meaning; new members keep it.
constexpr int kReportSchema = 1;

class Session;

// A command line that re-runs exactly this trial (combination, backend, case, and every option
// that changes what the trial does), e.g.
//   harness --backend cpu --verify autotune+fused --shape 33x65x160 --dist edge --seed 7
std::string reproducer(const TrialSpec& spec, const std::string& program);

// "cpu fused 33x65x160 edge seed 7" — the trial's name in every report.
std::string trial_name(const TrialSpec& spec);
// One line after the trial's name: outcome and the essential numbers / reason.
std::string trial_summary(const TrialResult& r);
// Stage times, "init 0.001 tune 0.020 warmup 0.001 run 0.002 s".
std::string stage_times(const TrialResult& r);

// The tolerance report of one comparison, indented lines.
void print_comparison(std::ostream& os, const Comparison& c, const std::string& indent);
// Everything about a trial that did not pass (and the reproducer).
void print_trial_details(std::ostream& os, const TrialResult& r, const std::string& program);

// The summary's overhead line: `seconds` outside the stages (TrialResult::overhead) in `trials`
// trials that ran.
std::string overhead_line(double seconds, int trials);
// "busy per GPU ...: 0 12.3 s 1 11.9 s": each device's trial wall time (shown when trials ran on several).
std::string busy_line(const std::map<std::string, double>& busy);
// "references: 212 read from the cache, 0 computed (DIR)", plus rejected entries and failed writes,
// from a report's "reference_cache" object; "" when the cache was off or not used.
std::string reference_cache_line(const JsonValue& reference_cache);
// The end-of-run summary: per backend and combination, outcome counts; degenerate cases and
// suspicious data; every failing trial's reproducer (unless `list_failures` is off, as in a bisect,
// whose verdict names its own reproducer); the overhead outside the stages; the overall result;
// bisect verdicts last.
void print_summary(std::ostream& os, const Session& s, int exit_code, bool list_failures = true);
// The end-of-run summary of a report (a run's or a merged one): per backend and combination, the
// cases flagged, the failing trials with their reproducers (list_failures), overhead, the result
// line and the verdicts. print_summary renders a run's through it.
void print_report_summary(std::ostream& os, const JsonValue& report, bool list_failures = true);

// The whole session as the JSON report (every trial: outcome, stage times, metrics, reproducer; a
// bench trial's "timing"). A caller may append members (the bench mode's device, method and shapes:
// bench.hpp) before writing it with json_text (check_json.hpp).
nlohmann::ordered_json report_json(const Session& s, const std::string& mode, const std::string& command,
                                   int exit_code);
// report_json's text and a line break.
void write_json(std::ostream& os, const Session& s, const std::string& mode, const std::string& command,
                int exit_code);

}  // namespace nvfp4
