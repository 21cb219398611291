// sanitizer.hpp — `--sanitize TOOL` (docs/design.md §4.5): a trial child's command run under
// compute-sanitizer with that tool, its report in the trial's directory, and the report turned into
// the one-line message of the trial's ERROR.
#pragma once
#include <string>
#include <vector>

#include "trial.hpp"

namespace nvfp4 {

// compute-sanitizer's exit status when it found an error (its --error-exitcode).
constexpr int kSanitizerExit = 86;

// `args` (the child's command) under o.sanitizer --tool o.sanitize, logging to DIR/sanitizer.log.
std::vector<std::string> sanitized_args(const TrialOptions& o, const std::string& dir, std::vector<std::string> args);

// The first report in the log, in a few lines: what, where (kernel, thread), which address.
std::string sanitizer_report(const std::string& tool, const std::string& log_path);

}  // namespace nvfp4
