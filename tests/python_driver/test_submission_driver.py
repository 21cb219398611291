"""harness/backends/submission_driver.py run standalone, as the harness will run it: a child process that
writes its messages to a pipe, reads an input case from its trial directory and writes one output
file per checked call. Checks the message sequence, the outputs against an exact float64
computation written here (bit-level decode, independent of the submission's tables), fresh inputs
between calls, the `data` layout the driver builds (the tiled scale copies against the formula of
docs/design.md §1), the toggles (own ones reach the import through NVFP4_TOGGLES; provided ones
need torch) and every refusal with its reason.

Plain unittest (python3 -m pytest tests/python_driver, or tests/python_driver/run_tests.py).
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "harness", "backends", "submission_driver.py")
NUMPY_EXAMPLE = os.path.join(ROOT, "examples", "submission_numpy", "submission.py")


# --- an exact reference, bit by bit -------------------------------------------------------------

def e2m1_value(code):
    mag = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][code & 7]
    return -mag if code & 8 else mag


def e4m3_value(byte):
    e, m = (byte >> 3) & 15, byte & 7
    v = m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if byte & 0x80 else v


def decode(packed, sf):
    """(L, rows, K/2), (L, rows, K/16) -> (L, rows, K) float64."""
    L, rows, half = packed.shape
    out = np.zeros((L, rows, 2 * half))
    for l in range(L):
        for r in range(rows):
            for j in range(half):
                s = e4m3_value(int(sf[l, r, (2 * j) // 16]))
                out[l, r, 2 * j] = e2m1_value(int(packed[l, r, j]) & 15) * s
                out[l, r, 2 * j + 1] = e2m1_value(int(packed[l, r, j]) >> 4) * s
    return out


def reference(case):
    A, B1, B2 = decode(case["a"], case["sfa"]), decode(case["b1"], case["sfb1"]), decode(case["b2"], case["sfb2"])
    g = np.einsum("lmk,lnk->lmn", A, B1)
    u = np.einsum("lmk,lnk->lmn", A, B2)
    with np.errstate(over="ignore"):
        return g / (1 + np.exp(-g)) * u  # (L, M, N), float64


def make_case(M, N, K, L, seed):
    rng = np.random.default_rng(seed)
    # Scales 2^-1 .. 2^1 (bytes 0x30, 0x38, 0x40) keep every G and U exact in float32 for small K.
    sf = lambda rows: rng.choice(np.array([0x30, 0x38, 0x40], dtype=np.uint8), size=(L, rows, K // 16))
    return {"a": rng.integers(0, 256, (L, M, K // 2), dtype=np.uint8),
            "b1": rng.integers(0, 256, (L, N, K // 2), dtype=np.uint8),
            "b2": rng.integers(0, 256, (L, N, K // 2), dtype=np.uint8),
            "sfa": sf(M), "sfb1": sf(N), "sfb2": sf(N)}


def save_case(folder, case, names=None, alphas=None):
    os.makedirs(folder, exist_ok=True)
    for name in names or case:
        arr = case[name]
        np.save(os.path.join(folder, name + ".npy"), arr[0] if arr.shape[0] == 1 else arr)
    if alphas:
        with open(os.path.join(folder, "alphas.json"), "w") as f:
            json.dump({"alpha1": alphas[0], "alpha2": alphas[1]}, f)


def run_driver(trial_dir, submission, toggles="plain", warmup=2, runs=2):
    """Runs the driver as a child with a pipe; returns (messages as field lists, exit code, log)."""
    r, w = os.pipe()
    try:
        proc = subprocess.run(
            [sys.executable, DRIVER, "run", "--fd", str(w), "--dir", trial_dir, "--submission", submission,
             "--toggles", toggles, "--warmup", str(warmup), "--runs", str(runs)],
            pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        text = f.read().decode()
    return [line.split("\t") for line in text.splitlines()], proc.returncode, proc.stdout.decode()


def read_output(trial_dir, i, M, N, L):
    bits = np.fromfile(os.path.join(trial_dir, "out%d.f16" % i), dtype=np.uint16)
    assert bits.size == L * M * N, bits.size
    return bits.view(np.float16).reshape(L, M, N)


def assert_close(test, got, exact):
    """Every element within 2 fp16 ulps of the exact value (the float32 silu adds a few 2^-24);
    where the exact value rounds beyond the fp16 range, the same infinity."""
    with np.errstate(over="ignore"):
        rounded = exact.astype(np.float16)
    g = got.astype(np.float64)
    ulp = np.maximum(np.abs(exact), 2.0 ** -14) * 2.0 ** -10
    finite = np.isfinite(rounded)
    bad = np.where(finite, ~(np.abs(g - exact) <= 2 * ulp), got != rounded)
    test.assertEqual(int(bad.sum()), 0, "first bad element %s" % (np.argwhere(bad)[:1],))


def write_submission(folder, body):
    path = os.path.join(folder, "submission.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(body))
    return path


class DriverTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def stages(self, messages):
        return [(m[0], m[1]) for m in messages if m[0] in ("enter", "leave")]

    def test_numpy_example_messages_and_exact_outputs_with_fresh_inputs(self):
        M, N, K, L = 5, 7, 64, 2
        case = make_case(M, N, K, L, 1)
        save_case(os.path.join(self.dir, "case"), case)
        fresh = make_case(M, N, K, L, 2)
        save_case(os.path.join(self.dir, "call1"), fresh, names=["a", "sfa"])  # new activations
        msgs, rc, log = run_driver(self.dir, NUMPY_EXAMPLE, runs=2)
        self.assertEqual(rc, 0, log)
        kinds = [m[0] for m in msgs]
        self.assertEqual(kinds[-1], "done", msgs)
        order = [name for kind, name in self.stages(msgs) if kind == "enter"]
        self.assertEqual(order, ["setup", "load", "init", "warmup", "run", "teardown"])
        for name in order:
            self.assertIn(("leave", name), self.stages(msgs))
        self.assertEqual([m[1] for m in msgs if m[0] == "output"], ["0", "1"])
        self.assertTrue(any(m[0] == "describe" and "numpy data" in m[1] for m in msgs))

        assert_close(self, read_output(self.dir, 0, M, N, L), reference(case))
        next_case = dict(case, a=fresh["a"], sfa=fresh["sfa"])
        out1 = read_output(self.dir, 1, M, N, L)
        assert_close(self, out1, reference(next_case))
        self.assertFalse(np.array_equal(out1, read_output(self.dir, 0, M, N, L)))

    def test_own_toggles_reach_the_import_and_import_time_work_is_in_stage_load(self):
        save_case(os.path.join(self.dir, "case"), make_case(4, 4, 32, 1, 3))
        record = os.path.join(self.dir, "seen.txt")
        sub = write_submission(self.dir, """
            import os, time
            NVFP4_DATA = "numpy"
            NVFP4_TOGGLES = ["slow-import", "other"]
            with open(%r, "w") as f:
                f.write(os.environ["NVFP4_TOGGLES"])
            if "slow-import" in os.environ["NVFP4_TOGGLES"].split("+"):
                time.sleep(0.6)
            def custom_kernel(data):
                c = data[-1]
                c[...] = 0
                return c
        """ % record)
        msgs, rc, log = run_driver(self.dir, sub, toggles="other+slow-import", runs=1)
        self.assertEqual(msgs[-1][0], "done", log)
        with open(record) as f:
            self.assertEqual(f.read(), "other+slow-import")
        load = [float(m[2]) for m in msgs if m[0] == "leave" and m[1] == "load"]
        self.assertEqual(len(load), 1)
        self.assertGreaterEqual(load[0], 0.6)
        warm = [float(m[2]) for m in msgs if m[0] == "leave" and m[1] == "warmup"]
        self.assertLess(warm[0], 0.5)

        msgs, rc, log = run_driver(self.dir, sub, toggles="plain", runs=1)
        with open(record) as f:
            self.assertEqual(f.read(), "")
        load = [float(m[2]) for m in msgs if m[0] == "leave" and m[1] == "load"]
        self.assertLess(load[0], 0.6)

    def test_data_layout_matches_gpu_modes_tuple(self):
        M, N, K, L = 130, 3, 80, 2  # two row tiles, a partial column tile of the tiled scales
        case = make_case(M, N, K, L, 4)
        save_case(os.path.join(self.dir, "case"), case)
        dump = os.path.join(self.dir, "data.npz")
        sub = write_submission(self.dir, """
            import numpy as np
            NVFP4_DATA = "numpy"
            def custom_kernel(data):
                np.savez(%r, *[np.array(x) for x in data])
                c = data[9]
                c[...] = 0
                return c
        """ % dump)
        msgs, rc, log = run_driver(self.dir, sub, warmup=0, runs=1)
        self.assertEqual(msgs[-1][0], "done", log)
        d = np.load(dump)
        a, sfa, sfa_t, c = d["arr_0"], d["arr_3"], d["arr_6"], d["arr_9"]
        self.assertEqual(a.shape, (M, K // 2, L))
        self.assertTrue(np.array_equal(a, case["a"].transpose(1, 2, 0)))
        self.assertTrue(np.array_equal(d["arr_4"], case["sfb1"].transpose(1, 2, 0)))
        self.assertEqual(sfa.shape, (M, K // 16, L))
        self.assertEqual(c.shape, (M, N, L))
        self.assertEqual(c.dtype, np.float16)
        rt, ct = 2, 2
        self.assertEqual(sfa_t.shape, (32, 4, rt, 4, ct, L))
        # docs/design.md §1: byte offset of (r, c, l) in the tiled layout, element by element.
        flat = np.ascontiguousarray(sfa_t.transpose(5, 2, 4, 0, 1, 3)).reshape(-1)
        for l in range(L):
            for r in range(rt * 128):
                for col in range(ct * 4):
                    off = l * (rt * ct * 512) + (r // 128) * (ct * 512) + (col // 4) * 512 + (r % 32) * 16 \
                          + ((r % 128) // 32) * 4 + (col % 4)
                    want = case["sfa"][l, r, col] if r < M and col < K // 16 else 0
                    self.assertEqual(flat[off], want, (l, r, col))
                    self.assertEqual(sfa_t[r % 32, (r % 128) // 32, r // 128, col % 4, col // 4, l], want)

    def test_provided_toggles_need_torch_and_unknown_toggles_are_errors(self):
        save_case(os.path.join(self.dir, "case"), make_case(4, 4, 32, 1, 5))
        msgs, rc, log = run_driver(self.dir, NUMPY_EXAMPLE, toggles="graph+per-batch")
        skip = [m for m in msgs if m[0] == "skip"]
        self.assertEqual(len(skip), 1, msgs)
        self.assertIn("graph needs torch", skip[0][1])
        msgs, rc, log = run_driver(self.dir, NUMPY_EXAMPLE, toggles="turbo")
        err = [m for m in msgs if m[0] == "error"]
        self.assertIn("unknown toggle turbo", err[0][1])
        self.assertIn("tables-at-import", err[0][1])

    def test_global_scales_other_than_one_are_skipped(self):
        save_case(os.path.join(self.dir, "case"), make_case(4, 4, 32, 1, 6), alphas=(0.5, 1.0))
        msgs, rc, log = run_driver(self.dir, NUMPY_EXAMPLE)
        skip = [m for m in msgs if m[0] == "skip"]
        self.assertIn("alpha1=0.5", skip[0][1])

    def test_each_bad_submission_is_an_error_with_its_reason(self):
        save_case(os.path.join(self.dir, "case"), make_case(4, 6, 32, 1, 7))
        bodies = {
            "no custom_kernel": ('NVFP4_DATA = "numpy"\ndef kernel(data):\n    return data[9]\n', "load",
                                 "defines no custom_kernel(data)"),
            "raises at import": ('NVFP4_DATA = "numpy"\nraise RuntimeError("no GPU here")\n', "load",
                                 "exception at import of %s: RuntimeError: no GPU here"),
            "wrong dtype": ('import numpy as np\nNVFP4_DATA = "numpy"\n'
                            'def custom_kernel(data):\n    return data[9].astype(np.float32)\n', "run",
                            "custom_kernel returned float32 (4, 6, 1); expected float16 (4, 6, 1)"),
            "wrong shape": ('NVFP4_DATA = "numpy"\ndef custom_kernel(data):\n    return data[9][:, :5]\n', "run",
                            "custom_kernel returned float16 (4, 5, 1); expected float16 (4, 6, 1)"),
            "not an array": ('NVFP4_DATA = "numpy"\ndef custom_kernel(data):\n    return None\n', "run",
                             "custom_kernel returned NoneType"),
            "a subclass": ('import numpy as np\nNVFP4_DATA = "numpy"\nclass Lazy(np.ndarray):\n    pass\n'
                           'def custom_kernel(data):\n    return data[9].view(Lazy)\n', "run",
                           "custom_kernel returned a Lazy, a subclass of numpy.ndarray; expected a plain one"),
            "bad toggles": ('NVFP4_DATA = "numpy"\nNVFP4_TOGGLES = ["graph"]\n', "setup",
                            "toggle 'graph' is provided by the harness"),
        }
        for what, (body, stage, reason) in bodies.items():
            with self.subTest(what):
                sub = write_submission(self.dir, body)
                msgs, rc, log = run_driver(self.dir, sub, warmup=0, runs=1)
                errors = [m for m in msgs if m[0] == "error"]
                self.assertEqual(len(errors), 1, msgs)
                self.assertIn(reason.replace("%s", sub), errors[0][1])
                entered = [m[1] for m in msgs if m[0] == "enter"]
                left = [m[1] for m in msgs if m[0] == "leave"]
                self.assertEqual(entered[-1], stage)  # the stage it ended in stays open
                self.assertNotIn(stage, left)
                self.assertNotIn("done", [m[0] for m in msgs])
        msgs, rc, log = run_driver(self.dir, os.path.join(self.dir, "missing.py"))
        self.assertIn("no such file", [m for m in msgs if m[0] == "error"][0][1])

    def test_call_files_hand_new_arrays_or_refill_in_place_and_alphas_reach_a_declaring_submission(self):
        M, N, K, L = 4, 6, 32, 2
        warm, sets = make_case(M, N, K, L, 20), [make_case(M, N, K, L, 21 + i) for i in range(3)]
        save_case(os.path.join(self.dir, "case"), warm, alphas=(1.0, 1.0))
        kinds = ["in-place all", "new", "in-place activations"]
        alphas = [(-1.25, 0.875), (1.5, 0.75), (1.0, 1.0)]
        for i, (kind, case) in enumerate(zip(kinds, sets)):
            folder = os.path.join(self.dir, "call%d" % i)
            save_case(folder, case, alphas=alphas[i])
            with open(os.path.join(folder, "call"), "w") as f:
                f.write(kind + "\n")
        record = os.path.join(self.dir, "seen.jsonl")
        sub = write_submission(self.dir, """
            import json
            import numpy as np
            NVFP4_DATA = "numpy"
            NVFP4_ALPHAS = True
            def custom_kernel(data):
                a, b1, c, alpha1, alpha2 = data[0], data[1], data[9], data[10], data[11]
                with open(%r, "a") as f:
                    f.write(json.dumps([id(a), int(a.__array_interface__["data"][0]), int(b1[0, 0, 0]),
                                        float(alpha1[0]), float(alpha2[0]), alpha1.dtype.name, alpha1.shape]) + "\\n")
                c[...] = 0
                return c
        """ % record)
        msgs, rc, log = run_driver(self.dir, sub, warmup=1, runs=3)
        self.assertEqual(msgs[-1][0], "done", (msgs, log))
        with open(record) as f:
            seen = [json.loads(line) for line in f]
        warm_id, warm_ptr = seen[0][0], seen[0][1]
        self.assertEqual(seen[0][2:], [int(warm["b1"][0, 0, 0]), 1.0, 1.0, "float32", [1]])
        # call 1: in place, every array and the alphas; call 2: new arrays; call 3: in place, A only
        self.assertEqual(seen[1][:2], [warm_id, warm_ptr])
        self.assertEqual(seen[1][2:5], [int(sets[0]["b1"][0, 0, 0]), -1.25, 0.875])
        self.assertNotEqual(seen[2][:2], [warm_id, warm_ptr])
        self.assertEqual(seen[2][2:5], [int(sets[1]["b1"][0, 0, 0]), 1.5, 0.75])
        self.assertEqual(seen[3][:2], [warm_id, warm_ptr])
        self.assertEqual(seen[3][2], int(sets[0]["b1"][0, 0, 0]))  # the weights stay those of call 1

    def test_alphas_need_a_declaration_and_bad_declarations_or_call_files_are_errors(self):
        M, N, K, L = 4, 6, 32, 1
        save_case(os.path.join(self.dir, "case"), make_case(M, N, K, L, 30))
        folder = os.path.join(self.dir, "call0")
        save_case(folder, make_case(M, N, K, L, 31), alphas=(2.0, 1.0))
        with open(os.path.join(folder, "call"), "w") as f:
            f.write("new\n")
        msgs, rc, log = run_driver(self.dir, NUMPY_EXAMPLE, warmup=0, runs=1)
        skip = [m for m in msgs if m[0] == "skip"]
        self.assertEqual(len(skip), 1, msgs)
        self.assertIn("declare NVFP4_ALPHAS = True", skip[0][1])
        with open(os.path.join(folder, "call"), "w") as f:
            f.write("sideways\n")
        msgs, rc, log = run_driver(self.dir, NUMPY_EXAMPLE, warmup=0, runs=1)
        self.assertIn("unknown call kind 'sideways'", [m for m in msgs if m[0] == "error"][0][1])
        sub = write_submission(self.dir, 'NVFP4_DATA = "numpy"\nNVFP4_ALPHAS = "yes"\n')
        msgs, rc, log = run_driver(self.dir, sub, warmup=0, runs=1)
        self.assertIn("NVFP4_ALPHAS must be True or False", [m for m in msgs if m[0] == "error"][0][1])

    def test_describe_lists_toggles_without_importing(self):
        sub = write_submission(self.dir, 'raise SystemExit("imported!")\nNVFP4_TOGGLES = ["x1", "y_2"]\n')
        out = subprocess.run([sys.executable, DRIVER, "describe", sub], stdout=subprocess.PIPE, check=True)
        d = json.loads(out.stdout)
        self.assertEqual(d["toggles"], ["x1", "y_2"])
        self.assertEqual(d["stages"]["graph"], ["capture"])
        self.assertEqual(d["stages"]["max-autotune"], ["tune"])
        self.assertEqual(d["data"], "torch")
        self.assertFalse(d["alphas"])
        sub = write_submission(self.dir, 'NVFP4_ALPHAS = True\n')
        out = subprocess.run([sys.executable, DRIVER, "describe", sub], stdout=subprocess.PIPE, check=True)
        self.assertTrue(json.loads(out.stdout)["alphas"])

    def test_describe_is_json_alone_when_the_source_draws_warnings(self):
        # The harness reads describe's stdout and stderr together (external.cpp). A submission whose
        # source draws a compile-time warning (an invalid escape like "\d": a SyntaxWarning shown by
        # default from Python 3.12, a DeprecationWarning before) must still be described: the
        # warning is about the submission's code, not the description.
        sub = write_submission(self.dir, 'PATTERN = "\\d+"\nNVFP4_TOGGLES = ["x1"]\n')
        env = dict(os.environ, PYTHONWARNINGS="always")
        out = subprocess.run([sys.executable, DRIVER, "describe", sub], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=env, check=True)
        self.assertEqual(json.loads(out.stdout)["toggles"], ["x1"], out.stdout)

    def test_describe_refuses_an_unhashable_declaration_in_one_line(self):
        # ast.literal_eval raises TypeError (not ValueError) for a set or dict with a list inside.
        for body in ('NVFP4_TOGGLES = {[1]: 2}\n', 'NVFP4_DATA = {["numpy"]}\n'):
            sub = write_submission(self.dir, body)
            out = subprocess.run([sys.executable, DRIVER, "describe", sub], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
            text = out.stdout.decode()
            self.assertEqual(out.returncode, 2, text)
            self.assertIn("must be a literal (line 1)", text)
            self.assertNotIn("Traceback", text)

    def test_describe_reads_annotated_declarations(self):
        # `NAME: type = value` declares as `NAME = value` does; a bare annotation declares nothing.
        sub = write_submission(self.dir, 'NVFP4_TOGGLES: list = ["x1"]\nNVFP4_DATA: str = "numpy"\n'
                                         'NVFP4_ALPHAS: bool\n')
        out = subprocess.run([sys.executable, DRIVER, "describe", sub], stdout=subprocess.PIPE, check=True)
        d = json.loads(out.stdout)
        self.assertEqual(d["toggles"], ["x1"])
        self.assertEqual(d["data"], "numpy")
        self.assertFalse(d["alphas"])
        sub = write_submission(self.dir, 'NVFP4_TOGGLES: list = ["Bad Name"]\n')
        out = subprocess.run([sys.executable, DRIVER, "describe", sub], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        self.assertEqual(out.returncode, 2, out.stdout)
        self.assertIn("bad toggle name", out.stdout.decode())

    def test_describe_says_no_custom_kernel_only_where_nothing_could_bind_it(self):
        # False (the harness refuses the file, exit 2) only where the name appears nowhere and
        # nothing dynamic could bind it; bindings ast alone does not settle are left to the import.
        undecided = [
            "def _load():\n    global custom_kernel\n    custom_kernel = len\n_load()\n",
            "match 1:\n    case 1:\n        custom_kernel = len\n",
            "import contextlib\nwith contextlib.nullcontext(len) as custom_kernel:\n    pass\n",
            "if (custom_kernel := len) is None:\n    pass\n",
            "def __getattr__(name):\n    return len\n",
            "import sys\nsys.modules[__name__].custom_kernel = len\n",
            "for custom_kernel in [len]:\n    pass\n",
            "eval(compile('x = 1', 'f', 'exec'))\nNAME = 'custom' + '_kernel'\n",
            "from os.path import *\n",
        ]
        for body in undecided:
            sub = write_submission(self.dir, body)
            out = subprocess.run([sys.executable, DRIVER, "describe", sub], stdout=subprocess.PIPE, check=True)
            self.assertIsNot(json.loads(out.stdout)["custom_kernel"], False, body)
        sub = write_submission(self.dir, "import numpy\nX = 1\ndef helper(d):\n    return d\n")
        out = subprocess.run([sys.executable, DRIVER, "describe", sub], stdout=subprocess.PIPE, check=True)
        self.assertIs(json.loads(out.stdout)["custom_kernel"], False)


if __name__ == "__main__":
    unittest.main()
