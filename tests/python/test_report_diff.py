"""tools/report_diff.py: outcomes and metrics compared trial by trial; a trial whose path chose
another configuration is held to its outcome only (its metrics follow the configuration)."""
import json
import os
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "report_diff.py")


def trial(outcome="PASS", max_ulp=1, margin=None, path="plain [autotune: algo id=66 splitK=4 (12.5 us per call when timed)]"):
    return {"backend": "gpu", "combo": "autotune", "case": {"name": "128x256x7168 gpumode seed 1111"},
            "outcome": outcome, "path": path,
            "metrics": {"max_ulp": max_ulp, "over_tolerance": 0, "statistic": {"pass": True, "element_margin": margin}}}


def diff(tmp_path, before, after):
    paths = []
    for name, t in (("a.json", before), ("b.json", after)):
        p = tmp_path / name
        p.write_text(json.dumps({"trials": [t]}))
        paths.append(str(p))
    r = subprocess.run([sys.executable, TOOL] + paths, capture_output=True, text=True)
    return r.returncode, r.stdout


def test_identical_trials_pass(tmp_path):
    assert diff(tmp_path, trial(), trial())[0] == 0


def test_times_in_the_path_are_not_a_configuration(tmp_path):
    rc, out = diff(tmp_path, trial(margin=None), trial(margin=2.5e6, path=trial()["path"].replace("12.5", "20.1")))
    assert rc == 1
    assert "statistic.element_margin None -> 2500000.0" in out


def test_another_configuration_changes_metrics_not_the_verdict(tmp_path):
    other = "plain [autotune: algo id=66 splitK=1 (9.0 us per call when timed)]"
    rc, out = diff(tmp_path, trial(max_ulp=1, margin=None), trial(max_ulp=2, margin=2.5e6, path=other))
    assert rc == 0
    assert "another configuration was chosen" in out
    assert "2 metric notes" in out


def test_another_description_is_not_another_configuration(tmp_path):
    # A path whose wording changed (another harness) names no other autotune choice: metrics count.
    rc, out = diff(tmp_path, trial(max_ulp=1), trial(max_ulp=2, path="reworded " + trial()["path"]))
    assert rc == 1
    rc, out = diff(tmp_path, trial(max_ulp=1, path="plain"), trial(max_ulp=2, path="plain, reworded"))
    assert rc == 1


def test_outcome_differences_always_count(tmp_path):
    other = "plain [autotune: algo id=66 splitK=1 (9.0 us per call when timed)]"
    rc, out = diff(tmp_path, trial(), trial(outcome="FAIL", path=other))
    assert rc == 1
    assert "outcome 'PASS' -> 'FAIL'" in out
