"""GPU MODE's evaluator, one mode per process, as `harness rehearse gpumode` runs it
(submission_driver.py rehearse; docs/gpu-mode.md "Rehearsing the evaluator").

The loops follow gpu-mode/reference-kernels at f83cb92, problems/nvidia/eval_better_bench.py (cited
below as ebb:LINE); the harness's C++ parent (harness/cli/rehearse.cpp) puts the mode's overall
limit around the process, as kernelbot's run_eval.py does, and its stage watchdog inside.

  test         every test case once, in order: new data (ebb:163), a clone handed to custom_kernel,
               synchronize, check against the reference of the data (ebb:157-172); every case runs,
               a failure does not stop the mode (ebb:182-211).
  benchmark    first the first case benchmarked with at most 200 repeats and a 0.1 s time cap, its
               result discarded (ebb:329); then each case benchmarked (200 repeats, 10 s cap), every
               case run even after a failure (ebb:331-343).
  leaderboard  every case benchmarked without recheck (1000 repeats, 0.5 s cap), results discarded
               (ebb:479-481); then each case with recheck (1000 repeats, 30 s cap), stopping at the
               first failure (ebb:483-499). The cases are the task's benchmarks: kernelbot hands the
               leaderboard mode the benchmark list (run_eval.py:559-564).
  one benchmark of a case (ebb:214-294): 50 data objects, the seed raised by 42 before each
               (ebb:226-230); a clone of the list kept for checking (ebb:232); every object's clone
               called once, then every output checked, the first bad one failing the case
               (ebb:234-245); then timed repeats: synchronize, clear the L2, one timed region around
               50 back-to-back calls on the same 50 objects, the per-call mean recorded (ebb:253-268).
               With recheck every output of the repeat is checked but only the last one's verdict
               is kept (ebb:270-274: `if not good` after the loop): the rehearsal reports every bad
               output and says which the evaluator would have seen. The stopping rule (ebb:278-292)
               is stop_reason() below.

The evaluator computes every reference afresh (on a B200, two FP4 GEMMs); the rehearsal computes
each data object's reference once and reuses it for the rechecks. Its own work (data, references,
checks, L2 clears) is accounted apart from the submission's (import, first call per case shape,
the other checked calls, the timed repeats), per case, in DIR/rehearse.json: rewritten whole
(write, rename) at each step, so that a parent that killed this process reads how far it got.
"""
import json
import math
import os
import traceback
from time import perf_counter as _clock  # bound at import: a submission patching time.perf_counter changes nothing here

# The evaluator's constants (eval_better_bench.py), overridable by a task file's "evaluator" object
# (only test tasks do, to make CI runs short).
EVALUATOR = {
    "iterations_per_benchmark": 50,        # ebb:35 NUM_ITERATIONS_PER_BENCHMARK
    "seed_step": 42,                       # ebb:228
    "min_repeats": 3,                      # ebb:280 `i > 1`
    "min_wall_s": 0.1,                     # ebb:280 `total_bm_duration > 1e8` ns
    "max_rel_err": 0.001,                  # ebb:288
    "max_wall_s": 120.0,                   # ebb:290
    "benchmark_warmup": [200, 0.1],        # ebb:329 (max repeats, max time s)
    "benchmark": [200, 10.0],              # ebb:335
    "leaderboard_warmup": [1000, 0.5],     # ebb:481
    "leaderboard": [1000, 30.0],           # ebb:485
}
MODES = ("test", "benchmark", "leaderboard")


def evaluator_constants(task):
    out = dict(EVALUATOR)
    out.update(task.get("evaluator", {}))
    return out


def stats(durations):
    """(runs, mean, std, err, best, worst) of per-call durations in ns: the sample standard
    deviation and the standard error of the mean (ebb:119-138)."""
    n = len(durations)
    mean = sum(durations) / n
    std = math.sqrt(sum((d - mean) ** 2 for d in durations) / (n - 1)) if n > 1 else 0.0
    return {"runs": n, "mean_ns": mean, "std_ns": std, "err_ns": std / math.sqrt(n),
            "best_ns": min(durations), "worst_ns": max(durations)}


def stop_reason(durations, elapsed_s, max_time_s, c):
    """Why the timed repeats stop after this one, or None (ebb:278-292): only after at least 3
    repeats and 0.1 s of wall time; then when the standard error is below 0.1% of the mean, or
    when mean x repeats exceeds the case's time cap (the per-call mean: one repeat is 50 calls, so
    the cap bounds a fiftieth of the timed work), or after 120 s of wall time."""
    if len(durations) < c["min_repeats"] or not elapsed_s > c["min_wall_s"]:
        return None
    s = stats(durations)
    if s["err_ns"] / s["mean_ns"] < c["max_rel_err"]:
        return "relative error < %g%%" % (100 * c["max_rel_err"])
    if s["mean_ns"] * s["runs"] > max_time_s * 1e9:
        return "mean x repeats > %g s" % max_time_s
    if elapsed_s > c["max_wall_s"]:
        return "wall time > %g s" % c["max_wall_s"]
    return None


class Record:
    """DIR/rehearse.json, the mode's account: stages, cases, verdict. save() writes it whole."""

    def __init__(self, path, doc):
        self.path, self.doc = path, doc
        self.doc.setdefault("cases", [])
        self.doc.setdefault("verdict", "running")
        self._saved = 0.0

    def case(self, **fields):
        entry = {"status": "running", "step": "generate"}
        entry.update(fields)
        self.doc["cases"].append(entry)
        self.save()
        return entry

    def save(self, at_most_every=0.0):
        now = _clock()
        if at_most_every and now - self._saved < at_most_every:
            return
        self._saved = now
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f)
        os.replace(tmp, self.path)


class SubmissionError(Exception):
    """An exception raised by the submission: the evaluator's worker would have died with it."""


class Evaluator:
    """One mode's loops over `host` (gpumode_data.NumpyHost or TorchHost) calling `kernel`.
    `stage(name, body)` runs body as a protocol stage; `record` is the mode's Record."""

    def __init__(self, host, kernel, task, record, stage, secret_seed=None):
        self.host, self.kernel, self.record, self.stage = host, kernel, record, stage
        self.c = evaluator_constants(task)
        self.rtol = task["tolerance"]["rtol"]
        self.atol = task["tolerance"]["atol"]
        self.task = task
        self.secret = secret_seed
        self.seen_shapes = set()

    def cases(self, kind):
        from .gpumode_data import combine_seed
        out = []
        for case in self.task[kind]:
            case = dict(case)
            if self.secret is not None:
                case["seed"] = combine_seed(case["seed"], self.secret)
            out.append(case)
        return out

    def call(self, entry, data, what):
        try:
            return self.kernel(data)
        except BaseException as e:  # the evaluator's pool re-raises it and eval.py dies (ebb:165-170 catch only OpError)
            traceback.print_exc()  # the submission's traceback, for the child's log
            entry["status"] = "fail"
            entry["message"] = "exception in custom_kernel (%s): %s: %s" % (what, type(e).__name__, e)
            self.record.save()
            raise SubmissionError(entry["message"])

    def first_call(self, entry, data, what):
        """A call timed with a synchronize after it; the first call of a shape is the compile."""
        shape = tuple(entry["shape"])
        entry["first_call_of_shape"] = shape not in self.seen_shapes
        self.seen_shapes.add(shape)
        t0 = _clock()
        out = self.call(entry, data, what)
        self.host.sync()
        entry["first_call_s"] = _clock() - t0
        return out

    # -- test ------------------------------------------------------------------------------------
    def test_mode(self):
        passed = True
        for index, case in enumerate(self.cases("tests")):
            entry = self.record.case(phase="test", index=index, shape=shape_of(case), seed=case["seed"], calls=1)
            self.stage("run", lambda: self._test_one(entry, case))
            passed &= entry["status"] == "pass"
        return passed

    def _test_one(self, entry, case):
        h = self.host
        t0 = _clock()
        data = h.generate(*shape_of(case), case["seed"])
        handed = h.clone(data)
        h.sync()
        entry["generate_s"] = _clock() - t0
        entry["step"] = "call"
        self.record.save()
        out = self.first_call(entry, handed, "test %d" % (entry["index"] + 1))
        entry["step"] = "check"
        self.record.save()
        t0 = _clock()
        expected = h.reference(data)
        h.sync()
        entry["reference_s"] = _clock() - t0
        t0 = _clock()
        good, message, count = h.check(expected, out, self.rtol, self.atol)
        entry["check_s"] = _clock() - t0
        entry.update(status="pass" if good else "fail", step="done", message=message)
        if not good:
            entry["bad_outputs"] = [{"output": 0, "mismatches": count, "message": message, "evaluator_sees": True}]
        self.record.save()

    # -- benchmark and leaderboard ---------------------------------------------------------------
    def benchmark_mode(self):
        c = self.c
        cases = self.cases("benchmarks")
        warm = self.record.case(phase="benchmark-warmup", index=0, shape=shape_of(cases[0]), seed=cases[0]["seed"])
        self.stage("warmup", lambda: self.benchmark(warm, cases[0], False, *c["benchmark_warmup"], timed_stage=None))
        self.discarded(warm)
        passed = True
        for index, case in enumerate(cases):
            entry = self.record.case(phase="benchmark", index=index, shape=shape_of(case), seed=case["seed"])
            self.benchmark(entry, case, False, *c["benchmark"])
            passed &= entry["status"] == "pass"
        return passed

    def leaderboard_mode(self):
        c = self.c
        cases = self.cases("benchmarks")
        for index, case in enumerate(cases):
            warm = self.record.case(phase="leaderboard-warmup", index=index, shape=shape_of(case), seed=case["seed"])
            self.stage("warmup", lambda: self.benchmark(warm, case, False, *c["leaderboard_warmup"], timed_stage=None))
            self.discarded(warm)
        for index, case in enumerate(cases):
            entry = self.record.case(phase="leaderboard", index=index, shape=shape_of(case), seed=case["seed"])
            self.benchmark(entry, case, True, *c["leaderboard"])
            if entry["status"] != "pass":
                return False  # ebb:499: the leaderboard stops at its first failing case
        return True

    def discarded(self, entry):
        if entry["status"] == "fail":
            entry["ignored_by_evaluator"] = True
            entry["message"] += " (the evaluator discards this warm-up's result; the same case fails when ranked)"
            self.record.save()

    def benchmark(self, entry, case, recheck, max_repeats, max_time_s, timed_stage="time"):
        """One case benchmarked (ebb:214-294); `entry` gets its account and status. Stages: run
        (data, checked calls, check) and `timed_stage` (the repeats); None: the caller's stage."""
        run = (lambda body: self.stage("run", body)) if timed_stage else (lambda body: body())
        timed = (lambda body: self.stage(timed_stage, body)) if timed_stage else (lambda body: body())
        state = run(lambda: self._checked_pass(entry, case))
        if entry["status"] == "fail":
            return
        timed(lambda: self._repeats(entry, state, recheck, max_repeats, max_time_s))

    def _checked_pass(self, entry, case):
        h, c = self.host, self.c
        n = c["iterations_per_benchmark"]
        entry.update(calls=n, recheck=False)
        t0 = _clock()
        seed, data_list = case["seed"], []
        for _ in range(n):
            seed += c["seed_step"]
            data_list.append(h.generate(*shape_of(case), seed))
        check_copy = [h.clone(d) for d in data_list]
        h.sync()
        entry.update(generate_s=_clock() - t0, seeds=[case["seed"] + c["seed_step"], seed], step="calls")
        self.record.save()
        what = "%s case %d" % (entry["phase"], entry["index"] + 1)
        t0 = _clock()
        handed = h.clone(data_list[0])
        clone_s = _clock() - t0
        outputs = [self.first_call(entry, handed, what + " call 1")]
        other = 0.0
        for j in range(1, n):
            t0 = _clock()
            handed = h.clone(data_list[j])  # the evaluator hands each call a fresh clone (ebb:238)
            t1 = _clock()
            outputs.append(self.call(entry, handed, "%s call %d" % (what, j + 1)))
            clone_s, other = clone_s + t1 - t0, other + _clock() - t1
        t0 = _clock()
        h.sync()
        entry.update(other_calls_s=other + _clock() - t0, step="check")
        entry["generate_s"] += clone_s
        self.record.save()
        t0 = _clock()
        refs = [h.reference(d) for d in check_copy]
        h.sync()
        entry["reference_s"] = _clock() - t0
        t0 = _clock()
        bad = []
        for j, (ref, out) in enumerate(zip(refs, outputs)):
            good, message, count = h.check(ref, out, self.rtol, self.atol)
            if not good:
                # The evaluator returns the first bad output's message (ebb:242-245).
                bad.append({"output": j, "mismatches": count, "message": message, "evaluator_sees": not bad})
        entry["check_s"] = _clock() - t0
        if bad:
            entry.update(status="fail", step="done", message="output %d of %d: %s" % (bad[0]["output"] + 1, n,
                                                                                   bad[0]["message"]),
                         bad_outputs=bad)
            self.record.save()
            return None
        entry["step"] = "repeats"
        self.record.save()
        return data_list, refs

    def _repeats(self, entry, state, recheck, max_repeats, max_time_s):
        h, c = self.host, self.c
        data_list, refs = state
        n = len(data_list)
        entry.update(recheck=recheck, max_repeats=max_repeats, max_time_s=max_time_s, repeats=0, timed_s=0.0,
                     l2_clear_s=0.0, recheck_s=0.0, stop="max repeats (%d)" % max_repeats)
        durations, bad, start = [], [], _clock()
        for i in range(max_repeats):
            h.sync()
            seconds, clear, outputs = h.timed(lambda: [self.call(entry, d, "timed repeat %d" % (i + 1))
                                                        for d in data_list])
            entry["timed_s"] += seconds
            entry["l2_clear_s"] += clear
            if recheck:
                t0 = _clock()
                last_bad = False
                for j, (ref, out) in enumerate(zip(refs, outputs)):
                    good, message, count = h.check(ref, out, self.rtol, self.atol)
                    if not good:
                        last_bad = j == n - 1
                        bad.append({"repeat": i + 1, "output": j, "mismatches": count, "message": message,
                                    "evaluator_sees": last_bad})
                entry["recheck_s"] += _clock() - t0
                if bad:
                    entry["bad_outputs"] = bad[:20]
                    entry["bad_output_count"] = len(bad)
                if last_bad:
                    entry.update(status="fail", step="done", repeats=i + 1,
                                 message="repeat %d, output %d of %d: %s" % (i + 1, n, n, bad[-1]["message"]))
                    self.record.save()
                    return
            durations.append(seconds / n * 1e9)
            entry["repeats"] = i + 1
            entry["stats"] = stats(durations)
            reason = stop_reason(durations, _clock() - start, max_time_s, c)
            if reason:
                entry["stop"] = reason
                break
            self.record.save(at_most_every=1.0)
        entry.update(repeats_wall_s=_clock() - start, status="pass", step="done", l2_clear=h.l2_note())
        if bad:
            entry["message"] = ("%d bad outputs in the rechecks that the evaluator does not see (it keeps only the "
                                "last output's verdict of each repeat); first: repeat %d, output %d: %s"
                                % (len(bad), bad[0]["repeat"], bad[0]["output"] + 1, bad[0]["message"]))
        self.record.save()


def shape_of(case):
    return case["m"], case["n"], case["k"], case["l"]


def run_mode(mode, host, kernel, task, record, stage, secret_seed=None):
    """Runs one evaluator mode; the verdict goes into the record ("pass" or "fail")."""
    ev = Evaluator(host, kernel, task, record, stage, secret_seed)
    try:
        passed = {"test": ev.test_mode, "benchmark": ev.benchmark_mode, "leaderboard": ev.leaderboard_mode}[mode]()
        record.doc["verdict"] = "pass" if passed else "fail"
    except SubmissionError as e:
        record.doc["verdict"] = "fail"
        record.doc["message"] = str(e)
        record.save()
        raise
    record.save()
    return passed


def load_task(path):
    """The task description at `path` (nvfp4_driver/tasks/*.json), checked: ValueError naming the
    first thing wrong. Cases: m, n, k, l positive integers, k a multiple of 16 (one E4M3 scale per
    16 elements), seed a non-negative integer; at least one test and one benchmark; tolerance and
    limits positive numbers (limit compile may be 0: no compile run)."""
    try:
        with open(path) as f:
            task = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError("task %s: %s" % (path, e))
    if not isinstance(task, dict):
        raise ValueError("task %s: expected a JSON object" % path)
    for kind in ("tests", "benchmarks"):
        cases = task.get(kind)
        if not isinstance(cases, list) or not cases:
            raise ValueError("task %s: \"%s\" must be a non-empty list of cases" % (path, kind))
        for i, case in enumerate(cases):
            where = "task %s: %s[%d]" % (path, kind, i)
            if not isinstance(case, dict):
                raise ValueError(where + ": expected an object with m, n, k, l, seed")
            for key in ("m", "n", "k", "l", "seed"):
                v = case.get(key)
                if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "seed" else 1):
                    raise ValueError("%s: %s must be a %s integer (got %r)"
                                     % (where, key, "non-negative" if key == "seed" else "positive", v))
            if case["k"] % 16:
                raise ValueError("%s: k = %d is not a multiple of 16" % (where, case["k"]))
    tol = task.get("tolerance")
    if not isinstance(tol, dict) or not all(_positive(tol.get(k)) for k in ("rtol", "atol")):
        raise ValueError("task %s: \"tolerance\" must hold positive numbers rtol and atol" % path)
    limits = task.get("limits_s")
    if not isinstance(limits, dict):
        raise ValueError("task %s: \"limits_s\" must hold test, benchmark, leaderboard, compile" % path)
    for key in MODES + ("compile",):
        v = limits.get(key)
        if not (_positive(v) or (key == "compile" and v == 0)) or v > 1e6:
            raise ValueError("task %s: limits_s.%s must be a positive number of seconds, at most 1e6 (got %r)"
                             % (path, key, v))
    extra = task.get("evaluator", {})
    if not isinstance(extra, dict) or set(extra) - set(EVALUATOR):
        raise ValueError("task %s: \"evaluator\" may only override %s" % (path, ", ".join(sorted(EVALUATOR))))
    task.setdefault("task", os.path.splitext(os.path.basename(path))[0])
    return task


def _positive(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and v == v
