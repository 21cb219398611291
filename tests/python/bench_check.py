#!/usr/bin/env python3
"""Times nvfp4_dual.check against the harness's own check of the same case (not a test: run by hand).

    PYTHONPATH=build/python python3 tests/python/bench_check.py [--shape 512x4096x7168] [--reps 3]
        [--harness build/harness/harness]

Writes the inputs (`normal`, seed 1) and the reference's C as a case directory in a temporary
folder, then alternates `harness --inputs DIR --check DIR/c.npy` (a whole process: .npy reading,
exact reference, comparison, report) and nvfp4_dual.check on arrays in memory (conversion,
exact reference, comparison). Prints the median wall time of each, the exact reference's share
as each reports it ("exact reference in X s" / to_dict()["reference_s"]), and the CPU time of
each (all threads; steadier than wall time on a loaded machine).
"""
import argparse
import re
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import nvfp4_dual as nd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="512x4096x7168")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--harness", default=str(Path(__file__).resolve().parents[2] / "build/harness/harness"))
    args = ap.parse_args()
    x = nd.generate(args.shape, "normal", 1)
    c, _, _ = nd.reference(*x)
    with tempfile.TemporaryDirectory() as d:
        for name, arr in zip(x._fields, x):
            np.save(Path(d) / f"{name}.npy", arr)
        np.save(Path(d) / "c.npy", c)
        cli, cli_ref, cli_cpu, py, py_ref, py_cpu = [], [], [], [], [], []

        def children_cpu():
            u = resource.getrusage(resource.RUSAGE_CHILDREN)
            return u.ru_utime + u.ru_stime

        for _ in range(args.reps):
            t0, c0 = time.perf_counter(), children_cpu()
            out = subprocess.run([args.harness, "--inputs", d, "--check", f"{d}/c.npy"], capture_output=True,
                                 text=True, check=True).stdout
            cli.append(time.perf_counter() - t0)
            cli_cpu.append(children_cpu() - c0)
            cli_ref.append(float(re.search(r"exact reference in ([0-9.]+) s", out).group(1)))
            t0, c0 = time.perf_counter(), time.process_time()
            r = nd.check(c, *x)
            py.append(time.perf_counter() - t0)
            py_cpu.append(time.process_time() - c0)
            py_ref.append(r.to_dict()["reference_s"])
            assert r.ok
    med = statistics.median
    print(f"shape {args.shape}, {args.reps} runs each, medians:")
    print(f"  harness --check (whole process)   {med(cli):.3f} s   (exact reference {med(cli_ref):.3f} s, "
          f"rest {med(cli) - med(cli_ref):.3f} s); CPU {med(cli_cpu):.3f} s")
    print(f"  nvfp4_dual.check (arrays)         {med(py):.3f} s   (exact reference {med(py_ref):.3f} s, "
          f"rest {med(py) - med(py_ref):.3f} s); CPU {med(py_cpu):.3f} s")


if __name__ == "__main__":
    main()
