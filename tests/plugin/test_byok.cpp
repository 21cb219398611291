// test_byok.cpp — outside paths through the real harness binary (harness/backends/external.hpp): a C-ABI
// plugin (--plugin) and a Python submission (--submission) run through the lattice, bisect,
// stage watchdogs and checks, with their code loaded only in trial children (stage load).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "../harness/harness_cli.hpp"

using namespace harness_cli;

namespace {

const std::string kPlugin = NVFP4_CPU_PLUGIN;
const std::string kBroken = NVFP4_BROKEN_DIR;
const std::string kNumpy = std::string(NVFP4_SOURCE_DIR) + "/examples/submission_numpy/submission.py";
const std::vector<std::string> kCase = {"--shape", "33x65x160", "--dist", "normal"};

std::vector<std::string> with_case(std::vector<std::string> args) {
  args.insert(args.end(), kCase.begin(), kCase.end());
  return args;
}

bool have_numpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

// A submission in a fresh folder: `prelude` runs at import, then the numpy example's kernel is
// loaded under another module name (with `kernel = false`: no custom_kernel at all).
std::string submission(const std::string& prelude, bool kernel = true) {
  const std::string path = temp_dir() + "/sub.py";
  std::ofstream f(path);
  f << "import importlib.util, time\nNVFP4_DATA = \"numpy\"\n" << prelude << "\n";
  if (kernel)
    f << "_s = importlib.util.spec_from_file_location(\"numpy_example\", \"" << kNumpy << "\")\n"
      << "_m = importlib.util.module_from_spec(_s)\n_s.loader.exec_module(_m)\n"
      << "custom_kernel = _m.custom_kernel\n";
  return path;
}

}  // namespace

TEST_CASE("--plugin: --verify all runs the plugin's lattice, each trial loading it in stage load") {
  const std::string json = temp_dir() + "/r.json";
  const auto r = run_argv(with_case({"--plugin", kPlugin, "--verify", "all", "--json", json}), 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "result: 4 PASS -> exit 0"));
  for (const char* combo : {" plain ", " blocked ", " threads ", " blocked+threads "})
    CHECK(has(r.out, std::string("plugin:cpu-example") + combo + "33x65x160 normal seed 7  PASS"));
  const auto trials = json_trials(read_text(json));
  REQUIRE(trials.size() == 4);
  for (const auto& t : trials) CHECK(stage_seconds(t, "load") >= 0);
}

TEST_CASE("--plugin: --bisect names the optimization a planted failure hides in") {
  const auto r = run_argv(with_case({"--plugin", kPlugin, "--bisect", "blocked+threads", "--inject",
                                     "corrupt@run:if=blocked"}),
                          120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "culprit: blocked (FAIL in stage run"));
  CHECK(has(r.out, "--plugin " + kPlugin));  // the reproducer loads the plugin too
}

TEST_CASE("--plugin: a load that hangs is TIMEOUT in stage load; the harness itself starts at once") {
  const std::string json = temp_dir() + "/r.json";
  const auto r = run_argv(with_case({"--plugin", kBroken + "/libbroken_load_hang.so", "--verify", "all",
                                     "--budget-load", "1", "--json", json}),
                          30);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(r.seconds < 1 + 2);
  CHECK(has(r.out, "TIMEOUT"));
  CHECK(has(r.out, "stage load exceeded its budget of 1.0 s"));
  const auto trials = json_trials(read_text(json));
  REQUIRE(trials.size() == 1);
  CHECK(has(trials[0], "\"outcome\":\"TIMEOUT\""));
  // The load probe runs before the trials' session: its second is the run's all the same, in the
  // trial's progress line, the summary and the report (they said 0.0 s).
  CHECK(json_number(trials[0], "stage_elapsed_s") >= 1.0);
  CHECK(summary_seconds(r.out) >= 1.0);
  CHECK(json_number(read_text(json), "elapsed_s") >= 1.0);
  CHECK(has(r.out, "[   1     1."));
}

TEST_CASE("--plugin: a library the loader refuses is bad input: exit 2 before any trial, the reason named") {
  // Each of the loader's refusals (tests/plugin/broken_plugin.cpp's defects, and files that are no
  // shared library) ends the run at once with exit 2, also beside a good plugin.
  const std::string dir = temp_dir();
  const std::string text = dir + "/text.so";
  std::ofstream(text) << "not a library\n";
  struct Row {
    std::string lib, says;
  };
  const std::vector<Row> rows = {
      {kBroken + "/libbroken_wrong_abi.so", "ABI version 99"},
      {kBroken + "/libbroken_missing_symbol.so", "missing symbol nvfp4_plugin_v1_get"},
      {kBroken + "/libbroken_small_table.so", "libbroken_small_table.so"},
      {kBroken + "/libbroken_null_entry.so", "libbroken_null_entry.so"},
      {kBroken + "/libbroken_bad_opt_name.so", "libbroken_bad_opt_name.so"},
      {text, "cannot open as a shared library"},
  };
  for (const Row& row : rows) {
    const auto r = run_argv(with_case({"--plugin", row.lib, "--plugin", kPlugin, "--verify", "plain"}), 60);
    INFO(row.lib);
    INFO(r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, "--plugin " + row.lib + ": not a usable plugin: "));
    CHECK(has(r.out, row.says));
    CHECK_FALSE(has(r.out, "PASS"));  // refused before any trial
  }
}

TEST_CASE("--submission: the numpy example's lattice passes, imported in stage load") {
  if (!have_numpy()) {
    MESSAGE("numpy is not importable here: not run");
    return;
  }
  const std::string json = temp_dir() + "/r.json";
  const auto r = run_argv(with_case({"--submission", kNumpy, "--verify", "all", "--json", json}), 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "result: 4 PASS -> exit 0"));
  CHECK(has(r.out, "submission:submission_numpy per-batch+tables-at-import 33x65x160 normal seed 7  PASS"));
  const auto trials = json_trials(read_text(json));
  REQUIRE(trials.size() == 4);
  for (const auto& t : trials) CHECK(stage_seconds(t, "load") >= 0);
}

TEST_CASE("--submission: import-time work shows in stage load, and its budget stops it") {
  if (!have_numpy()) {
    MESSAGE("numpy is not importable here: not run");
    return;
  }
  const std::string json = temp_dir() + "/r.json";
  const std::string slow = submission("time.sleep(1.5)");
  const auto r = run_argv(with_case({"--submission", slow, "--verify", "plain", "--json", json}), 60);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 0);
  const auto trials = json_trials(read_text(json));
  REQUIRE(trials.size() == 1);
  CHECK(stage_seconds(trials[0], "load") >= 1.4);
  CHECK(stage_seconds(trials[0], "init") < 1.0);

  const std::string hang = submission("time.sleep(60)");
  const auto t = run_argv(with_case({"--submission", hang, "--verify", "plain", "--budget-load", "1"}), 30);
  INFO(t.out);
  REQUIRE_FALSE(t.timed_out);
  CHECK(t.rc == 1);
  CHECK(t.seconds < 1 + 5);
  CHECK(has(t.out, "TIMEOUT"));
  CHECK(has(t.out, "stage load exceeded its budget of 1.0 s"));
  CHECK(has(t.out, "in stage load after 1.0"));  // the stage's own time, not 0
  CHECK(summary_seconds(t.out) >= 1.0);
}

TEST_CASE("--submission: a submission without custom_kernel is bad input, or an ERROR in stage load where only its import can tell") {
  if (!have_numpy()) {
    MESSAGE("numpy is not importable here: not run");
    return;
  }
  // Nothing in the source binds the name: refused before any trial, as the rehearsal refuses it.
  const std::string none = submission("X = 1", false);
  const auto r = run_argv(with_case({"--submission", none, "--verify", "plain"}), 60);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 2);
  CHECK(has(r.out, "defines no custom_kernel"));
  CHECK_FALSE(has(r.out, "Summary"));
  // A binding the source cannot settle (globals() here) is tried: the import tells.
  const std::string dynamic = submission("globals()['other_name'] = 1", false);
  const auto d = run_argv(with_case({"--submission", dynamic, "--verify", "plain"}), 60);
  INFO(d.out);
  REQUIRE_FALSE(d.timed_out);
  CHECK(d.rc == 1);
  CHECK(has(d.out, "defines no custom_kernel(data)"));
  CHECK(has(d.out, "in stage load"));
  const auto missing = run_argv({"--submission", "/nonexistent/sub.py", "--verify", "plain"}, 30);
  CHECK(missing.rc == 2);
  CHECK(has(missing.out, "no such file"));
}

TEST_CASE("--bisect: the verdict and progress lines are one line even when an error message is not") {
  if (!have_numpy()) {
    MESSAGE("numpy is not importable here: not run");
    return;
  }
  // Two toggles that fail only together, with a two-line exception at import (as PyTorch's are).
  const std::string pair = submission(
      "import os\nNVFP4_TOGGLES = [\"left\", \"right\"]\n"
      "if os.environ.get(\"NVFP4_TOGGLES\") == \"left+right\":\n"
      "    raise RuntimeError(\"first line of the reason\\nsecond line of the reason\")");
  const auto r = run_argv(with_case({"--submission", pair, "--bisect", "left+right"}), 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  const size_t at = r.out.find("culprit: left+right");
  REQUIRE(at != std::string::npos);
  const std::string verdict = r.out.substr(at, r.out.find('\n', at) - at);
  CHECK(has(verdict, "RuntimeError: first line"));
  CHECK_FALSE(has(verdict, "second line"));
  CHECK(has(verdict, "each alone passes"));
  // The progress line of the failing trial is one line too.
  const size_t p = r.out.find("submission:sub left+right 33x65x160");
  REQUIRE(p != std::string::npos);
  CHECK_FALSE(has(r.out.substr(p, r.out.find('\n', p) - p), "second line"));
  CHECK(r.out.find("\nsecond line") == std::string::npos);
}

TEST_CASE("--plugin: a read_output that copies nothing back leaves every element named unwritten") {
  const std::string json = temp_dir() + "/reads_nothing.json";
  const auto r = run_argv(with_case({"--plugin", kBroken + "/libbroken_reads_nothing.so", "--verify", "plain",
                                     "--json", json}), 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "FAIL"));
  CHECK(has(r.out, "2145 of 2145 elements over tolerance in call 1 (2145 unwritten)"));
}

TEST_CASE("--plugin: a read_output that writes past the end of C is a FAIL naming it; the example passes") {
  // 7x13x48: L·M·N = 91, which the planted plugin rounds up to 96 (16-byte blocks): 5 elements past
  // the end of the harness's buffer, every element of C right. Without a guard zone this passed
  // (and on the full suite corrupted the harness's heap: free(): invalid pointer in later trials).
  const std::vector<std::string> ragged = {"--shape", "7x13x48", "--dist", "uniform"};
  auto on_ragged = [&](std::vector<std::string> args) {
    args.insert(args.end(), ragged.begin(), ragged.end());
    return args;
  };
  const std::string json = temp_dir() + "/overrun.json";
  const auto r = run_argv(on_ragged({"--plugin", kBroken + "/libplanted_read_overrun.so", "--verify", "plain,threads",
                                     "--json", json}),
                          120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(has(r.out, "plugin:cpu-overrun plain 7x13x48 uniform seed 7  FAIL"));
  CHECK(has(r.out, "read_output wrote outside C (stage run, call 1): 5 elements past its end (L·M·N = 91): "
                   "a copy rounded up to a vector width or tile?"));
  CHECK(has(r.out, "result: 2 FAIL -> exit 1"));  // no CRASH in a later stage or trial: the heap is intact
  const auto trials = json_trials(read_text(json));
  REQUIRE(trials.size() == 2);
  for (const auto& t : trials) {
    CHECK(has(t, "\"outcome\":\"FAIL\""));
    CHECK(has(t, "\"stage\":\"run\""));
  }
  // In bench mode the timed outputs go through the same guard.
  const auto b = run_argv({"--plugin", kBroken + "/libplanted_read_overrun.so", "--bench", "plain", "--bench-shapes",
                           "7x13x48"},
                          120);
  INFO(b.out);
  CHECK(b.rc == 1);
  CHECK(has(b.out, "read_output wrote outside C (stage run, call 1): 5 elements past its end"));
  CHECK(has(b.out, "read_output wrote outside C (stage time, the last timed call): 5 elements past its end"));
  // The example plugin it was made from passes on the same shape, every combination.
  const auto ok = run_argv(on_ragged({"--plugin", kPlugin, "--verify", "all"}), 120);
  INFO(ok.out);
  REQUIRE_FALSE(ok.timed_out);
  CHECK(ok.rc == 0);
  CHECK(has(ok.out, "result: 4 PASS -> exit 0"));
  CHECK_FALSE(has(ok.out, "wrote outside"));
}

TEST_CASE("--plugin: a create() that fails is ERROR in stage init naming the plugin's failure, not bad input") {
  const auto r = run_argv(with_case({"--plugin", kBroken + "/libbroken_create_fails.so", "--verify", "plain"}), 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);  // a failure of the code under test: exit 1, never the bad-input exit 2
  CHECK(has(r.out, "ERROR"));
  CHECK(has(r.out, "plugin create() failed (plugin:broken, combination plain): create refuses: this plugin is "
                   "broken on purpose"));
  CHECK_FALSE(has(r.out, "InputError"));
}

TEST_CASE("--submission: process-wide settings changed at import are listed in the summary, not a verdict") {
  if (!have_numpy()) {
    MESSAGE("numpy is not importable here: not run");
    return;
  }
  const std::string quiet = submission("import numpy as np\nnp.seterr(over='ignore', invalid='ignore')");
  const auto r = run_argv(with_case({"--submission", quiet, "--verify", "plain"}), 120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "note: submission:sub changed process-wide settings at import: numpy.seterr invalid: 'warn' -> "
                   "'ignore'; numpy.seterr over: 'warn' -> 'ignore' (1 trial; the caller's other work runs with them)"));
  // The numpy example changes nothing.
  const auto plain = run_argv(with_case({"--submission", kNumpy, "--verify", "plain"}), 120);
  CHECK(plain.rc == 0);
  CHECK_FALSE(has(plain.out, "process-wide"));
}

TEST_CASE("--submission: a megabyte-long error is kept to its start; the verdict and exit code stand") {
  if (!have_numpy()) {
    MESSAGE("numpy is not importable here: not run");
    return;
  }
  // 10 MB of exception text at import (a tensor's repr, say): the driver sends it as one `error`
  // line, and the trial is ERROR in stage load with the reason's first 4 KiB.
  const std::string huge = submission("raise RuntimeError('x' * 10_000_000 + 'END-OF-REASON')");
  const std::string json = temp_dir() + "/huge.json";
  const auto r = run_argv(with_case({"--submission", huge, "--verify", "plain", "--json", json}), 120);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 1);
  CHECK(r.out.size() < 100000);  // the console: the start of the reason, not 20 MB
  CHECK(has(r.out, "RuntimeError: xxxx"));
  CHECK(has(r.out, "more bytes left out]"));
  CHECK_FALSE(has(r.out, "END-OF-REASON"));
  struct stat st {};
  REQUIRE(::stat(json.c_str(), &st) == 0);
  CHECK(st.st_size < 200000);
}

TEST_CASE("--plugin: --bench times the plugin's combinations like built-ins, each timed output checked") {
  const std::string json = temp_dir() + "/bench.json";
  const auto r = run_argv({"--plugin", kPlugin, "--bench", "plain,threads", "--bench-shapes", "33x65x160,64x128x256",
                           "--bench-json", json},
                          120);
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "result: 4 PASS -> exit 0"));
  // Every trial ran stage time (its progress line lists it) and has a timing in the JSON.
  for (const char* combo : {" plain ", " threads "})
    for (const char* shape : {"33x65x160", "64x128x256"}) {
      const std::string head = std::string("plugin:cpu-example") + combo + shape + " normal seed 1  PASS";
      const size_t at = r.out.find(head);
      REQUIRE(at != std::string::npos);
      CHECK(r.out.find(" time ", at) < r.out.find('\n', at));
    }
  const std::string text = read_text(json);
  size_t timings = 0;
  for (size_t at = text.find("\"timing\""); at != std::string::npos; at = text.find("\"timing\"", at + 1)) ++timings;
  CHECK(timings >= 4);
  CHECK(has(text, "\"mode\":\"bench\""));
}

TEST_CASE("--submission: a source that draws a compile-time warning is described and runs") {
  if (!have_numpy()) {
    MESSAGE("numpy is not importable here: not run");
    return;
  }
  // An invalid escape ("\d") is a SyntaxWarning shown by default from Python 3.12; with
  // PYTHONWARNINGS=always every Python shows it. The driver's description must stay one JSON line.
  const std::string sub = submission("_PATTERN = \"\\d+\"");
  ::setenv("PYTHONWARNINGS", "always", 1);
  const auto r = run_argv(with_case({"--submission", sub, "--verify", "plain"}), 60);
  ::unsetenv("PYTHONWARNINGS");
  INFO(r.out);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.rc == 0);
  CHECK(has(r.out, "result: 1 PASS -> exit 0"));
}

TEST_CASE("--submission: a process it forks and leaves running does not hold the trial past its end") {
  if (!have_numpy()) {
    MESSAGE("numpy is not importable here: not run");
    return;
  }
  // The forked process inherits the report pipe and sleeps on: the trial child exits after its
  // last message, but no EOF comes. The parent ends the talk when the child is gone and kills what
  // holds the pipe, in the child's process group or, after setsid, outside it (found by the pipe),
  // instead of waiting for the trial's budget (20 s here, 300 s by default).
  for (const bool own_session : {false, true}) {
    const std::string dir = temp_dir();
    const std::string sub = submission(
        "import os\n"
        "if os.fork() == 0:\n" +
        std::string(own_session ? "    os.setsid()\n" : "") +
        "    open('" + dir + "/pid', 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(0.5)\n");
    const std::string json = dir + "/r.json";
    const auto r = run_argv(with_case({"--submission", sub, "--verify", "plain", "--budget-trial", "20", "--json", json}), 60);
    INFO(own_session);
    INFO(r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.rc == 0);
    CHECK(has(r.out, "result: 1 PASS -> exit 0"));
    CHECK(r.seconds < 15);
    const std::string report = read_text(json);
    CHECK(has(report, "still held its report pipe"));
    if (own_session) CHECK(has(report, "holding the pipe from outside it"));
    // The forked process is gone (or a zombie its new parent has yet to reap).
    const int pid = std::atoi(read_text(dir + "/pid").c_str());
    REQUIRE(pid > 0);
    bool alive = true;
    for (int i = 0; i < 100 && alive; ++i) {
      const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
      alive = !stat.empty() && stat.find(") Z") == std::string::npos;
      if (alive) usleep(20000);
    }
    CHECK_FALSE(alive);
  }
}

TEST_CASE("--plugin and --submission paths that name no readable file: exit 2 before any trial, the type named") {
  const std::string dir = temp_dir();
  const std::string fifo = dir + "/fifo.py";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  struct Row {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Row> rows = {
      {{"--plugin", dir + "/no_such_lib.so"}, "--plugin " + dir + "/no_such_lib.so: no such file"},
      {{"--plugin", dir}, "--plugin " + dir + ": is a directory, not a regular file"},
      {{"--plugin", fifo}, "--plugin " + fifo + ": is a FIFO (named pipe), not a regular file"},
      {{"--submission", dir}, "--submission " + dir + ": is a directory, not a regular file"},
      {{"--submission", fifo}, "--submission " + fifo + ": is a FIFO (named pipe), not a regular file"},
      {{"rehearse", "gpumode", "--submission", dir}, "--submission " + dir + ": is a directory"},
  };
  for (const auto& row : rows) {
    std::vector<std::string> args = row.args;
    if (args.front() != "rehearse") {
      args = with_case(args);
      args.insert(args.end(), {"--verify", "plain"});
    }
    const auto r = run_argv(args, 30);
    INFO(r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.rc == 2);
    CHECK(has(r.out, row.says));
    CHECK(r.seconds < 5);
    CHECK_FALSE(has(r.out, "PASS"));
  }
}
