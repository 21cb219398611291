#!/usr/bin/env python3
"""junit_read.py — reads the harness's JUnit XML with a real consumer (junitparser, from PyPI) and
checks it against the harness's own JSON report of the same run:
  junit_read.py RESULTS.xml REPORT.json
- the counts junitparser finds (tests, failures, errors, skipped) equal the report's summary:
  failures = FAIL, errors = ERROR + CRASH + TIMEOUT, skipped = SKIP + BLOCKED;
- every trial is one testcase (classname BACKEND.COMBO), its result type matches its outcome, and a
  failure's or error's message names the outcome and its text carries the trial's reproducer.
Exit 0 when all hold, 1 with the differences, 125 when junitparser is not installed (SKIP)."""
import json
import sys

try:
    import junitparser
except ImportError:
    print("junit_read.py: junitparser is not installed (SKIP)")
    sys.exit(125)


def main(xml_path, json_path):
    report = json.load(open(json_path))
    xml = junitparser.JUnitXml.fromfile(xml_path)
    suites = [xml] if isinstance(xml, junitparser.TestSuite) else list(xml)
    problems = []
    found = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    cases = []
    for suite in suites:
        for case in suite:
            cases.append(case)
            found["tests"] += 1
            kinds = [type(r).__name__ for r in case.result]
            if "Failure" in kinds:
                found["failures"] += 1
            elif "Error" in kinds:
                found["errors"] += 1
            elif "Skipped" in kinds:
                found["skipped"] += 1
    s = report["summary"]
    want = {"tests": len(report["trials"]), "failures": s["FAIL"],
            "errors": s["ERROR"] + s["CRASH"] + s["TIMEOUT"], "skipped": s["SKIP"] + s["BLOCKED"]}
    if found != want:
        problems.append(f"counts read by junitparser {found} != the report's summary {want}")
    for suite in suites:  # the attributes a dashboard shows without reading the cases
        attrs = {"tests": suite.tests, "failures": suite.failures, "errors": suite.errors, "skipped": suite.skipped}
        counted = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for case in suite:
            counted["tests"] += 1
            for r in case.result:
                key = {"Failure": "failures", "Error": "errors", "Skipped": "skipped"}.get(type(r).__name__)
                if key:
                    counted[key] += 1
        if attrs != counted:
            problems.append(f"suite {suite.name}: attributes {attrs} != its testcases {counted}")

    expect_kind = {"PASS": None, "FAIL": "Failure", "ERROR": "Error", "CRASH": "Error", "TIMEOUT": "Error",
                   "SKIP": "Skipped", "BLOCKED": "Skipped"}
    if len(cases) != len(report["trials"]):
        problems.append(f"{len(cases)} testcases for {len(report['trials'])} trials")
    for case, trial in zip(cases, report["trials"]):
        who = f"{trial['backend']} {trial['combo']} (trial {trial['index']})"
        if case.classname != f"{trial['backend']}.{trial['combo']}":
            problems.append(f"{who}: classname {case.classname!r}")
        kinds = [type(r).__name__ for r in case.result]
        want_kind = expect_kind[trial["outcome"]]
        if kinds != ([want_kind] if want_kind else []):
            problems.append(f"{who}: outcome {trial['outcome']} read as {kinds}")
            continue
        if want_kind in ("Failure", "Error"):
            r = case.result[0]
            if r.type != trial["outcome"] or not (r.message or "").startswith(trial["outcome"]):
                problems.append(f"{who}: type {r.type!r}, message {r.message!r}")
            if trial["reproducer"] not in (r.text or ""):
                problems.append(f"{who}: the reproducer is not in the failure's text")
            if trial.get("stage") and f"in stage {trial['stage']}" not in r.message:
                problems.append(f"{who}: the message does not name stage {trial['stage']}")
    for p in problems:
        print("junit_read.py:", p)
    print(f"junit_read.py: junitparser read {found['tests']} testcases: {found['failures']} failures, "
          f"{found['errors']} errors, {found['skipped']} skipped" + ("" if problems else "; all as the report says"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
