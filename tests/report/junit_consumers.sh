#!/usr/bin/env bash
# junit_consumers.sh HARNESS — `harness --junit` read by outside consumers (ctest label cpu):
#   1. a CPU lattice run with fault drills (a CRASH, a FAIL and the BLOCKED combination above them)
#      writes --json and --junit;
#   2. xmllint validates the XML against tests/report/junit.xsd — and rejects a copy with a
#      testcase's name removed, so the validation is shown to be able to fail;
#   3. junitparser (PyPI) reads it, and its counts and results match the JSON report (junit_read.py).
# Exit 125 (SKIP) when xmllint (Debian libxml2-utils) or junitparser is missing; tools/bootstrap.sh
# installs both.
set -euo pipefail
harness=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v xmllint >/dev/null || { echo "junit_consumers.sh: no xmllint (SKIP)"; exit 125; }
python3 -c 'import junitparser' 2>/dev/null || { echo "junit_consumers.sh: no junitparser (SKIP)"; exit 125; }
dir=$(mktemp -d /tmp/nvfp4-junit-XXXXXX)
trap 'rm -rf "$dir"' EXIT

rc=0
"$harness" --verify all --backend cpu --shape 7x13x48,33x65x160 --dist normal,edge \
  --inject crash@warmup:if=autotune --inject corrupt@run:if=fused \
  --json "$dir/r.json" --junit "$dir/r.xml" >"$dir/out.txt" 2>&1 || rc=$?
if [ "$rc" -ne 1 ]; then
  cat "$dir/out.txt"
  echo "junit_consumers.sh: expected exit 1 from the drill run, got $rc"
  exit 1
fi
grep -q '<failure type="FAIL"' "$dir/r.xml" && grep -q '<error type="CRASH"' "$dir/r.xml" &&
  grep -q '<skipped message="BLOCKED' "$dir/r.xml" ||
  { echo "junit_consumers.sh: the drill run should give a failure, an error and a skipped testcase"; exit 1; }

xmllint --noout --schema "$here/junit.xsd" "$dir/r.xml"
sed '0,/<testcase classname="\([^"]*\)" name="[^"]*"/s//<testcase classname="\1"/' "$dir/r.xml" >"$dir/broken.xml"
if xmllint --noout --schema "$here/junit.xsd" "$dir/broken.xml" 2>/dev/null; then
  echo "junit_consumers.sh: the schema accepted a testcase without a name"
  exit 1
fi

python3 "$here/junit_read.py" "$dir/r.xml" "$dir/r.json"
echo "junit_consumers.sh: PASS"
