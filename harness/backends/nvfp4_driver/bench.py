"""Stage `time` of a bench trial for a submission: the steady state timed two ways, both on the
harness's own input sets, speaking the bench part of the trial protocol (harness/trial/trial.hpp):
    timed-output INDEX SET   (DIR/timed<INDEX>.f16 written first)
    timing REPS MEDIAN MIN MEAN STDEV RSE B2B B2B_CALLS
  per call   the harness's figure: call k gets input set k mod (R+1) refilled in place into the
             warm-up's tensors, outside the timed region, with one element of A negated at a
             position that moves with k (so a result memoized by the inputs' contents misses: the
             call pays for its work); after each batch one more call on its set as the harness
             wrote it gives the output that is checked and is left out of the figures; each call
             is timed alone, from an event on the calling stream to an event recorded after a
             device-wide synchronize, so work left running on another stream is counted; the
             stopping rule of the harness's own
             trials (optimized/plan.hpp measure_calls: batches of 10, median RSE, time and count
             limits) gives REPS, MEDIAN, MIN, MEAN, STDEV, RSE.
  b2b        GPU MODE's figure: a list of distinct `data` objects of newly allocated tensors, one per
             input set, called back to back in one timed region (L2 flushed before it, ended after a
             device-wide synchronize), about 20 ms of calls; B2B is the mean per call (the R+1
             objects repeat, so a memo keyed by contents hits here after the first round).
The output of the last batch's extra call (INDEX 0) and of the last back-to-back call (INDEX 1) go to the
parent, which checks each against the reference of its own input set: a time is reported only for a
trial whose timed outputs pass. Without torch (numpy data) the clock is time.perf_counter, bound at
import like the stage clock.
"""
import math
import os
from time import perf_counter as _clock

from .inputs import Inputs, load_arrays

TIMING_BATCH = 10
L2_FLUSH_BYTES = 256 << 20  # larger than any current GPU's L2


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def median_rse(values, med):
    """1.2533 * 1.4826 * MAD / sqrt(n) / median, as optimized/plan.hpp median_rse."""
    return 1.2533 * 1.4826 * median([abs(x - med) for x in values]) / math.sqrt(len(values)) / med


def back_to_back_calls(median_s):
    """About 20 ms of calls at the measured median, at least 10 and at most 2000 (plan.hpp)."""
    if not median_s > 0:
        return 2000
    n = 0.02 / median_s
    return 10 if n < 10 else 2000 if n > 2000 else int(n)


class Timer:
    """Seconds of a region that ends after a device-wide synchronize, by CUDA events through
    `cuda` (inputs.BoundCuda: bound before the submission's import), or by the bound clock."""

    def __init__(self, torch, cuda):
        self.torch, self.cuda = torch, cuda
        self._flush = None

    def flush_l2(self):
        if self.torch is not None:
            if self._flush is None:
                self._flush = self.torch.empty(L2_FLUSH_BYTES, dtype=self.torch.uint8, device="cuda")
            self._flush.zero_()
            self.cuda.synchronize()

    def region(self, body):
        if self.torch is None:
            t0 = _clock()
            result = body()
            return _clock() - t0, result
        c = self.cuda
        start, end = c.event(), c.event()
        c.record(start)
        result = body()
        c.synchronize()
        c.record(end)
        return c.seconds(start, end), result


def bench_sets(trial_dir, runs, np, torch, alphas_of):
    """Input sets 0..R in the trial's own mode (DIR/bench<k>/ for k < R, DIR/case/ for R), each as
    (arrays, alphas)."""
    sets = []
    for k in range(runs + 1):
        folder = os.path.join(trial_dir, "bench%d" % k if k < runs else "case")
        sets.append((load_arrays(folder, np, True), alphas_of(folder)))
    return sets


def time_stage(ch, args, inputs, call, reader, np, torch, alphas_of, write_timed):
    """Runs stage `time`'s work (the caller wraps it in ch.stage). `call(target)` runs the submission
    on an Inputs; `write_timed(index, set, out)` reads an output back and reports it."""
    runs = args.runs
    sets = bench_sets(args.dir, runs, np, torch, alphas_of)
    timer = Timer(torch, reader.cuda)
    sync = reader.cuda.synchronize if torch is not None else (lambda: None)
    min_reps = max(1, args.bench_min_reps)
    max_reps = max(min_reps, args.bench_max_reps)
    times, out, started, k = [], None, _clock(), 0
    while True:
        batch = min(TIMING_BATCH, max_reps - len(times))
        for j in range(batch + 1):
            # The batch's timed calls get one element of A negated; one more call on its set as
            # written gives the output that is checked, and is not counted.
            arrays, alphas = sets[k % (runs + 1)]
            inputs.update(arrays, alphas)
            timed = j < batch
            if timed:
                inputs.negate_activation(k)
            sync()
            seconds, out = timer.region(lambda: call(inputs))
            if timed:
                times.append(seconds)
            checked_set, k = k % (runs + 1), k + 1
        done = len(times)
        if done >= max_reps:
            break
        if done >= min_reps and (median_rse(times, median(times)) < args.bench_rse
                                 or _clock() - started > args.bench_max_time):
            break
    write_timed(0, checked_set, out)

    med = median(times)
    mean = sum(times) / len(times)
    stdev = math.sqrt(sum((x - mean) ** 2 for x in times) / (len(times) - 1)) if len(times) > 1 else 0.0
    n = back_to_back_calls(med)
    distinct = [Inputs(np, arrays, torch, alphas) for arrays, alphas in sets]
    timer.flush_l2()

    def back_to_back():
        result = None
        for j in range(n):
            result = call(distinct[j % len(distinct)])
        return result

    b2b_seconds, out = timer.region(back_to_back)
    write_timed(1, (n - 1) % (runs + 1), out)
    num = lambda v: "%.9g" % v
    ch.send("timing", str(len(times)), num(med), num(min(times)), num(mean), num(stdev),
            num(median_rse(times, med)), num(b2b_seconds / n), str(n))
