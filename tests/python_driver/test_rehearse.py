"""The rehearsal's pure-Python parts (harness/backends/nvfp4_driver/rehearse.py, gpumode_data.py):
GPU MODE's stopping rule and statistics, its seed pairing, the E4M3 rounding of its scale
generator, the numpy data, reference and check, and the three modes' loops run against a stand-in
host with a fake clock: how many repeats, which rule stops them, which bad outputs the evaluator
sees, which cases run after a failure, the seeds each data object gets. The subcommands through
the driver process are in test_submission_driver.py; the whole mode through the harness binary in
tests/harness/test_rehearse.cpp.

Plain unittest (python3 -m pytest tests/python_driver, or tests/python_driver/run_tests.py).

Length: about 800 lines, over the project's ~600: one test class per part of the evaluator (rules,
seeds, data, loops, task file, driver hooks); they share the stand-in host and fake clock above the
classes.
"""
import contextlib
import importlib.util
import io
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

    def test_outputs_that_are_not_real_numbers_fail_cleanly(self):
        ref = np.ones((2, 3, 1), dtype=np.float16)
        cases = {"dtype object": ref.astype(object), "dtype complex64": ref.astype(np.complex64),
                 "dtype |S2": ref.astype("S2"), "dtype bool": ref.astype(bool), "dtype <U3": ref.astype("U3"),
                 "numpy.ma.MaskedArray, a subclass": np.ma.masked_array(ref, mask=True)}
        for want, out in cases.items():
            good, msg, n = self.h.check(ref, out, 1e-3, 1e-3)  # a message, never an exception
            self.assertEqual((good, n), (False, -1), want)
            self.assertIn(want, msg)
        for dtype in (np.float32, np.float64, np.int32, np.uint8):  # real numbers are compared
            self.assertEqual(self.h.check(ref, ref.astype(dtype), 1e-3, 1e-3)[:2], (True, ""), dtype)

    def test_the_clock_is_bound_before_the_submission_can_patch_it(self):
        import time
        saved = time.perf_counter
        time.perf_counter = lambda: 1.0  # what a submission may do at import
        try:
            seconds, _, out = self.h.timed(lambda: time.sleep(0.02) or 7)
        finally:
            time.perf_counter = saved
        self.assertEqual(out, 7)
        self.assertGreaterEqual(seconds, 0.015)


@unittest.skipIf(importlib.util.find_spec("torch") is None, "torch not installed")
class TorchCheckTest(unittest.TestCase):
    """TorchHost.check without a GPU: the reference on one device, the output on another."""

    def setUp(self):
        import torch
        self.t = torch
        self.h = gd.TorchHost.__new__(gd.TorchHost)  # no CUDA tables: check() needs none
        self.h.np, self.h.torch = np, torch

    def test_an_output_on_another_device_fails_as_the_evaluator_would(self):
        t = self.t
        ref = t.ones((2, 3, 1), dtype=t.float16)
        good, msg, n = self.h.check(ref, t.ones((2, 3, 1), dtype=t.float16, device="meta"), 1e-3, 1e-3)
        self.assertEqual((good, n), (False, -1))
        self.assertIn("custom_kernel returned a tensor on meta; the reference is on cpu", msg)
        self.assertIn("torch raises on the device mismatch", msg)
        self.assertEqual(self.h.check(ref, ref.clone(), 1e-3, 1e-3)[:2], (True, ""))

    def test_dtypes_without_arithmetic_fail_cleanly(self):
        t = self.t
        ref = t.ones((2, 3, 1), dtype=t.float16)
        for dtype in (t.bool, t.complex64, t.float8_e4m3fn):
            good, msg, n = self.h.check(ref, ref.to(dtype), 1e-3, 1e-3)
            self.assertEqual((good, n), (False, -1), dtype)
            self.assertIn("dtype %s" % dtype, msg)


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
            with contextlib.redirect_stderr(io.StringIO()):  # the submission's tracebacks, for the child's log
                passed = rh.run_mode(mode, host, kernel, task, record, stage, secret)
        except (rh.SubmissionError, rh.WorkerDeath):
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

    def test_op_error_fails_only_its_case_where_the_evaluator_catches_it(self):
        class OpError(Exception):  # CuTe's name; the evaluator catches it by class
            pass

        class SubOpError(OpError):
            pass

        def test_kernel(data):
            if data["seed"] == 6:
                raise SubOpError("no MMA for this shape")
            return data["seed"]
        passed, doc, _ = self.run_mode("test", test_kernel)
        self.assertFalse(passed)  # the test mode goes on after it (ebb:168-170)
        self.assertEqual([c["status"] for c in doc["cases"]], ["pass", "fail", "pass"])
        self.assertIn("custom_kernel raised OpError (test 2), which the evaluator catches there: SubOpError: no MMA",
                      doc["cases"][1]["message"])

        def bench_kernel(data):  # the first case's objects (53.., 95.., ...) and the warm-up's
            if data["seed"] == 95:
                raise OpError("bad tile")
            return data["seed"]
        passed, doc, _ = self.run_mode("benchmark", bench_kernel)
        warm, first, second = doc["cases"]
        self.assertFalse(passed)
        self.assertTrue(warm["ignored_by_evaluator"])    # a warm-up's failure is discarded
        self.assertEqual(first["status"], "fail")        # ebb:240-241: the case fails, no timing
        self.assertNotIn("repeats", first)
        self.assertEqual(second["status"], "pass")       # the benchmark mode runs every case

    def test_op_error_in_the_timed_repeats_ends_the_mode(self):
        class OpError(Exception):
            pass
        count = call_counter()

        def kernel(data):
            if count(data) >= 2:  # the checked calls take clones: only a second timed repeat meets an object again
                raise OpError("late")
            return data["seed"]
        passed, doc, _ = self.run_mode("benchmark", kernel)
        self.assertIsNone(passed)  # not caught there (ebb:253-268): eval.py dies
        self.assertIn("exception in custom_kernel (timed repeat 2): OpError: late", doc["message"])

    def test_what_ends_the_pool_worker_is_marked(self):
        for exc in (SystemExit(0), KeyboardInterrupt()):
            def kernel(data, exc=exc):
                raise exc
            passed, doc, _ = self.run_mode("test", kernel)
            self.assertIsNone(passed)
            self.assertEqual(len(doc["cases"]), 1)
            self.assertIn("exception in custom_kernel (test 1): %s" % type(exc).__name__, doc["worker_dies"])
            self.assertIn("the evaluator's pool worker would die", doc["worker_dies"])
        passed, doc, _ = self.run_mode("test", lambda d: 1 / 0)
        self.assertIsNone(passed)
        self.assertNotIn("worker_dies", doc)  # an Exception: eval.py dies with it, a plain failure

    def test_a_mean_of_zero_ends_the_mode_with_its_reason(self):
        host = FakeHost(self.clock, batch_s=0.0)
        self.clock.now = 0.0

        def advance(data):  # time passes outside the timed batches only
            self.clock.now += 0.01
            return data["seed"]
        passed, doc, _ = self.run_mode("benchmark", advance, host)
        self.assertIsNone(passed)
        self.assertIn("measured a mean of 0.0 ns per call", doc["message"])
        self.assertIn("ZeroDivisionError", doc["message"])

    def test_each_step_says_when_it_began(self):
        host = FakeHost(self.clock)
        steps = []

        class Spy(rh.Record):
            def save(self, at_most_every=0.0):
                for c in self.doc["cases"]:
                    if c.get("status") == "running" and "step_t0" in c:
                        steps.append(c["step"])
                super().save(at_most_every)
        record = Spy(os.path.join(self.tmp.name, "r.json"), {"mode": "benchmark"})
        rh.run_mode("benchmark", host, lambda d: d["seed"], TASK, record, lambda name, body: body())
        self.assertTrue({"generate", "call", "calls", "check", "repeats"} <= set(steps))

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
        case = lambda **kw: [dict({"m": 1, "n": 1, "k": 16, "l": 1, "seed": 0}, **kw)]
        limits = lambda **kw: dict({"test": 1, "benchmark": 1, "leaderboard": 1, "compile": 0}, **kw)
        bad = {
            "tests[0].k = 24 is not a multiple of 16": ("tests", case(k=24)),
            "benchmarks[0].m must be an integer in [1, 1048576] (got 0)": ("benchmarks", case(m=0)),
            "tests[0].seed must be an integer in [0, ": ("tests", case(seed=-3)),
            "\"tests\" must be a non-empty list": ("tests", []),
            "limits_s.test must be a finite number > 0": ("limits_s", limits(test=0)),
            "limits_s.compile must be a finite number >= 0": ("limits_s", limits(compile=-1)),
            "\"limits_s\" must hold exactly test, benchmark, leaderboard, compile (unknown: 'extra')":
                ("limits_s", limits(extra=1)),
            "\"evaluator\" may only override": ("evaluator", {"repeats": 3}),
            "evaluator.iterations_per_benchmark must be an integer in [1, 10000] (got 0)":
                ("evaluator", {"iterations_per_benchmark": 0}),
            "evaluator.iterations_per_benchmark must be an integer in [1, 10000] (got 'x')":
                ("evaluator", {"iterations_per_benchmark": "x"}),
            "evaluator.iterations_per_benchmark must be an integer in [1, 10000] (got True)":
                ("evaluator", {"iterations_per_benchmark": True}),
            "evaluator.seed_step must be an integer in [0, 4294967296] (got -100)": ("evaluator", {"seed_step": -100}),
            "evaluator.benchmark[0] (max repeats) must be an integer in [1, 1000000] (got -1)":
                ("evaluator", {"benchmark": [-1, 5]}),
            "evaluator.leaderboard[1] (max time s) must be a finite number > 0": ("evaluator", {"leaderboard": [3, 0]}),
            "evaluator.benchmark must be a pair": ("evaluator", {"benchmark": [3]}),
            "evaluator.min_wall_s must be a finite number >= 0": ("evaluator", {"min_wall_s": -1}),
            "tests[0].m must be an integer in [1, 1048576] (got 10000000)": ("tests", case(m=10 ** 7, n=10 ** 7)),
            "tests[0].m must be an integer in [1, 1048576] (got 1180591620717411303424)": ("tests", case(m=2 ** 70)),
            "tests[0].m must be an integer in [1, 1048576] (got 1.0)": ("tests", case(m=1.0)),
            "tests[0].l must be an integer in [1, 1024]": ("tests", case(l=2000)),
            "tests[0]: m*n*k*l = 2199023255552 exceeds 2^40": ("tests", case(m=4096, n=4096, k=131072)),
            "more than 4 GiB": ("tests", case(m=65536, n=65536, k=64)),
            "tests[0].seed must be an integer in [0, 18446744073709551615] (got 1208925819614629174706176)":
                ("tests", case(seed=2 ** 80)),
            "tests[0].seed = 6074000999: paired with a secret seed up to 2^31 - 1": ("tests", case(seed=6074000999)),
            "benchmarks[0].seed = 6074000999: paired with a secret seed up to 2^31 - 1 (eval_better_bench.py:62-70) "
            "and raised by seed_step": ("benchmarks", case(seed=6074000999)),
            "tests[0] must hold exactly m, n, k, l, seed (unknown: 'extra')": ("tests", case(extra=1)),
            "tests[0] must hold exactly m, n, k, l, seed (missing: seed)": ("tests", [{"m": 1, "n": 1, "k": 16, "l": 1}]),
            "\"tolerance\" must hold exactly rtol, atol": ("tolerance", {"rtol": 1e-3}),
            "tolerance.atol must be a finite number > 0": ("tolerance", {"rtol": 1e-3, "atol": 0}),
            "\"task\" must be a printable name of 1 to 200 characters (got 5)": ("task", 5),
            "\"source\" must be an object of strings": ("source", "x"),
            "\"ranking_by\" must be \"geom\"": ("ranking_by", "mean"),
            "unknown key 'command'": ("command", "x"),
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
            # Non-finite numbers are refused by field: json's NaN and Infinity, and a float too large.
            text = json.dumps(good)
            for old, new, want in (('"rtol": 0.001', '"rtol": Infinity', "tolerance.rtol must be a finite number > 0, "
                                    "at most 1e+06 (got Infinity)"),
                                   ('"test": 1', '"test": NaN', "limits_s.test must be a finite number"),
                                   ('"atol": 0.001', '"atol": 1e400', "tolerance.atol must be a finite number"),
                                   ('"tests"', '"tests": [], "tests"', "the key 'tests' appears twice")):
                self.assertIn(old, text)
                with open(path, "w") as f:
                    f.write(text.replace(old, new, 1))
                with self.assertRaises(ValueError) as e:
                    rh.load_task(path)
                self.assertIn(want, str(e.exception))
            # The largest test seed that every secret seed keeps within torch's range is accepted.
            largest = 3926517351
            self.assertLessEqual(gd.combine_seed(largest, 2 ** 31 - 1), 2 ** 64 - 1)
            self.assertGreater(gd.combine_seed(largest + 1, 2 ** 31 - 1), 2 ** 64 - 1)
            with open(path, "w") as f:
                json.dump(dict(good, tests=case(seed=largest)), f)
            self.assertEqual(rh.load_task(path)["tests"][0]["seed"], largest)


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
                 # The name appears (here a method): only the import can say, so describe does not.
                 "class K:\n    def custom_kernel(self):\n        pass\n": None}
        for source, want in cases.items():
            sub = write_submission(self.dir, source)
            msgs, rc, out = driver("describe", sub, fd=False)
            self.assertEqual((rc, json.loads(out)["custom_kernel"]), (0, want), source)


class SubmissionFileTest(unittest.TestCase):
    """What describe (and so every --submission mode) refuses before anything runs: exit 2, the
    reason on stderr."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def describe(self, path):
        msgs, rc, out = driver("describe", path, fd=False)
        return rc, out

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_refusals(self):
        cases = {
            b"custom_kernel = 5\n": "custom_kernel is bound only to the literal 5 (line 1), which is not callable",
            b"import os\ncustom_kernel = None\n": "custom_kernel is bound only to the literal None (line 2)",
            b"def custom_kernel(d):\n    return d\n\0\n": "contains a NUL byte (line 3, byte 35): not Python source",
            b"\xff\xfedef custom_kernel(d): pass\n": "codec can't decode byte 0xff",
            b"def custom_kernel(d:\n": "syntax error at line 1",
        }
        for i, (source, want) in enumerate(cases.items()):
            rc, out = self.describe(self.write("s%d.py" % i, source))
            self.assertEqual(rc, 2, source)
            self.assertIn(want, out, source)
            self.assertNotIn("line None", out, source)
        rc, out = self.describe(self.dir)
        self.assertEqual((rc, "is a directory, not a Python file" in out), (2, True), out)
        fifo = os.path.join(self.dir, "fifo.py")
        os.mkfifo(fifo)
        rc, out = self.describe(fifo)  # refused without opening it (a read would block)
        self.assertEqual((rc, "is a FIFO (named pipe), not a Python file" in out), (2, True), out)
        # Bindings that may hold a function are not judged statically.
        for source in (b"custom_kernel = 5\ndef custom_kernel(d):\n    return d\n", b"custom_kernel = make()\n",
                       b"custom_kernel = None\ntry:\n    from fast import custom_kernel\nexcept ImportError:\n    pass\n",
                       b"custom_kernel = 5\ndef f():\n    global custom_kernel\n    custom_kernel = print\n",
                       b"custom_kernel = 5\nglobals()['custom_kernel'] = print\n"):
            rc, out = self.describe(self.write("ok.py", source))
            self.assertEqual(rc, 0, (source, out))

    def test_a_kernel_that_is_no_function_after_the_import(self):
        sub = self.write("late.py", b"NVFP4_DATA = 'numpy'\nmake = lambda: 5\ncustom_kernel = make()\n")
        msgs, rc, log = driver("rehearse", "--dir", self.dir, "--submission", sub, "--task", TINY_TASK,
                               "--mode", "test")
        self.assertEqual(msgs[-1][0], "error", log)
        self.assertIn("custom_kernel is a int after the import, not a function", msgs[-1][1])

    def test_system_exit_at_import_marks_the_worker_dead(self):
        sub = self.write("bye.py", b"NVFP4_DATA = 'numpy'\nimport sys\nsys.exit(3)\ndef custom_kernel(d):\n    pass\n")
        msgs, rc, log = driver("rehearse", "--dir", self.dir, "--submission", sub, "--task", TINY_TASK,
                               "--mode", "test")
        self.assertEqual(msgs[-1][0], "error", log)
        with open(os.path.join(self.dir, "rehearse.json")) as f:
            doc = json.load(f)
        self.assertIn("exception at import of %s: SystemExit: 3: the evaluator's pool worker would die" % sub,
                      doc["worker_dies"])
        self.assertIn("stage_t0", doc)


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

    def test_an_install_that_fails_runs_without_emulation_under_auto(self):
        fake = types.ModuleType("nvfp4_driver.emulate_fp4")

        def install(mode):
            raise RuntimeError("emulate_fp4: torch 2.3 has no float4_e2m1fn_x2 dtype")
        fake.install = install
        fake.installed = lambda: False
        sys.modules["nvfp4_driver.emulate_fp4"] = fake
        notice, installed = self.driver.install_emulation("auto")
        self.assertFalse(installed)
        self.assertIn("FP4 emulation not installed (--emulate-fp4 auto): emulate_fp4: torch 2.3 has no "
                      "float4_e2m1fn_x2 dtype", notice)
        with self.assertRaises(self.driver.TrialError) as e:
            self.driver.install_emulation("on")
        self.assertIn("--emulate-fp4 on: the FP4 emulation cannot be installed: emulate_fp4: torch 2.3", str(e.exception))

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
