"""harness/backends/submission_driver.py's torch paths, run in CI against a numpy stand-in for torch
(fake_torch/torch, whose side streams queue their writes until joined or synchronized): new tensors
and in-place refills as the `call` files ask (addresses kept or new), the poison and the last call's
start from the previous output on the "device", and the stream-ordered read-back, which must flag a
submission whose side stream is never joined and must not flag one that joins it.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

from test_submission_driver import DRIVER, ROOT, assert_close, make_case, read_output, reference, save_case

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_torch")
DUAL = os.path.join(ROOT, "tests", "planted", "submissions", "cpu")
with open(DRIVER) as _f:  # the driver's number of calls after the checked ones
    LATE_CALLS = int(re.search(r"^LATE_CALLS = (\d+)$", _f.read(), re.M).group(1))
MARKER = "output not complete when the calling stream reached it: work on another stream not joined?"

SUBMISSION = """
import json, sys, time
sys.path.insert(0, %(dual)r)
import numpy as np
import torch
from dual_numpy import decode, epilogue

if %(mode)r == "patches-events":  # reports a microsecond per call and never waits for the device
    torch.cuda.Event.elapsed_time = lambda self, end: 1e-3
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.Stream.synchronize = lambda self: None

class Lazy(torch.Tensor):
    pass

if %(mode)r == "tf32-at-import":  # an "init at import" that speeds up everybody's fp32 matmuls
    torch.backends.cuda.matmul.allow_tf32 = True

if %(mode)r == "refuses-legacy-read":  # as torch does once fp32_precision and allow_tf32 disagree
    class _Refusing:
        @property
        def allow_tf32(self):
            raise RuntimeError("PyTorch is checking whether allow_tf32_new is enabled ...")
    torch.backends.cuda.matmul = _Refusing()

if %(mode)r == "stream-at-import":  # an "init at import" that makes its own stream current for good
    torch.cuda.set_stream(torch.cuda.Stream())

def _bytes(x):
    return x.view(torch.uint8).cpu().numpy()

def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2 = [_bytes(x) for x in data[:6]]
    c = data[9]
    with open(%(log)r, "a") as f:
        f.write(json.dumps([data[0].data_ptr(), data[1].data_ptr(), id(data[0])]) + "\\n")
    with open(%(log)r + ".a", "a") as f:  # what A held, per call
        f.write(a.tobytes().hex() + "\\n")
    out = torch.from_numpy(np.ascontiguousarray(
        epilogue(decode(a, sfa), decode(b1, sfb1), decode(b2, sfb2)).transpose(1, 2, 0)))
    if %(mode)r in ("current", "stream-at-import", "tf32-at-import", "refuses-legacy-read"):
        c.copy_(out)
        return c
    if %(mode)r == "benchmark-per-call":  # flips cuDNN's autotuner on, on every call
        torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
        c.copy_(out)
        return c
    if %(mode)r == "stream-per-call":  # switches to a stream of its own and leaves it current
        torch.cuda.set_stream(torch.cuda.Stream())
        c.copy_(out)
        torch.cuda.current_stream().synchronize()
        return c
    if %(mode)r == "patches-events":
        time.sleep(0.02)
        c.copy_(out)
        return c
    if %(mode)r == "lazy":
        c.copy_(out)
        return Lazy(c._a, c.dtype, True)
    if %(mode)r == "one-buffer":  # right output, in one tensor of its own returned by every call
        global _buffer
        if "_buffer" not in globals():
            _buffer = torch.empty(tuple(c.shape), dtype=torch.float16, device="cuda")
        _buffer.copy_(out)
        return _buffer
    if %(mode)r == "scratch":  # right output; the caller's sfb1_permuted, which it never reads, zeroed
        c.copy_(out)
        data[7].view(torch.uint8).zero_()
        return c
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        c.copy_(out)
    if %(mode)r == "joined":
        torch.cuda.current_stream().wait_stream(side)
    return c
"""


class FakeTorchDriverTest(unittest.TestCase):
    M, N, K, L = 5, 7, 64, 2

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        shape = (self.M, self.N, self.K, self.L)
        self.warm = make_case(*shape, 10)
        base = make_case(*shape, 11)
        # Checked calls: 1 in place (new activations on the warm-up's weights), 2 new tensors
        # (a whole new set), 3 in place again.
        self.sets = [dict(self.warm, a=base["a"], sfa=base["sfa"]), make_case(*shape, 12),
                     dict(self.warm, a=make_case(*shape, 13)["a"], sfa=make_case(*shape, 13)["sfa"])]
        save_case(os.path.join(self.dir, "case"), self.warm)
        for i, (kind, case) in enumerate(zip(["in-place activations", "new", "in-place activations"], self.sets)):
            folder = os.path.join(self.dir, "call%d" % i)
            save_case(folder, case)
            with open(os.path.join(folder, "call"), "w") as f:
                f.write(kind + "\n")
            with open(os.path.join(folder, "set"), "w") as f:
                f.write("%d\n" % i)

    def tearDown(self):
        self.tmp.cleanup()

    def run_mode(self, mode, extra=(), last="done"):
        log = os.path.join(self.dir, "calls-%s.jsonl" % mode)
        sub = os.path.join(self.dir, "sub_%s.py" % mode)
        with open(sub, "w") as f:
            f.write(textwrap.dedent(SUBMISSION % {"dual": DUAL, "log": log, "mode": mode}))
        r, w = os.pipe()
        env = dict(os.environ, PYTHONPATH=FAKE + os.pathsep + os.environ.get("PYTHONPATH", ""))
        try:
            proc = subprocess.run([sys.executable, DRIVER, "run", "--fd", str(w), "--dir", self.dir,
                                   "--submission", sub, "--warmup", "2", "--runs", "3"] + list(extra),
                                  pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=120)
        finally:
            os.close(w)
        with os.fdopen(r, "rb") as f:
            msgs = [line.split("\t") for line in f.read().decode().splitlines()]
        self.assertEqual(msgs[-1][0], last, (msgs, proc.stdout.decode()))
        with open(log) as f:
            calls = [json.loads(line) for line in f]
        return msgs, calls

    def test_new_tensors_and_in_place_refills_reach_the_submission_as_asked(self):
        msgs, calls = self.run_mode("current")
        self.assertEqual([m for m in msgs if m[0] == "note"], [])
        self.assertEqual([m[1:] for m in msgs if m[0] == "output"], [["0", "0"], ["1", "1"], ["2", "2"]])
        self.assertTrue(any("torch data" in m[1] for m in msgs if m[0] == "describe"))
        for i, case in enumerate(self.sets):
            assert_close(self, read_output(self.dir, i, self.M, self.N, self.L), reference(case))
        self.assertEqual(len(calls), 5 + LATE_CALLS)  # 2 warm-up calls, 3 checked, the later calls
        warm_a, warm_b1, warm_id = calls[0]
        self.assertEqual(calls[1], calls[0])
        for i in (2, 4):  # checked calls 1 and 3: the same tensor objects, the same addresses
            self.assertEqual(calls[i], [warm_a, warm_b1, warm_id])
        new_a, new_b1, new_id = calls[3]  # checked call 2: everything new, weights included
        self.assertNotEqual(new_a, warm_a)
        self.assertNotEqual(new_b1, warm_b1)
        self.assertNotEqual(new_id, warm_id)
        later = calls[5:]  # new tensors again, distinct from every earlier call's, then refilled in place
        self.assertTrue(all(later[0][j] not in {c[j] for c in calls[:5]} for j in range(3)), calls)
        self.assertEqual({tuple(c[:2]) for c in later}, {tuple(later[0][:2])})
        # Identical outputs: only the first later call's is sent, as call 6 on the warm-up's set 3.
        self.assertEqual([m[1:] for m in msgs if m[0] == "late-output"], [["0", "3", "6"]])

    def test_unjoined_side_stream_is_flagged_on_every_call(self):
        msgs, _ = self.run_mode("unjoined")
        notes = [m[1] for m in msgs if m[0] == "note"]
        self.assertEqual(len(notes), 4, msgs)  # the checked calls', and the first of the later calls'
        self.assertTrue(notes[3].startswith("call 6 (new tensors, the warm-up's input set): " + MARKER), notes[3])
        self.assertTrue(notes[0].startswith("call 1 (in place, input set 0): " + MARKER), notes[0])
        self.assertTrue(notes[1].startswith("call 2 (new tensors, input set 1): " + MARKER), notes[1])
        self.assertIn("changed after a device-wide synchronize", notes[2])
        # The stream-ordered read is what is written: calls 1 and 2 still hold the poison, call 3
        # the previous call's output it started from.
        poison = np.full(self.L * self.M * self.N, 0x7D5A, dtype=np.uint16)
        for i in (0, 1):
            bits = np.fromfile(os.path.join(self.dir, "out%d.f16" % i), dtype=np.uint16)
            self.assertTrue(np.array_equal(bits, poison))
        assert_close(self, read_output(self.dir, 2, self.M, self.N, self.L), reference(self.sets[1]))

    def test_bench_times_both_ways_and_sends_checked_timed_outputs(self):
        for k, case in enumerate(self.sets):  # the bench's sets in the trial's own mode
            save_case(os.path.join(self.dir, "bench%d" % k), case if k != 1 else dict(self.warm))
        msgs, calls = self.run_mode("current", ["--bench", "--bench-min-reps", "10", "--bench-max-reps", "20"])
        stages = [m[1] for m in msgs if m[0] == "enter"]
        self.assertEqual(stages[-2:], ["time", "teardown"])
        timing = [m for m in msgs if m[0] == "timing"][0]
        reps, b2b_calls = int(timing[1]), int(timing[8])
        self.assertTrue(10 <= reps <= 20, timing)
        self.assertTrue(float(timing[2]) > 0 and float(timing[7]) > 0, timing)
        sets = [dict(self.sets[0]), dict(self.warm), dict(self.sets[2]), self.warm]
        outputs = [m[1:] for m in msgs if m[0] == "timed-output"]
        batches = -(-reps // 10)  # one more call per batch (its set as written: the checked output)
        per_call = reps + batches
        self.assertEqual(outputs, [["0", str((per_call - 1) % 4)], ["1", str((b2b_calls - 1) % 4)]])
        for index, set_number in outputs:
            bits = np.fromfile(os.path.join(self.dir, "timed%s.f16" % index), dtype=np.uint16)
            got = bits.view(np.float16).reshape(self.L, self.M, self.N)
            assert_close(self, got, reference(sets[int(set_number)]))
        # Per-call timing on the warm-up's tensors; back to back on 4 distinct new data objects.
        timed = calls[5 + LATE_CALLS:5 + LATE_CALLS + per_call]  # (after the later calls of stage run)
        self.assertEqual({tuple(c) for c in timed}, {tuple(calls[0])})
        # The counted calls' activations (all but the 11th of each 11): no two alike, and none as a set
        # was written (4 sets rotate), so a result memoized by the inputs' contents cannot answer them.
        with open(os.path.join(self.dir, "calls-current.jsonl.a")) as f:
            contents = f.read().split()[5 + LATE_CALLS:5 + LATE_CALLS + per_call]
        counted = [c for i, c in enumerate(contents) if i % 11 != 10]
        written = {contents[i] for i in range(10, per_call, 11)}
        self.assertEqual(len(counted), reps)
        self.assertEqual(len(set(counted)), reps)
        self.assertEqual(written & set(counted), set())
        b2b = calls[5 + LATE_CALLS + per_call:]
        self.assertEqual(len(b2b), b2b_calls)
        self.assertEqual(len({c[0] for c in b2b}), 4)
        self.assertNotIn(calls[0][0], {c[0] for c in b2b})

    def test_inputs_written_by_the_submission_are_flagged_on_every_call(self):
        msgs, _ = self.run_mode("scratch")
        notes = [m[1] for m in msgs if m[0] == "note"]
        self.assertEqual(len(notes), 4, msgs)  # the checked calls', and once for the later calls
        self.assertTrue(notes[3].startswith("call 6 (new tensors, the warm-up's input set): the inputs it was "
                                            "handed were changed: sfb1_permuted ("), notes[3])
        size = self.L * 128 * 4 * -(-self.K // 64)  # the tiled buffer: rows and scale columns padded to 128 x 4
        for i, text in enumerate(["in place, input set 0", "new tensors, input set 1", "in place, input set 2"]):
            self.assertTrue(notes[i].startswith("call %d (%s): the inputs it was handed were changed: sfb1_permuted ("
                                                % (i + 1, text)), notes[i])
            self.assertIn("of %d bytes" % size, notes[i])
            self.assertEqual(notes[i].count(" bytes, first at byte "), 1, notes[i])
        for i, case in enumerate(self.sets):  # the outputs themselves are right
            assert_close(self, read_output(self.dir, i, self.M, self.N, self.L), reference(case))

    def test_patched_events_and_synchronize_do_not_change_the_drivers_timing(self):
        for k, case in enumerate(self.sets):
            save_case(os.path.join(self.dir, "bench%d" % k), case if k != 1 else dict(self.warm))
        msgs, _ = self.run_mode("patches-events", ["--bench", "--bench-min-reps", "10", "--bench-max-reps", "10"])
        timing = [m for m in msgs if m[0] == "timing"][0]
        self.assertGreaterEqual(float(timing[2]), 0.02, timing)  # median per call: the 20 ms it sleeps
        self.assertGreaterEqual(float(timing[7]), 0.02, timing)  # back to back, per call
        self.assertEqual([m for m in msgs if m[0] == "note"], [])

    def test_a_tensor_subclass_is_refused(self):
        msgs, _ = self.run_mode("lazy", last="error")
        self.assertIn("custom_kernel returned a Lazy, a subclass of torch.Tensor; expected a plain one", msgs[-1][1])

    def test_an_output_a_later_call_overwrites_is_flagged(self):
        msgs, calls = self.run_mode("one-buffer")
        notes = [m[1] for m in msgs if m[0] == "note"]
        self.assertEqual(len(notes), 1, msgs)
        self.assertRegex(notes[0], r"^output changed by a later call: call 1 \(in place, input set 0\), \d+ of 70 "
                         r"elements; call 2 \(new tensors, input set 1\), \d+ of 70 elements; call 3 \(in place, "
                         r"input set 2\), \d+ of 70 elements: the output is storage")
        for i, case in enumerate(self.sets):  # each right when it was read
            assert_close(self, read_output(self.dir, i, self.M, self.N, self.L), reference(case))
        # Returned in data's c, the in-place calls' outputs are rewritten by the driver itself: no note.
        msgs, _ = self.run_mode("current")
        self.assertEqual([m for m in msgs if m[0] == "note"], [])

    def test_a_current_stream_left_changed_is_flagged_and_undone(self):
        msgs, _ = self.run_mode("stream-at-import")
        notes = [m[1] for m in msgs if m[0] == "note"]
        self.assertEqual(len(notes), 1, msgs)  # the driver made its own stream current again after the import
        self.assertTrue(notes[0].startswith("the import: the current CUDA stream was left changed"), notes[0])
        for i, case in enumerate(self.sets):
            assert_close(self, read_output(self.dir, i, self.M, self.N, self.L), reference(case))
        msgs, _ = self.run_mode("stream-per-call")
        notes = [m[1] for m in msgs if m[0] == "note"]
        self.assertEqual([n.split(":")[0] for n in notes], ["call 1 (in place, input set 0)",
                                                            "call 2 (new tensors, input set 1)",
                                                            "call 3 (in place, input set 2)",
                                                            "call 6 (new tensors, the warm-up's input set)"])
        self.assertTrue(all("the current CUDA stream was left changed" in n for n in notes), notes)

    def test_process_wide_settings_changed_at_import_or_in_a_call_are_noted(self):
        msgs, _ = self.run_mode("tf32-at-import")
        notes = [m[1] for m in msgs if m[0] == "note"]
        self.assertEqual(notes, ["the import: changed process-wide settings: torch.backends.cuda.matmul.allow_tf32: "
                                 "False -> True"])
        # Two warm-up calls (back to False), then three checked calls: each distinct change once.
        msgs, _ = self.run_mode("benchmark-per-call")
        notes = [m[1] for m in msgs if m[0] == "note"]
        self.assertEqual(notes, ["call %d (%s): changed process-wide settings: torch.backends.cudnn.benchmark: %s"
                                 % (i + 1, what, flip) for i, (what, flip) in enumerate([
                                     ("in place, input set 0", "False -> True"),
                                     ("new tensors, input set 1", "True -> False")])])
        # torch refusing to read a legacy flag (its legacy and new TF32 settings disagree) is a
        # recorded value, not an error of the trial.
        msgs, _ = self.run_mode("refuses-legacy-read")
        notes = [m[1] for m in msgs if m[0] == "note"]
        self.assertEqual(notes, ["the import: changed process-wide settings: torch.backends.cuda.matmul.allow_tf32: "
                                 "False -> unreadable (RuntimeError)"])
        msgs, _ = self.run_mode("current")
        self.assertEqual([m for m in msgs if m[0] == "note"], [])

    def test_torch_precision_settings_compare_the_values_in_effect(self):
        sys.path.insert(0, os.path.join(ROOT, "harness", "backends"))
        try:
            from nvfp4_driver.inputs import process_settings, settings_changes
        finally:
            del sys.path[0]
        ns = lambda **kw: type("NS", (), kw)()  # noqa: E731
        torch = ns(backends=ns(fp32_precision="none", cuda=ns(matmul=ns(fp32_precision="none")),
                               cudnn=ns(fp32_precision="none", conv=ns(fp32_precision="none"),
                                        rnn=ns(fp32_precision="none"))))
        before = process_settings(np, torch)
        self.assertEqual(before["torch.backends.cuda.matmul.fp32_precision"], "'ieee'")  # torch's default
        self.assertEqual(before["torch.backends.fp32_precision"], "'ieee'")
        torch.backends.cuda.matmul.fp32_precision = "ieee"  # what a legacy allow_tf32 = False writes
        self.assertEqual(settings_changes(before, process_settings(np, torch)), [])
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        torch.backends.cudnn.fp32_precision = "tf32"  # conv and rnn inherit it
        self.assertEqual(settings_changes(before, process_settings(np, torch)),
                         ["torch.backends.cuda.matmul.fp32_precision: 'ieee' -> 'tf32'",
                          "torch.backends.cudnn.fp32_precision: 'ieee' -> 'tf32'",
                          "torch.backends.cudnn.conv.fp32_precision: 'ieee' -> 'tf32'",
                          "torch.backends.cudnn.rnn.fp32_precision: 'ieee' -> 'tf32'"])

    def test_joined_side_stream_is_not_flagged(self):
        msgs, _ = self.run_mode("joined")
        self.assertEqual([m for m in msgs if m[0] == "note"], [])
        for i, case in enumerate(self.sets):
            assert_close(self, read_output(self.dir, i, self.M, self.N, self.L), reference(case))


if __name__ == "__main__":
    unittest.main()
