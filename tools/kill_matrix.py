#!/usr/bin/env python3
"""kill_matrix.py — the planted-bug kill matrix (tests/planted/): runs the harness with the planted
modules (NVFP4_PATHS_DIR=--paths, the folder tests/planted builds) once per planted bug of the cpu
backend (`--backend cpu --verify BUG --json`, on the default suite unless the bug needs other
inputs) and prints a markdown table from the JSON reports:

  planted bug | harness verdict | caught by (per criterion, the trials it failed first: bound,
  certificate, statistic, mean_square, direction; a configuration of stage configs; a call of stage
  instances; another outcome) | GPU MODE's rule (trials it fails) | named as (what the FAIL messages name, docs/design.md
  §4.14: the misreading, another call's inputs or where the flagged elements lie; the commonest name)

The bugs are the planted module's own list (`harness list`: every variant whose summary starts with
"planted:"), so a new planted bug gets its row without an edit here.

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

CRITERIA = ["bound", "certificate", "statistic", "mean_square", "direction"]


def planted_bugs(harness):
    """The cpu backend's planted variants, as `harness list` names them."""
    out = subprocess.run([harness, "list", "--backend", "cpu"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True).stdout
    bugs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "(variant)" and parts[2] == "planted:":
            bugs.append(parts[0])
    return bugs
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


def name_of(t):
    """What a FAIL trial's message names (docs/design.md §4.14): the misreading its output computes,
    another call's inputs, or where its flagged elements lie; None when it names nothing."""
    m = t.get("metrics", {})
    what = m.get("misreading", "")
    if what.startswith("the output matches ") and ", on " in what:
        return what[len("the output matches "):what.rindex(", on ")]
    if "matches the reference of" in t.get("message", ""):
        return "another call's inputs"
    if m.get("flagged_where"):
        return "in " + m["flagged_where"]
    return None


def named_as(trials):
    """The name most failing trials get, and how many got any name: "B1 and B2 ... (51); named in 55 of 60"."""
    names = [name_of(t) for t in trials if t["outcome"] == "FAIL"]
    got = [n for n in names if n]
    if not got:
        return "-"
    top = max(set(got), key=lambda n: (got.count(n), n))
    return f"{top} ({got.count(top)}); named in {len(got)} of {len(names)}"


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
    bugs = planted_bugs(harness)
    if not bugs:
        print("no planted bugs listed: is --paths the planted modules' folder?", file=sys.stderr)
        return 2
    print("| planted bug | harness | caught by (trials) | GPU MODE's rule (trials) | named as (trials) |")
    print("|---|---|---|---|---|")
    caught_h = caught_g = 0
    for bug in bugs:
        d = run(harness, bug, EXTRA.get(bug, []), out)
        trials = d["trials"]
        by = []
        for crit in CRITERIA:
            n = sum(1 for t in trials if t["outcome"] == "FAIL" and t.get("metrics", {}).get("criterion") == crit)
            if n:
                by.append(f"{crit} ({n})")
        configs = sum(1 for t in trials if t["outcome"] == "FAIL" and t.get("configs", {}).get("failing"))
        if configs:
            by.append(f"stage configs ({configs})")
        instances = sum(1 for t in trials if t["outcome"] == "FAIL" and t.get("instances", {}).get("failing"))
        if instances:
            by.append(f"stage instances ({instances})")
        other = sum(1 for t in trials if t["outcome"] not in ("PASS", "FAIL", "SKIP"))
        if other:
            by.append(f"other outcome ({other})")
        gm = sum(1 for t in trials if baseline.get(key(t), True)
                 and not t.get("metrics", {}).get("gpumode_check", {}).get("pass", True))
        verdict = "FAIL" if d["exit_code"] == 1 else f'not caught (exit {d["exit_code"]})'
        caught_h += d["exit_code"] == 1
        caught_g += gm > 0
        print(f"| {bug} | {verdict} | {', '.join(by) or '-'} of {len(trials)} | "
              f"{'yes' if gm else 'no'} ({gm}) | {named_as(trials)} |")
    print(f"\nharness: {caught_h} of {len(bugs)} caught; GPU MODE's rule: {caught_g} of {len(bugs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
