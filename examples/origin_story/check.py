#!/usr/bin/env python3
"""Runs examples/origin_story/submission.py through harness/backends/submission_driver.py once per toggle
combination given on the command line, on a small two-batch case with new activations before the
second checked call, and checks both outputs against an exact float64 computation (the helpers of
tests/python_driver). A quick check on a GPU machine with PyTorch before the harness runs it:

    python3 examples/origin_story/check.py plain autotune-epilogue cuda-graph warmup-10 \
        init-at-import autotune-epilogue+cuda-graph+init-at-import+warmup-10 compile graph

One line per combination: EXACT-OK or the mismatch, how the trial ended, and each stage's seconds.
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "python_driver"))
import test_submission_driver as t  # noqa: E402

SUBMISSION = os.path.join(ROOT, "examples", "origin_story", "submission.py")


class Checks:
    def assertEqual(self, a, b, msg=""):
        if a != b:
            raise AssertionError(msg)


def main(combos):
    M, N, K, L = 96, 80, 256, 2
    case, fresh = t.make_case(M, N, K, L, 1), t.make_case(M, N, K, L, 2)
    refs = [t.reference(case), t.reference(dict(case, a=fresh["a"], sfa=fresh["sfa"]))]
    failed = 0
    for combo in combos:
        d = tempfile.mkdtemp()
        t.save_case(os.path.join(d, "case"), case)
        t.save_case(os.path.join(d, "call1"), fresh, names=["a", "sfa"])
        msgs, rc, log = t.run_driver(d, SUBMISSION, toggles=combo, warmup=3, runs=2)
        stages = " ".join("%s=%.2f" % (m[1], float(m[2])) for m in msgs if m[0] == "leave")
        ends = [m for m in msgs if m[0] in ("error", "skip")] or [m for m in msgs if m[0] == "done"]
        verdict = "NOT COMPLETED"
        if ends and ends[0][0] == "done":
            try:
                for i, ref in enumerate(refs):
                    t.assert_close(Checks(), t.read_output(d, i, M, N, L), ref)
                verdict = "EXACT-OK"
            except AssertionError as e:
                verdict = "MISMATCH " + str(e)
        failed += verdict != "EXACT-OK"
        print("%-50s %s | %s | %s" % (combo, verdict, "\t".join(ends[0]) if ends else "no end", stages), flush=True)
        if verdict != "EXACT-OK":
            print(log[-2000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["plain"]))
