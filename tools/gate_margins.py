#!/usr/bin/env python3
"""gate_margins.py — the statistical precision gate's false-alarm measurement (compare.hpp).

Runs the REAL harness `--verify all` on the default suite once per seed (--seed S replaces every
case's seed), reads each run's JSON and prints, per combination and per case, the smallest margin
seen over all seeds and checked calls' reports:
  margin          lambda / z*, z* the (limit+1)-th largest excess; < 1 fails; inf: at most `limit`
                  elements are off by more than one correct rounding at all
  element margin  lambda / the largest excess (the single worst element; < 1 is allowed up to
                  `limit` elements)
and any trial that did not PASS. Exit status 1 when any trial failed (a false alarm on a correct path).

  tools/gate_margins.py --harness build/harness/harness [--backend cpu] [--seeds 1-20] [--out DIR]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def seeds_of(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def fmt(x):
    return "inf" if x is None or math.isinf(x) else f"{x:.3g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harness", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--seeds", default="1-20")
    ap.add_argument("--verify", default="all")
    ap.add_argument("--out", default=None, help="keep each run's JSON here")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="gate-margins-")
    os.makedirs(out, exist_ok=True)

    by_combo = {}   # combo -> [min margin, min element margin, where, trials]
    by_case = {}    # "shape dist" -> [min margin, min element margin]
    failures = []
    seeds = seeds_of(a.seeds)
    for s in seeds:
        path = os.path.join(out, f"seed{s}.json")
        cmd = [a.harness, "--backend", a.backend, "--verify", a.verify, "--seed", str(s), "--json", path]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode not in (0, 1):
            print(f"seed {s}: harness exited {r.returncode}\n{r.stdout[-2000:]}", file=sys.stderr)
            return 2
        with open(path) as f:
            d = json.load(f)
        for t in d["trials"]:
            combo = t["combo"]
            case = f'{t["case"].get("shape")} {t["case"].get("dist")}'
            if t["outcome"] != "PASS":
                failures.append(f'{t["outcome"]} {combo} {case} seed {s}: {t["message"]}')
            st = t.get("metrics", {}).get("statistic")
            if st is None:
                continue
            m = math.inf if st["margin"] is None else st["margin"]
            em = math.inf if st["element_margin"] is None else st["element_margin"]
            c = by_combo.setdefault(combo, [math.inf, math.inf, "", 0])
            c[3] += 1
            if em < c[1]:
                c[1], c[2] = em, f"{case} seed {s}"
            c[0] = min(c[0], m)
            k = by_case.setdefault(case, [math.inf, math.inf, 0])
            k[0], k[1], k[2] = min(k[0], m), min(k[1], em), k[2] + 1
        print(f"seed {s}: exit {r.returncode}", file=sys.stderr)

    print(f"Statistical gate margins, backend {a.backend}, seeds {a.seeds} ({len(seeds)} runs of --verify {a.verify})\n")
    print("| combination | trials | smallest margin | smallest element margin | where |")
    print("|---|---|---|---|---|")
    for combo, (m, em, where, n) in by_combo.items():
        print(f"| {combo} | {n} | {fmt(m)} | {fmt(em)} | {where} |")
    print("\n| case (all combinations) | trials | smallest margin | smallest element margin |")
    print("|---|---|---|---|")
    for case, (m, em, n) in by_case.items():
        print(f"| {case} | {n} | {fmt(m)} | {fmt(em)} |")
    print(f"\nnot PASS: {len(failures)}")
    for f in failures:
        print("  " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
