// test_sanitize.cpp — --sanitize TOOL runs every trial child under compute-sanitizer and turns its
// report into the trial's ERROR. CI has no GPU (and often no compute-sanitizer): a stand-in with the
// sanitizer's command line and exit-status contract runs the child and, when asked, writes a report
// as compute-sanitizer does and exits with --error-exitcode. The real tool runs in tools/gpu_run.sh.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "harness_cli.hpp"

using harness_cli::has;

namespace {

std::string fake_sanitizer(const std::string& dir) {
  const std::string path = dir + "/compute-sanitizer";
  std::ofstream f(path);
  f << "#!/bin/sh\n"
       "log=''; code=1\n"
       "while [ $# -gt 0 ]; do case \"$1\" in\n"
       "  --log-file) log=$2; shift 2;; --error-exitcode) code=$2; shift 2;;\n"
       "  --tool|--print-limit|--target-processes) shift 2;; *) break;; esac; done\n"
       "\"$@\"; rc=$?\n"
       "if [ -n \"$FAKE_SANITIZER_ERROR\" ]; then\n"
       "  printf '========= COMPUTE-SANITIZER\\n========= Invalid __global__ read of size 4 bytes\\n"
       "=========     at oob_kernel+0x70\\n========= ERROR SUMMARY: 1 error\\n' > \"$log\"; exit $code; fi\n"
       "exit $rc\n";
  f.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace

TEST_CASE("sanitize: a clean child passes; the sanitizer's report is the trial's ERROR, naming the tool and access") {
  const std::string dir = harness_cli::temp_dir();
  const std::string san = fake_sanitizer(dir);
  const std::string args = "verify plain --backend cpu --shape 7x13x48 --dist normal --sanitize memcheck";
  setenv("NVFP4_COMPUTE_SANITIZER", san.c_str(), 1);
  auto r = harness_cli::run(args);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "1 PASS"));
  setenv("FAKE_SANITIZER_ERROR", "1", 1);
  r = harness_cli::run(args + " --json " + dir + "/r.json");
  unsetenv("FAKE_SANITIZER_ERROR");
  unsetenv("NVFP4_COMPUTE_SANITIZER");
  CHECK(r.rc == 1);
  CHECK(has(r.out, "ERROR  compute-sanitizer memcheck reported an error: Invalid __global__ read of size 4 bytes"));
  CHECK(has(r.out, "at oob_kernel+0x70"));
  CHECK(has(harness_cli::read_text(dir + "/r.json"), "--sanitize memcheck"));  // in the reproducer
}

TEST_CASE("sanitize: not in bench (a sanitizer's slowdown is no time), not with workers") {
  const std::string dir = harness_cli::temp_dir();
  setenv("NVFP4_COMPUTE_SANITIZER", fake_sanitizer(dir).c_str(), 1);
  auto r = harness_cli::run("bench plain --backend cpu --shape 7x13x48 --sanitize memcheck");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "--sanitize: bench times paths"));
  r = harness_cli::run("verify plain --backend cpu --shape 7x13x48 --sanitize memcheck --isolate worker");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "not with --isolate worker"));
  unsetenv("NVFP4_COMPUTE_SANITIZER");
}

TEST_CASE("sanitize: an unknown tool or a missing compute-sanitizer is bad usage, before any trial") {
  auto r = harness_cli::run("verify plain --backend cpu --sanitize leakcheck");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "--sanitize: 'leakcheck' is not a compute-sanitizer tool"));
  setenv("NVFP4_COMPUTE_SANITIZER", "/nonexistent/compute-sanitizer", 1);
  r = harness_cli::run("verify plain --backend cpu --sanitize memcheck");
  unsetenv("NVFP4_COMPUTE_SANITIZER");
  CHECK(r.rc == 2);
  CHECK(has(r.out, "compute-sanitizer not found"));
}
