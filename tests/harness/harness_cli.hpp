// harness_cli.hpp — test helpers that run the REAL harness binary (NVFP4_HARNESS_BIN) as a user
// would: exit code, combined output, wall time, and the trials of its JSON report.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness_cli {

struct Result {
  int rc = -1;
  std::string out;     // stdout and stderr together
  double seconds = 0;  // wall time of the whole command
};

inline Result run(const std::string& args) {
  const std::string cmd = std::string(NVFP4_HARNESS_BIN) + " " + args + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// A fresh private directory for one test's files; all of them are removed when the test exits.
inline std::string temp_dir() {
  struct Cleanup {
    std::vector<std::string> dirs;
    ~Cleanup() {
      std::error_code ec;
      for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
    }
  };
  static Cleanup cleanup;
  char tmpl[] = "/tmp/nvfp4-test-XXXXXX";
  const char* d = mkdtemp(tmpl);
  if (!d) throw std::runtime_error("mkdtemp failed");
  cleanup.dirs.push_back(d);
  return d;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The JSON report's trial objects as text, one string per trial (the writer is compact, so each
// trial starts with {"index":).
inline std::vector<std::string> json_trials(const std::string& json) {
  std::vector<std::string> out;
  const std::string mark = "{\"index\":";
  size_t pos = json.find(mark);
  while (pos != std::string::npos) {
    const size_t next = json.find(mark, pos + 1);
    out.push_back(json.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    pos = next;
  }
  return out;
}

inline bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The number after "key": in a JSON object's text (first occurrence), or NaN.
inline double json_number(const std::string& obj, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = obj.find(k);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(obj.c_str() + at + k.size(), nullptr);
}

// The seconds of one stage in a trial object ("stage":"warmup","seconds":...), or NaN.
inline double stage_seconds(const std::string& trial, const std::string& stage) {
  const std::string k = "{\"stage\":\"" + stage + "\",\"seconds\":";
  const size_t at = trial.find(k);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(trial.c_str() + at + k.size(), nullptr);
}

}  // namespace harness_cli
