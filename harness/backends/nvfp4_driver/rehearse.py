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

What the submission raises is treated as the evaluator treats it (Evaluator.call): OpError (told by
class name) fails its case where the evaluator catches it (the test call, a benchmark's checked calls,
ebb:165-170, 236-241); any other Exception ends the mode (SubmissionError: eval.py dies with it); a
BaseException that is not an Exception (SystemExit, KeyboardInterrupt) is WorkerDeath: the
evaluator's pool worker dies and eval.py waits until kernelbot's limit; the account's "worker_dies"
says so, and the parent reports WOULD TIME OUT.

The evaluator computes every reference afresh (on a B200, two FP4 GEMMs); the rehearsal computes
each data object's reference once and reuses it for the rechecks. Its own work (data, references,
checks, L2 clears) is accounted apart from the submission's (import, first call per case shape,
the other checked calls, the timed repeats), per case, in DIR/rehearse.json: rewritten whole
(write, rename) at each step, so that a parent that killed this process reads how far it got.

Length: about 630 lines, over the project's ~600: the three modes share the per-case record, the
stopping rule and the exception handling that make them the evaluator's, and are kept side by side
so that they can be read against eval_better_bench.py in one place.
"""
import json
import math
import os
import traceback
# Bound when the driver imports this module, before it imports the submission: a submission that
# replaces time.perf_counter afterwards does not change this clock (gpumode_data binds its own the
# same way). Nothing in one process is out of a submission's reach: one that patches this module's
# globals changes what they say.
from time import perf_counter as _clock

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


class ZeroMean(Exception):
    """The timed repeats' mean is not positive where the evaluator divides by it."""


def stop_reason(durations, elapsed_s, max_time_s, c):
    """Why the timed repeats stop after this one, or None (ebb:278-292): only after at least 3
    repeats and 0.1 s of wall time; then when the standard error is below 0.1% of the mean, or
    when mean x repeats exceeds the case's time cap (the per-call mean: one repeat is 50 calls, so
    the cap bounds a fiftieth of the timed work), or after 120 s of wall time. The evaluator divides
    the error by the mean (ebb:288): a mean of 0 (nothing measured between its events) makes it
    raise ZeroDivisionError, and eval.py dies: ZeroMean here, which ends the mode as a failure."""
    if len(durations) < c["min_repeats"] or not elapsed_s > c["min_wall_s"]:
        return None
    s = stats(durations)
    if not s["mean_ns"] > 0:
        raise ZeroMean("the timed repeats measured a mean of %r ns per call (nothing timed between the start and "
                       "end of a batch?): the evaluator divides by the mean in its stopping rule "
                       "(eval_better_bench.py:288) and eval.py dies with ZeroDivisionError" % s["mean_ns"])
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
    """An exception raised by the submission that the evaluator does not catch: its pool worker
    hands it back to eval.py, which dies with it (the mode FAILs)."""


class WorkerDeath(Exception):
    """The submission raised a BaseException that is not an Exception (SystemExit,
    KeyboardInterrupt, GeneratorExit): multiprocessing's pool worker catches only Exception, so
    the evaluator's worker process ends, pool.apply never returns and eval.py waits until
    kernelbot's limit (the mode would time out). The account says so in "worker_dies"."""


class OpErrorRaised(Exception):
    """custom_kernel raised CuTe's OpError where the evaluator catches it (the test call, a
    benchmark's checked calls): that case fails, the mode goes on."""


def is_op_error(e):
    """Whether the evaluator's `except OpError` (cutlass.cute.nvgpu.common.OpError, ebb:23, 168,
    240) would catch `e`: told by class name along its MRO, since CuTe is not imported here."""
    return any(cls.__name__ == "OpError" for cls in type(e).__mro__)


WORKER_DIES = ("the evaluator's pool worker would die and eval.py would wait for it until the limit "
               "(multiprocessing's worker catches only Exception; pool.apply never returns)")


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

    def call(self, entry, data, what, catches_op_error=False):
        """custom_kernel(data). What the evaluator does with what it raises decides what follows:
        OpError where the evaluator catches it (`catches_op_error`): OpErrorRaised, the case
        fails; any other Exception: SubmissionError, the mode ends (eval.py dies); a
        BaseException that is not an Exception: WorkerDeath (the pool worker dies)."""
        try:
            return self.kernel(data)
        except BaseException as e:
            traceback.print_exc()  # the submission's traceback, for the child's log
            text = "%s: %s" % (type(e).__name__, e)
            entry["status"] = "fail"
            if isinstance(e, Exception) and catches_op_error and is_op_error(e):
                entry["message"] = "custom_kernel raised OpError (%s), which the evaluator catches there: %s" % (
                    what, text)
                self.record.save()
                raise OpErrorRaised(entry["message"])
            entry["message"] = "exception in custom_kernel (%s): %s" % (what, text)
            if not isinstance(e, Exception):
                entry["message"] += ": " + WORKER_DIES
                self.record.doc["worker_dies"] = entry["message"]
                self.record.save()
                raise WorkerDeath(entry["message"])
            self.record.save()
            raise SubmissionError(entry["message"])

    def step(self, entry, name):
        """Enters step `name` of a case: the account says which, and since when (step_t0, on the
        driver's clock, comparable with the account's stage_t0), so that a parent that kills the
        process charges the time in flight to this step."""
        entry["step"] = name
        entry["step_t0"] = _clock()
        self.record.save()

    def first_call(self, entry, data, what):
        """A call timed with a synchronize after it; the first call of a shape is the compile.
        The account says whether it is the shape's first before the call starts."""
        shape = tuple(entry["shape"])
        entry["first_call_of_shape"] = shape not in self.seen_shapes
        self.seen_shapes.add(shape)
        self.step(entry, "call")
        t0 = _clock()
        out = self.call(entry, data, what, catches_op_error=True)
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
        self.step(entry, "generate")
        t0 = _clock()
        data = h.generate(*shape_of(case), case["seed"])
        handed = h.clone(data)
        h.sync()
        entry["generate_s"] = _clock() - t0
        try:
            out = self.first_call(entry, handed, "test %d" % (entry["index"] + 1))
        except OpErrorRaised:  # ebb:168-170: the test fails with the error's text; the next runs
            entry["step"] = "done"
            self.record.save()
            return
        self.step(entry, "check")
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
        self.step(entry, "generate")
        t0 = _clock()
        seed, data_list = case["seed"], []
        for _ in range(n):
            seed += c["seed_step"]
            data_list.append(h.generate(*shape_of(case), seed))
        check_copy = [h.clone(d) for d in data_list]
        h.sync()
        entry.update(generate_s=_clock() - t0, seeds=[case["seed"] + c["seed_step"], seed])
        what = "%s case %d" % (entry["phase"], entry["index"] + 1)
        t0 = _clock()
        handed = h.clone(data_list[0])
        entry["generate_s"] += _clock() - t0
        other = 0.0
        try:
            outputs = [self.first_call(entry, handed, what + " call 1")]
            self.step(entry, "calls")
            for j in range(1, n):
                t0 = _clock()
                handed = h.clone(data_list[j])  # the evaluator hands each call a fresh clone (ebb:238)
                t1 = _clock()
                outputs.append(self.call(entry, handed, "%s call %d" % (what, j + 1), catches_op_error=True))
                entry["generate_s"] += t1 - t0
                other += _clock() - t1
        except OpErrorRaised:  # ebb:240-241: the case fails with "Encountered ..."; no check, no timing
            entry.update(other_calls_s=other, step="done")
            self.record.save()
            return None
        t0 = _clock()
        h.sync()
        entry["other_calls_s"] = other + _clock() - t0
        self.step(entry, "check")
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
        return data_list, refs

    def _repeats(self, entry, state, recheck, max_repeats, max_time_s):
        h, c = self.host, self.c
        data_list, refs = state
        n = len(data_list)
        entry.update(recheck=recheck, max_repeats=max_repeats, max_time_s=max_time_s, repeats=0, timed_s=0.0,
                     l2_clear_s=0.0, recheck_s=0.0, stop="max repeats (%d)" % max_repeats)
        # "repeats" in the saved account may lag the loop by up to a second (it is saved at most once
        # a second, to keep the writes out of the evaluator's wall-time rule): a killed mode reports
        # at least that many repeats done.
        self.step(entry, "repeats")
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
            try:
                reason = stop_reason(durations, _clock() - start, max_time_s, c)
            except ZeroMean as e:
                entry.update(status="fail", message=str(e))
                self.record.save()
                raise SubmissionError(str(e))
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
    except (SubmissionError, WorkerDeath) as e:
        record.doc["verdict"] = "fail"
        record.doc["message"] = str(e)
        record.save()
        raise
    record.save()
    return passed


# A task file's bounds (load_task). Every value is checked before any child runs, so that a bad
# file is the user's exit 2 naming the field, never a traceback or a run that cannot end.
TASK_KEYS = ("task", "source", "tests", "benchmarks", "ranking_by", "tolerance", "limits_s", "evaluator")
CASE_KEYS = ("m", "n", "k", "l", "seed")
MAX_TASK_BYTES = 16 << 20
MAX_DIM = 1 << 20           # m, n, k each (GPU MODE's largest is 7168)
MAX_BATCH = 1 << 10         # l
MAX_WORK = 1 << 40          # m*n*k*l multiply-adds per GEMM (GPU MODE's largest, 512x4096x7168x1: about 2^33.9)
MAX_OBJECT_BYTES = 1 << 32  # one data object: packed a, b1, b2, their scales twice, c
MAX_SEED = (1 << 64) - 1    # torch.manual_seed refuses seeds above 2^64 - 1 (it unpacks a uint64)
MAX_SECRET_SEED = (1 << 31) - 1  # kernelbot's secret seeds lie in [0, 2^31) (rehearse.cpp kSecretSeeds)
MAX_SECONDS = 1e6
MAX_REPEATS = 10 ** 6
MAX_ITERATIONS = 10 ** 4
MAX_SEED_STEP = 1 << 32


def _whole(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    for k in keys:
        if keys.count(k) > 1:
            raise ValueError("the key %r appears twice in one object" % k)
    return dict(pairs)


class NonFinite:
    """What json's NaN, Infinity and -Infinity parse to here: no number, so the field's own check
    refuses it by name ("limits_s.test must be a finite number > 0 (got Infinity)")."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def data_object_bytes(m, n, k, l):
    """Bytes of one data object as generated: a, b1, b2 packed two values a byte, their scales
    (one byte per 16 values) plain and tiled (padded to 128 rows and 4 scale columns), and c in fp16."""
    sf = -(-k // 16)
    tiled = lambda rows: -(-rows // 128) * 128 * (-(-sf // 4) * 4)
    return l * ((m + 2 * n) * (k // 2) + (m + 2 * n) * sf + tiled(m) + 2 * tiled(n) + 2 * m * n)


def largest_seed(seed, c, benchmark):
    """The largest seed a case can hand torch.manual_seed: paired with the largest secret seed
    (combine_seed grows with it), then, for a benchmark, raised by seed_step before each of its
    data objects (ebb:226-230)."""
    from .gpumode_data import combine_seed
    top = combine_seed(seed, MAX_SECRET_SEED)
    return top + c["seed_step"] * c["iterations_per_benchmark"] if benchmark else top


def load_task(path):
    """The task description at `path` (nvfp4_driver/tasks/*.json) with every value checked;
    ValueError naming the first field that is wrong and why. A task is a JSON object (at most
    16 MiB; NaN, Infinity and duplicate keys refused) with only the keys of TASK_KEYS:
      task        a name (default: the file's), source an object of strings, ranking_by "geom"
      tests, benchmarks  non-empty lists of cases {m, n, k, l, seed}, no other key: m, n, k in
                  [1, 2^20], l in [1, 2^10], k a multiple of 16 (one E4M3 scale per 16 values, and
                  two values a byte), m*n*k*l at most 2^40, one data object at most 4 GiB; seed an
                  integer >= 0 whose largest use (paired with a secret seed up to 2^31 - 1, raised
                  by seed_step for each of a benchmark's data objects) is at most 2^64 - 1, the
                  largest torch.manual_seed takes
      tolerance   exactly rtol and atol, finite numbers > 0
      limits_s    exactly test, benchmark, leaderboard (finite, > 0) and compile (finite, >= 0: 0
                  is no compile run), each at most 1e6 s
      evaluator   optional overrides of EVALUATOR, each of its type: counts integers >= 1
                  (seed_step >= 0), seconds and the relative error finite numbers > 0 (min_wall_s
                  >= 0), the four benchmark pairs [repeats >= 1, seconds > 0]."""
    where = "task %s" % path
    try:
        if os.path.getsize(path) > MAX_TASK_BYTES:
            raise ValueError("larger than %d MiB; a task file is a few kilobytes" % (MAX_TASK_BYTES >> 20))
        with open(path, "rb") as f:
            task = json.loads(f.read().decode("utf-8"), parse_constant=NonFinite,
                              object_pairs_hook=_no_duplicates)
    except (OSError, ValueError, RecursionError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError("%s: %s" % (where, e))
    if not isinstance(task, dict):
        raise ValueError("%s: expected a JSON object, got %s" % (where, type(task).__name__))

    def fail(field, want, value):
        text = repr(value)
        raise ValueError("%s: %s must be %s (got %s)" % (where, field, want, text if len(text) <= 60 else text[:57] + "..."))

    def whole(field, value, low, high):
        if not _whole(value) or not low <= value <= high:
            fail(field, "an integer in [%d, %d]" % (low, high), value)
        return value

    def number(field, value, positive, high=MAX_SECONDS):
        if not _finite(value) or not (value > 0 if positive else value >= 0) or value > high:
            fail(field, "a finite number %s, at most %g" % ("> 0" if positive else ">= 0", high), value)
        return value

    def exact_keys(field, value, keys):
        if not isinstance(value, dict):
            fail(field, "an object with %s" % ", ".join(keys), value)
        unknown = sorted(set(value) - set(keys))
        missing = [k for k in keys if k not in value]
        if unknown or missing:
            raise ValueError("%s: %s must hold exactly %s (%s)" % (
                where, field, ", ".join(keys),
                "; ".join(x for x in ("unknown: " + ", ".join(map(repr, unknown)) if unknown else "",
                                       "missing: " + ", ".join(missing) if missing else "") if x)))

    unknown = sorted(set(task) - set(TASK_KEYS))
    if unknown:
        raise ValueError("%s: unknown key %s (a task has %s)" % (where, ", ".join(map(repr, unknown)), ", ".join(TASK_KEYS)))
    name = task.get("task", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(name, str) or not name or len(name) > 200 or not name.isprintable():
        fail("\"task\"", "a printable name of 1 to 200 characters", name)
    task["task"] = name
    source = task.get("source", {})
    if not isinstance(source, dict) or not all(isinstance(v, str) for v in source.values()):
        fail("\"source\"", "an object of strings (repository, commit, notes)", source)
    if task.get("ranking_by", "geom") != "geom":
        fail("\"ranking_by\"", "\"geom\" (the geometric mean of the benchmark means, the only ranking reported)",
             task.get("ranking_by"))

    extra = task.get("evaluator", {})
    if not isinstance(extra, dict):
        fail("\"evaluator\"", "an object", extra)
    for key in extra:
        if key not in EVALUATOR:
            raise ValueError("%s: \"evaluator\" may only override %s (got %r)" % (where, ", ".join(sorted(EVALUATOR)), key))
    c = evaluator_constants(task)
    whole("evaluator.iterations_per_benchmark", c["iterations_per_benchmark"], 1, MAX_ITERATIONS)
    whole("evaluator.seed_step", c["seed_step"], 0, MAX_SEED_STEP)
    whole("evaluator.min_repeats", c["min_repeats"], 1, MAX_REPEATS)
    number("evaluator.min_wall_s", c["min_wall_s"], False)
    number("evaluator.max_rel_err", c["max_rel_err"], True)
    number("evaluator.max_wall_s", c["max_wall_s"], True)
    for key in ("benchmark_warmup", "benchmark", "leaderboard_warmup", "leaderboard"):
        pair = c[key]
        if not isinstance(pair, list) or len(pair) != 2:
            fail("evaluator." + key, "a pair [max repeats, max time in s]", pair)
        whole("evaluator.%s[0] (max repeats)" % key, pair[0], 1, MAX_REPEATS)
        number("evaluator.%s[1] (max time s)" % key, pair[1], True)

    for kind in ("tests", "benchmarks"):
        cases = task.get(kind)
        if not isinstance(cases, list) or not cases:
            raise ValueError("%s: \"%s\" must be a non-empty list of cases" % (where, kind))
        for i, case in enumerate(cases):
            at = "%s[%d]" % (kind, i)
            exact_keys(at, case, CASE_KEYS)
            for key in ("m", "n", "k"):
                whole("%s.%s" % (at, key), case[key], 1, MAX_DIM)
            whole(at + ".l", case["l"], 1, MAX_BATCH)
            whole(at + ".seed", case["seed"], 0, MAX_SEED)
            m, n, k, l = shape_of(case)
            if k % 16:
                raise ValueError("%s: %s.k = %d is not a multiple of 16 (one E4M3 scale per 16 values)" % (where, at, k))
            if m * n * k * l > MAX_WORK:
                raise ValueError("%s: %s: m*n*k*l = %d exceeds 2^40 (GPU MODE's largest shape is about 2^34)"
                                 % (where, at, m * n * k * l))
            if data_object_bytes(m, n, k, l) > MAX_OBJECT_BYTES:
                raise ValueError("%s: %s: one data object of %dx%dx%dx%d takes %d bytes, more than 4 GiB"
                                 % (where, at, m, n, k, l, data_object_bytes(m, n, k, l)))
            top = largest_seed(case["seed"], c, kind == "benchmarks")
            if top > MAX_SEED:
                raise ValueError("%s: %s.seed = %d: paired with a secret seed up to 2^31 - 1 (eval_better_bench.py:62-70)"
                                 "%s, it reaches %d, above 2^64 - 1, the largest seed torch.manual_seed takes"
                                 % (where, at, case["seed"], " and raised by seed_step for each data object"
                                    if kind == "benchmarks" else "", top))

    tol = task.get("tolerance")
    exact_keys("\"tolerance\"", tol, ("rtol", "atol"))
    for key in ("rtol", "atol"):
        number("tolerance." + key, tol[key], True)
    limits = task.get("limits_s")
    exact_keys("\"limits_s\"", limits, MODES + ("compile",))
    for key in MODES + ("compile",):
        number("limits_s." + key, limits[key], key != "compile")
    return task
