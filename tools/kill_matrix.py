#!/usr/bin/env python3
"""kill_matrix.py — the planted-bug kill matrix (tests/planted/): runs the harness with the planted
modules (NVFP4_PATHS_DIR=--paths, the folder tests/planted builds) once per planted bug (`--backend cpu --verify BUG --json`, on the default suite unless the bug needs other
inputs) and prints a markdown table from the JSON reports:

  planted bug | harness verdict | caught by (trials failed by the bound / by the statistic alone)
  | GPU MODE's rule (trials it fails)

"caught by GPU MODE's rule" counts trials whose output fails |x-ref| <= 1e-3 + 1e-3|ref| (NaN/inf
must match) on a case where the correct plain path passes that rule (run first as the baseline).

  tools/kill_matrix.py --harness build/harness/harness --paths build/tests/planted/paths [--source-dir .]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

BUGS = [
    "bf16-intermediates", "fp16-intermediates", "fp16-accumulation", "dropped-block",
    "truncating-lane", "silu-polynomial", "silu-wrong-gemm", "nibble-swap", "scale-per-32",
    "e4m3fnuz-scales", "subnormal-scales-flushed", "nan-scale-as-number", "alpha-ignored",
    "ragged-unwritten", "nondeterministic", "poison-only", "cached-result", "ignores-inputs",
]
# Every planted bug runs on the default suite (it has NaN and negative scales, alphas, ragged shapes).
EXTRA = {}


def run(harness, combo, extra, out):
    path = os.path.join(out, combo + ".json")
    subprocess.run([harness, "--backend", "cpu", "--verify", combo, "--json", path] + extra,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(path) as f:
        return json.load(f)


def key(t):
    c = t["case"]
    return c.get("inputs") or f'{c.get("shape")} {c.get("dist")} {c.get("seed")}'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harness", required=True)
    ap.add_argument("--paths", required=True, help="the planted modules' folder (build/tests/planted/paths)")
    ap.add_argument("--source-dir", default=".")
    a = ap.parse_args()
    out = tempfile.mkdtemp(prefix="kill-matrix-")
    harness = os.path.abspath(a.harness)
    os.environ["NVFP4_PATHS_DIR"] = os.path.abspath(a.paths)
    os.chdir(a.source_dir)
    baseline = {}
    for extra in [[]] + list(EXTRA.values()):
        for t in run(harness, "plain", extra, out)["trials"]:
            baseline[key(t)] = t.get("metrics", {}).get("gpumode_check", {}).get("pass", True)
    print("| planted bug | harness | caught by: bound / statistic alone (trials) | GPU MODE's rule (trials) |")
    print("|---|---|---|---|")
    caught_h = caught_g = 0
    for bug in BUGS:
        d = run(harness, bug, EXTRA.get(bug, []), out)
        trials = d["trials"]
        bound = sum(1 for t in trials if t.get("metrics", {}).get("criterion") == "bound")
        stat = sum(1 for t in trials if t.get("metrics", {}).get("criterion") == "statistic")
        other = sum(1 for t in trials if t["outcome"] not in ("PASS", "FAIL", "SKIP"))
        gm = sum(1 for t in trials if baseline.get(key(t), True)
                 and not t.get("metrics", {}).get("gpumode_check", {}).get("pass", True))
        verdict = "FAIL" if d["exit_code"] == 1 else f'not caught (exit {d["exit_code"]})'
        caught_h += d["exit_code"] == 1
        caught_g += gm > 0
        by = []
        if bound:
            by.append(f"bound ({bound})")
        if stat:
            by.append(f"statistic ({stat})")
        if other:
            by.append(f"other outcome ({other})")
        print(f"| {bug} | {verdict} | {', '.join(by) or '-'} of {len(trials)} | "
              f"{'yes' if gm else 'no'} ({gm}) |")
    print(f"\nharness: {caught_h} of {len(BUGS)} caught; GPU MODE's rule: {caught_g} of {len(BUGS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
