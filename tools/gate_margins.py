#!/usr/bin/env python3
"""gate_margins.py — the false-alarm measurement of the comparison's criteria (compare.hpp).

Runs the REAL harness `--verify all` on the default suite once per seed (--seed S replaces every
case's seed), reads each run's JSON and prints, per combination and per case, the smallest margin
of each criterion seen over all seeds (the report's checked call):
  statistic       lambda / z*, z* the (limit+1)-th largest excess; < 1 fails; inf: at most `limit`
                  elements are off by more than one correct rounding at all
  element         lambda / the largest excess (the single worst element; < 1 is allowed up to
                  `limit` elements)
  certificate     the exactness certificate's margin (docs/design.md §4.11)
  mean square     the mean-square criterion's margin (§4.12)
  direction       the rounding-direction criterion's margin (§4.13)
(a margin < 1 fails; inf: nothing to measure) and any trial that did not PASS. Exit status 1 when any trial failed (a false alarm on a correct path).

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

    cols = ["statistic", "element", "certificate", "mean square", "direction"]
    by_combo = {}   # combo -> {"n": trials, column: [min margin, where]}
    by_case = {}    # "shape dist" -> {"n": trials, column: [min margin, where]}
    failures = []
    seeds = seeds_of(a.seeds)

    def margins(m):
        def get(obj, field):
            v = (m.get(obj) or {}).get(field)
            return math.inf if v is None else v
        return {"statistic": get("statistic", "margin"), "element": get("statistic", "element_margin"),
                "certificate": get("certificate", "margin"), "mean square": get("mean_square", "margin"),
                "direction": get("direction", "margin")}

    def note(table, k, ms, where):
        row = table.setdefault(k, {"n": 0, **{c: [math.inf, ""] for c in cols}})
        row["n"] += 1
        for c in cols:
            if ms[c] < row[c][0]:
                row[c] = [ms[c], where]

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
            m = t.get("metrics")
            if not m or "statistic" not in m:
                continue
            ms = margins(m)
            note(by_combo, combo, ms, f"{case} seed {s}")
            note(by_case, case, ms, f"seed {s}")
        print(f"seed {s}: exit {r.returncode}", file=sys.stderr)

    print(f"Criteria margins, backend {a.backend}, seeds {a.seeds} ({len(seeds)} runs of --verify {a.verify});"
          " smallest over all trials, where in brackets\n")
    for title, table in (("combination", by_combo), ("case (all combinations)", by_case)):
        print(f"| {title} | trials | " + " | ".join(cols) + " |")
        print("|---|---|" + "---|" * len(cols))
        for k, row in table.items():
            cells = [f"{fmt(row[c][0])}" + (f" ({row[c][1]})" if title == "combination" and row[c][1] else "")
                     for c in cols]
            print(f"| {k} | {row['n']} | " + " | ".join(cells) + " |")
        print()
    print(f"\nnot PASS: {len(failures)}")
    for f in failures:
        print("  " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
