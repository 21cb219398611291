// test_rehearse.cpp — `harness rehearse gpumode` through the real binary (harness/cli/rehearse.hpp),
// on the numpy submissions of tests/rehearse/submissions/ and the test-only task
// tests/rehearse/tiny_task.json (GPU MODE's loops with small shapes and counts): verdicts per
// evaluator mode and the evaluator's order, a timeout naming the mode, stage, case and what had
// finished, the time breakdown (import, first call per shape, the evaluator's own work), the
// leaderboard recheck's blind spot, exit codes, the JSON report, and every refusal (exit 2) before
// any child runs. The loops' arithmetic (stopping rule, seeds) is tested in Python
// (tests/python_driver/test_rehearse.py).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>

#include "harness_cli.hpp"
#include "json_read.hpp"
#include "rehearse_report.hpp"

using namespace harness_cli;
using nvfp4::JsonValue;

namespace {

const std::string kDir = std::string(NVFP4_SOURCE_DIR) + "/tests/rehearse";
const std::string kTask = kDir + "/tiny_task.json";

std::string sub(const std::string& name) { return kDir + "/submissions/" + name + ".py"; }

bool have_numpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

// Whether process `pid` still runs (a zombie has ended: only its status waits to be reaped).
bool alive(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// The pids a submission wrote to the file $REHEARSE_PIDFILE names, one a line.
std::vector<int> pids_in(const std::string& path) {
  std::vector<int> out;
  std::ifstream f(path);
  for (int pid; f >> pid;) out.push_back(pid);
  return out;
}

// `harness rehearse gpumode --submission S --task tiny ARGS` with no compile run unless ARGS sets one.
Result rehearse(const std::string& submission, const std::string& args) {
  const bool compile = args.find("--limit-compile") != std::string::npos;
  return run("rehearse gpumode --submission " + submission + " --task " + kTask + (compile ? "" : " --limit-compile 0") +
             " " + args);
}

JsonValue report(const std::string& path) { return JsonValue::parse(read_text(path)); }

// The account's case entries of one mode of the report.
const std::vector<JsonValue>& cases(const JsonValue& mode) { return mode.at("account").at("cases").items(); }

}  // namespace

TEST_CASE("a correct submission passes every evaluator mode, in the evaluator's order, with its time breakdown") {
  if (!have_numpy()) return;
  const std::string json = temp_dir() + "/r.json";
  const Result r = rehearse(sub("correct"), "--limit-compile 10 --json " + json);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "test         PASS"));
  CHECK(has(r.out, "benchmark    PASS"));
  CHECK(has(r.out, "leaderboard  PASS"));
  CHECK(r.out.find("test         PASS") < r.out.find("benchmark    PASS"));
  CHECK(r.out.find("benchmark    PASS") < r.out.find("leaderboard  PASS"));
  CHECK(has(r.out, "compile run before it (the submission run as a script, limit 10 s; the evaluator ignores its "
                   "outcome)"));
  CHECK(has(r.out, "geometric mean of the 2 benchmark means"));
  CHECK(has(r.out, "result: test PASS, benchmark PASS, leaderboard PASS -> exit 0"));

  const JsonValue j = report(json);
  CHECK(j.at("mode").str() == "rehearse");
  CHECK(j.at("exit_code").number() == 0);
  const auto& modes = j.at("modes").items();
  REQUIRE(modes.size() == 3);
  CHECK(modes[0].at("mode").str() == "test");
  CHECK(modes[2].at("mode").str() == "leaderboard");
  for (const auto& m : modes) {
    CHECK(m.at("verdict").str() == "PASS");
    CHECK(m.at("limit_s").number() == 30);
    CHECK(m.at("wall_s").number() > 0);
    CHECK(m.at("compile_run").at("outcome").str() == "PASS");
    CHECK(m.at("emulated_fp4").boolean() == false);
    for (const char* k : {"start", "import", "first_calls", "other_calls", "timed_repeats", "other"})
      CHECK(m.at("breakdown_s").find(k));
    CHECK(m.at("breakdown_s").at("evaluator").find("reference"));
  }
  CHECK(cases(modes[0]).size() == 3);
  CHECK(modes[0].at("geomean_us").is_null());
  // Benchmark: the warm-up of case 1, then cases 1 and 2, each with its timed repeats' statistics.
  const auto& bench = cases(modes[1]);
  REQUIRE(bench.size() == 3);
  CHECK(bench[0].at("phase").str() == "benchmark-warmup");
  CHECK(bench[1].at("seeds").items()[0].number() == 53);  // seed 11 raised by 42 before the first object
  CHECK(bench[1].at("mean_us").number() > 0);
  CHECK(bench[1].at("repeats").number() >= 3);
  CHECK(modes[1].at("geomean_us").number() > 0);
  // Leaderboard: a warm-up of every case, then every case rechecked.
  CHECK(cases(modes[2]).size() == 4);
  CHECK(cases(modes[2])[3].at("recheck").boolean());
}

TEST_CASE("a wrong output fails the test mode with the check's count and first indices; later modes do not run") {
  if (!have_numpy()) return;
  const std::string json = temp_dir() + "/r.json";
  const Result r = rehearse(sub("wrong"), "--json " + json);
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "test         FAIL"));
  CHECK(has(r.out, "2 of 2048 elements mismatch"));
  CHECK(has(r.out, "first at (m, n, l): (1, 2, 0)"));
  CHECK(has(r.out, "(3, 0, 0) output nan"));
  CHECK(has(r.out, "result: test FAIL; not run: benchmark, leaderboard -> exit 1"));
  const JsonValue j = report(json);
  CHECK(j.at("modes").items().size() == 1);
  CHECK(j.at("not_run").items().size() == 2);
  CHECK(cases(j.at("modes").items()[0])[1].at("bad_outputs").items()[0].at("mismatches").number() == 2);
}

TEST_CASE("work at import past the limit would time out in stage load; the compile run's timeout is ignored") {
  if (!have_numpy()) return;
  const std::string json = temp_dir() + "/r.json";
  Result r = rehearse(sub("slow_import"), "--evaluator-mode test --limit-test 1.5 --limit-compile 1 --json " + json);
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "test         WOULD TIME OUT"));
  CHECK(has(r.out, "killed at its 1.5 s limit in stage load (the import of the submission"));
  CHECK(has(r.out, "finished: nothing"));
  CHECK(has(r.out, "s, TIMEOUT at its 1 s limit in stage load"));  // the compile run
  CHECK(r.seconds < 9);
  JsonValue m = report(json).at("modes").items()[0];
  CHECK(m.at("limit_hit").boolean());
  CHECK(m.at("stage").str() == "load");

  // With room for it the same import passes, and its 3 s are the import's in the breakdown.
  r = rehearse(sub("slow_import"), "--evaluator-mode test --limit-test 10 --limit-compile 1 --json " + json);
  CHECK(r.rc == 0);
  m = report(json).at("modes").items()[0];
  CHECK(m.at("verdict").str() == "PASS");
  CHECK(m.at("compile_run").at("outcome").str() == "TIMEOUT");
  CHECK(m.at("breakdown_s").at("import").number() >= 3.0);
  CHECK(m.at("breakdown_s").at("first_calls").number() < 1.0);
}

TEST_CASE("slow calls hit the benchmark limit in the timed repeats, naming the case and what had finished") {
  if (!have_numpy()) return;
  const std::string json = temp_dir() + "/r.json";
  const TimedResult r = run_argv({"rehearse", "gpumode", "--submission", sub("slow_call"), "--task", kTask,
                                  "--limit-compile", "0", "--evaluator-mode", "benchmark", "--limit-benchmark", "4",
                                  "--json", json},
                                 30);
  INFO(r.out);
  CHECK(!r.timed_out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "benchmark    WOULD TIME OUT"));
  CHECK(has(r.out, "killed at its 4 s limit in stage time ("));
  CHECK(has(r.out, "case 1 of 2 (64x32x64x1 seeds 53..221), in its timed repeats ("));
  CHECK(has(r.out, "finished: warm-up passed"));
  CHECK(r.seconds < 10);
  const JsonValue m = report(json).at("modes").items()[0];
  CHECK(m.at("verdict").str() == "WOULD TIME OUT");
  CHECK(m.at("stage").str() == "time");
  CHECK(m.at("wall_s").number() >= 4);
  CHECK(cases(m).back().at("status").str() == "running");
  CHECK(cases(m).back().at("step").str() == "repeats");
}

TEST_CASE("a stage budget given is the harness's TIMEOUT, not the evaluator's") {
  if (!have_numpy()) return;
  const Result r = rehearse(sub("slow_call"), "--evaluator-mode test --budget-run 0.02");
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "test         TIMEOUT"));
  CHECK(has(r.out, "stage run exceeded its budget of 0.0"));
  CHECK(has(r.out, "not the evaluator's"));
  CHECK(has(r.out, "test 1 of 3 (64x32x64x1 seed 5)"));
}

TEST_CASE("the first call of each shape is accounted apart: a compile-like first call") {
  if (!have_numpy()) return;
  const std::string json = temp_dir() + "/r.json";
  const Result r = rehearse(sub("slow_first_call"), "--evaluator-mode test --json " + json);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "(first of its shape)"));
  const JsonValue m = report(json).at("modes").items()[0];
  const auto& c = cases(m);
  REQUIRE(c.size() == 3);
  CHECK(c[0].at("first_call_of_shape").boolean());
  CHECK(c[1].at("first_call_of_shape").boolean());
  CHECK(!c[2].at("first_call_of_shape").boolean());  // test 3 has test 1's shape
  CHECK(c[0].at("first_call_s").number() >= 1.0);
  CHECK(c[2].at("first_call_s").number() < 0.5);
  CHECK(m.at("breakdown_s").at("first_calls").number() >= 2.0);
  CHECK(m.at("breakdown_s").at("other_calls").number() < 0.5);
}

TEST_CASE("the leaderboard's recheck: bad outputs the evaluator never sees are reported; the last one fails") {
  if (!have_numpy()) return;
  setenv("REHEARSE_N", "5", 1);  // the tiny task's data objects per benchmark
  Result r = rehearse(sub("recheck_blind_spot"), "--evaluator-mode leaderboard");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "leaderboard  PASS"));
  CHECK(has(r.out, "warning: 29 bad outputs in the rechecks that the evaluator does not see"));
  CHECK(has(r.out, "first: repeat 2, output 1:"));
  r = rehearse(sub("recheck_blind_spot"), "--evaluator-mode leaderboard --toggles last");
  CHECK(r.rc == 1);
  CHECK(has(r.out, "leaderboard  FAIL"));
  CHECK(has(r.out, "case 1 (64x32x64x1 seeds 53..221): repeat 2, output 5 of 5: 1 of 2048 elements mismatch"));
  unsetenv("REHEARSE_N");
}

TEST_CASE("an exception in custom_kernel fails the mode naming the call, with the submission's traceback") {
  if (!have_numpy()) return;
  const Result r = rehearse(sub("raises"), "");
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "exception in custom_kernel (test 2): RuntimeError: planted failure on call 2"));
  CHECK(has(r.out, "the child's last output:"));
  CHECK(has(r.out, "raises.py"));
}

TEST_CASE("a process the submission leaves holding the output pipe would time out; whatever it leaves is killed") {
  if (!have_numpy()) return;
  const std::string dir = temp_dir(), json = dir + "/r.json", pids = dir + "/pids";
  setenv("REHEARSE_PIDFILE", pids.c_str(), 1);
  // A Popen inheriting stdout and stderr: kernelbot reads them to EOF, so the evaluator waits for it.
  TimedResult r = run_argv({"rehearse", "gpumode", "--submission", sub("leaves_process"), "--task", kTask,
                            "--limit-compile", "0", "--evaluator-mode", "test,benchmark", "--json", json},
                           60);
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "test         WOULD TIME OUT"));
  CHECK(has(r.out, "a process the submission started still holds the output pipe: the evaluator waits for it until "
                   "its limit (pid "));
  CHECK(has(r.out, "(sleep 77), holding the output pipe; the mode itself passed"));
  CHECK(has(r.out, "result: test WOULD TIME OUT; not run: benchmark -> exit 1"));
  JsonValue m = report(json).at("modes").items()[0];
  CHECK(m.at("output_held").boolean());
  CHECK(m.at("left_behind").items().size() == 1);
  // The wait for the pipe is reported apart from the start.
  CHECK(m.at("breakdown_s").at("after_exit").number() >= 1.5);
  CHECK(m.at("breakdown_s").at("start").number() < 1.5);
  for (int pid : pids_in(pids)) CHECK_MESSAGE(!alive(pid), "pid " << pid << " outlived the rehearsal");

  // A fork that leaves the process group (setsid) is found as well, and killed.
  std::remove(pids.c_str());
  r = run_argv({"rehearse", "gpumode", "--submission", sub("leaves_process"), "--task", kTask, "--limit-compile", "0",
                "--evaluator-mode", "test", "--toggles", "setsid"},
               60);
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "outside its process group (setsid?), holding the output pipe"));
  REQUIRE(pids_in(pids).size() == 1);
  CHECK(!alive(pids_in(pids)[0]));

  // One that holds nothing the evaluator waits for passes, with a note, and is killed too; so is
  // the one the compile run left.
  std::remove(pids.c_str());
  r = run_argv({"rehearse", "gpumode", "--submission", sub("leaves_process"), "--task", kTask, "--limit-compile", "5",
                "--evaluator-mode", "test", "--toggles", "quiet", "--json", json},
               60);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "test         PASS"));
  CHECK(has(r.out, "note: left behind after the child's exit: pid "));
  CHECK(pids_in(pids).size() == 2);  // the compile run's and the mode's
  for (int pid : pids_in(pids)) CHECK(!alive(pid));
  m = report(json).at("modes").items()[0];
  CHECK(!m.at("output_held").boolean());
  CHECK(m.at("compile_run").at("left_behind").items().size() == 1);
  unsetenv("REHEARSE_PIDFILE");
}

TEST_CASE("what ends the evaluator's pool worker would time out; an ordinary exception fails") {
  if (!have_numpy()) return;
  const std::pair<std::string, std::string> dying[] = {
      {"segv", "crashed: SIGSEGV in stage run"},
      {"exit-at-import", "in stage load without reporting why (os._exit, or an exit in native code)"},
      {"sysexit", "exception in custom_kernel (test 1): SystemExit: 0"},
      {"keyboard", "exception in custom_kernel (test 1): KeyboardInterrupt"},
  };
  for (const auto& [toggle, why] : dying) {
    const Result r = rehearse(sub("dies"), "--evaluator-mode test --toggles " + toggle);
    INFO(toggle);
    INFO(r.out);
    CHECK(r.rc == 1);
    CHECK(has(r.out, "test         WOULD TIME OUT"));
    CHECK(has(r.out, why));
    CHECK(has(r.out, "the evaluator's pool worker would die and eval.py would wait for it until the limit"));
  }
  const Result r = rehearse(sub("dies"), "--evaluator-mode test --toggles raise-at-import");
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "test         FAIL"));
  CHECK(has(r.out, "exception at import of"));
  CHECK(!has(r.out, "pool worker would die"));
}

TEST_CASE("a hung call's time is charged to the step it was in: the first call, the timed repeats") {
  if (!have_numpy()) return;
  const std::string json = temp_dir() + "/r.json";
  TimedResult r = run_argv({"rehearse", "gpumode", "--submission", sub("hangs"), "--task", kTask, "--limit-compile",
                            "0", "--evaluator-mode", "test", "--limit-test", "2.5", "--json", json},
                           30);
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "test 1 of 3 (64x32x64x1 seed 5), in its call"));
  JsonValue b = report(json).at("modes").items()[0].at("breakdown_s");
  CHECK(b.at("in_flight").at("step").str() == "call");
  CHECK(b.at("first_calls").number() >= 1.5);
  CHECK(b.at("other").number() < 0.5);

  r = run_argv({"rehearse", "gpumode", "--submission", sub("slow_call"), "--task", kTask, "--limit-compile", "0",
                "--evaluator-mode", "benchmark", "--limit-benchmark", "4", "--json", json},
               30);
  INFO(r.out);
  CHECK(has(r.out, "in its timed repeats (at least "));
  b = report(json).at("modes").items()[0].at("breakdown_s");
  CHECK(b.at("in_flight").at("step").str() == "repeats");
  CHECK(b.at("other").number() < 0.5);
  CHECK(b.at("other").number() > -0.05);  // nothing counted twice
  CHECK(b.at("timed_repeats").number() >= 1.5);
}

TEST_CASE("judge and the report: precedence of the verdicts, the close-to-limit warning") {
  using nvfp4::Outcome;
  nvfp4::RehearsalMode m;
  m.name = "test";
  m.child.ran = true;
  m.child.outcome = Outcome::Pass;
  m.child.limit_s = 10;
  m.child.wall_s = m.child.talk_s = 9.5;
  m.child.account = R"({"verdict": "pass", "cases": [], "case_counts": {"tests": 0, "benchmarks": 0}})";
  nvfp4::judge(m);
  CHECK(m.verdict == "PASS");
  std::ostringstream os;
  nvfp4::print_rehearsal_mode(os, m, 0);
  CHECK(has(os.str(), "warning: close to the limit (9.5 s of 10 s): the evaluator's own start-up and its per-recheck "
                      "reference (not counted here) may push it over"));
  m.child.wall_s = 8.9;
  CHECK(nvfp4::close_to_limit(m).empty());

  // A held output pipe outweighs the mode's own verdict, pass or fail.
  m.child.account = R"({"verdict": "fail", "cases": []})";
  m.child.output_held = true;
  m.child.left_behind = {"pid 7 (sleep 77), holding the output pipe"};
  nvfp4::judge(m);
  CHECK(m.verdict == "WOULD TIME OUT");
  CHECK(has(m.message, "(pid 7 (sleep 77), holding the output pipe; the mode itself failed"));

  // A crash after the import began: the evaluator's worker dies. In setup (the harness's own
  // start, before the submission loads) it is a failure.
  m.child.output_held = false;
  m.child.outcome = Outcome::Crash;
  m.child.message = "SIGSEGV in stage run";
  m.child.stage = "run";
  m.child.died = true;
  nvfp4::judge(m);
  CHECK(m.verdict == "WOULD TIME OUT");
  m.child.died = false;
  m.child.stage = "setup";
  nvfp4::judge(m);
  CHECK(m.verdict == "FAIL");
}

TEST_CASE("a secret seed pairs every case's seed as the evaluator does") {
  if (!have_numpy()) return;
  const std::string json = temp_dir() + "/r.json";
  const Result r = rehearse(sub("correct"), "--evaluator-mode test --secret-seed 12345 --json " + json);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "secret seed 12345"));
  const JsonValue j = report(json);
  CHECK(j.at("secret_seed").number() == 12345);
  CHECK(cases(j.at("modes").items()[0])[0].at("seed").number() == 76267430);  // 5 + 12350 * 12351 / 2
}

TEST_CASE("a torch submission where torch is missing is SKIP, exit 125") {
  if (std::system("python3 -c 'import torch' >/dev/null 2>&1") == 0) return;  // here it would run
  const std::string path = temp_dir() + "/sub.py";
  std::ofstream(path) << "import torch\ndef custom_kernel(data):\n    return data[-1]\n";
  const Result r = rehearse(path, "");
  INFO(r.out);
  CHECK(r.rc == 125);
  CHECK(has(r.out, "test         SKIP"));
  CHECK(has(r.out, "the submission needs torch"));
}

TEST_CASE("bad usage and bad submissions are refused with exit 2 before any child runs") {
  const std::string dir = temp_dir();
  const std::string syntax = dir + "/syntax.py", no_kernel = dir + "/no_kernel.py", bad_task = dir + "/task.json";
  std::ofstream(syntax) << "def custom_kernel(data:\n";
  std::ofstream(no_kernel) << "NVFP4_DATA = \"numpy\"\ndef kernel(data):\n    return data[-1]\n";
  std::ofstream(bad_task) << read_text(kTask).replace(read_text(kTask).find("\"k\": 64"), 7, "\"k\": 24");
  const std::string fifo = dir + "/fifo.json";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const std::string ok = " --submission " + sub("correct") + " --task " + kTask;
  // The tiny task with one piece of text replaced, in a file of its own.
  int tasks = 0;
  auto task_with = [&](const std::string& from, const std::string& to) {
    std::string text = read_text(kTask);
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    const std::string path = dir + "/task" + std::to_string(++tasks) + ".json";
    std::ofstream(path) << text.replace(at, from.size(), to);
    return " --submission " + sub("correct") + " --task " + path;
  };
  const std::string iterations = "\"iterations_per_benchmark\": 5";
  // Copies of the inputs (never the repository's own files: a rehearsal that ran would overwrite them).
  const std::string sub_copy = dir + "/sub.py", task_copy = dir + "/tiny.json", task_link = dir + "/link.json";
  std::ofstream(sub_copy) << read_text(sub("correct"));
  std::ofstream(task_copy) << read_text(kTask);
  REQUIRE(symlink(task_copy.c_str(), task_link.c_str()) == 0);
  const std::string literal = dir + "/literal.py", nul = dir + "/nul.py";
  std::ofstream(literal) << "NVFP4_DATA = \"numpy\"\ncustom_kernel = 5\n";
  std::ofstream(nul) << std::string("def custom_kernel(d):\n    return d\n\0\n", 37);
  const std::pair<std::string, std::string> cases[] = {
      {"rehearse", "harness rehearse needs the evaluator's name"},
      {"rehearse nvidia" + ok, "the evaluator rehearsed is gpumode"},
      {"rehearse gpumode --task " + kTask, "needs --submission FILE.py"},
      {"rehearse gpumode --submission /nonexistent/sub.py", "--submission /nonexistent/sub.py: no such file"},
      {"rehearse gpumode --submission " + syntax, "syntax error at line 1"},
      {"rehearse gpumode --submission " + no_kernel, "defines no custom_kernel"},
      {"rehearse gpumode" + ok + " --submission " + sub("wrong"), "takes one --submission"},
      {"rehearse gpumode" + ok + " --toggles fast", "'fast' is not a toggle of"},
      {"rehearse gpumode" + ok + " --toggles a,b", "names joined with '+'"},
      {"rehearse gpumode" + ok + " --evaluator-mode ranked", "the evaluator's modes are test, benchmark, leaderboard"},
      {"rehearse gpumode" + ok + " --evaluator-mode test,", "empty item"},
      {"rehearse gpumode" + ok + " --limit-test 0", "--limit-test must be a positive number of seconds"},
      {"rehearse gpumode" + ok + " --limit-leaderboard nan", "--limit-leaderboard must be a positive number"},
      {"rehearse gpumode" + ok + " --limit-compile -1", "--limit-compile must be a non-negative number"},
      {"rehearse gpumode" + ok + " --secret-seed 2147483648", "secret seeds lie in [0, 2^31 - 1]"},
      {"rehearse gpumode" + ok + " --secret-seed -5", "expected an integer in [0, 2^64 - 1]"},
      {"rehearse gpumode" + ok + " --secret-seed x", "for option '--secret-seed' is invalid"},
      {"rehearse gpumode" + ok + " --budget-tune 3", "stage tune never runs in a rehearsal"},
      {"rehearse gpumode" + ok + " --budget-trial 3", "--limit-test, --limit-benchmark, --limit-leaderboard"},
      {"rehearse gpumode" + ok + " --budget-run 0", "--budget-run must be a positive number"},
      {"rehearse gpumode" + ok + " --plugin lib.so", "the evaluator runs a Python submission"},
      {"rehearse gpumode" + ok + " --backend cpu", "--backend is not an option of harness rehearse"},
      {"rehearse gpumode" + ok + " --html r.html", "its report is --json"},
      {"rehearse gpumode" + ok + " --shape 1x1x16", "--shape is not an option of harness rehearse"},
      {"rehearse gpumode" + ok + " --emulate-fp4 maybe", "--emulate-fp4: must be auto, on or off"},
      {"rehearse gpumode" + ok + " --json /nonexistent/r.json", "--json /nonexistent/r.json"},
      {"rehearse gpumode --submission " + sub("correct") + " --task " + bad_task, "k = 24 is not a multiple of 16"},
      {"rehearse gpumode --submission " + sub("correct") + " --task " + dir + "/none.json", "--task"},
      {"rehearse gpumode --submission " + sub("correct") + " --task " + fifo, "FIFO"},
      // --json never names an input: the report is written last, over whatever the path holds.
      {"rehearse gpumode --submission " + sub_copy + " --task " + kTask + " --json " + sub_copy,
       "is the --submission file; it would be overwritten"},
      {"rehearse gpumode --submission " + sub("correct") + " --task " + task_link + " --json " + task_copy,
       "is the --task file; it would be overwritten"},
      // Every value of a task file, by field.
      {"rehearse gpumode" + task_with(iterations, "\"iterations_per_benchmark\": 0"),
       "evaluator.iterations_per_benchmark must be an integer in [1, 10000] (got 0)"},
      {"rehearse gpumode" + task_with(iterations, "\"iterations_per_benchmark\": \"x\""),
       "evaluator.iterations_per_benchmark must be an integer"},
      {"rehearse gpumode" + task_with(iterations, iterations + ", \"seed_step\": -100"),
       "evaluator.seed_step must be an integer in [0, "},
      {"rehearse gpumode" + task_with("\"benchmark\": [30, 10.0]", "\"benchmark\": [-1, 5]"),
       "evaluator.benchmark[0] (max repeats) must be an integer in [1, "},
      {"rehearse gpumode" + task_with("\"m\": 64, \"n\": 32", "\"m\": 10000000, \"n\": 10000000"),
       "tests[0].m must be an integer in [1, 1048576] (got 10000000)"},
      {"rehearse gpumode" + task_with("\"m\": 64, \"n\": 32, \"k\": 64", "\"m\": 4096, \"n\": 4096, \"k\": 131072"),
       "tests[0]: m*n*k*l = 2199023255552 exceeds 2^40"},
      {"rehearse gpumode" + task_with("\"m\": 64, \"n\": 32", "\"m\": 65536, \"n\": 65536"),
       "tests[0]: one data object of 65536x65536x64x1 takes 8597798912 bytes, more than 4 GiB"},
      {"rehearse gpumode" + task_with("\"m\": 64", "\"m\": 1180591620717411303424"), "tests[0].m must be an integer"},
      {"rehearse gpumode" + task_with("\"seed\": 5", "\"seed\": 1208925819614629174706176"),
       "tests[0].seed must be an integer in [0, 18446744073709551615]"},
      {"rehearse gpumode" + task_with("\"seed\": 5", "\"seed\": 9223372036854775807"),
       "paired with a secret seed up to 2^31 - 1"},
      {"rehearse gpumode" + task_with("\"rtol\": 0.001", "\"rtol\": Infinity"),
       "tolerance.rtol must be a finite number > 0, at most 1e+06 (got Infinity)"},
      {"rehearse gpumode" + task_with("\"test\": 30", "\"test\": NaN"), "limits_s.test must be a finite number"},
      {"rehearse gpumode" + task_with("\"task\": \"tiny\"", "\"task\": 5"), "\"task\" must be a printable name"},
      {"rehearse gpumode" + task_with("\"seed\": 5}", "\"seed\": 5, \"extra\": 1}"),
       "tests[0] must hold exactly m, n, k, l, seed (unknown: 'extra')"},
      {"rehearse gpumode" + task_with("\"m\": 64", "\"m\": 64.0"), "tests[0].m must be an integer"},
      // Submissions that cannot hold a custom_kernel, or are no Python file.
      {"rehearse gpumode --task " + kTask + " --submission " + literal,
       "custom_kernel is bound only to the literal 5 (line 2), which is not callable"},
      {"rehearse gpumode --task " + kTask + " --submission " + dir, "is a directory"},
      {"rehearse gpumode --task " + kTask + " --submission " + nul, "contains a NUL byte (line 3"},
      {"verify all --limit-test 3", "--limit-test is not an option of harness verify"},
      {"verify plain --emulate-fp4 on", "--emulate-fp4 is about a Python submission"},
      {"bench plain --emulate-fp4 sometimes --submission " + sub("correct"), "--emulate-fp4: must be auto, on or off"},
  };
  for (const auto& [args, want] : cases) {
    const TimedResult r = run_argv([&] {
      std::vector<std::string> v;
      std::string cur;
      for (char ch : args + " ")
        if (ch == ' ') {
          if (!cur.empty()) v.push_back(cur);
          cur.clear();
        } else {
          cur += ch;
        }
      return v;
    }(), 30);
    INFO(args);
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, want));
    CHECK(!has(r.out, "compile run"));  // nothing ran
  }
}

TEST_CASE("--emulate-fp4 reaches the driver of verify --submission and its reproducer") {
  if (!have_numpy()) return;
  // A numpy submission calls no torch._scaled_mm: the flag changes nothing but must be accepted by
  // the driver, and a failing trial's reproducer carries it.
  const Result r = run("verify plain --submission " + sub("wrong") + " --shape 8x16x64 --dist normal --emulate-fp4 off");
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "FAIL"));
  CHECK(has(r.out, "--emulate-fp4 off"));
}

TEST_CASE("the JSON report keeps a child's log that is not UTF-8, its stray bytes as U+FFFD") {
  nvfp4::Rehearsal r;
  nvfp4::RehearsalMode m;
  m.name = "test";
  m.child.ran = true;
  m.child.outcome = nvfp4::Outcome::Crash;
  m.child.log_tail = "Segmentation fault \xFF\xFE at 0x0\n";
  r.modes.push_back(m);
  std::string text;
  REQUIRE_NOTHROW(text = nvfp4::rehearsal_json(r));
  const JsonValue v = JsonValue::parse(text);
  CHECK(v.at("modes").items().at(0).at("log_tail").str() == "Segmentation fault \xEF\xBF\xBD\xEF\xBF\xBD at 0x0\n");
}
