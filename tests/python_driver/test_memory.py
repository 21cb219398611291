"""harness/backends/nvfp4_driver/memory.py: the measurement of the memory a submission holds across its
calls, on stand-in calls and targets (no driver, no submission file): what grows with every call is
a FAIL note naming its bytes per call, what grows with every new object a note without a verdict,
and what is bounded (filled once, a cache of a few entries) or small gives no note. Then the
verdict rule alone on given windows.
"""
import os
import sys
import tracemalloc
import unittest
from collections import OrderedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "harness", "backends"))
from nvfp4_driver import memory  # noqa: E402

del sys.path[0]

W, C = memory.WINDOWS, memory.WINDOW_CALLS


class Target:
    """A stand-in for the driver's Inputs: an object of its own per `data`."""


def run(call):
    """measure() under tracing as the driver runs it; (new, again, notes, calls made)."""
    made = []

    def counted(target):
        made.append(target)
        call(target)
    meter = memory.Meter()
    meter.start()
    try:
        new, again = memory.measure(counted, Target, meter)
    finally:
        meter.stop()
    return new, again, memory.notes(new, again, 101), len(made)


class Measure(unittest.TestCase):
    def test_kept_per_call_is_a_fail_note_with_its_bytes(self):
        kept = []
        new, again, notes, calls = run(lambda t: kept.append(bytearray(4000)))
        self.assertEqual(calls, memory.MAX_CALLS)
        self.assertEqual(len(notes), 1)
        self.assertIn(memory.MEMORY_GROWS, notes[0])
        per_call = int(notes[0].split(memory.MEMORY_GROWS + ": ")[1].split(" bytes per call")[0])
        self.assertTrue(4000 <= per_call < 4200, notes[0])  # the bytearray, its object and list entry
        self.assertTrue(notes[0].startswith("calls %d-%d (%d windows of %d calls, on new `data` objects, then on "
                                            "the same objects again)" % (101 + memory.WARM_CALLS,
                                                                         100 + memory.MAX_CALLS, 2 * W, C)), notes[0])
        self.assertIn("host memory (the Python heap", notes[0])

    def test_smallest_output_kept_per_call_is_caught(self):
        # What a numpy copy of the smallest case's output (1x1x16x4: 4 fp16) costs per call.
        import numpy as np
        kept = []
        _, _, notes, _ = run(lambda t: kept.append(np.zeros((1, 1, 4), dtype=np.float16)))
        self.assertEqual(len(notes), 1)
        self.assertIn(memory.MEMORY_GROWS, notes[0])

    def test_entry_per_new_object_is_a_note_not_a_verdict(self):
        cache = {}

        def call(t):
            if id(t) not in cache:
                cache[id(t)] = (t, bytearray(2000))
        new, again, notes, calls = run(call)
        self.assertEqual(len(new), W)
        self.assertEqual(len(again), 1)  # the same objects again: nothing more, the phase stops
        self.assertEqual(calls, memory.WARM_CALLS + (W + 1) * C)
        self.assertEqual(len(notes), 1)
        self.assertIn(memory.MEMORY_PER_OBJECT, notes[0])
        self.assertNotIn(memory.MEMORY_GROWS, notes[0])

    def test_bounded_caches_and_small_residues_give_no_note(self):
        lru = OrderedDict()

        def bounded(t):  # an entry per object, at most 4: full within the first window of new objects
            lru[id(t)] = (t, bytearray(3000))
            while len(lru) > 4:
                lru.popitem(last=False)
        floats = []
        workspace = {}
        for name, call in [("nothing", lambda t: None), ("bounded", bounded),
                           ("once", lambda t: workspace.setdefault("w", bytearray(50000))),
                           ("a float per call", lambda t: floats.append(float(len(floats)) + 0.5))]:
            with self.subTest(name):
                new, again, notes, calls = run(call)
                self.assertEqual(notes, [], (new, again))
        self.assertEqual(run(lambda t: None)[3], memory.WARM_CALLS + 2 * C)  # one window each

    def test_tracing_left_running_when_it_was_running(self):
        tracemalloc.start()
        try:
            meter = memory.Meter()
            meter.start()
            meter.stop()
            self.assertTrue(tracemalloc.is_tracing())
        finally:
            tracemalloc.stop()
        meter = memory.Meter()
        meter.start()
        self.assertTrue(tracemalloc.is_tracing())
        meter.stop()
        self.assertFalse(tracemalloc.is_tracing())

    def test_device_readings_synchronize_first(self):
        order = []
        meter = memory.Meter(lambda: order.append("sync"), {"device": lambda: order.append("allocated") or 1234,
                                                             "reserved": lambda: order.append("reserved") or 4096})
        meter.start()
        try:
            held = meter.read()
        finally:
            meter.stop()
        self.assertEqual(order, ["sync", "allocated", "reserved"])
        self.assertEqual((held["device"], held["reserved"]), (1234, 4096))


class Rule(unittest.TestCase):
    """memory.notes on given windows ({kind: bytes held more at the window's end})."""

    def test_growth_must_hold_in_every_window_of_both_phases(self):
        grows = {"host": 200 * C}
        self.assertIn(memory.MEMORY_GROWS, memory.notes([grows] * W, [grows] * W, 1)[0])
        # Growth that stops (a bounded cache filling, CPython settling) is no verdict.
        self.assertEqual(memory.notes([grows] * W, [grows] * (W - 1) + [{"host": 0}], 1), [])
        self.assertEqual(memory.notes([grows] * 3 + [{"host": 0}], [grows] * W, 1), [])
        below = {"host": (memory.MIN_BYTES_PER_CALL - 1) * C}
        self.assertEqual(memory.notes([below] * W, [below] * W, 1), [])

    def test_reserved_segments_alone_are_growth(self):
        # A CUDA graph captured per call: its private pool keeps segments after the capture's tensors
        # are freed, so memory_reserved grows and memory_allocated does not.
        pools = [{"host": 0, "device": 0, "reserved": 2 << 20}] * W
        note = memory.notes(pools, pools, 1)[0]
        self.assertIn(memory.MEMORY_GROWS, note)
        self.assertIn("1048576 bytes per call of device memory reserved (torch.cuda.memory_reserved", note)

    def test_kinds_are_judged_apart(self):
        host_new = [{"host": 500 * C, "device": 0}] * W
        device_again = [{"host": 0, "device": 512 * C}] * W
        self.assertEqual(memory.notes(host_new, device_again, 1), [])  # no kind grew in both phases
        both = [{"host": 10, "device": 512 * C}] * W
        note = memory.notes(both, both, 1)[0]
        self.assertIn("512 bytes per call of device memory (torch.cuda.memory_allocated)", note)
        self.assertNotIn("host memory", note)

    def test_per_object_needs_its_own_bound_and_a_flat_again(self):
        flat = [{"host": 0}]
        self.assertIn(memory.MEMORY_PER_OBJECT,
                      memory.notes([{"host": memory.PER_OBJECT_BYTES["host"] * C}] * W, flat, 1)[0])
        self.assertEqual(memory.notes([{"host": (memory.PER_OBJECT_BYTES["host"] - 1) * C}] * W, flat, 1), [])
        self.assertEqual(memory.notes([{"host": 400 * C}] * W, [{"host": 400 * C}, {"host": 0}], 1), [])


if __name__ == "__main__":
    unittest.main()
