// test_harness_gpu.cpp — the gpu backend through the real harness binary (child processes,
// stage watchdogs, the derived tolerance): every combination of plain with {graph, autotune}
// passes on ragged and batched shapes, and a corrupted graph replay is caught (exit 1), so the
// GPU trials' checks are live. The binary is $NVFP4_HARNESS_BIN when set (the device machine
// runs a copied tree), else the one this build made.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string harness_bin() {
  const char* env = std::getenv("NVFP4_HARNESS_BIN");
  return env && *env ? env : NVFP4_HARNESS_BIN;
}

struct Run {
  int rc = -1;
  std::string json;
};

// Runs `harness ARGS --json FILE`, returns the exit code and the JSON text.
Run run_harness(const std::string& args, const std::string& tag) {
  const std::string json = "/tmp/nvfp4_test_harness_gpu_" + tag + "_" + std::to_string(::getpid()) + ".json";
  const std::string cmd = harness_bin() + " " + args + " --json " + json + " > " + json + ".log 2>&1";
  Run r;
  const int st = std::system(cmd.c_str());
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream f(json);
  std::stringstream ss;
  ss << f.rdbuf();
  r.json = ss.str();
  if (r.rc != 0) {
    std::ifstream lf(json + ".log");
    std::stringstream ls;
    ls << lf.rdbuf();
    MESSAGE("harness " << args << " exited " << r.rc << ":\n" << ls.str());
  }
  std::remove(json.c_str());
  std::remove((json + ".log").c_str());
  return r;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("harness: plain, graph, autotune, autotune+graph pass on ragged and batched shapes") {
  const Run r = run_harness(
      "--backend gpu --verify plain,graph,autotune,autotune+graph "
      "--shape 33x65x160,17x31x48x3,1x1x16 --dist normal,edge --seed 5",
      "combos");
  REQUIRE(r.rc == 0);
  // 3 shapes x 2 distributions x 4 combinations, each PASS; nothing else.
  CHECK(count(r.json, "\"outcome\":\"PASS\"") == 24);
  for (const char* bad : {"FAIL", "ERROR", "CRASH", "TIMEOUT", "SKIP", "BLOCKED"})
    CHECK_MESSAGE(count(r.json, std::string("\"outcome\":\"") + bad + "\"") == 0, bad);
  CHECK(count(r.json, "\"combo\":\"autotune+graph\"") == 6);
}

TEST_CASE("harness: a corrupted element in a graph replay is caught") {
  const Run r = run_harness(
      "--backend gpu --verify graph --shape 33x65x160 --dist normal --seed 5 --inject corrupt@run",
      "corrupt");
  CHECK(r.rc == 1);
  CHECK(count(r.json, "\"outcome\":\"FAIL\"") == 1);
}
