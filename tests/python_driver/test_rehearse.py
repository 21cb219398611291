"""The rehearsal's pure-Python parts (harness/backends/nvfp4_driver/rehearse.py, gpumode_data.py):
GPU MODE's stopping rule and statistics, its seed pairing, the E4M3 rounding of its scale
generator, the numpy data, reference and check, and the three modes' loops run against a stand-in
host with a fake clock: how many repeats, which rule stops them, which bad outputs the evaluator
sees, which cases run after a failure, the seeds each data object gets. The subcommands through
the driver process are in test_submission_driver.py; the whole mode through the harness binary in
tests/harness/test_rehearse.cpp.

Plain unittest (python3 -m pytest tests/python_driver, or tests/python_driver/run_tests.py).
"""
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

import numpy as np

from test_submission_driver import DRIVER, NUMPY_EXAMPLE, ROOT, reference, write_submission

sys.path.insert(0, os.path.join(ROOT, "harness", "backends"))
from nvfp4_driver import gpumode_data as gd  # noqa: E402
from nvfp4_driver import rehearse as rh  # noqa: E402

del sys.path[0]

C = dict(rh.EVALUATOR)


class StoppingRuleTest(unittest.TestCase):
    """eval_better_bench.py:278-292, as stop_reason() states it."""

    def test_needs_three_repeats_and_a_tenth_of_a_second(self):
        self.assertIsNone(rh.stop_reason([5.0, 5.0], 10.0, 10.0, C))       # two repeats: never
        self.assertIsNone(rh.stop_reason([5.0] * 3, 0.1, 10.0, C))         # 0.1 s is not more than 0.1 s
        self.assertEqual(rh.stop_reason([5.0] * 3, 0.1001, 10.0, C), "relative error < 0.1%")

    def test_relative_error_of_the_mean(self):
        noisy = [1000.0, 1100.0] * 50  # std ~50, err ~5 = 0.48% of the mean
        self.assertIsNone(rh.stop_reason(noisy, 1.0, 1e9, C))
        calm = [1000.0, 1001.0] * 50   # err ~0.05: 0.005%
        self.assertEqual(rh.stop_reason(calm, 1.0, 1e9, C), "relative error < 0.1%")

    def test_time_cap_is_mean_per_call_times_repeats(self):
        d = [1e6, 2e6] * 5  # mean 1.5 ms per call, 10 repeats: 15 ms, noisy enough not to stop on error
        self.assertIsNone(rh.stop_reason(d, 1.0, 0.016, C))
        self.assertEqual(rh.stop_reason(d, 1.0, 0.014, C), "mean x repeats > 0.014 s")

    def test_wall_time(self):
        d = [1e6, 2e6] * 5
        self.assertIsNone(rh.stop_reason(d, 119.0, 1e9, C))
        self.assertEqual(rh.stop_reason(d, 120.5, 1e9, C), "wall time > 120 s")

    def test_stats(self):
        s = rh.stats([1.0, 2.0, 3.0, 6.0])
        self.assertEqual((s["runs"], s["mean_ns"], s["best_ns"], s["worst_ns"]), (4, 3.0, 1.0, 6.0))
        self.assertAlmostEqual(s["std_ns"], (14 / 3) ** 0.5)  # sample standard deviation
        self.assertAlmostEqual(s["err_ns"], (14 / 3) ** 0.5 / 2)


class SeedsAndScalesTest(unittest.TestCase):
    def test_secret_seed_pairing(self):
        # a + (a + b)(a + b + 1) / 2 (eval_better_bench.py:62-70)
        self.assertEqual(gd.combine_seed(1111, 0), 1111 + 1111 * 1112 // 2)
        self.assertEqual(gd.combine_seed(5, 12345), 76267430)
        self.assertGreater(gd.combine_seed(1, 2 ** 31 - 1), 2 ** 60)

    def test_e4m3_rounding_is_nearest_even_over_every_code_below_one(self):
        codes = list(range(0x39))  # 0 .. 1.0 (0x38)
        values = np.array([gd.e4m3_value(b) for b in codes])
        self.assertTrue(np.array_equal(gd.e4m3_from_unit(np, values.astype(np.float32)), np.array(codes, dtype=np.uint8)))
        # Midpoints go to the even code, points just off them to the nearest.
        mids = (values[:-1] + values[1:]) / 2
        even = [b if b % 2 == 0 else b + 1 for b in codes[:-1]]
        self.assertEqual(list(gd.e4m3_from_unit(np, mids)), even)
        rng = np.random.default_rng(3)
        x = rng.random(20000, dtype=np.float32)
        got = gd.e4m3_from_unit(np, x)
        nearest = np.abs(x[:, None].astype(np.float64) - values[None, :]).argmin(axis=1)
        dist_got = np.abs(x - values[got])
        dist_best = np.abs(x - values[nearest])
        self.assertTrue(np.all(dist_got <= dist_best))


class NumpyHostTest(unittest.TestCase):
    def setUp(self):
        self.h = gd.NumpyHost(np)

    def test_data_layout_and_distribution(self):
        M, N, K, L = 130, 64, 128, 2
        data = self.h.generate(M, N, K, L, 1111)
        shapes = [(M, K // 2, L), (N, K // 2, L), (N, K // 2, L), (M, K // 16, L), (N, K // 16, L), (N, K // 16, L),
                  (32, 4, 2, 4, 2, L), (32, 4, 1, 4, 2, L), (32, 4, 1, 4, 2, L), (M, N, L)]
        self.assertEqual([x.shape for x in data], shapes)
        self.assertEqual([x.dtype for x in data], [np.uint8] * 9 + [np.float16])
        for fp4 in data[:3]:
            self.assertEqual(int(np.count_nonzero(fp4 & 0x44)), 0)  # sign and two low bits of each nibble only
            self.assertGreater(len(np.unique(fp4)), 60)
        for sf in data[3:6]:
            v = np.array([gd.e4m3_value(int(b)) for b in np.unique(sf)])
            self.assertTrue(np.all((v >= 0) & (v <= 1)))
        # The permuted copies hold the plain scales at [r%32, (r%128)/32, r/128, c%4, c/4, l].
        r, c, l = np.meshgrid(np.arange(M), np.arange(K // 16), np.arange(L), indexing="ij")
        self.assertTrue(np.array_equal(data[6][r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, l], data[3]))
        # Same seed, same bytes; another seed, others.
        again = self.h.generate(M, N, K, L, 1111)
        self.assertTrue(all(np.array_equal(x, y) for x, y in zip(data, again)))
        self.assertFalse(np.array_equal(self.h.generate(M, N, K, L, 1153)[0], data[0]))
        clone = self.h.clone(data)
        layout = lambda x: [st for st, n in zip(x.strides, x.shape) if n > 1]  # a size-1 axis has no layout
        self.assertTrue(all(np.array_equal(x, y) and layout(x) == layout(y) for x, y in zip(data, clone)))
        self.assertFalse(any(np.shares_memory(x, y) for x, y in zip(data, clone)))

    def test_reference_is_the_exact_value_rounded(self):
        M, N, K, L = 16, 24, 256, 2
        data = self.h.generate(M, N, K, L, 9)
        batch_first = lambda x: np.ascontiguousarray(x.transpose(2, 0, 1))
        case = dict(zip(("a", "b1", "b2", "sfa", "sfb1", "sfb2"), (batch_first(x) for x in data[:6])))
        exact = reference(case).transpose(1, 2, 0)  # float64 (M, N, L)
        got = self.h.reference(data).astype(np.float64)
        ulp = np.maximum(np.abs(exact), 2.0 ** -14) * 2.0 ** -10
        self.assertTrue(np.all(np.abs(got - exact) <= ulp))

    def test_check_rule(self):
        ref = np.array([1.0, -2.0, 0.5, np.nan, np.inf, 0.0], dtype=np.float16).reshape(1, 6, 1)
        good, msg, n = self.h.check(ref, ref.copy(), 1e-3, 1e-3)
        self.assertEqual((good, n), (True, 0))  # NaN == NaN and inf == inf pass
        out = ref.copy()
        out[0, 1, 0] = np.float16(-2.0) + np.float16(2 ** -9)  # one fp16 ulp at 2: within 1e-3 + 2e-3
        self.assertTrue(self.h.check(ref, out, 1e-3, 1e-3)[0])
        out[0, 2, 0] = 0.502  # 0.002 > 0.001 + 0.0005
        out[0, 5, 0] = np.nan
        out[0, 4, 0] = -np.inf
        good, msg, n = self.h.check(ref, out, 1e-3, 1e-3)
        self.assertEqual((good, n), (False, 3))
        self.assertIn("3 of 6 elements mismatch", msg)
        self.assertIn("first at (m, n, l): (0, 2, 0)", msg)
        self.assertIn("(0, 4, 0) output -inf reference inf", msg)
        self.assertFalse(self.h.check(ref, out[:, :5], 1e-3, 1e-3)[0])
        self.assertIn("not an array", self.h.check(ref, None, 1e-3, 1e-3)[1])


# ---- the loops, against a stand-in host ------------------------------------------------------------

class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeHost:
    """Data objects are dicts with their seed; the reference is the seed; an output is right when
    it equals the seed. Each timed batch advances the fake clock by batch_s (or the next of a list)."""

    def __init__(self, clock, batch_s=0.05):
        self.clock, self.batch_s = clock, batch_s
        self.generated, self.kept = [], []

    def generate(self, m, n, k, l, seed):
        self.generated.append(seed)
        return {"seed": seed, "shape": (m, n, k, l)}

    def clone(self, data):
        copy = dict(data)
        self.kept.append(copy)  # alive to the end: no id() is reused, as a kernel keyed by id() would see
        return copy

    def reference(self, data):
        return data["seed"]

    def check(self, expected, out, rtol, atol):
        return (True, "", 0) if out == expected else (False, "got %r, want %r" % (out, expected), 1)

    def sync(self):
        pass

    def timed(self, body):
        dt = self.batch_s(self) if callable(self.batch_s) else self.batch_s
        self.clock.now += dt
        return dt, 0.0, body()

    def l2_note(self):
        return "none"


def call_counter():
    """count(data): how many times this very object has been called (every object kept alive, so
    that no id() is reused)."""
    seen = {}

    def count(data):
        entry = seen.setdefault(id(data), [data, 0])
        entry[1] += 1
        return entry[1]
    return count


TASK = {"tests": [{"m": 1, "n": 2, "k": 16, "l": 1, "seed": 5}, {"m": 3, "n": 2, "k": 16, "l": 1, "seed": 6},
                  {"m": 1, "n": 2, "k": 16, "l": 1, "seed": 7}],
        "benchmarks": [{"m": 4, "n": 4, "k": 32, "l": 1, "seed": 11}, {"m": 8, "n": 4, "k": 32, "l": 1, "seed": 20}],
        "tolerance": {"rtol": 1e-3, "atol": 1e-3},
        "evaluator": {"iterations_per_benchmark": 4}}


class LoopTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.clock = FakeClock()
        self._real_clock = rh._clock
        rh._clock = self.clock
        self.stages = []

    def tearDown(self):
        rh._clock = self._real_clock
        self.tmp.cleanup()

    def run_mode(self, mode, kernel, host=None, task=TASK, secret=None):
        host = host or FakeHost(self.clock)
        record = rh.Record(os.path.join(self.tmp.name, "rehearse.json"), {"mode": mode})

        def stage(name, body):
            self.stages.append(name)
            return body()
        try:
            passed = rh.run_mode(mode, host, kernel, task, record, stage, secret)
        except rh.SubmissionError:
            passed = None
        with open(record.path) as f:
            saved = json.load(f)
        self.assertEqual(saved, json.loads(json.dumps(record.doc)))  # the file holds the account as it ended
        return passed, record.doc, host

    def test_test_mode_runs_every_case_and_fails_on_any(self):
        calls = []

        def kernel(data):
            calls.append(data["seed"])
            return -1 if data["seed"] == 6 else data["seed"]
        passed, doc, _ = self.run_mode("test", kernel)
        self.assertFalse(passed)
        self.assertEqual(calls, [5, 6, 7])  # a failure does not stop the test mode
        self.assertEqual([c["status"] for c in doc["cases"]], ["pass", "fail", "pass"])
        self.assertEqual([c["first_call_of_shape"] for c in doc["cases"]], [True, True, False])
        self.assertEqual(self.stages, ["run"] * 3)
        self.assertEqual(doc["verdict"], "fail")

    def test_benchmark_seeds_data_objects_and_stops_on_relative_error(self):
        host = FakeHost(self.clock, batch_s=0.05)  # constant: the error is 0 once the rule may stop
        passed, doc, host = self.run_mode("benchmark", lambda d: d["seed"], host)
        self.assertTrue(passed)
        warm, first, second = doc["cases"]
        self.assertEqual(warm["phase"], "benchmark-warmup")
        self.assertEqual(host.generated[:4], [53, 95, 137, 179])  # seed += 42 before each of the objects
        self.assertEqual(first["seeds"], [53, 179])
        self.assertEqual(second["seeds"], [62, 188])
        # 3 repeats, 0.15 s > 0.1 s: the error (0) stops it at once
        self.assertEqual([c["repeats"] for c in doc["cases"]], [3, 3, 3])
        self.assertEqual(first["stop"], "relative error < 0.1%")
        self.assertAlmostEqual(first["stats"]["mean_ns"], 0.05 / 4 * 1e9)
        self.assertEqual(self.stages, ["warmup", "run", "time", "run", "time"])

    def test_minimum_wall_time_before_any_rule(self):
        host = FakeHost(self.clock, batch_s=1 / 32)  # binary fractions: no rounding in the fake clock
        passed, doc, _ = self.run_mode("benchmark", lambda d: d["seed"], host)
        self.assertEqual(doc["cases"][1]["repeats"], 4)  # 3 x 1/32 s is not more than 0.1 s; 4 x is

    def test_time_cap_and_max_repeats(self):
        flip = {"n": 0}

        def noisy(host):
            flip["n"] += 1
            return 1 / 32 if flip["n"] % 2 else 1 / 16  # per call 7.8125 or 15.625 ms: the error stays large
        host = FakeHost(self.clock, batch_s=noisy)
        task = dict(TASK, evaluator={"iterations_per_benchmark": 4, "benchmark_warmup": [200, 0.1],
                                     "benchmark": [7, 10.0]})
        passed, doc, _ = self.run_mode("benchmark", lambda d: d["seed"], host, task)
        warm, first, _ = doc["cases"]
        # warm-up cap 0.1 s of mean x repeats, i.e. of the per-call durations' sum: 93.75 ms after 8, 101.6 after 9
        self.assertEqual((warm["repeats"], warm["stop"]), (9, "mean x repeats > 0.1 s"))
        self.assertEqual((first["repeats"], first["stop"]), (7, "max repeats (7)"))

    def test_leaderboard_recheck_keeps_only_the_last_outputs_verdict(self):
        count = call_counter()

        def first_output_bad(data):  # bad on the first object of every repeat after the first
            n = count(data)
            return -1 if n >= 2 and data["seed"] in (53, 62) else data["seed"]
        passed, doc, _ = self.run_mode("leaderboard", first_output_bad)
        self.assertTrue(passed)  # as the evaluator judges
        ranked = [c for c in doc["cases"] if c["phase"] == "leaderboard"]
        self.assertEqual(len(ranked), 2)
        bad = ranked[0]["bad_outputs"]
        self.assertTrue(bad and all(not b["evaluator_sees"] and b["output"] == 0 for b in bad))
        self.assertIn("the evaluator does not see", ranked[0]["message"])
        self.assertEqual(self.stages, ["warmup", "warmup", "run", "time", "run", "time"])

    def test_leaderboard_stops_at_the_first_failing_case(self):
        count = call_counter()

        def last_output_bad(data):
            n = count(data)
            return -1 if n >= 2 and data["seed"] in (179, 188) else data["seed"]
        passed, doc, _ = self.run_mode("leaderboard", last_output_bad)
        self.assertFalse(passed)
        ranked = [c for c in doc["cases"] if c["phase"] == "leaderboard"]
        self.assertEqual(len(ranked), 1)  # the second case never runs
        self.assertEqual(ranked[0]["status"], "fail")
        self.assertTrue(ranked[0]["bad_outputs"][-1]["evaluator_sees"])
        self.assertTrue(ranked[0]["message"].startswith("repeat 2, output 4 of 4"), ranked[0]["message"])
        # The warm-ups (no recheck) passed with the same outputs: their bad outputs go unchecked.
        self.assertEqual([c["status"] for c in doc["cases"][:2]], ["pass", "pass"])

    def test_checked_pass_reports_every_bad_output_and_the_evaluators_first(self):
        passed, doc, _ = self.run_mode("benchmark", lambda d: -1 if d["seed"] in (95, 179) else d["seed"])
        self.assertFalse(passed)
        warm, first, second = doc["cases"]
        self.assertEqual([b["output"] for b in first["bad_outputs"]], [1, 3])
        self.assertEqual([b["evaluator_sees"] for b in first["bad_outputs"]], [True, False])
        self.assertTrue(first["message"].startswith("output 2 of 4"))
        self.assertTrue(warm["ignored_by_evaluator"])
        self.assertEqual(second["status"], "pass")  # the benchmark mode runs every case
        self.assertNotIn("repeats", first)          # no timing after a failed check

    def test_an_exception_ends_the_mode_naming_the_call(self):
        def boom(data):
            if data["seed"] == 6:
                raise ValueError("no")
            return data["seed"]
        passed, doc, _ = self.run_mode("test", boom)
        self.assertIsNone(passed)
        self.assertEqual(doc["verdict"], "fail")
        self.assertEqual(len(doc["cases"]), 2)
        self.assertIn("exception in custom_kernel (test 2): ValueError: no", doc["message"])

    def test_secret_seed_pairs_every_case(self):
        passed, doc, host = self.run_mode("test", lambda d: d["seed"], secret=12345)
        self.assertEqual([c["seed"] for c in doc["cases"]], [gd.combine_seed(s, 12345) for s in (5, 6, 7)])


class TaskFileTest(unittest.TestCase):
    def test_the_shipped_task_is_gpu_modes(self):
        task = rh.load_task(os.path.join(ROOT, "harness", "backends", "nvfp4_driver", "tasks", "nvfp4_dual_gemm.json"))
        self.assertEqual(len(task["tests"]), 10)
        self.assertEqual([(c["m"], c["n"], c["k"]) for c in task["benchmarks"]],
                         [(256, 4096, 7168), (512, 4096, 7168), (256, 3072, 4096), (512, 3072, 7168)])
        self.assertTrue(all(c["seed"] == 1111 and c["l"] == 1 for c in task["tests"] + task["benchmarks"]))
        self.assertEqual(task["limits_s"], {"test": 180, "benchmark": 180, "leaderboard": 180, "compile": 120})
        self.assertEqual(task["source"]["commit"], "f83cb92")

    def test_refusals_name_the_field(self):
        good = {"tests": [{"m": 1, "n": 1, "k": 16, "l": 1, "seed": 0}], "benchmarks": [{"m": 1, "n": 1, "k": 16,
                "l": 1, "seed": 0}], "tolerance": {"rtol": 1e-3, "atol": 1e-3},
                "limits_s": {"test": 1, "benchmark": 1, "leaderboard": 1, "compile": 0}}
        bad = {
            "k = 24 is not a multiple of 16": ("tests", [{"m": 1, "n": 1, "k": 24, "l": 1, "seed": 0}]),
            "benchmarks[0]: m must be a positive integer": ("benchmarks", [{"m": 0, "n": 1, "k": 16, "l": 1, "seed": 0}]),
            "seed must be a non-negative integer": ("tests", [{"m": 1, "n": 1, "k": 16, "l": 1, "seed": -3}]),
            "\"tests\" must be a non-empty list": ("tests", []),
            "limits_s.test must be a positive number": ("limits_s", {"test": 0, "benchmark": 1, "leaderboard": 1,
                                                                     "compile": 0}),
            "\"evaluator\" may only override": ("evaluator", {"repeats": 3}),
        }
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.json")
            with open(path, "w") as f:
                json.dump(good, f)
            self.assertEqual(rh.load_task(path)["task"], "t")
            for want, (key, value) in bad.items():
                with open(path, "w") as f:
                    json.dump(dict(good, **{key: value}), f)
                with self.assertRaises(ValueError) as e:
                    rh.load_task(path)
                self.assertIn(want, str(e.exception))
            with open(path, "w") as f:
                f.write("{not json")
            with self.assertRaises(ValueError):
                rh.load_task(path)


TINY_TASK = os.path.join(ROOT, "tests", "rehearse", "tiny_task.json")


def driver(*args, fd=True):
    """Runs the driver with a report pipe; returns (messages as field lists, exit code, output)."""
    r, w = os.pipe()
    argv = [sys.executable, DRIVER, args[0]] + (["--fd", str(w)] if fd else []) + list(args[1:])
    try:
        proc = subprocess.run(argv, pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        text = f.read().decode()
    return [line.split("\t") for line in text.splitlines()], proc.returncode, proc.stdout.decode()


class DriverSubcommandTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_rehearse_mode_messages_and_account(self):
        msgs, rc, log = driver("rehearse", "--dir", self.dir, "--submission", NUMPY_EXAMPLE, "--task", TINY_TASK,
                               "--mode", "benchmark", "--toggles", "per-batch")
        self.assertEqual((rc, msgs[-1]), (0, ["done"]), log)
        entered = [m[1] for m in msgs if m[0] == "enter"]
        self.assertEqual(entered, ["setup", "load", "warmup", "run", "time", "run", "time", "teardown"])
        with open(os.path.join(self.dir, "rehearse.json")) as f:
            doc = json.load(f)
        self.assertEqual((doc["verdict"], doc["data"], doc["emulated_fp4"]), ("pass", "numpy", False))
        self.assertEqual(doc["case_counts"], {"tests": 3, "benchmarks": 2})
        self.assertEqual([c["phase"] for c in doc["cases"]], ["benchmark-warmup", "benchmark", "benchmark"])
        for c in doc["cases"]:
            for key in ("generate_s", "first_call_s", "other_calls_s", "reference_s", "check_s", "timed_s", "stats"):
                self.assertIn(key, c)
        describe = [m[1] for m in msgs if m[0] == "describe"][0]
        self.assertIn("toggles per-batch, evaluator mode benchmark", describe)

    def test_rehearse_refuses_a_toggle_the_submission_lacks(self):
        msgs, rc, log = driver("rehearse", "--dir", self.dir, "--submission", NUMPY_EXAMPLE, "--task", TINY_TASK,
                               "--mode", "test", "--toggles", "compile")
        self.assertEqual(msgs[-1][0], "error")
        self.assertIn("toggle compile is not the submission's own", msgs[-1][1])

    def test_compile_run_executes_the_file_as_a_script(self):
        mark = os.path.join(self.dir, "ran-as-main")
        sub = write_submission(self.dir, """
            import os
            NVFP4_DATA = "numpy"
            NVFP4_TOGGLES = ["x"]
            from task import input_t  # GPU MODE's task module, provided
            def custom_kernel(data):
                return data[-1]
            if __name__ == "__main__":
                with open(%r, "w") as f:
                    f.write(os.environ["NVFP4_TOGGLES"])
        """ % mark)
        msgs, rc, log = driver("compile-run", "--submission", sub, "--toggles", "x")
        self.assertEqual(msgs[-1], ["done"], log)
        with open(mark) as f:
            self.assertEqual(f.read(), "x")
        failing = write_submission(self.dir, "import sys\nsys.exit(3)\n")
        msgs, rc, log = driver("compile-run", "--submission", failing)
        self.assertEqual(msgs[-1][0], "error")
        self.assertIn("exited with 3", msgs[-1][1])

    def test_task_and_describe(self):
        msgs, rc, out = driver("task", TINY_TASK, fd=False)
        self.assertEqual((rc, json.loads(out)["task"]), (0, "tiny"))
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write('{"tests": []}')
        msgs, rc, out = driver("task", bad, fd=False)
        self.assertEqual(rc, 2)
        self.assertIn('"tests" must be a non-empty list', out)
        cases = {"def custom_kernel(data):\n    return 1\n": True, "custom_kernel = print\n": True,
                 "from x import custom_kernel\n": True, "try:\n    from y import custom_kernel\nexcept ImportError:\n"
                 "    def custom_kernel(d):\n        return d\n": True, "def kernel(data):\n    return 1\n": False,
                 "from x import *\n": None, "globals()['custom_kernel'] = print\n": None,
                 "class K:\n    def custom_kernel(self):\n        pass\n": False}
        for source, want in cases.items():
            sub = write_submission(self.dir, source)
            msgs, rc, out = driver("describe", sub, fd=False)
            self.assertEqual((rc, json.loads(out)["custom_kernel"]), (0, want), source)


class EmulationHookTest(unittest.TestCase):
    """submission_driver.install_emulation: nvfp4_driver/emulate_fp4.py's install() when the module
    exists (stood in for here), no emulation when it does not (an error for --emulate-fp4 on)."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "harness", "backends"))
        import submission_driver
        del sys.path[0]
        self.driver = submission_driver
        self.saved = sys.modules.get("nvfp4_driver.emulate_fp4", "absent")

    def tearDown(self):
        if self.saved == "absent":
            sys.modules.pop("nvfp4_driver.emulate_fp4", None)
        else:
            sys.modules["nvfp4_driver.emulate_fp4"] = self.saved

    def test_installed_notice_and_missing_module(self):
        fake = types.ModuleType("nvfp4_driver.emulate_fp4")
        state = {}
        fake.install = lambda mode: (state.update(mode=mode) or "FP4 emulated: no FP4 tensor cores") if mode != "off" else None
        fake.installed = lambda: state.get("mode") in ("auto", "on")
        sys.modules["nvfp4_driver.emulate_fp4"] = fake
        self.assertEqual(self.driver.install_emulation("auto"), ("FP4 emulated: no FP4 tensor cores", True))
        state.clear()
        self.assertEqual(self.driver.install_emulation("off"), (None, False))
        sys.modules["nvfp4_driver.emulate_fp4"] = None  # an import that fails
        self.assertEqual(self.driver.install_emulation("auto"), (None, False))
        with self.assertRaises(self.driver.TrialError) as e:
            self.driver.install_emulation("on")
        self.assertIn("--emulate-fp4 on: the FP4 emulation is unavailable here", str(e.exception))

    def test_labelled_emulated_only_where_the_emulation_ran(self):
        fake = types.ModuleType("nvfp4_driver.emulate_fp4")
        state = {"installed": True, "calls": 0}
        fake.installed = lambda: state["installed"]
        fake.emulated_calls = lambda: state["calls"]
        sys.modules["nvfp4_driver.emulate_fp4"] = fake
        self.assertFalse(self.driver.emulation_used())  # installed, never called: its own kernels
        state["calls"] = 3
        self.assertTrue(self.driver.emulation_used())
        state["installed"] = False
        self.assertFalse(self.driver.emulation_used())
        sys.modules.pop("nvfp4_driver.emulate_fp4")
        self.assertFalse(self.driver.emulation_used())


if __name__ == "__main__":
    unittest.main()
