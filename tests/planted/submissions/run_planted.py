#!/usr/bin/env python3
"""The planted-submission suite: Python submissions in GPU MODE's convention, each with one real bug
class, run through the REAL harness binary (`harness --submission FILE --backend submission:NAME
--verify ...`), each asserted caught with the right outcome and message; and correct submissions
asserted to PASS in every combination, with --fresh activations and all, over several seeds.

    run_planted.py --label cpu|gpu [--harness BIN]

  cpu  numpy submissions (cpu/): SKIP (exit 125) without numpy
  gpu  torch submissions (gpu/) for the classes numpy cannot express: SKIP without torch or a
       CUDA device
The harness binary: --harness, else $NVFP4_HARNESS_BIN.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SEEDS = (1, 2, 3)
HARNESS = None
LABEL = "cpu"

# What each planted submission must give, per --fresh mode: the outcome and phrases of its message
# (the call pattern that failed and what it suggests). Default 3 checked calls: call 1 in place,
# call 2 new tensors with new weights, call 3 in place starting from call 2's output; the
# warm-up on input set 3.
NEW_TENSORS_STALE = ["call 2 of 3 (new tensors, new weights, input set 1)",
                     "output matches the reference of input set 0, call 1's",
                     "a graph over the first call's tensors?"]
POISON_ONLY = ["call 3 of 3 (in place, new ", "input set 2)",
               "output matches the reference of input set 1, call 2's",
               "computes only when the output holds the poison?"]
RESULT_CACHED = ["calls 1,3 of 3 (in place, new ",
                 "call 1's output matches the reference of input set 3 (the warm-up's)",
                 "a result cached by shape or by tensor identity (id, data_ptr)?"]
# Inputs written by the kernel (or its warm-up), though every output is right.
INPUTS_CHANGED = "the inputs it was handed were changed"
PREPACKED = ["call 1 (in place, input set 0): " + INPUTS_CHANGED + ": b1 (", "), b2 (",
             "call 2 (new tensors, input set 1): " + INPUTS_CHANGED, "(custom_kernel, in that call or an earlier "
             "one, wrote into tensors of `data` other than c, which are the caller's"]
# Outputs overwritten by later calls, though each is right when read at once.
OUTPUT_REUSED = "output changed by a later call: call "
REUSED_WHY = "the output is storage custom_kernel reuses"
PLANTED = {
    "cpu": [
        ("cpu/binds_first_arrays.py", "activations", "FAIL", NEW_TENSORS_STALE),
        ("cpu/binds_first_arrays.py", "all", "FAIL", NEW_TENSORS_STALE),
        ("cpu/weights_by_shape.py", "activations", "FAIL",
         ["call 2 of 3 (new tensors, new weights, input set 1)", "(other calls pass)",
          "input set 1 has set 0's activations and new weights: weights or decoded weights cached from an "
          "earlier call"]),
        ("cpu/weights_by_shape.py", "all", "FAIL",
         ["calls 1,2,3 of 3 (in place, new weights, input set 0; new tensors, new weights, input set 1; "
          "in place, new weights, input set 2)"]),
        ("cpu/poison_only.py", "activations", "FAIL", POISON_ONLY),
        ("cpu/poison_only.py", "all", "FAIL", POISON_ONLY),
        ("cpu/result_by_id.py", "activations", "FAIL", RESULT_CACHED),
        ("cpu/result_by_id.py", "all", "FAIL", RESULT_CACHED),
        ("cpu/wrong_layout.py", "activations", "FAIL", ["calls 1,2,3 of 3 (in place, new activations, input set 0;",
                                                       "the output matches the output written transposed"]),
        ("cpu/activation_scales_by_shape.py", "activations", "FAIL",
         ["calls 1,2,3 of 3", "the output matches A's block scales from the warm-up's inputs,",
          "a buffer filled once (a converted or swizzled copy, a graph's captured tensor) and not refreshed?"]),
        ("cpu/batch0_weights.py", "activations", "FAIL",
         ["calls 1,2,3 of 3", "the output matches every batch with batch 0's weights,",
          "the weights' batch stride left out?"]),
        ("cpu/wrong_layout.py", "all", "FAIL", ["calls 1,2,3 of 3 (in place, new weights, input set 0;"]),
        ("cpu/alphas_from_first_call.py", "activations", "FAIL",
         ["call 2 of 3 (new tensors, new weights, input set 1)", "(other calls pass)",
          "call 2 matches its inputs under the case's global scales, not the new alpha1, alpha2 handed with the "
          "new weights: the alphas ignored, or kept from an earlier call?"]),
        ("cpu/prepacks_weights_in_place.py", "activations", "FAIL", PREPACKED),
        ("cpu/returns_one_buffer.py", "activations", "FAIL",
         ["call 1 (in place, input set 0), ", "; call 2 (new tensors, input set 1), ",
          "; call 3 (in place, input set 2), ", OUTPUT_REUSED, REUSED_WHY]),
        ("cpu/scratch_in_earlier_output.py", "activations", "FAIL",
         ["call 3 (in place, input set 2), ", OUTPUT_REUSED, REUSED_WHY]),
        ("cpu/answers_one_call_late.py", "activations", "FAIL",
         ["calls 1,2,3 of 3", "call 1's output matches the reference of input set 3 (the warm-up's)",
          "call 3's output matches the reference of input set 1, call 2's",
          "every failing call returned the previous call's result (one call late)"]),
        ("cpu/accumulates_into_output.py", "activations", "FAIL",
         ["computed from the poison the output held before the call (c read before it was written"]),
        ("cpu/off_by_one_ulp_on_new_weights.py", "activations", "FAIL",
         ["call 2 of 3 (new tensors, new weights, input set 1): ", "(other calls pass)"]),
        ("cpu/result_by_activations.py", "activations", "FAIL",
         ["call 2 of 3 (new tensors, new weights, input set 1)", "output matches the reference of input set 0",
          "input set 1 has set 0's activations and new weights", "a result keyed by the activations alone"]),
        ("cpu/result_by_sampled_bytes.py", "activations", "FAIL",
         ["call 3 of 3 (in place, new activations, input set 2)", "output matches the reference of input set 0",
          "input set 2 is set 0 with one element of A negated: a result cached under a partial key"]),
        ("cpu/switches_after_six_calls.py", "activations", "FAIL",
         ["call 7 of the trial (after the 3 checked calls; new tensors, input set 3 (the warm-up's)): ",
          "every checked call passed: a path taken only after more calls"]),
        ("cpu/plan_by_output_shape.py", "activations", "FAIL",
         ["call 11 of the trial (after the 3 checked calls; new tensors, another shape, ",
          "the trial's own shape passes: state kept from it (a plan, workspace or graph cached by the output's shape"]),
        ("cpu/scratch_in_inputs.py", "activations", "FAIL",
         ["call 1 (in place, input set 0): " + INPUTS_CHANGED + ": sfa_permuted (1 of ",
          "bytes, first at byte 0)", "call 2 (new tensors, input set 1): " + INPUTS_CHANGED]),
    ],
    "gpu": [
        ("gpu/graph_by_shape.py", "activations", "FAIL", NEW_TENSORS_STALE),
        ("gpu/graph_by_shape.py", "all", "FAIL", NEW_TENSORS_STALE),
        ("gpu/unjoined_stream.py", "activations", "FAIL",
         ["call 1 (in place, input set 0): output not complete when the calling stream reached it: "
          "work on another stream not joined?", "call 2 (new tensors, input set 1): output not complete"]),
        ("gpu/result_by_data_ptr.py", "activations", "FAIL", RESULT_CACHED),
        ("gpu/result_by_data_ptr.py", "all", "FAIL", RESULT_CACHED),
        ("gpu/prepacks_weights_in_place.py", "activations", "FAIL", PREPACKED),
        ("gpu/returns_static_output.py", "activations", "FAIL",
         ["call 1 (in place, input set 0), ", "; call 2 (new tensors, input set 1), ", OUTPUT_REUSED, REUSED_WHY]),
        ("gpu/leaves_stream_changed.py", "activations", "FAIL",
         ["call 1 (in place, input set 0): the current CUDA stream was left changed",
          "call 3 (in place, input set 2): the current CUDA stream was left changed"]),
        ("gpu/bf16_gemm_output.py", "activations", "FAIL",
         ["calls 1,2,3 of 3 (in place, new activations, input set 0;"]),
    ],
}
# Bugs that only a batch > 0 shows: their trials on L = 1 shapes must PASS.
BATCHED_ONLY = {"cpu/batch0_weights.py"}
# Phrases a planted submission's message must not hold: diagnoses that would mislead.
ABSENT = {
    "cpu/answers_one_call_late.py": ["a cache keyed by shape", "a result cached by shape", "exactness certificate"],
    "cpu/off_by_one_ulp_on_new_weights.py": ["weights or decoded weights cached"],
}
# Correct submissions, with the combinations they run: each PASSES in both modes over SEEDS. The
# numpy ones run every combination; the torch ones every combination but the driver's compile and
# max-autotune (minutes of compilation per trial), which the GPU machine's full runs cover.
CORRECT = {
    "cpu": [("cpu/correct.py", "all"), ("cpu/correct_alphas.py", "all"),
            (os.path.join(ROOT, "examples", "submission_numpy", "submission.py"), "all")],
    "gpu": [("gpu/correct.py", "plain,graph"),
            (os.path.join(ROOT, "examples", "origin_story", "submission.py"), "plain,cuda-graph,warmup-10,graph")],
}
# Shapes: a partial tile in every dimension, and L = 2 (a layout bug that only shows across batches).
SHAPES = {"cpu": ["33x65x160x2", "16x48x64"], "gpu": ["33x65x160x2", "256x512x1024"]}


def backend_of(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    return "submission:" + (os.path.basename(os.path.dirname(os.path.abspath(path))) if stem == "submission" else stem)


def run_harness(path, verify, fresh, seed, extra=(), default_suite=False, shapes=None):
    """Runs the harness on the submission (on SHAPES, or on the embedded default suite); returns
    (exit code, the JSON report, combined output)."""
    path = path if os.path.isabs(path) else os.path.join(HERE, path)
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        args = [HARNESS, "--submission", path, "--backend", backend_of(path), "--verify", verify,
                "--fresh", fresh, "--seed", str(seed), "--json", report]
        if not default_suite:
            args += ["--dist", "normal"]
            for shape in shapes or SHAPES[LABEL]:
                args += ["--shape", shape]
        proc = subprocess.run(args + list(extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        out = proc.stdout.decode(errors="replace")
        if not os.path.exists(report):
            return proc.returncode, None, out
        with open(report) as f:
            return proc.returncode, json.load(f), out


class PlantedSubmissions(unittest.TestCase):
    def test_each_planted_bug_is_caught_with_its_message(self):
        for path, fresh, outcome, phrases in PLANTED[LABEL]:
            with self.subTest(path=path, fresh=fresh):
                rc, report, out = run_harness(path, "plain", fresh, 7)
                self.assertIsNotNone(report, out)
                self.assertEqual(rc, 1, out)
                for trial in report["trials"]:
                    if path in BATCHED_ONLY and trial["case"]["shape"].count("x") == 2:
                        self.assertEqual(trial["outcome"], "PASS", trial["message"])  # L = 1: no batch to misread
                        continue
                    self.assertEqual(trial["outcome"], outcome, trial["message"])
                    self.assertEqual(trial.get("stage"), "run")
                    for phrase in phrases:
                        self.assertIn(phrase, trial["message"])
                    for phrase in ABSENT.get(path, []):
                        self.assertNotIn(phrase, trial["message"])

    def test_watchdog_and_clock_are_the_harnesss(self):
        if LABEL != "cpu":
            self.skipTest("numpy submissions only")
        # A hang on the first new arrays (call 2) is a TIMEOUT in stage run, stopped by the budget.
        rc, report, out = run_harness("cpu/hangs_on_new_arrays.py", "plain", "activations", 7,
                                      ["--budget-run", "3"], shapes=["8x8x32"])
        self.assertEqual(rc, 1, out)
        for trial in report["trials"]:
            self.assertEqual((trial["outcome"], trial["stage"]), ("TIMEOUT", "run"), trial["message"])
        # A submission that zeroes the clocks of its own process still takes its real time.
        rc, report, out = run_harness("cpu/patches_clock.py", "plain", "activations", 7)
        self.assertEqual(rc, 0, out)
        for trial in report["trials"]:
            seconds = {s["stage"]: s["seconds"] for s in trial["stages"]}
            self.assertGreaterEqual(seconds["run"], 0.85, trial["stages"])  # 3 calls of 0.3 s

    def test_correct_submissions_pass_every_combination_in_both_modes_over_seeds(self):
        for path, verify in CORRECT[LABEL]:
            for fresh in ("activations", "all"):
                for seed in SEEDS:
                    with self.subTest(path=os.path.basename(path), fresh=fresh, seed=seed):
                        rc, report, out = run_harness(path, verify, fresh, seed)
                        self.assertIsNotNone(report, out)
                        bad = [(t["combo"], t["outcome"], t["message"]) for t in report["trials"]
                               if t["outcome"] != "PASS"]
                        self.assertEqual(bad, [])
                        self.assertEqual(rc, 0, out)

    def test_other_call_counts_and_case_alphas_pass(self):
        # One checked call (new tensors), two (in place, then new tensors from the first's output),
        # and a case with global scales for the submission that takes them.
        correct = CORRECT[LABEL][0][0]
        for runs in ("1", "2"):
            with self.subTest(runs=runs):
                rc, report, out = run_harness(correct, "plain", "all", 5, ["--runs", runs])
                self.assertEqual(rc, 0, out)
        if LABEL == "cpu":
            # The patterns alternate backwards from the last call, which is always in place.
            expect = {("cpu/poison_only.py", "2"): ["call 2 of 2 (in place", "input set 0, call 1's",
                                                      "computes only when the output holds the poison?"],
                      ("cpu/binds_first_arrays.py", "2"): ["call 1 of 2 (new tensors", "input set 2 (the warm-up's)",
                                                           "a graph over the first call's tensors?"],
                      ("cpu/poison_only.py", "4"): ["call 4 of 4 (in place", "input set 2, call 3's"],
                      ("cpu/binds_first_arrays.py", "4"): ["calls 1,3 of 4 (new tensors"]}
            for (path, runs), phrases in expect.items():
                rc, report, out = run_harness(path, "plain", "activations", 5, ["--runs", runs])
                for trial in report["trials"]:
                    self.assertEqual(trial["outcome"], "FAIL", (path, runs))
                    for phrase in phrases:
                        self.assertIn(phrase, trial["message"])
            # Eighty checked calls: the note that carries the verdict keeps its marker first.
            rc, report, out = run_harness("cpu/returns_one_buffer.py", "plain", "activations", 5, ["--runs", "80"],
                                          shapes=["8x8x32"])
            for trial in report["trials"]:
                self.assertEqual(trial["outcome"], "FAIL", out)
                self.assertIn(OUTPUT_REUSED + "1 (new tensors, input set 0)", trial["message"])
                self.assertIn("and 76 more calls", trial["message"])
            # A kernel tuned for its shapes only: the later call of another shape is noted, not judged.
            rc, report, out = run_harness("cpu/tuned_shapes_only.py", "plain", "activations", 5)
            self.assertEqual(rc, 0, out)
            for trial in report["trials"]:
                self.assertTrue(any("(new tensors, another shape): raised ValueError: no kernel tuned for K=" in n
                                    for n in trial["notes"]), trial["notes"])
            # The default suite (every distribution, edge scales, NaN scales, overflow, alpha cases)
            # with new weights and alphas on every call.
            rc, report, out = run_harness("cpu/correct_alphas.py", "plain", "all", 4, default_suite=True)
            self.assertEqual([t["outcome"] for t in report["trials"] if t["outcome"] != "PASS"], [])
            self.assertEqual(rc, 0, out)
            rc, report, out = run_harness("cpu/correct_alphas.py", "plain", "all", 5, ["--alpha", "-1.5,0.75"])
            self.assertEqual(rc, 0, out)
            rc, report, out = run_harness("cpu/correct.py", "plain", "all", 5, ["--alpha", "-1.5,0.75"])
            self.assertEqual(rc, 125, out)  # no global scales in GPU MODE's convention: SKIP
            self.assertIn("NVFP4_ALPHAS", report["trials"][0]["message"])


def main():
    global HARNESS, LABEL
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", choices=("cpu", "gpu"), required=True)
    parser.add_argument("--harness", default=os.environ.get("NVFP4_HARNESS_BIN"))
    parser.add_argument("--only", default="", help="run only the tests whose name contains this")
    args = parser.parse_args()
    LABEL = args.label
    HARNESS = args.harness
    if not HARNESS or not os.path.isfile(HARNESS):
        print("no harness binary: give --harness or NVFP4_HARNESS_BIN", file=sys.stderr)
        return 2
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("SKIP: numpy is not installed")
        return 125
    if LABEL == "gpu":
        try:
            import torch
        except ImportError:
            print("SKIP: the torch submissions need torch, which is not installed")
            return 125
        if not torch.cuda.is_available():
            print("SKIP: the torch submissions need a CUDA device; torch sees none")
            return 125
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(PlantedSubmissions)
    if args.only:
        suite = unittest.TestSuite(t for t in suite if args.only in t.id())
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
