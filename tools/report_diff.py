#!/usr/bin/env python3
"""report_diff.py - compare two harness --json reports trial by trial.

    tools/report_diff.py BEFORE.json AFTER.json

Trials are matched by (backend, combination, case name). For each pair it compares what the
verdict depends on: the outcome, the stage a failure happened in, and the metrics of the checked
call (max ulp, elements over tolerance, unwritten elements, the statistical gate's verdict and
margins). Times are not compared. Prints one line per difference and a summary; exit status 0
when every trial of BEFORE is in AFTER with the same verdict and metrics, 1 otherwise.
A trial whose autotune chose another configuration in the two runs (autotune times its candidates,
so its choice may change from run to run; the trial's `path` names it, "[autotune: ...]") is held
to the same outcome and stage only: its metrics follow the configuration's rounding, and a difference there is
listed as a note, not counted.
Used to show that a refactoring of the harness left every trial's outcome alone (RESULTS-GPU.md).
"""
import json
import re
import sys

FIELDS = ("max_ulp", "over_tolerance", "unwritten", "nan_mismatch", "inf_mismatch")
STAT_FIELDS = ("pass", "unexplained", "limit", "margin", "element_margin")


def key(t):
    return (t.get("backend"), t.get("combo"), t.get("case", {}).get("name"))


def autotune_choice(t):
    """What autotune chose, as the trial's path names it ("[autotune: CONFIG (... when timed)]"),
    without the time; None when the path names no choice."""
    m = re.search(r"\[autotune: (.*?)\]", t.get("path", ""))
    if not m:
        return None
    return re.sub(r"\(?[-+0-9.eE]+ (us|ms|s) per call when timed\)?", "", m.group(1)).strip()


def summary(t):
    m = t.get("metrics") or {}
    s = {"outcome": t.get("outcome"), "stage": t.get("stage", "") if t.get("outcome") != "PASS" else ""}
    for f in FIELDS:
        s[f] = m.get(f)
    stat = m.get("statistic") or {}
    for f in STAT_FIELDS:
        s["statistic." + f] = stat.get(f)
    return s


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        before, after = (json.load(open(p)) for p in argv[1:])
    except (OSError, ValueError) as e:
        print("report_diff: %s" % e, file=sys.stderr)
        return 2
    a = {key(t): t for t in after.get("trials", [])}
    diffs = notes = 0
    for t in before.get("trials", []):
        k = key(t)
        if k not in a:
            print("missing in AFTER: %s %s %s" % k)
            diffs += 1
            continue
        sb, sa = summary(t), summary(a[k])
        ca, cb = autotune_choice(t), autotune_choice(a[k])
        other_config = ca is not None and cb is not None and ca != cb
        for f in sb:
            if sb[f] != sa[f]:
                if other_config and f not in ("outcome", "stage"):
                    print("note: %s %s %s: %s %r -> %r (another configuration was chosen)" % (k + (f, sb[f], sa[f])))
                    notes += 1
                    continue
                print("%s %s %s: %s %r -> %r" % (k + (f, sb[f], sa[f])))
                diffs += 1
    extra = set(a) - {key(t) for t in before.get("trials", [])}
    for k in sorted(extra, key=str):
        print("new in AFTER: %s %s %s" % k)
    n = len(before.get("trials", []))
    print("report_diff: %d trials compared, %d differences, %d new, %d metric notes where another configuration was chosen"
          % (n, diffs, len(extra), notes))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
