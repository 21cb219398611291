// outputs.hpp — the one sink: every mode's report is one JSON document, and --json, --junit and
// --html are all written from it (the JSON parsed back, so that rendering a run and rendering a
// report file with `harness render` are the same code).
#pragma once
#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "json_read.hpp"

namespace nvfp4::cli {

// Writes FILE (InputError when it cannot); special files are refused (user_file.hpp).
void write_output(const std::string& path, const std::string& text);

// The report `json` to each output the command line names: --json as is, --junit and --html rendered.
// `label` names the report on the HTML page.
void emit(const boost::program_options::variables_map& vm, const std::string& json, const std::string& label);

// `harness render R.json ...`: reports already written, to --html and/or --junit; runs nothing.
int render_mode(const boost::program_options::variables_map& vm);

// `harness merge A.json B.json ...`: the shard reports of one run as one summary, exit code and report.
int merge_mode(const boost::program_options::variables_map& vm, const std::string& command);

}  // namespace nvfp4::cli
