// html_report.hpp — one self-contained HTML page from harness reports (`harness --html FILE`, and
// `harness --report-html REPORT.json [--report-html BENCH.json] --html OUT.html` for reports
// already written). No network and no external assets: the CSS, the script and every chart
// (html_charts.hpp, inline SVG) are in the file.
//
// Input: parsed JSON reports (json_read.hpp), so this run's report and one read from a file take
// the same path. A verify/bisect report (report.cpp write_json) gives
//   - the summary (outcome counts, exit code, command) and each backend's availability;
//   - per backend, the lattice as a grid: combinations x cases, each cell coloured by outcome and
//     linked to the trial's details (shown by CSS :target, so a click works without the script);
//     a BLOCKED cell links to the failing sub-combination's trial on the same case, and the script
//     draws an arrow to it while the cell is hovered or selected;
//   - per trial: the reproducer, stage times as a timeline, the ULP histogram, the statistical
//     gate's margin (any field whose name contains "margin"), and every other field of the trial
//     and of its metrics as a key/value table, so that fields added to the report later appear
//     without changes here;
//   - every trial's stages on one time scale, slowest first;
//   - the cases (shape, degeneracy, warnings, reference time).
// A bench report (bench_cli.cpp, --bench-json) gives, per shape, the medians as bars beside the
// tensor-core floor (4*M*N*K*L / the bf16 peak measured in the same run), the yardstick and the
// quoted torch.compile time, and the table of its numbers.
//
// Every string from a report is HTML-escaped. The page's script reports its own failure: an error
// adds an element with id "script-error"; finishing adds one with id "report-ready" (the browser
// test, tests/report/html_chromium.sh, checks both).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "json_read.hpp"

namespace nvfp4 {

// Writes the page; `sources[i]` says where reports[i] came from (a file name, "this run").
void write_html(std::ostream& os, const std::vector<JsonValue>& reports, const std::vector<std::string>& sources);

}  // namespace nvfp4
