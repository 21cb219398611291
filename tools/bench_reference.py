#!/usr/bin/env python3
"""bench_reference.py — the exact C++ reference against numpy float64, same inputs, same run.

Issue 2's speed goal: for (M, N, K) = (512, 4096, 7168) the C++ reference (compute_reference)
must take no longer than numpy float64 doing dequant + matmul + silu*mul on the same inputs, and
use at most 2 GB of memory. This script measures both and checks that they agree:

  1. reference_bench --write-case DIR writes the inputs (the library's seeded distribution) as a
     case directory; numpy reads the same .npy files.
  2. numpy: decode E2M1 codes with a 16-entry table and E4M3 scales with ml_dtypes, one float64
     matrix per operand; G = A @ B1.T, U = A @ B2.T (OpenBLAS); C = fp16(G/(1+exp(-G)) * U).
     Timed from the uint8 arrays in memory to C.
  3. C++: reference_bench --inputs DIR times compute_reference only (the same scope), in its own
     process, and reports its peak resident memory; it saves C for the comparison.
  Repetitions alternate numpy and C++ so both see the same machine load; best and median are
  printed. Agreement: C from both must be bit-identical except where numpy's exp and glibc's
  round a product differently near an fp16 rounding boundary (at most 1 fp16 ulp, rare); G from
  numpy equals the exact G whenever OpenBLAS' double sums are exact, as they are for this data.

Usage: tools/bench_reference.py [--bin build/reference/reference_bench] [--shape 512x4096x7168]
                                [--dist normal] [--seed 1] [--reps 3] [--abs-sums] [--json]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# E2M1 code -> value (sign bit 3), docs/design.md §1.
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float64)


def find_bench(explicit):
    if explicit:
        return explicit
    for d in sorted(os.listdir(ROOT)):
        cand = os.path.join(ROOT, d, "reference", "reference_bench")
        if d.startswith("build") and os.access(cand, os.X_OK):
            return cand
    sys.exit("bench_reference.py: reference_bench not found; build it (target reference_bench) "
             "or pass --bin")


def load(path):
    a = np.load(path)
    return a if a.ndim == 3 else a[None]


def dequant(codes_packed, scales):
    """(L, R, K/2) uint8 + (L, R, K/16) E4M3 bytes -> (L, R, K) float64."""
    lo = codes_packed & 0x0F
    hi = codes_packed >> 4
    codes = np.stack([lo, hi], axis=-1).reshape(*codes_packed.shape[:-1], -1)  # element 2j low nibble
    values = E2M1[codes]
    s = scales.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return values * np.repeat(s, 16, axis=-1)


def numpy_pipeline(inp):
    """dequant + matmul + silu*mul in float64, fp16 out. Returns (C, G, seconds by phase)."""
    t0 = time.perf_counter()
    a = dequant(inp["a"], inp["sfa"])
    b1 = dequant(inp["b1"], inp["sfb1"])
    b2 = dequant(inp["b2"], inp["sfb2"])
    t1 = time.perf_counter()
    g = np.matmul(a, b1.transpose(0, 2, 1))
    u = np.matmul(a, b2.transpose(0, 2, 1))
    t2 = time.perf_counter()
    with np.errstate(over="ignore"):
        c = (g / (1.0 + np.exp(-g)) * u).astype(np.float16)
    t3 = time.perf_counter()
    return c, g, {"dequant": t1 - t0, "matmul": t2 - t1, "epilogue": t3 - t2, "total": t3 - t0}


def run_cpp(bench, case_dir, out_npy, abs_sums):
    cmd = [bench, "--inputs", case_dir, "--reps", "1", "--save-output", out_npy]
    if abs_sums:
        cmd.append("--abs-sums")
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    info = {}
    for line in res.stdout.splitlines():
        key, _, val = line.partition(" ")
        info[key] = val
    return info


def fp16_ulp_distance(x, y):
    """Distance in fp16 ulps between two float16 arrays (sign-magnitude ordering)."""
    xi = x.view(np.uint16).astype(np.int32)
    yi = y.view(np.uint16).astype(np.int32)
    xo = np.where(xi & 0x8000, -(xi & 0x7FFF), xi)
    yo = np.where(yi & 0x8000, -(yi & 0x7FFF), yi)
    return np.abs(xo - yo)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="path of reference_bench (default: the first build*/ with it)")
    ap.add_argument("--shape", default="512x4096x7168")
    ap.add_argument("--dist", default="normal")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--abs-sums", action="store_true", help="C++ also computes sum|terms|")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    bench = find_bench(args.bin)

    with tempfile.TemporaryDirectory(prefix="bench_reference_") as tmp:
        case_dir = os.path.join(tmp, "case")
        subprocess.run([bench, "--shape", args.shape, "--dist", args.dist, "--seed", str(args.seed),
                        "--reps", "0", "--write-case", case_dir], check=True, capture_output=True)
        inp = {n: load(os.path.join(case_dir, n + ".npy"))
               for n in ("a", "b1", "b2", "sfa", "sfb1", "sfb2")}
        out_npy = os.path.join(tmp, "c_cpp.npy")

        np_times, cpp_times, cpp_info, phases = [], [], None, None
        c_np = g_np = None
        for _ in range(args.reps):
            c_np, g_np, ph = numpy_pipeline(inp)
            np_times.append(ph["total"])
            if phases is None or ph["total"] < phases["total"]:
                phases = ph
            del g_np
            g_np = None
            cpp_info = run_cpp(bench, case_dir, out_npy, args.abs_sums)
            cpp_times.append(float(cpp_info["best_seconds"]))
        np_peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        c_cpp = load(out_npy)

    c_np = c_np.reshape(c_cpp.shape)
    both_nan = np.isnan(c_np.astype(np.float32)) & np.isnan(c_cpp.astype(np.float32))
    same = (c_np.view(np.uint16) == c_cpp.view(np.uint16)) | both_nan
    dist = np.where(both_nan, 0, fp16_ulp_distance(c_np, c_cpp))
    result = {
        "shape": args.shape, "dist": args.dist, "seed": args.seed, "reps": args.reps,
        "abs_sums": args.abs_sums,
        "numpy_seconds_best": min(np_times), "numpy_seconds_median": statistics.median(np_times),
        "numpy_phases_best": phases,
        "numpy_peak_rss_mib": np_peak_mib,
        "numpy_version": np.__version__, "ml_dtypes_version": ml_dtypes.__version__,
        "cpp_seconds_best": min(cpp_times), "cpp_seconds_median": statistics.median(cpp_times),
        "cpp_peak_rss_mib": float(cpp_info["peak_rss_mib"]),
        "cpp_isa": cpp_info.get("isa"), "cpp_threads": int(cpp_info.get("threads", 0)),
        "cpp_tier2_elements": int(cpp_info.get("tier2_elements", -1)),
        "cpp_tier3_elements": int(cpp_info.get("tier3_elements", -1)),
        "c_identical_fraction": float(same.mean()), "c_max_ulp_distance": int(dist.max()),
        "cpus": os.cpu_count(), "loadavg_1min": os.getloadavg()[0],
    }
    ok = (result["cpp_seconds_median"] <= result["numpy_seconds_median"]
          and result["cpp_peak_rss_mib"] <= 2048 and result["c_max_ulp_distance"] <= 1)
    result["goal_met"] = ok
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"shape {args.shape} dist {args.dist} seed {args.seed}, {args.reps} alternating reps, "
              f"{os.cpu_count()} CPUs, load {result['loadavg_1min']:.2f}")
        print(f"numpy float64 (dequant+matmul+silu*mul): best {min(np_times):.3f} s, median "
              f"{result['numpy_seconds_median']:.3f} s  [best: dequant {phases['dequant']:.3f}, "
              f"matmul {phases['matmul']:.3f}, epilogue {phases['epilogue']:.3f}], "
              f"peak RSS {np_peak_mib:.0f} MiB")
        print(f"C++ exact reference ({result['cpp_isa']}, {result['cpp_threads']} threads"
              f"{', abs sums' if args.abs_sums else ''}): best {min(cpp_times):.3f} s, median "
              f"{result['cpp_seconds_median']:.3f} s, peak RSS {result['cpp_peak_rss_mib']:.0f} MiB "
              f"(tier-2 {result['cpp_tier2_elements']}, tier-3 {result['cpp_tier3_elements']} elements)")
        print(f"C agreement: {100 * result['c_identical_fraction']:.4f}% bit-identical, max "
              f"{result['c_max_ulp_distance']} fp16 ulp")
        print("goal (C++ median <= numpy median, <= 2 GiB, agree within 1 ulp):",
              "MET" if ok else "NOT MET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
