// sanitizer.cpp — trial children under compute-sanitizer (see sanitizer.hpp).
#include "sanitizer.hpp"

#include <filesystem>
#include <fstream>

namespace nvfp4 {

// The child's command under compute-sanitizer (--sanitize TOOL): its report goes to the trial's
// directory, its error exit status marks the trial.
std::vector<std::string> sanitized_args(const TrialOptions& o, const std::string& dir, std::vector<std::string> args) {
  std::vector<std::string> out = {o.sanitizer, "--tool", o.sanitize, "--error-exitcode", std::to_string(kSanitizerExit),
                                  "--print-limit", "10", "--target-processes", "all", "--log-file",
                                  dir + "/sanitizer.log"};
  // The wrapped program must be named by its real path: /proc/self/exe would be the sanitizer.
  std::error_code ec;
  if (!args.empty() && args[0] == "/proc/self/exe") {
    const auto real = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) args[0] = real.string();
  }
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

// The sanitizer's first report, in a few lines: what, where (kernel, thread), which address.
std::string sanitizer_report(const std::string& tool, const std::string& log_path) {
  std::ifstream f(log_path);
  std::string line, text;
  int kept = 0;
  bool in_error = false;
  while (std::getline(f, line) && kept < 6) {
    std::string body = line;
    while (!body.empty() && (body.front() == '=' || body.front() == ' ')) body.erase(body.begin());
    if (body.empty() || body.rfind("COMPUTE-SANITIZER", 0) == 0) continue;
    if (body.rfind("ERROR SUMMARY", 0) == 0 || body.rfind("RACECHECK SUMMARY", 0) == 0) {
      if (!in_error) text += (text.empty() ? "" : "; ") + body;
      break;
    }
    in_error = true;
    text += (text.empty() ? "" : " | ") + body;
    ++kept;
  }
  return "compute-sanitizer " + tool + " reported an error: " + (text.empty() ? "(no report in its log)" : text);
}

}  // namespace nvfp4
