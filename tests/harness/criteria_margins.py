#!/usr/bin/env python3
"""criteria_margins.py — no-false-alarm evidence for the comparison's criteria (issue 32 item 3).

Runs `harness --backend BACKEND --verify all --seed S --json ...` for every seed given and prints,
per combination, the smallest margin of each criterion over every case and seed (> 1 passes;
"inf" where the criterion never saw an element off):
  statistic    the outlier count's margin (compare.hpp, second criterion)
  element      the statistic's single worst element
  certificate  the exactness certificate's margin (third criterion)
  mean_square  the mean-square gate's margin (fourth criterion)
  direction    the rounding-direction count's margin (fifth criterion)
plus the trials that did not PASS. Exit status 1 when any trial did not pass.

Usage: criteria_margins.py HARNESS [--backend cpu] [--seeds 1-20] [--jobs 2]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

CRITERIA = {
    "statistic": lambda m: m["statistic"]["margin"],
    "element": lambda m: m["statistic"]["element_margin"],
    "certificate": lambda m: m["certificate"]["margin"],
    "mean_square": lambda m: m["mean_square"]["margin"],
    "direction": lambda m: m["direction"]["margin"],
}


def seeds(text):
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def run_seed(harness, backend, seed, folder):
    path = os.path.join(folder, f"seed{seed}.json")
    subprocess.run([harness, "--backend", backend, "--verify", "all", "--seed", str(seed), "--json", path],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with open(path) as f:
        return seed, json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("harness")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--seeds", default="1-20")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    worst = {}    # combo -> criterion -> (margin, case)
    counts = {}   # combo -> trials
    bad = []
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(args.jobs) as pool:
        for seed, doc in pool.map(lambda s: run_seed(args.harness, args.backend, s, folder), seeds(args.seeds)):
            for t in doc["trials"]:
                combo = t["combo"]
                counts[combo] = counts.get(combo, 0) + 1
                if t["outcome"] != "PASS":
                    if t["outcome"] != "SKIP":
                        bad.append((seed, combo, t["case"]["name"], t["outcome"], t.get("message", "")))
                    continue
                m = t.get("metrics")
                if not m:
                    continue
                for name, get in CRITERIA.items():
                    v = get(m)
                    v = math.inf if v is None else v
                    cur = worst.setdefault(combo, {}).get(name)
                    if cur is None or v < cur[0]:
                        worst[combo][name] = (v, f"{t['case']['name']} (seed {seed})")
    print(f"smallest margin per combination over seeds {args.seeds} ({args.backend} backend):")
    print(f"{'combination':<16}{'trials':>7}" + "".join(f"{n:>13}" for n in CRITERIA))
    for combo in sorted(worst):
        row = f"{combo:<16}{counts[combo]:>7}"
        for n in CRITERIA:
            v = worst[combo].get(n, (math.inf, ""))[0]
            row += f"{('inf' if math.isinf(v) else f'{v:.3g}'):>13}"
        print(row)
    print("where the smallest finite margins occur:")
    for combo in sorted(worst):
        for n in CRITERIA:
            v, where = worst[combo].get(n, (math.inf, ""))
            if not math.isinf(v):
                print(f"  {combo} {n}: {v:.3g} on {where}")
    for b in bad:
        print("NOT PASS: seed %d %s %s: %s %s" % b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
